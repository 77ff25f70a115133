"""Validation rules of the spreadsheet state that Google enforces on requests: grid limits,
sheet titles, range names, data-validation and conditional-format conditions, and the
strict data-validation rules a written value must satisfy (CUSTOM_FORMULA ones evaluated
with sheetgen's evaluator)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from .a1 import a1, quote_sheet, shift_formula
from .constants import CELL_LIMIT
from .errors import Invalid
from .state import Sheet, StoredSpreadsheet

DV_CONDITIONS = {
    "NUMBER_GREATER", "NUMBER_GREATER_THAN_EQ", "NUMBER_LESS", "NUMBER_LESS_THAN_EQ",
    "NUMBER_EQ", "NUMBER_NOT_EQ", "NUMBER_BETWEEN", "NUMBER_NOT_BETWEEN", "TEXT_CONTAINS",
    "TEXT_NOT_CONTAINS", "TEXT_EQ", "TEXT_IS_EMAIL", "TEXT_IS_URL", "DATE_EQ", "DATE_BEFORE",
    "DATE_AFTER", "DATE_ON_OR_BEFORE", "DATE_ON_OR_AFTER", "DATE_BETWEEN", "DATE_NOT_BETWEEN",
    "DATE_IS_VALID", "ONE_OF_RANGE", "ONE_OF_LIST", "CUSTOM_FORMULA", "BOOLEAN",
}
CF_CONDITIONS = {
    "NUMBER_GREATER", "NUMBER_GREATER_THAN_EQ", "NUMBER_LESS", "NUMBER_LESS_THAN_EQ",
    "NUMBER_EQ", "NUMBER_NOT_EQ", "NUMBER_BETWEEN", "NUMBER_NOT_BETWEEN", "TEXT_CONTAINS",
    "TEXT_NOT_CONTAINS", "TEXT_STARTS_WITH", "TEXT_ENDS_WITH", "TEXT_EQ", "TEXT_NOT_EQ",
    "DATE_EQ", "DATE_BEFORE", "DATE_AFTER", "DATE_NOT_EQ", "BLANK", "NOT_BLANK",
    "CUSTOM_FORMULA",
}
_NO_VALUES = {"BLANK", "NOT_BLANK", "TEXT_IS_EMAIL", "TEXT_IS_URL", "DATE_IS_VALID"}
_TWO_VALUES = {"NUMBER_BETWEEN", "NUMBER_NOT_BETWEEN", "DATE_BETWEEN", "DATE_NOT_BETWEEN"}
CHART_TYPES = {"BAR", "LINE", "AREA", "COLUMN", "SCATTER", "COMBO", "STEPPED_AREA"}
_NAME_OK = re.compile(r"^[A-Za-z_\\][A-Za-z0-9_.]{0,249}$")
_NAME_LIKE_REF = re.compile(r"^([A-Za-z]{1,3}\d+|[Rr]\d*[Cc]\d*)$")


def need_fields(p: Mapping[str, Any]) -> str:
    fields = p.get("fields")
    if not fields or not isinstance(fields, str):
        raise Invalid("'fields' is required (a field mask such as \"userEnteredValue\").")
    return fields


def check_in_grid(sheet: Sheet, end_row: int, end_col: int) -> None:
    if end_row > sheet.rows or end_col > sheet.cols:
        ref = a1(max(end_row - 1, 0), max(end_col - 1, 0))
        raise Invalid(f"Range ({quote_sheet(sheet.title)}!{ref}) exceeds grid limits. "
                      f"Max rows: {sheet.rows}, max columns: {sheet.cols}")


def check_grid_props(grid: Mapping[str, Any]) -> None:
    rows, cols = int(grid.get("rowCount", 0)), int(grid.get("columnCount", 0))
    if rows < 0 or cols < 0:
        raise Invalid("rowCount and columnCount must be >= 0.")
    if rows * cols > CELL_LIMIT:
        raise Invalid("This action would increase the number of cells in the workbook above "
                      "the limit of 10000000 cells.")
    if int(grid.get("frozenRowCount", 0)) > rows or int(grid.get("frozenColumnCount", 0)) > cols:
        raise Invalid("frozen rows/columns exceed the grid size.")


def check_title(ss: StoredSpreadsheet, title: Any, exclude: Sheet | None = None) -> None:
    if not isinstance(title, str) or not title.strip():
        raise Invalid("Sheet title must be a non-empty string.")
    if len(title) > 100:
        raise Invalid("Sheet title is too long (max 100 characters).")
    for s in ss.sheets:
        if s is not exclude and s.title.lower() == title.lower():
            raise Invalid(f'A sheet with the name "{title}" already exists. Please enter '
                          "another name.")


def check_name(ss: StoredSpreadsheet, name: Any, exclude: Mapping[str, Any] | None = None
                ) -> None:
    if (not isinstance(name, str) or not _NAME_OK.match(name) or _NAME_LIKE_REF.match(name)
            or name.lower() in ("true", "false")):
        raise Invalid(f"The range name {name!r} is not valid: use letters, numbers and "
                      "underscores, not starting with a number and not like a cell reference.")
    for n in ss.named_ranges:
        if n is not exclude and n["name"].lower() == name.lower():
            raise Invalid(f"A named range with the name {name!r} already exists.")


def find_named(ss: StoredSpreadsheet, nid: Any) -> dict[str, Any]:
    for n in ss.named_ranges:
        if n["namedRangeId"] == nid:
            return n
    raise Invalid(f"No named range with id {nid!r}.")


def check_condition(cond: Any, allowed: set[str]) -> None:
    if not isinstance(cond, Mapping):
        raise Invalid("condition is required.")
    kind = cond.get("type")
    if kind not in allowed:
        raise Invalid(f"Invalid condition type {kind!r} here.")
    values = cond.get("values") or []
    n = len(values)
    if kind in _NO_VALUES and n:
        raise Invalid(f"{kind} takes no values.")
    if kind in _TWO_VALUES and n != 2:
        raise Invalid(f"{kind} needs exactly 2 values.")
    if kind == "ONE_OF_LIST" and n < 1:
        raise Invalid("ONE_OF_LIST needs at least one value.")
    if kind == "BOOLEAN" and n > 2:
        raise Invalid("BOOLEAN takes at most 2 values.")
    if kind not in _NO_VALUES | _TWO_VALUES | {"ONE_OF_LIST", "BOOLEAN"} and n != 1:
        raise Invalid(f"{kind} needs exactly 1 value.")
    if kind == "ONE_OF_RANGE":
        ref = str(values[0].get("userEnteredValue", ""))
        if not ref.startswith("="):
            raise Invalid("ONE_OF_RANGE needs a range reference starting with '='.")
    if kind == "CUSTOM_FORMULA" and not str(values[0].get("userEnteredValue", "")).startswith("="):
        raise Invalid("CUSTOM_FORMULA needs a formula starting with '='.")


def custom_formula_holds(title: str, r: int, c: int, v: Any, formula: str,
                          ss: StoredSpreadsheet) -> bool:
    """A CUSTOM_FORMULA rule for value v at (r, c), by sheetgen's evaluator. The formula is
    written for the rule range's top-left cell; this finds that cell from the stored rule."""
    from sheetgen.evaluate import evaluate_cells

    r0, c0 = _rule_origin(ss, title, r, c, formula)
    shifted = shift_formula(formula, r - r0, c - c0)
    scratch = (r, c + 1)  # the only other cell of this one-rule workbook
    ev = evaluate_cells({title: {scratch: shifted}}, {title: {(r, c): v}})
    got = ev.value(title, a1(*scratch))
    return isinstance(got, bool | np.bool_) and bool(got)


def _rule_origin(ss: StoredSpreadsheet, title: str, r: int, c: int, formula: str
                 ) -> tuple[int, int]:
    """Top-left cell of the block of cells around (r, c) holding this same rule formula."""
    cells = ss.sheet(title=title).cells

    def same(rr: int, cc: int) -> bool:
        cond = ((cells.get((rr, cc)) or {}).get("dataValidation") or {}).get("condition") or {}
        return [x.get("userEnteredValue") for x in cond.get("values") or []] == [formula]

    while r > 0 and same(r - 1, c):
        r -= 1
    while c > 0 and same(r, c - 1):
        c -= 1
    return r, c
