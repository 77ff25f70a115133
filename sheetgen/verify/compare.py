"""Compare spreadsheet values with the reference model, cell by cell.

Shared by the tests (LibreOffice's recalculated values), the checker (the pure-Python
evaluator's values) and the Google Sheets read-back, so "agrees" means one thing everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from xlsxwriter.utility import xl_rowcol_to_cell

from sheetgen.errors import InputError
from sheetgen.layout.planner import WorkbookPlan

DEFAULT_RTOL = 1e-9


def validate_rtol(rtol: float) -> float:
    """A finite relative tolerance from 0 (exact) to below 1: at 1 or more any two numbers of
    the same sign agree, so nothing would be checked; NaN would fail every number."""
    if isinstance(rtol, bool) or not isinstance(rtol, int | float) \
            or not (math.isfinite(rtol) and 0 <= rtol < 1):
        raise InputError(f"{rtol!r} is not a relative tolerance; give a number from 0 up to "
                         "(not including) 1, such as 1e-6")
    return float(rtol)


@dataclass(frozen=True)
class Expected:
    """A formula cell and the reference model's value for it."""

    sheet: str
    row: int
    col: int
    name: str
    formula: str
    value: Any

    @property
    def address(self) -> str:
        return xl_rowcol_to_cell(self.row, self.col)


def expected_cells(plan: WorkbookPlan) -> Iterator[Expected]:
    """Every formula cell the plan places, with its reference value."""
    for sheet in plan.sheets:
        for cell in sheet.cells:
            if cell.formula is not None:
                yield Expected(sheet.name, cell.row, cell.col, cell.name or "", cell.formula,
                               cell.value)
        for table in sheet.tables:
            for col in table.columns:
                if col.is_input:
                    for i in range(len(col.links or ())):  # inputs linked to the user's cells
                        yield Expected(sheet.name, table.first_row + i, col.col, col.name,
                                       col.links[i], col.values[i])  # type: ignore[index]
                    continue
                for i in range(table.n_rows):
                    row = table.first_row + i
                    yield Expected(sheet.name, row, col.col, col.name, col.formula_at(row),
                                   col.values[i])


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if hasattr(value, "item"):
        return _number(value.item())
    return None


def values_match(got: Any, expected: Any, rtol: float = DEFAULT_RTOL) -> bool:
    """Numbers within rtol (relative), text equal, blanks and '' the same thing."""
    if got is None:
        got = ""
    if expected is None:
        expected = ""
    e, g = _number(expected), _number(got)
    if e is not None and g is not None:
        if math.isnan(e):
            return math.isnan(g)
        return math.isclose(g, e, rel_tol=rtol, abs_tol=0.0) or g == e
    if isinstance(expected, float) and math.isnan(expected):
        return got == ""
    if isinstance(got, bool) or isinstance(expected, bool):
        return got == expected
    return str(got) == str(expected)
