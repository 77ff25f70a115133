"""A1 reference helpers shared by the reader, the parser and the public API."""

from __future__ import annotations

import re

from sheetgen.errors import WorkbookError

_A1 = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d+)$")
_BARE_SHEET = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def col_to_index(letters: str) -> int:
    """'A' -> 1, 'AB' -> 28."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n


def index_to_col(n: int) -> str:
    """1 -> 'A', 28 -> 'AB'."""
    out = ""
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return out


def parse_a1(cell: str, sheet: str = "?") -> tuple[int, int]:
    """'B5' or '$B$5' -> (row 5, col 2); a bad address is the caller's mistake, said plainly."""
    m = _A1.match(cell.strip())
    if not m:
        raise WorkbookError(f"not a cell address: {sheet}!{cell}")
    return int(m.group(2)), col_to_index(m.group(1))


def parse_range(ref: str, sheet: str = "?") -> tuple[int, int, int, int]:
    """'A5:C10' -> (r1, c1, r2, c2), normalised so r1<=r2 and c1<=c2."""
    parts = ref.split(":")
    if len(parts) == 1:
        r, c = parse_a1(parts[0], sheet)
        return r, c, r, c
    if len(parts) != 2:
        raise WorkbookError(f"not a range: {sheet}!{ref}")
    r1, c1 = parse_a1(parts[0], sheet)
    r2, c2 = parse_a1(parts[1], sheet)
    return min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)


def a1(row: int, col: int) -> str:
    """(5, 2) -> 'B5'."""
    return f"{index_to_col(col)}{row}"


def quote_sheet(sheet: str) -> str:
    """The sheet name as a message shows it before '!': quoted unless a plain identifier."""
    return sheet if _BARE_SHEET.fullmatch(sheet) else f"'{sheet}'"
