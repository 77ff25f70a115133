"""Finding the m/k/n table of a hand-made sheet, and GPU figures given as cells."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from xlsxwriter.utility import xl_col_to_name

from sheetgen.core.excel import looks_blank
from sheetgen.errors import InputError
from sheetgen.evaluate import EvaluatedWorkbook
from sheetgen.inputs.shapes import find_header, missing_header

from .headers import bracket_units, normalise, unit_scale
from .report import show_value

HEADER_SCAN_ROWS = 1000  # rows read to look for the header (HEADER_SEARCH_ROWS non-blank)
MAX_COLUMNS = 200


def _rows(ev: EvaluatedWorkbook, sheet: str) -> list[tuple[int, list[Any]]]:
    last_row, last_col = ev.extent(sheet)
    if last_row == 0:
        return []
    last_row = min(last_row, HEADER_SCAN_ROWS)
    ref = f"A1:{xl_col_to_name(min(last_col, MAX_COLUMNS) - 1)}{last_row}"
    values = ev.range_values(sheet, ref)
    return [(i, row) for i, row in enumerate(values, start=1)
            if any(not looks_blank(v) for v in row)]


def find_table(ev: EvaluatedWorkbook, name: str, sheet: str | None
                ) -> tuple[str, int, list[Any]]:
    """(sheet, header row, header cells) of the m/k/n table."""
    if sheet is not None:
        match = next((s for s in ev.sheet_names if s.lower() == sheet.lower()), None)
        if match is None:
            raise InputError(f"{name} has no sheet {sheet!r} "
                             f"(sheets: {', '.join(map(repr, ev.sheet_names))})")
        rows = _rows(ev, match)
        line, _cols, near = find_header(rows)
        if line is None:
            raise missing_header(f"{name} sheet {match!r}", near)
        return match, line, dict(rows)[line]
    for s in ev.sheet_names:
        rows = _rows(ev, s)
        line, _cols, _near = find_header(rows)
        if line is not None:
            return s, line, dict(rows)[line]
    raise InputError(f"{name}: not a sheetgen workbook, and no sheet has a header row with "
                     f"columns m, k, n to grade (sheets: {', '.join(map(repr, ev.sheet_names))})")



_CELL = re.compile(r"^(?:'?(?P<sheet>[^!]+?)'?!)?\$?(?P<col>[A-Za-z]{1,3})\$?(?P<row>\d+)$")


def gpu_figure(ev: EvaluatedWorkbook, sheet: str, spec: str, option: str, kind: str,
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
    if isinstance(value, str) and (number := cell_number(value)) is not None:
        value = number
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise InputError(f"{where}: expected a positive number, got {show_value(value)}")
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
        words = bracket_units(label) + normalise(label).split(" ")
        for word in words:
            scale = unit_scale(word, kind)
            if scale is not None:
                return scale
    return 1.0


def cell_number(value: Any) -> float | None:
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
