"""Reading (m, k, n) shapes from CSV, with errors that name the row and column.

Validation mirrors the sheet's row guard (positive whole numbers), and reports every bad
cell at once so a user fixes the file in one pass.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from sheetgen.errors import InputError
from sheetgen.sheets.matmul import MAX_DIM

DIMS = ("m", "k", "n")
MAX_REPORTED = 10  # bad cells listed in one message before "and N more"


@dataclass(frozen=True)
class Shape:
    m: int
    k: int
    n: int


def parse_dim(text: object, where: str) -> int:
    """One dimension: a positive whole number (4096 or 4096.0), at most MAX_DIM."""
    s = str(text).strip() if text is not None else ""
    if not s:
        raise InputError(f"{where}: blank (expected a positive whole number)")
    try:
        value = float(s.replace("_", ""))
    except ValueError:
        raise InputError(f"{where}: {s!r} is not a number") from None
    if not math.isfinite(value):
        raise InputError(f"{where}: {s!r} is not a finite number")
    if value != math.floor(value):
        raise InputError(f"{where}: {s!r} is not a whole number")
    if value < 1:
        raise InputError(f"{where}: {s!r} must be at least 1")
    if value > MAX_DIM:
        raise InputError(f"{where}: {s!r} is too large (at most {MAX_DIM:,}, a 32-bit dimension)")
    return int(value)


def _find_columns(header: list[str], origin: str) -> dict[str, int]:
    names = [h.strip().lower() for h in header]
    found: dict[str, int] = {}
    for dim in DIMS:
        if dim in names:
            found[dim] = names.index(dim)
    missing = [d for d in DIMS if d not in found]
    if missing:
        raise InputError(
            f"{origin}: missing column(s) {', '.join(missing)} in the header "
            f"(found: {', '.join(repr(h) for h in header) or 'nothing'})"
        )
    return found


def read_shapes_text(text: str, origin: str) -> list[Shape]:
    """Shapes from CSV text whose header names columns m, k, n (any case, other columns kept
    out). Blank lines are skipped; every bad cell is reported in one error."""
    rows = list(csv.reader(io.StringIO(text)))
    rows_with_data = [(i, r) for i, r in enumerate(rows, start=1) if any(c.strip() for c in r)]
    if not rows_with_data:
        raise InputError(f"{origin}: empty file (expected a header with columns m, k, n)")
    header_line, header = rows_with_data[0]
    cols = _find_columns(header, origin)
    shapes: list[Shape] = []
    problems: list[str] = []
    order = [(dim, cols[dim]) for dim in DIMS]
    for line, row in rows_with_data[1:]:
        dims: list[int] = []
        for dim, idx in order:
            text = row[idx] if idx < len(row) else ""
            # Fast path for the usual plain digits; anything else (and any error) goes through
            # parse_dim, which gives the same value or the row/column message.
            if text.isascii() and text.isdigit() and 1 <= (value := int(text)) <= MAX_DIM:
                dims.append(value)
                continue
            try:
                dims.append(parse_dim(text, f"{origin} row {line}, column {dim}"))
            except InputError as exc:
                problems.append(str(exc))
        if len(dims) == 3:
            shapes.append(Shape(*dims))
    if problems:
        more = f" (and {len(problems) - MAX_REPORTED} more)" if len(problems) > MAX_REPORTED else ""
        raise InputError("; ".join(problems[:MAX_REPORTED]) + more)
    if not shapes:
        raise InputError(f"{origin}: no shapes below the header on line {header_line}")
    return shapes


def read_shapes(path: str | Path) -> list[Shape]:
    """Shapes from a CSV file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except IsADirectoryError:
        raise InputError(f"{p} is a directory, not a CSV file") from None
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{p}: not a UTF-8 text CSV file") from None
    return read_shapes_text(text, p.name)


def default_shapes() -> list[Shape]:
    """The built-in dozen shapes: decode GEMVs, skinny, square and large matmuls."""
    text = resources.files("sheetgen.templates").joinpath("shapes.csv").read_text("utf-8")
    return read_shapes_text(text, "templates/shapes.csv")
