"""Grading a hand-made roofline sheet: `sheetgen check` on a workbook sheetgen did not build.

The sheet needs a header row naming m, k and n (found as `sheetgen build --shapes` finds it);
its other columns are recognised by their header text (`FLOPs`, `Bytes moved`,
`AI (FLOP/byte)`, `Bound`, `Time (ms)`, ... see ALIASES), with units in brackets read for the
scale. Every formula is evaluated in pure Python (cached values are ignored; typed values
are taken as they are) and each recognised column is compared, row by row, with the
reference model (`sheetgen.analyze`) of the same shapes on the chosen GPU. A failing column
gets its first failing rows and, when the error has a classic pattern, a hint.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from xlsxwriter.utility import xl_col_to_name

from sheetgen.api import gpu_figures, table_frame
from sheetgen.errors import InputError
from sheetgen.evaluate import EvaluatedWorkbook, ExcelError, evaluate_workbook
from sheetgen.hardware import DEFAULT_DTYPE, DTYPE_BYTES, Presets, check_dtype, load_presets
from sheetgen.shapes import DIMS, Shape, _find_header, _missing_header, header_key, parse_dim
from sheetgen.sheets import matmul
from sheetgen.styles import COMPUTE_BOUND, MEMORY_BOUND
from sheetgen.units import MEGA, PREFIXES, TIME_UNITS, si
from sheetgen.workbook import BuildConfig, plan_build

DEFAULT_GRADE_RTOL = 1e-6  # hand-made sheets: typed constants are often rounded a little
SHOWN_FAILURES = 5  # failing rows listed per column
HEADER_SCAN_ROWS = 1000  # rows read to look for the header (HEADER_SEARCH_ROWS non-blank)
MAX_COLUMNS = 200

#: quantity -> (kind of unit, header spellings). Spellings are compared after `normalise`:
#: lower case, units in brackets dropped, `_ - . : ,` as spaces, no spaces around `/`.
ALIASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "flops": ("count", ("flops", "flop", "flop count", "flops count", "total flops",
                        "num flops", "number of flops", "# flops", "#flops", "work")),
    "bytes_moved": ("bytes", ("bytes", "bytes moved", "byte", "memory traffic", "traffic",
                              "data moved", "total bytes", "bytes accessed", "memory bytes",
                              "hbm bytes", "hbm traffic", "bytes transferred")),
    "intensity": ("intensity", ("intensity", "arithmetic intensity", "ai", "oi",
                                "operational intensity", "flop/byte", "flops/byte", "flop/b",
                                "flops/b", "flop per byte", "flops per byte")),
    "regime": ("text", ("regime", "bound", "bottleneck", "limited by", "bound by", "limiter",
                        "compute or memory bound", "compute/memory bound", "roofline regime")),
    "compute_time": ("time", ("compute time", "time compute", "t compute",
                              "flop time", "math time", "compute bound time")),
    "memory_time": ("time", ("memory time", "time memory", "t memory", "mem time",
                             "bandwidth time", "io time", "memory bound time", "t mem")),
    "predicted_time": ("time", ("time", "predicted time", "runtime", "run time", "latency",
                                "t", "estimated time", "est time", "predicted runtime",
                                "roofline time", "total time", "execution time", "exec time",
                                "predicted latency", "time predicted", "t predicted",
                                "predicted", "duration")),
    "attained_flops": ("rate", ("achieved flop/s", "attained flop/s", "attained flops",
                                "achieved flops", "attained flops/s", "achieved flops/s",
                                "attained performance", "achieved performance",
                                "performance", "throughput", "flop/s", "flops/s",
                                "attainable flop/s", "attained", "achieved")),
    "peak_fraction": ("fraction", ("fraction of peak", "% of peak", "%of peak", "peak fraction",
                                   "of peak", "utilization", "utilisation", "mfu",
                                   "efficiency", "% peak", "percent of peak", "peak %",
                                   "% of peak flops", "peak utilization")),
}
_BY_SPELLING = {s: q for q, (_kind, spellings) in ALIASES.items() for s in spellings}
KINDS = {q: kind for q, (kind, _s) in ALIASES.items()}

_BRACKETED = re.compile(r"\(([^)]*)\)|\[([^\]]*)\]|\{([^}]*)\}")

_UNIT_PATTERNS = {
    "time": re.compile(r"^(?:(?P<s>s|sec|secs|seconds?)|(?P<ms>ms|msec|milliseconds?)"
                       r"|(?P<us>us|usec|microseconds?)|(?P<ns>ns|nsec|nanoseconds?))$"),
    "count": re.compile(r"^(?P<p>[kmgtp]?)(?:flop|flops)$"),
    "bytes": re.compile(r"^(?P<p>[kmgtp]?i?)(?:b|byte|bytes)$"),
    "rate": re.compile(r"^(?P<p>[kmgtp]?)(?:flop/s|flops/s|flop/sec|flops|flop/second)$"),
    "bw": re.compile(r"^(?P<p>[kmgtp]?i?)(?:b/s|byte/s|bytes/s|bps|b/sec)$"),
    "intensity": re.compile(r"^(?:flop/b|flop/byte|flops/byte|flops/b|flop/bytes)$"),
}


def normalise(text: object) -> str:
    """A header as ALIASES spells it: lower case, no brackets, single spaces."""
    t = str(text).lower().replace("µ", "u").replace("μ", "u")
    t = _BRACKETED.sub(" ", t)
    t = re.sub(r"[_\-:.,]+", " ", t)
    t = re.sub(r"\s*/\s*", "/", t)
    return " ".join(t.split())


def unit_scale(unit: str, kind: str) -> float | None:
    """SI factor of a unit of the given kind ("ms" as time -> 1e-3), or None."""
    u = unit.strip().lower().replace("µ", "u").replace("μ", "u").replace(" ", "")
    if kind == "fraction":
        return 0.01 if u == "%" else (1.0 if u in ("fraction", "x") else None)
    pattern = _UNIT_PATTERNS.get(kind)
    m = pattern.match(u) if pattern is not None else None
    if m is None:
        return None
    if kind == "time":
        return next(TIME_UNITS[g] for g, v in m.groupdict().items() if v)
    return PREFIXES[m.groupdict().get("p") or ""] if "p" in m.groupdict() else 1.0


def _bracket_units(text: str) -> list[str]:
    inner = " ".join(next(g for g in m.groups() if g is not None)
                     for m in _BRACKETED.finditer(text))
    return [t for t in re.split(r"[,;\s]+", inner) if t]


def recognise(header: object) -> tuple[str, str | None, float | None] | None:
    """(quantity, unit text, SI scale) a header names, or None.

    Units come from brackets ("Time (ms)") or a last word after the name ("time ms",
    "bytes in GB"); a bracketed word that is no unit (a note) is ignored.
    """
    if header is None or isinstance(header, bool | int | float | ExcelError):
        return None
    raw = str(header).strip()
    if not raw:
        return None
    key = normalise(raw)
    words = key.split(" ")
    unit: str | None = None
    quantity = _BY_SPELLING.get(key)
    if quantity is None and len(words) > 1:  # a trailing unit word: "time ms", "bytes in gb"
        rest = words[:-1][:-1] if len(words) > 2 and words[-2] in ("in", "per") else words[:-1]
        q = _BY_SPELLING.get(" ".join(rest))
        if q is not None and unit_scale(words[-1], KINDS[q]) is not None:
            quantity, unit = q, words[-1]
    if quantity is None:
        return None
    kind = KINDS[quantity]
    if unit is None:
        unit = next((u for u in _bracket_units(raw) if unit_scale(u, kind) is not None), None)
    if unit is None and kind == "fraction" and "%" in raw:
        unit = "%"
    return quantity, unit, None if unit is None else unit_scale(unit, kind)


@dataclass(frozen=True)
class RowFailure:
    row: int  # 1-based sheet row
    cell: str
    got: Any  # as the sheet has it ("missing" for a blank cell)
    expected: Any  # in the column's unit
    formula: str | None

    def line(self) -> str:
        return (f"row {self.row} ({self.cell}): got {_show(self.got)}, expected "
                f"{_show(self.expected)}" + (f"  {self.formula}" if self.formula else ""))

    def as_dict(self) -> dict[str, Any]:
        return {"row": self.row, "cell": self.cell, "got": _plain(self.got),
                "expected": _plain(self.expected), "formula": self.formula}


@dataclass
class ColumnGrade:
    column: str  # letter
    header: str
    quantity: str
    unit: str | None
    scale: float  # SI value = sheet value * scale
    rows: int = 0
    failed: int = 0
    missing: int = 0
    failures: list[RowFailure] = field(default_factory=list)  # the first few
    hint: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def line(self) -> str:
        verdict = "pass" if self.ok else "FAIL"
        unit = f" [{self.unit}]" if self.unit else ""
        missing = f", {self.missing} blank" if self.missing else ""
        text = (f"{self.column} {self.header!r} -> {self.quantity}{unit}: {verdict} "
                f"{self.rows - self.failed}/{self.rows}{missing}")
        return text + (f"  hint: {self.hint}" if self.hint else "")

    def as_dict(self) -> dict[str, Any]:
        return {"column": self.column, "header": self.header, "quantity": self.quantity,
                "unit": self.unit, "scale": self.scale, "ok": self.ok, "rows": self.rows,
                "failed": self.failed, "missing": self.missing, "hint": self.hint,
                "failures": [f.as_dict() for f in self.failures]}


@dataclass
class GradeReport:
    path: str
    sheet: str
    header_row: int
    rows: list[int]  # the graded shape rows (1-based)
    gpu: dict[str, Any]
    columns: list[ColumnGrade] = field(default_factory=list)
    unrecognised: list[tuple[str, str]] = field(default_factory=list)  # (letter, header)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (row, why)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.columns)

    def summary(self) -> list[str]:
        g = self.gpu
        lines = [f"{self.path}: graded sheet {self.sheet!r}, header row {self.header_row}, "
                 f"{len(self.rows)} shape rows, against {g['gpu']} {g['dtype']} (peak "
                 f"{si(g['peak_flops'], 'FLOP/s')}, HBM {si(g['hbm_bw'], 'B/s')}, ridge "
                 f"{g['ridge']:.4g} FLOP/B)"]
        lines.append("recognised: " + ", ".join(
            f"{c.column} {c.header!r} -> {c.quantity}" + (f" [{c.unit}]" if c.unit else "")
            for c in self.columns))
        if self.unrecognised:
            lines.append("not recognised (not graded): " + ", ".join(
                f"{col} {h!r}" for col, h in self.unrecognised))
        for row, why in self.skipped[:SHOWN_FAILURES]:
            lines.append(f"skipped row {row}: {why}")
        if len(self.skipped) > SHOWN_FAILURES:
            lines.append(f"... and {len(self.skipped) - SHOWN_FAILURES} more skipped rows")
        for c in self.columns:
            lines.append("  " + c.line())
            lines.extend("      " + f.line() for f in c.failures)
            if c.failed > len(c.failures):
                lines.append(f"      ... and {c.failed - len(c.failures)} more")
        bad = sum(not c.ok for c in self.columns)
        lines.append("ok: every recognised column agrees with the reference model" if self.ok
                     else f"{bad} of {len(self.columns)} column(s) fail")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.path, "ok": self.ok, "sheet": self.sheet,
                "header_row": self.header_row, "rows": self.rows,
                "gpu": {k: _plain(v) for k, v in self.gpu.items()},
                "columns": [c.as_dict() for c in self.columns],
                "unrecognised": [{"column": c, "header": h} for c, h in self.unrecognised],
                "skipped": [{"row": r, "why": w} for r, w in self.skipped]}


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.10g}"
    return repr(value) if isinstance(value, str) else str(value)


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


# --- finding the table -------------------------------------------------------------------

def _rows(ev: EvaluatedWorkbook, sheet: str) -> list[tuple[int, list[Any]]]:
    last_row, last_col = ev.extent(sheet)
    if last_row == 0:
        return []
    last_row = min(last_row, HEADER_SCAN_ROWS)
    ref = f"A1:{xl_col_to_name(min(last_col, MAX_COLUMNS) - 1)}{last_row}"
    values = ev.range_values(sheet, ref)
    return [(i, row) for i, row in enumerate(values, start=1)
            if any(not _blank(v) for v in row)]


def _find_table(ev: EvaluatedWorkbook, name: str, sheet: str | None
                ) -> tuple[str, int, list[Any]]:
    """(sheet, header row, header cells) of the m/k/n table."""
    if sheet is not None:
        match = next((s for s in ev.sheet_names if s.lower() == sheet.lower()), None)
        if match is None:
            raise InputError(f"{name} has no sheet {sheet!r} "
                             f"(sheets: {', '.join(map(repr, ev.sheet_names))})")
        rows = _rows(ev, match)
        line, _cols, near = _find_header(rows)
        if line is None:
            raise _missing_header(f"{name} sheet {match!r}", near)
        return match, line, dict(rows)[line]
    for s in ev.sheet_names:
        rows = _rows(ev, s)
        line, _cols, _near = _find_header(rows)
        if line is not None:
            return s, line, dict(rows)[line]
    raise InputError(f"{name}: not a sheetgen workbook, and no sheet has a header row with "
                     f"columns m, k, n to grade (sheets: {', '.join(map(repr, ev.sheet_names))})")


# --- the reference -------------------------------------------------------------------------

_CELL = re.compile(r"^(?:'?(?P<sheet>[^!]+?)'?!)?\$?(?P<col>[A-Za-z]{1,3})\$?(?P<row>\d+)$")


def _figure(ev: EvaluatedWorkbook, sheet: str, spec: str, option: str, kind: str,
            unit: str, smallest: float) -> float:
    """A GPU figure from --peak/--bw: a number, or a cell (`B2`, `Sheet1!B2`) whose value is
    in SI units unless the label beside or above it gives one (`Peak (TFLOP/s)`)."""
    text = spec.strip()
    try:
        value: Any = float(text)
        where = f"{option} {text}"
        scale = 1.0
    except ValueError:
        m = _CELL.match(text)
        if m is None:
            raise InputError(f"{option} {spec!r}: expected a number or a cell such as B2 or "
                             f"Sheet1!B2") from None
        target = m.group("sheet") or sheet
        match = next((s for s in ev.sheet_names if s.lower() == target.lower()), None)
        if match is None:
            raise InputError(f"{option} {spec!r}: no sheet {target!r} "
                             f"(sheets: {', '.join(map(repr, ev.sheet_names))})") from None
        col, row = m.group("col").upper(), int(m.group("row"))
        value = ev.value(match, f"{col}{row}")
        where = f"{option} {match}!{col}{row}"
        scale = _label_scale(ev, match, col, row, kind)
    if isinstance(value, str) and (number := _number(value)) is not None:
        value = number
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise InputError(f"{where}: expected a positive number, got {_show(value)}")
    si_value = float(value) * scale
    if si_value < smallest:
        raise InputError(f"{where}: {si_value:g} {unit} is implausibly small; give the value "
                         f"in {unit} or put its unit in the label beside it "
                         f"(e.g. 'Peak (T{unit})')")
    return si_value


def _label_scale(ev: EvaluatedWorkbook, sheet: str, col: str, row: int, kind: str) -> float:
    """The unit of a figure cell read from a text label to its left or above, else 1."""
    from sheetgen.evaluate.refs import col_to_index, index_to_col

    c = col_to_index(col)
    neighbours = [f"{col}{row - 1}"] if row > 1 else []
    if c > 1:
        neighbours.insert(0, f"{index_to_col(c - 1)}{row}")
    for addr in neighbours:
        label = ev.value(sheet, addr)
        if not isinstance(label, str):
            continue
        words = _bracket_units(label) + normalise(label).split(" ")
        for word in words:
            scale = unit_scale(word, kind)
            if scale is not None:
                return scale
    return 1.0


def reference(shapes: Sequence[Shape], *, gpu: str | None, dtype: str,
              peak: float | None = None, bw: float | None = None,
              gpu_file: str | os.PathLike[str] | None = None
              ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The reference model's table for the shapes, and the GPU figures it used.

    peak/bw (FLOP/s, B/s) replace the preset's figures through a synthetic preset, so the
    numbers still go through the one model every other command uses."""
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
    p = plan_build(BuildConfig(gpu=base.name, dtype=dtype, shapes=list(shapes), spare_rows=0,
                               presets=presets))
    return table_frame(p, matmul.TABLE.name), gpu_figures(p)


# --- grading -------------------------------------------------------------------------------

def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.replace(",", "").strip())
        except ValueError:
            return None
    return None


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
    missing = np.array([_blank(v) for v in got], dtype=bool)
    nums = np.array([_number(v) if not m else None for v, m in zip(got, missing, strict=True)],
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


def _grade_column(ev: EvaluatedWorkbook, sheet: str, col: ColumnGrade, rows: list[int],
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
        missing = np.array([_blank(v) for v in raw], dtype=bool)
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
    bad = ~ok
    col.failed, col.missing = int(bad.sum()), int(missing.sum())
    for i in np.flatnonzero(bad)[:SHOWN_FAILURES]:
        cell = f"{col.column}{rows[i]}"
        col.failures.append(RowFailure(rows[i], cell, "missing" if missing[i] else raw[i],
                                       _plain(shown_expected[i]), ev.formula(sheet, cell)))
    if col.failed:
        if bool(missing[bad].all()):
            col.hint = "blank cells"
        else:
            numeric = col.quantity != "regime"
            col.hint = _hint(col.quantity, col.unit, got_si,
                             expected_si.astype(float) if numeric else got_si,
                             bad & ~missing, ref, dtype, figures["ridge"], raw)


def grade_workbook(path: str | os.PathLike[str], *, gpu: str | None = None,
                   dtype: str | None = None, peak: str | None = None, bw: str | None = None,
                   sheet: str | None = None, time_unit: str | None = None,
                   rtol: float = DEFAULT_GRADE_RTOL,
                   gpu_file: str | os.PathLike[str] | None = None,
                   progress: Callable[[int, int], None] | None = None) -> GradeReport:
    """Grade a hand-made roofline sheet against the reference model (see the module doc).

    `peak`/`bw`: a number (FLOP/s, B/s) or a cell such as `B2` (on the graded sheet) or
    `Inputs!B2`; `time_unit` (s, ms, us, ns) overrides the units in the time headers.
    """
    p = Path(path)
    dtype = check_dtype(dtype or DEFAULT_DTYPE)
    time_scale = None
    if time_unit is not None:
        time_scale = unit_scale(time_unit, "time")
        if time_scale is None:
            raise InputError(f"--time-unit {time_unit!r}: choose one of s, ms, us, ns")
    ev = evaluate_workbook(p, progress=progress)
    name, header_row, header = _find_table(ev, p.name, sheet)

    dims: dict[str, int] = {}
    columns: list[ColumnGrade] = []
    unrecognised: list[tuple[str, str]] = []
    for i, cell in enumerate(header):
        if _blank(cell):
            continue
        letter = xl_col_to_name(i)
        key = header_key(cell)
        if key is not None and key not in dims:
            dims[key] = i
            continue
        found = recognise(cell)
        if found is None:
            unrecognised.append((letter, str(cell).strip()))
            continue
        quantity, unit, scale = found
        if KINDS[quantity] == "time" and time_scale is not None:
            unit, scale = time_unit, time_scale
        columns.append(ColumnGrade(letter, str(cell).strip(), quantity, unit,
                                   1.0 if scale is None else scale))
    if not columns:
        known = ", ".join(spellings[0] for _k, spellings in ALIASES.values())
        heads = ", ".join(repr(str(c)) for c in header if not _blank(c))
        raise InputError(f"{p.name} sheet {name!r}: no column to grade besides m, k, n in the "
                         f"header on row {header_row} ({heads}); name columns such as {known}")

    last_row, _ = ev.extent(name)
    rows: list[int] = []
    shapes: list[Shape] = []
    skipped: list[tuple[int, str]] = []
    if last_row > header_row:
        cols = {d: ev.column(name, xl_col_to_name(dims[d]), header_row + 1, last_row)
                for d in DIMS}
        for j in range(last_row - header_row):
            row = header_row + 1 + j
            cells = {d: cols[d][j] for d in DIMS}
            cells = {d: None if isinstance(v, float) and math.isnan(v) else v
                     for d, v in cells.items()}
            if all(_blank(v) for v in cells.values()):
                continue
            try:
                shape = Shape(*(parse_dim(cells[d], f"{d}") for d in DIMS))
            except InputError as exc:
                skipped.append((row, f"not a shape ({exc})"))
                continue
            rows.append(row)
            shapes.append(shape)
    if not shapes:
        raise InputError(f"{p.name} sheet {name!r}: no shapes below the header on row "
                         f"{header_row}")

    peak_value = None if peak is None else _figure(ev, name, peak, "--peak", "rate", "FLOP/s",
                                                   MEGA)
    bw_value = None if bw is None else _figure(ev, name, bw, "--bw", "bw", "B/s", MEGA)
    ref, figures = reference(shapes, gpu=gpu, dtype=dtype, peak=peak_value, bw=bw_value,
                             gpu_file=gpu_file)
    report = GradeReport(str(p), name, header_row, rows, figures, columns, unrecognised,
                         skipped)
    for col in columns:
        _grade_column(ev, name, col, rows, ref.reset_index(drop=True), figures, dtype, rtol)
    return report
