"""Small helpers for the evaluator tests: write a workbook from a dict, evaluate it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import xlsxwriter

from sheetgen.evaluate import ExcelError, evaluate_workbook


def write_book(path: Path, sheets: dict[str, dict[str, Any]],
               names: dict[str, str] | None = None) -> Path:  # fmt: skip
    """Cells given as {'A1': value}; strings starting with '=' are formulas (cached -1)."""
    wb = xlsxwriter.Workbook(str(path), {"strings_to_numbers": False})
    for sheet_name, cells in sheets.items():
        ws = wb.add_worksheet(sheet_name)
        for ref, v in cells.items():
            if v is None:
                continue
            if isinstance(v, str) and v.startswith("="):
                ws.write_formula(ref, v, None, -1)
            elif isinstance(v, bool):
                ws.write_boolean(ref, v)
            elif isinstance(v, int | float):
                ws.write_number(ref, v)
            else:
                ws.write_string(ref, v)
    for name, target in (names or {}).items():
        wb.define_name(name, target)
    wb.close()
    return path


def one(tmp_path: Path, formula: str, cells: dict[str, Any] | None = None) -> Any:
    """Evaluate a single formula placed in S!Z1 next to the given cells of sheet S."""
    sheet = dict(cells or {})
    sheet["Z1"] = formula
    path = write_book(tmp_path / "one.xlsx", {"S": sheet})
    return evaluate_workbook(path).value("S", "Z1")


def same(a: Any, b: Any, rel: float = 1e-9) -> bool:
    """Equal as the cross-engine comparison means it: numbers to rel 1e-9, else exactly."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return False
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-300)
    if isinstance(a, ExcelError) or isinstance(b, ExcelError):
        return str(a) == str(b)
    return a == b
