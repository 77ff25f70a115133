"""Cell addresses in A1 notation (zero-based row and column in, text out), and sheet names
quoted as formulas need them.

The planner writes every formula's references with these, so it needs no spreadsheet
library. They give what XlsxWriter's `xlsxwriter.utility` gives (a test holds them equal),
so the formula texts did not change when the planner stopped importing it; the one
difference: XlsxWriter leaves a name with an emoji unquoted, these quote it (always valid). The
quoting rules are Excel's (sheet names that are not plain words, that start with a digit or
a dot, or that read as a cell reference in A1 or R1C1 style, are quoted, and an apostrophe
in a name is doubled): XlsxWriter documents them in `quote_sheetname`,
https://github.com/jmcnamara/XlsxWriter/blob/main/xlsxwriter/utility.py.
"""

from __future__ import annotations

import re

#: Excel's grid: 1,048,576 rows by 16,384 columns (XFD).
MAX_ROWS = 1_048_576
MAX_COLS = 16_384

_NEEDS_QUOTES = re.compile(r"[^\w.]")  # anything but word characters and dots
_LEADING = re.compile(r"^[\d.]")
_A1_NAME = re.compile(r"^([A-Z]{1,3})(\d+)$")
_R1 = re.compile(r"^R(\d+)")
_C1 = re.compile(r"^R?C(\d+)")


def col_name(col: int, absolute: bool = False) -> str:
    """0 -> 'A', 27 -> 'AB' ('$A' when absolute)."""
    if col < 0:
        raise ValueError(f"column {col} is negative")
    n, out = col + 1, ""
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return ("$" if absolute else "") + out


def col_index(letters: str) -> int:
    """'A' -> 0, 'AB' -> 27 (zero-based)."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n - 1


def cell(row: int, col: int, row_abs: bool = False, col_abs: bool = False) -> str:
    """(0, 1) -> 'B1'; with row_abs and col_abs, '$B$1'."""
    if row < 0:
        raise ValueError(f"row {row} is negative")
    return f"{col_name(col, col_abs)}{'$' if row_abs else ''}{row + 1}"


def absolute_cell(row: int, col: int) -> str:
    """(0, 1) -> '$B$1'."""
    return cell(row, col, True, True)


def quote_sheet(name: str) -> str:
    """A sheet name as a formula reference needs it before '!': quoted where Excel requires."""
    if name.startswith("'"):
        return name  # already quoted
    upper = name.upper()
    quote = bool(_NEEDS_QUOTES.search(name) or _LEADING.search(name))
    if not quote:
        m = _A1_NAME.match(upper)
        if m:
            quote = col_index(m.group(1)) < MAX_COLS and 0 < int(m.group(2)) <= MAX_ROWS
        elif (r := _R1.match(upper)) is not None:
            quote = 0 < int(r.group(1)) <= MAX_ROWS
        elif (c := _C1.match(upper)) is not None:
            quote = 0 < int(c.group(1)) <= MAX_COLS
        else:
            quote = upper in ("R", "C", "RC")
    return "'" + name.replace("'", "''") + "'" if quote else name


def sheet_cell(sheet: str, row: int, col: int) -> str:
    """An absolute, sheet-qualified address: 'My shapes'!$B$7."""
    return f"{quote_sheet(sheet)}!{absolute_cell(row, col)}"


def sheet_range(sheet: str, row1: int, col1: int, row2: int, col2: int) -> str:
    """An absolute, sheet-qualified range: Matmul!$A$6:$A$17."""
    return f"{quote_sheet(sheet)}!{absolute_cell(row1, col1)}:{absolute_cell(row2, col2)}"


__all__ = ["MAX_COLS", "MAX_ROWS", "absolute_cell", "cell", "col_index", "col_name",
           "quote_sheet", "sheet_cell", "sheet_range"]
