"""Comparing a graded column with the reference model, and hints for classic mistakes."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sheetgen.api import gpu_figures, table_frame
from sheetgen.assemble import BuildConfig, plan_build
from sheetgen.core.excel import looks_blank
from sheetgen.evaluate import EvaluatedWorkbook, NotEvaluated
from sheetgen.inputs.presets import DTYPE_BYTES, Presets, load_presets
from sheetgen.inputs.shapes import Shape
from sheetgen.model.vocabulary import COMPUTE_BOUND, MEMORY_BOUND
from sheetgen.sheets import matmul

from .headers import KINDS
from .report import SHOWN_FAILURES, ColumnGrade, RowFailure, plain
from .table import cell_number


def reference(shapes: Sequence[Shape], *, gpu: str | None, dtype: str,
              peak: float | None = None, bw: float | None = None,
              gpu_file: str | os.PathLike[str] | None = None,
              storage: Sequence[str | None] = (None, None, None)
              ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The reference model's table for the shapes, and the GPU figures it used.

    peak/bw (FLOP/s, B/s) replace the preset's figures through a synthetic preset, so the
    numbers still go through the one model every other command uses. `storage`: the A, B,
    C storage choices (None or "auto": the dtype's, fp8/int8 writing bf16)."""
    presets = load_presets(gpu_file)
    base = presets.get(gpu or presets.default)
    if peak is not None or bw is not None:
        name = f"{base.name} (sheet figures)" if gpu else "sheet figures"
        peak_flops = dict(base.peak_flops)
        if peak is not None:
            peak_flops[dtype] = peak
        base = dataclasses.replace(
            base, name=name, peak_flops=peak_flops,
            hbm_bandwidth=bw if bw is not None else base.hbm_bandwidth,
            sources={"peak_flops": "--peak", "hbm_bandwidth": "--bw"})
        presets = Presets(gpus=(base,), default=base.name)
    a, w, o = storage
    p = plan_build(BuildConfig(gpu=base.name, dtype=dtype, shapes=list(shapes), spare_rows=0,
                               presets=presets, activation_dtype=a, weight_dtype=w,
                               output_dtype=o))
    return table_frame(p, matmul.TABLE.name), gpu_figures(p)



def regime_of(value: Any) -> str | None:
    """'compute-bound' / 'memory-bound' for loose text ('Compute', 'MEMORY BOUND', 'BW-bound')."""
    if not isinstance(value, str):
        return None
    t = value.lower()
    compute = "compute" in t or "math" in t or "flop" in t
    memory = "memory" in t or "mem" in t or "bandwidth" in t or "bw" in t
    if compute == memory:
        return None
    return COMPUTE_BOUND if compute else MEMORY_BOUND


def _same(a: np.ndarray, b: np.ndarray, rtol: float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.isclose(a, b, rtol=rtol, atol=0.0) | (a == b)


def _grade_numbers(got: list[Any], expected: np.ndarray, scale: float, rtol: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ok, missing, SI values with NaN where not a number) per row."""
    missing = np.array([looks_blank(v) for v in got], dtype=bool)
    nums = np.array([cell_number(v) if not m else None for v, m in zip(got, missing, strict=True)],
                    dtype=float)  # None -> nan
    si_values = nums * scale
    ok = _same(si_values, expected, rtol) & ~missing
    return ok, missing, si_values


def _constant_ratio(got: np.ndarray, expected: np.ndarray) -> float | None:
    with np.errstate(divide="ignore", invalid="ignore"):
        r = got / expected
    r = r[np.isfinite(r)]
    if len(r) == 0 or not np.allclose(r, r[0], rtol=1e-6, atol=0.0):
        return None
    return float(r[0])


def _near(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6)


def _hint(quantity: str, unit: str | None, got: np.ndarray, expected: np.ndarray,
          bad: np.ndarray, ref: pd.DataFrame, dtype: str, ridge: float,
          raw: list[Any]) -> str | None:
    """A guess at a classic mistake, from the failing rows."""
    db = DTYPE_BYTES[dtype]
    if quantity == "regime":
        return _regime_hint(raw, ref, bad, ridge)
    g, e = got[bad], expected[bad]
    if quantity == "predicted_time":
        ct, mt = ref["compute_time"].to_numpy(float)[bad], ref["memory_time"].to_numpy(float)[bad]
        for candidate, text in ((np.minimum(ct, mt), "MIN instead of MAX?"),
                                (ct + mt, "compute time + memory time instead of MAX?"),
                                (ct, "compute time only (no MAX with the memory time)?"),
                                (mt, "memory time only (no MAX with the compute time)?")):
            if len(g) and bool(_same(g, candidate, 1e-6).all()) and not bool(
                    _same(e, candidate, 1e-6).all()):
                return text
    if quantity in ("bytes_moved", "intensity", "memory_time"):
        uniform = _uniform_hint(quantity, g, e, ref, bad, dtype)
        if uniform:
            return uniform
    c = _constant_ratio(g, e)
    if c is None:
        return None
    kind = KINDS[quantity]
    if kind in ("time", "count", "bytes", "rate") and c not in (0.0, 1.0):
        exponent = math.log10(abs(c))
        if abs(exponent - round(exponent)) < 1e-9 and round(exponent) % 3 == 0:
            said = f"the header says {unit}" if unit else "no unit in the header: SI assumed"
            fix = ("put the unit in the header, e.g. 'Time (ms)', or use --time-unit"
                   if kind == "time" else "put the unit in the header, e.g. '(GB)'")
            return (f"values are {c:g} times the expected: a unit slip ({said}); {fix}")
    by_ratio: dict[str, list[tuple[float, str]]] = {
        "flops": [(0.5, "FLOPs without the factor 2 (a multiply-add is 2 FLOPs)?"),
                  (2.0, "factor 2 counted twice?")],
        "bytes_moved": [(1 / db, f"bytes without the dtype factor ({db} B per {dtype} "
                                 f"element)?"),
                        (db, "dtype factor applied twice?")],
        "intensity": [(db, "bytes without the dtype factor (intensity too high by "
                           f"{db})?"),
                      (0.5, "FLOPs without the factor 2?"), (2.0, "factor 2 counted twice?"),
                      (1 / db, "dtype factor applied twice?")],
        "compute_time": [(0.5, "FLOPs without the factor 2?")],
        "memory_time": [(1 / db, "bytes without the dtype factor?")],
        "attained_flops": [(2.0, "FLOPs factor 2 counted twice?")],
    }
    for ratio, text in by_ratio.get(quantity, []):
        if _near(c, ratio):
            return text
    if quantity == "bytes_moved":
        for other, size in DTYPE_BYTES.items():
            if size != db and _near(c, size / db):
                return f"bytes for a {size}-byte element ({other}?) instead of {dtype}?"
    if quantity == "peak_fraction" and _near(c, 100.0):
        return "a percentage where a fraction is expected? put '%' in the header"
    return f"got/expected = {c:.6g} on every failing row"


def _uniform_hint(quantity: str, got: np.ndarray, expected: np.ndarray, ref: pd.DataFrame,
                  bad: np.ndarray, dtype: str) -> str | None:
    """The sheet stores every operand in the compute dtype where the model stores each in
    its own precision (fp8 and int8 compute write bf16 outputs by default)."""
    m, k, n = (ref[d].to_numpy(float)[bad] for d in "mkn")
    db = DTYPE_BYTES[dtype]
    uniform = db * (m * k + k * n + m * n)
    scale = {"bytes_moved": uniform, "intensity": ref["flops"].to_numpy(float)[bad] / uniform,
             "memory_time": uniform / (ref["bytes_moved"].to_numpy(float)[bad]
                                       / ref["memory_time"].to_numpy(float)[bad])}[quantity]
    if not len(got) or not bool(_same(got, scale, 1e-6).all()) or bool(
            _same(expected, scale, 1e-6).all()):
        return None
    return (f"every operand at {db} B ({dtype}); the model reads A and B and writes C each in "
            "its own storage (fp8 and int8 GEMMs write bf16 outputs): give --activation-dtype, "
            "--weight-dtype, --output-dtype if your sheet means otherwise")


def _regime_hint(raw: list[Any], ref: pd.DataFrame, bad: np.ndarray,
                 ridge: float) -> str | None:
    labels = [regime_of(v) for v in raw]
    if any(lab is None for lab, b in zip(labels, bad, strict=True) if b):
        return "write 'compute-bound' or 'memory-bound' (any case)"
    intensity = ref["intensity"].to_numpy(float)
    comp = [x for x, lab in zip(intensity, labels, strict=True) if lab == COMPUTE_BOUND]
    mem = [x for x, lab in zip(intensity, labels, strict=True) if lab == MEMORY_BOUND]
    if comp and mem and max(comp) < min(mem):
        return "compute and memory swapped (intensity compared the wrong way round)?"
    if comp and mem and max(mem) < min(comp):
        return (f"consistent with a ridge between {max(mem):.4g} and {min(comp):.4g} FLOP/B; "
                f"the ridge is peak / bandwidth = {ridge:.4g} FLOP/B")
    if not comp or not mem:
        only = "compute" if comp else "memory"
        return (f"every row says {only}-bound; compare the intensity with the ridge "
                f"(peak / bandwidth = {ridge:.4g} FLOP/B)")
    return None


def grade_column(ev: EvaluatedWorkbook, sheet: str, col: ColumnGrade, rows: list[int],
                  ref: pd.DataFrame, figures: dict[str, Any], dtype: str,
                  rtol: float) -> None:
    first, last = rows[0], rows[-1]
    values = ev.column(sheet, col.column, first, last)
    raw = [values[r - first] for r in rows]
    raw = [v.item() if isinstance(v, np.generic) else v for v in raw]
    raw = [None if isinstance(v, float) and math.isnan(v) else v for v in raw]
    expected_si = ref[col.quantity].to_numpy()
    col.rows = len(rows)
    if col.quantity == "regime":
        missing = np.array([looks_blank(v) for v in raw], dtype=bool)
        ok = np.array([regime_of(v) == e for v, e in zip(raw, expected_si, strict=True)])
        got_si = np.full(len(raw), np.nan)
        shown_expected = list(expected_si)
    else:
        expected_si = expected_si.astype(float)
        ok, missing, got_si = _grade_numbers(raw, expected_si, col.scale, rtol)
        if col.quantity == "peak_fraction" and col.unit == "%":  # 50 or a 0.5 shown as 50%
            ok2, missing2, got2 = _grade_numbers(raw, expected_si, 1.0, rtol)
            if ok2.sum() > ok.sum():
                col.scale, ok, missing, got_si = 1.0, ok2, missing2, got2
        shown_expected = list(expected_si / col.scale)
    unevaluated = np.array([isinstance(v, NotEvaluated) for v in raw], dtype=bool)
    ok = ok & ~unevaluated
    bad = ~ok
    col.failed, col.missing = int(bad.sum()), int(missing.sum())
    for i in np.flatnonzero(bad)[:SHOWN_FAILURES]:
        cell = f"{col.column}{rows[i]}"
        col.failures.append(RowFailure(rows[i], cell, "missing" if missing[i] else raw[i],
                                       plain(shown_expected[i]), ev.formula(sheet, cell)))
    if col.failed:
        if unevaluated.any():
            first = next(v for v in raw if isinstance(v, NotEvaluated))
            col.hint = (f"{int(unevaluated.sum())} cell(s) not evaluated: {first.why}; use a "
                        "function sheetgen knows (docs/checking.md, 'What check evaluates')")
        elif bool(missing[bad].all()):
            col.hint = "blank cells"
        else:
            numeric = col.quantity != "regime"
            col.hint = _hint(col.quantity, col.unit, got_si,
                             expected_si.astype(float) if numeric else got_si,
                             bad & ~missing, ref, dtype, figures["ridge"], raw)
