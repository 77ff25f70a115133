"""Cell-by-cell evaluation of the groups that may read themselves, with cycle detection.

Each cell still to be evaluated is marked pending; a depth-first walk from each pending cell
evaluates its pending dependencies first. Reaching a cell already on the walk's stack is a
true circular reference, reported with the path of cells that closes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from sheetgen.errors import WorkbookError

from .grouping import Group
from .store import Book

CellKey = tuple[str, int]  # (SHEET, col)


class _Window:
    """A per-row array over one column's rows lo..hi-1, indexed by sheet row."""

    __slots__ = ("arr", "hi", "lo")

    def __init__(self, lo: int, hi: int, fill: Any) -> None:
        self.lo, self.hi = lo, hi
        self.arr = np.full(hi - lo, fill, dtype=bool if isinstance(fill, bool) else np.int64)

    def __getitem__(self, row: Any) -> Any:
        return self.arr[row - self.lo]

    def __setitem__(self, row: Any, value: Any) -> None:
        self.arr[row - self.lo] = value


class CellWalk:
    """Pending cells of every component handed to it so far, across one evaluation run.

    evaluate(g, rows) evaluates and stores one cell of group g; its exceptions propagate.
    """

    def __init__(self, groups: list[Group], book: Book,
                 evaluate: Callable[[Group, np.ndarray], None]) -> None:  # fmt: skip
        self.groups = groups
        self.book = book
        self.evaluate = evaluate
        self._pending: dict[CellKey, _Window] = {}
        self._gid_of: dict[CellKey, _Window] = {}

    def run(self, comp: list[int]) -> None:
        """Evaluate every cell of the component's groups, dependencies first."""
        pending, gid_of = self._pending, self._gid_of
        for gid in comp:
            g = self.groups[gid]
            key = (g.sheet.upper(), g.col)
            column = self.book.get(g.sheet).cols[g.col]  # type: ignore[union-attr]
            if key not in pending:
                pending[key] = _Window(column.lo, column.hi, False)
                gid_of[key] = _Window(column.lo, column.hi, -1)
            pending[key][g.rows] = True
            gid_of[key][g.rows] = gid
        for gid in comp:
            g = self.groups[gid]
            key = (g.sheet.upper(), g.col)
            for row in g.rows.tolist():
                if pending[key][row]:
                    self._dfs(key, row)

    def _cell_deps(self, key: CellKey, row: int) -> Iterator[tuple[CellKey, int]]:
        g = self.groups[int(self._gid_of[key][row])]
        for r in g.refs:
            sheet = r[1].upper()
            if r[0] == "ref":
                lo = hi = r[2] if r[3] else r[2] + row
                c1 = c2 = r[4]
            else:
                a = r[2] if r[3] else r[2] + row
                b = r[5] if r[6] else r[5] + row
                lo, hi, c1, c2 = min(a, b), max(a, b), r[4], r[7]
            for c in range(c1, min(c2, 16384) + 1):
                pend = self._pending.get((sheet, c))
                if pend is None:
                    continue
                lo_c, hi_c = max(lo, pend.lo), min(hi, pend.hi - 1)
                if lo_c > hi_c:
                    continue
                window = pend.arr[lo_c - pend.lo : hi_c + 1 - pend.lo]
                for off in np.flatnonzero(window).tolist():
                    yield (sheet, c), lo_c + off

    def _dfs(self, key: CellKey, row: int) -> None:
        on_stack: set[tuple[CellKey, int]] = {(key, row)}
        stack = [(key, row, self._cell_deps(key, row))]
        while stack:
            k, r, it = stack[-1]
            for dep in it:
                if not self._pending[dep[0]][dep[1]]:
                    continue
                if dep in on_stack:
                    g = self.groups[int(self._gid_of[dep[0]][dep[1]])]
                    path = [self.groups[int(self._gid_of[kk][rr])].label(rr)
                            for kk, rr, _ in stack]  # fmt: skip
                    start = path.index(g.label(dep[1])) if g.label(dep[1]) in path else 0
                    cycle = " -> ".join([*path[start:], g.label(dep[1])])
                    raise WorkbookError(f"circular reference at {g.label(dep[1])} ({cycle})")
                on_stack.add(dep)
                stack.append((dep[0], dep[1], self._cell_deps(dep[0], dep[1])))
                break
            else:
                g = self.groups[int(self._gid_of[k][r])]
                self.evaluate(g, np.array([r], dtype=np.int64))
                self._pending[k][r] = False
                on_stack.discard((k, r))
                stack.pop()
