"""Column-wise cell storage: every column of every sheet is three parallel arrays.

A column is allocated from its first to its last present row (its window), never from row 1
to the sheet's last row, so one cell at the bottom of each of 16,384 columns costs 16,384
cells, not 17 billion (``<dimension>`` is never consulted). Within a window, row r is index
``r - lo``, so a same-row reference for a run of rows is a plain NumPy slice -- no per-cell
Python objects for numbers.
"""

from __future__ import annotations

import numpy as np

from .values import EMPTY


class Column:
    """kind/num/obj arrays of rows lo..hi-1; obj is created on the first text or error;
    texts holds formula text ('=...') where the column has formulas."""

    __slots__ = ("hi", "kind", "lo", "num", "obj", "texts")

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        self.kind = np.zeros(hi - lo, dtype=np.int8)
        self.num = np.zeros(hi - lo, dtype=np.float64)
        self.obj: np.ndarray | None = None
        self.texts: np.ndarray | None = None

    def ensure_obj(self) -> np.ndarray:
        if self.obj is None:
            self.obj = np.full(self.kind.shape[0], None, dtype=object)
        return self.obj

    def holds(self, row: int) -> bool:
        return self.lo <= row < self.hi


class SheetStore:
    """All columns of one sheet; `cap` is the last present row + 1, `max_col` the last
    present column."""

    __slots__ = ("cap", "cols", "max_col", "name")

    def __init__(self, name: str, cap: int, max_col: int = 0) -> None:
        self.name = name
        self.cap = cap
        self.max_col = max_col
        self.cols: dict[int, Column] = {}

    def column(self, col: int, create: bool = False) -> Column | None:
        c = self.cols.get(col)
        if c is None and create:
            c = self.cols[col] = Column(1, self.cap)
        return c

    def add_column(self, col: int, lo: int, hi: int) -> Column:
        """Allocate column `col` for rows lo..hi-1 (the engine knows every present row)."""
        c = self.cols[col] = Column(lo, hi)
        self.max_col = max(self.max_col, col)
        return c


class Book:
    """Every sheet's store, looked up case-insensitively as Excel does."""

    __slots__ = ("by_upper", "sheets")

    def __init__(self) -> None:
        self.sheets: dict[str, SheetStore] = {}
        self.by_upper: dict[str, SheetStore] = {}

    def add(self, store: SheetStore) -> None:
        self.sheets[store.name] = store
        self.by_upper[store.name.upper()] = store

    def get(self, name: str) -> SheetStore | None:
        s = self.sheets.get(name)
        return s if s is not None else self.by_upper.get(name.upper())


__all__ = ["EMPTY", "Book", "Column", "SheetStore"]
