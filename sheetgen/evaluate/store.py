"""Column-wise cell storage: every column of every sheet is three parallel arrays.

Rows are indexed directly (row 5 is index 5), so a same-row reference for a run of rows is a
plain NumPy slice -- no per-cell Python objects for numbers.
"""

from __future__ import annotations

import numpy as np

from .values import EMPTY


class Column:
    """kind/num/obj arrays of one column; obj is created on the first text or error."""

    __slots__ = ("kind", "num", "obj")

    def __init__(self, cap: int) -> None:
        self.kind = np.zeros(cap, dtype=np.int8)
        self.num = np.zeros(cap, dtype=np.float64)
        self.obj: np.ndarray | None = None

    def ensure_obj(self) -> np.ndarray:
        if self.obj is None:
            self.obj = np.full(self.kind.shape[0], None, dtype=object)
        return self.obj


class SheetStore:
    """All columns of one sheet, each `cap` long (max row + 1)."""

    __slots__ = ("cap", "cols", "name")

    def __init__(self, name: str, cap: int) -> None:
        self.name = name
        self.cap = cap
        self.cols: dict[int, Column] = {}

    def column(self, col: int, create: bool = False) -> Column | None:
        c = self.cols.get(col)
        if c is None and create:
            c = self.cols[col] = Column(self.cap)
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
