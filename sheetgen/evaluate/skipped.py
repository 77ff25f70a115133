"""Lenient evaluation's bookkeeping: which cells are "not evaluated", why, and which rows of
a formula group read one (so grading fails exactly those rows and goes on with the rest)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .limits import MAX_COL
from .refs import a1, quote_sheet
from .store import Book, Column
from .values import ERR, NotEvaluated


class Skipped:
    """Not-evaluated cells of one workbook: stored as NotEvaluated values, indexed by column."""

    def __init__(self, book: Book) -> None:
        self.book = book
        self.cells: dict[tuple[str, int, int], str] = {}  # (sheet, row, col) -> why
        self._rows: dict[tuple[str, int], np.ndarray] = {}  # (SHEET, col) -> sorted rows
        self._why: dict[tuple[str, int, int], tuple[str, str]] = {}  # (SHEET, row, col)

    def __bool__(self) -> bool:
        return bool(self._rows)

    def mark(self, sheet: str, col: int, rows: np.ndarray, why: str) -> None:
        """Store NotEvaluated(why) in the given rows of a formula column."""
        store = self.book.get(sheet)
        assert store is not None
        column: Column = store.cols[col]  # allocated over every formula row at load
        at = rows - column.lo
        column.kind[at] = ERR
        column.num[at] = np.nan
        column.ensure_obj()[at] = NotEvaluated(why)
        key = (sheet.upper(), col)
        for r in rows.tolist():
            self.cells[(sheet, int(r), col)] = why
            self._why[(key[0], int(r), col)] = (sheet, why)
        old = self._rows.get(key)
        self._rows[key] = rows if old is None else np.union1d(old, rows)

    def readers(self, rows: np.ndarray, refs: list[Any]) -> list[tuple[int, str]]:
        """(index into rows, why) of each formula row whose references (the parser's relative
        ref/range nodes) take in a not-evaluated cell; why names the first such cell."""
        n = len(rows)
        hit = np.zeros(n, dtype=bool)
        first = np.full(n, -1, dtype=np.int64)
        source = np.zeros(n, dtype=np.int64)
        sheets = [""] * n
        for r in refs:
            sheet = r[1].upper()
            if r[0] == "ref":
                lo = hi = np.full(n, r[2]) if r[3] else rows + r[2]
                c1 = c2 = r[4]
            else:
                a = np.full(n, r[2]) if r[3] else rows + r[2]
                b = np.full(n, r[5]) if r[6] else rows + r[5]
                lo, hi, c1, c2 = np.minimum(a, b), np.maximum(a, b), r[4], r[7]
            for c in range(c1, min(c2, MAX_COL) + 1):
                bad = self._rows.get((sheet, c))
                if bad is None:
                    continue
                i = np.minimum(np.searchsorted(bad, lo), len(bad) - 1)
                here = (bad[i] >= lo) & (bad[i] <= hi)
                new = here & ~hit
                first[new], source[new] = bad[i][new], c
                for j in np.flatnonzero(new).tolist():
                    sheets[j] = sheet
                hit |= here
        out = []
        for j in np.flatnonzero(hit).tolist():
            row, col = int(first[j]), int(source[j])
            sheet, why = self._why[(sheets[j], row, col)]
            if not why.startswith("reads "):
                why = f"reads {quote_sheet(sheet)}!{a1(row, col)}: {why}"
            out.append((j, why))
        return out
