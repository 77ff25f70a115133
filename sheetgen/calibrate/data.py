"""Reading measured matmul times from a CSV or xlsx file.

The m, k, n header is found as `--shapes` finds it (sheetgen.inputs.shapes), and the time column is
recognised as the grader recognises one (sheetgen.verify.grade: `time_s`, `time (ms)`,
`latency (us)`, `Runtime [s]`; a leading `measured`/`median` is allowed: `measured time (ms)`).
`measure`'s CSV is read as it is: its `#` metadata lines are kept as metadata. An optional
`b` (batch) column counts b independent matmuls of the shape; an optional `dtype` column
selects rows with --dtype.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sheetgen.core.defaults import REPEAT_FACTOR
from sheetgen.errors import InputError
from sheetgen.inputs.presets import DEFAULT_DTYPE, check_dtype
from sheetgen.inputs.shapes import (
    DIMS,
    find_header,
    is_xlsx,
    looks_blank,
    missing_header,
    parse_dim,
    report,
    xlsx_rows,
)
from sheetgen.measure.csvio import split_comments
from sheetgen.verify import grade

#: Words before a time header that say it is a measurement, not a prediction.
MEASURED_WORDS = ("measured", "median", "mean", "observed", "actual", "elapsed", "wall")
BATCH_HEADERS = ("b", "batch", "batch size", "batch count", "batches")
DTYPE_HEADERS = ("dtype", "data type", "type", "precision")
DEVICE_HEADERS = ("device",)
#: The `# key: value` line by which a measurement file says its timed code path quantizes the
#: activation in a kernel of its own before the GEMM (sheetgen.model.kernel_terms): the bytes
#: per element of A that pass moves (5 for a dynamic per-tensor FP8 quantization). A file with
#: several dtypes states it per dtype, `# activation_quantize_bytes_per_element.fp8: 5`, which
#: wins over the plain line for that dtype (a bf16 GEMM beside it quantizes nothing).
QUANTIZE_KEY = "activation_quantize_bytes_per_element"


class SeveralDtypes(InputError):
    """The file holds times for several dtypes and none was chosen (calibrate fits each)."""

    def __init__(self, origin: str, dtypes: list[str]) -> None:
        super().__init__(f"{origin} holds times for several dtypes ({', '.join(dtypes)}); "
                         f"choose one with --dtype")
        self.dtypes = dtypes


@dataclass
class Measurements:
    """Measured seconds per row, with the shapes (b independent m×k×n matmuls each)."""

    origin: str
    time_header: str
    dtype: str
    m: np.ndarray
    k: np.ndarray
    n: np.ndarray
    b: np.ndarray
    measured: np.ndarray  # seconds
    rows: list[int] = field(default_factory=list)  # source row numbers (1-based)
    metadata: dict[str, str] = field(default_factory=dict)
    device: str | None = None  # "cpu" or "cuda" when the file says

    def __len__(self) -> int:
        return len(self.measured)

    @property
    def quantize_bytes(self) -> float:
        """Bytes per element of A moved by a separate activation-quantize kernel that the
        timings include (the file's QUANTIZE_KEY line for this dtype, else its plain one; 0
        without one)."""
        key = f"{QUANTIZE_KEY}.{self.dtype}"
        key = key if key in self.metadata else QUANTIZE_KEY
        raw = self.metadata.get(key, "0")
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise InputError(f"{self.origin}: '# {key}: {raw}' must be a number of bytes, 0 "
                             "or more")
        return value

    def subset(self, keep: np.ndarray) -> Measurements:
        return Measurements(self.origin, self.time_header, self.dtype, self.m[keep],
                            self.k[keep], self.n[keep], self.b[keep], self.measured[keep],
                            [r for r, k in zip(self.rows, keep, strict=False) if k],
                            self.metadata, self.device)


def repeat_ratio(data: Measurements, again: Measurements) -> np.ndarray:
    """Each row's time over the time `again` gives its shape (b, m, k, n); NaN where `again`
    did not time the shape."""
    theirs = {(b, m, k, n): t for b, m, k, n, t in zip(again.b, again.m, again.k, again.n,
                                                        again.measured, strict=True)}
    return np.array([t / theirs.get((b, m, k, n), np.nan)
                     for b, m, k, n, t in zip(data.b, data.m, data.k, data.n, data.measured,
                                              strict=True)], dtype=float)


def not_repeated(ratio: np.ndarray, factor: float = REPEAT_FACTOR) -> np.ndarray:
    """True where a ratio (repeat_ratio) lies beyond `factor` either way; False where it is
    NaN (a shape timed once says nothing against itself)."""
    with np.errstate(invalid="ignore"):
        return (ratio > factor) | (ratio < 1.0 / factor)


def time_column(header: object) -> tuple[float, int] | None:
    """(seconds per unit, preference) when a header names a measured time, else None."""
    if header is None or isinstance(header, bool | int | float):
        return None
    raw = str(header)
    explicit = 0
    words = grade.normalise(raw).split(" ")
    if words and words[0] in MEASURED_WORDS:
        explicit = 1
        raw = re.sub(rf"^\s*{words[0]}[\s_\-:]*", "", raw, count=1, flags=re.IGNORECASE)
        rest = grade.normalise(raw)
        units = grade.bracket_units(raw) + ([rest] if rest else [])
        if not rest or grade.unit_scale(rest, "time") is not None:  # "measured (ms)", "median_s"
            scales = [s for u in units if (s := grade.unit_scale(u, "time")) is not None]
            return (scales[0] if scales else 1.0, 2)
    found = grade.recognise(raw)
    if found is None or found[0] != "predicted_time":
        return None
    return (found[2] if found[2] is not None else 1.0, 1 + explicit)


def _rows_of(path: Path, sheet: str | None) -> tuple[list[tuple[int, Sequence[object]]], str,
                                                       dict[str, str]]:
    if is_xlsx(path):
        import openpyxl

        try:
            wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
        except Exception as exc:
            raise InputError(f"cannot read {path.name} as an xlsx workbook: {exc}") from None
        try:
            names = [sheet] if sheet is not None else list(wb.sheetnames)
            if sheet is not None and sheet not in wb.sheetnames:
                raise InputError(f"{path.name} has no sheet {sheet!r}")
            for name in names:
                rows = xlsx_rows(wb[name])
                data = [(i, r) for i, r in rows if any(not looks_blank(c) for c in r)]
                if sheet is not None or find_header(data)[0] is not None:
                    return rows, f"{path.name} sheet {name!r}", {}
            return xlsx_rows(wb[names[0]]), f"{path.name} sheet {names[0]!r}", {}
        finally:
            wb.close()
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text CSV file") from None
    meta, body = split_comments(text)
    return list(enumerate(csv.reader(io.StringIO(body)), start=1)), path.name, meta


def _positive_time(value: object, scale: float, where: str) -> float:
    if isinstance(value, bool):
        raise InputError(f"{where}: {value!r} is not a number")
    s = str(value).strip() if value is not None else ""
    if not s:
        raise InputError(f"{where}: blank (expected a positive time)")
    try:
        t = float(value) if isinstance(value, int | float) else float(s)
    except ValueError:
        raise InputError(f"{where}: {s!r} is not a number") from None
    if not math.isfinite(t) or t <= 0:
        raise InputError(f"{where}: {s!r} must be a positive time (zero, negative and "
                         "infinite times cannot be fitted)")
    return t * scale


def read_measurements(path: str | Path, *, dtype: str | None = None,
                      sheet: str | None = None) -> Measurements:
    """The measured rows of a CSV or xlsx file; every bad cell reported at once."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"cannot read {p}: " + ("it is a directory" if p.is_dir()
                                                  else "No such file or directory"))
    rows, origin, meta = _rows_of(p, sheet)
    data = [(i, r) for i, r in rows if any(not looks_blank(c) for c in r)]
    header_line, cols, near = find_header(data)
    if header_line is None:
        raise missing_header(origin, near)
    header = dict(data)[header_line]
    times = [(pref, -i, i, scale) for i, h in enumerate(header)
             if (found := time_column(h)) is not None for scale, pref in [found]]
    if not times:
        names = ", ".join(repr(str(h)) for h in header if not looks_blank(h))
        raise InputError(f"{origin}: no time column in the header on row {header_line} "
                         f"(has: {names}); name one time_s, time (ms), latency (us), ...")
    _pref, _neg, tcol, tscale = max(times)
    norm = [grade.normalise(h) if not looks_blank(h) else "" for h in header]
    bcol = next((i for i, h in enumerate(norm) if h in BATCH_HEADERS), None)
    dcol = next((i for i, h in enumerate(norm) if h in DTYPE_HEADERS), None)
    devcol = next((i for i, h in enumerate(norm) if h in DEVICE_HEADERS), None)
    want = check_dtype(dtype) if dtype is not None else None
    problems: list[str] = []
    out: dict[str, list] = {"m": [], "k": [], "n": [], "b": [], "t": [], "row": [],
                            "dtype": [], "device": []}

    def cell(row: Sequence[object], col: int | None) -> object:
        return row[col] if col is not None and col < len(row) else None

    for line, row in data:
        if line <= header_line or all(looks_blank(cell(row, cols[d])) for d in DIMS):
            continue
        where = f"{origin} row {line}"
        row_dtype = cell(row, dcol)
        if not looks_blank(row_dtype):
            try:
                row_dtype = check_dtype(str(row_dtype))
            except InputError as exc:
                problems.append(f"{where}, column dtype: {exc}")
                continue
            if want is not None and row_dtype != want:
                continue
        try:
            dims = [parse_dim(cell(row, cols[d]), f"{where}, column {d}") for d in DIMS]
            b_raw = cell(row, bcol)
            b = 1 if looks_blank(b_raw) else parse_dim(b_raw, f"{where}, column b")
            t = _positive_time(cell(row, tcol), tscale, f"{where}, column {header[tcol]}")
        except InputError as exc:
            problems.append(str(exc))
            continue
        for key, value in zip("mkn", dims, strict=True):
            out[key].append(value)
        out["b"].append(b)
        out["t"].append(t)
        out["row"].append(line)
        out["dtype"].append(row_dtype if not looks_blank(row_dtype) else None)
        dev = cell(row, devcol)
        out["device"].append(None if looks_blank(dev) else str(dev).strip().lower())
    if problems:
        raise InputError(report(problems))
    if not out["t"]:
        which = f" with dtype {want}" if want is not None else ""
        raise InputError(f"{origin}: no measured rows{which} below the header on row "
                         f"{header_line}")
    dtypes = sorted({d for d in out["dtype"] if d is not None})
    if len(dtypes) > 1:
        raise SeveralDtypes(origin, dtypes)
    chosen = want or (dtypes[0] if dtypes else meta.get("dtype") or DEFAULT_DTYPE)
    devices = {d for d in out["device"] if d is not None} or (
        {meta["device"]} if "device" in meta else set())
    return Measurements(
        origin=origin, time_header=str(header[tcol]), dtype=check_dtype(chosen),
        m=np.asarray(out["m"], dtype=float), k=np.asarray(out["k"], dtype=float),
        n=np.asarray(out["n"], dtype=float), b=np.asarray(out["b"], dtype=float),
        measured=np.asarray(out["t"], dtype=float), rows=out["row"], metadata=meta,
        device=devices.pop() if len(devices) == 1 else None)
