"""Evaluate a workbook's formulas: load the cells, group, compile, order, then evaluate.

The pieces live in modules named for them: allocation.py (stores within the cell budgets),
grouping.py (shifted-copy runs), compiler.py (parse once, names substituted), ordering.py
(dependencies first) and cellwise.py (groups that read themselves, cycle detection). This
module runs them and evaluates each group with NumPy over all its rows at once, in chunks
that bound the memory a range argument takes.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

import numpy as np

from sheetgen.errors import WorkbookError

from .allocation import allocate, check_budget, load_shared, load_texts, load_values
from .cellwise import CellWalk
from .compiler import Compiler
from .evaluator import Ctx, Rowwise, ev, implicit_intersection
from .functions import Unsupported
from .grouping import Group, group_formulas
from .limits import LimitExceeded
from .ordering import order_groups, reads_itself
from .reader import RawWorkbook
from .skipped import Skipped
from .store import Book, Column
from .values import EMPTY, NUM
from .vec import Vec, concat_rows

_CHUNK_CELLS = 4_000_000  # bound on rows x range-width held at once (SUMPRODUCT arrays)


class Engine:
    """Holds the stores and texts of a workbook and evaluates every formula."""

    def __init__(self, raw: RawWorkbook, lenient: bool = False) -> None:
        """lenient: a formula the evaluator cannot handle (and every formula that reads it)
        is left "not evaluated" (see `skipped.cells`) instead of failing the workbook."""
        self.lenient = lenient
        self.book = Book()
        self.skipped = Skipped(self.book)  # lenient mode's not-evaluated cells
        self.names = dict(raw.names)
        self.local_names = raw.local_names
        self.sheet_names = [s.name for s in raw.sheets]
        self.groups: list[Group] = []
        cells = spans = 0
        for sh in raw.sheets:
            f_rows = np.asarray(sh.f_rows, dtype=np.int64)
            f_cols = np.asarray(sh.f_cols, dtype=np.int64)
            all_rows = np.concatenate([f_rows, *(r.rows for r in sh.shared)])
            all_cols = np.concatenate([f_cols, *(np.full(len(r.rows), r.col, np.int64)
                                                 for r in sh.shared)])
            store, n_cells = allocate(sh, all_rows, all_cols)
            del all_rows, all_cols
            cells += n_cells
            spans += sum(c.hi - c.lo for c in store.cols.values())
            check_budget(cells, spans)
            self.book.add(store)
            load_values(store, sh)
            load_texts(store, f_rows, f_cols, sh.f_texts)
            load_shared(store, sh.shared)
            self.groups.extend(group_formulas(sh.name, f_rows, f_cols, sh.f_texts, lenient))
            # a shared formula's cells are one group by construction: no keys to compute
            self.groups.extend(Group(sh.name, r.col, r.rows, r.text_at(int(r.rows[0])),
                                     origin=int(r.rows[0])) for r in sh.shared)
        self.n_formulas = sum(len(sh.f_texts) + sum(len(r.rows) for r in sh.shared)
                              for sh in raw.sheets)

    def compile(self) -> None:
        """Parse each group's formula once, resolve names, note what it reads."""
        compiler = Compiler(self.names, self.local_names, self.lenient)
        for g in self.groups:
            compiler.compile_group(g)

    def order(self) -> list[list[int]]:
        """Strongly connected components of the group graph, dependencies first."""
        return order_groups(self.groups)

    # ---- evaluating ----------------------------------------------------------------------
    def run(self, vectorize: bool = True,
            progress: Callable[[int, int], None] | None = None) -> None:  # fmt: skip
        """Evaluate every formula cell into the stores."""
        with _deep_stack():
            self._run(vectorize, progress)

    def _run(self, vectorize: bool, progress: Callable[[int, int], None] | None) -> None:
        self.compile()
        sccs = self.order()
        total, done = self.n_formulas, 0
        self._walk = CellWalk(self.groups, self.book, self._eval_rows)
        for comp in sccs:
            g0 = self.groups[comp[0]]
            if self.lenient and self._skip(comp):
                done += sum(len(self.groups[i].rows) for i in comp)
                continue
            if vectorize and len(comp) == 1 and not reads_itself(g0):
                self._eval_group(g0)
            else:
                self._eval_cells(comp)
            if self.skipped:
                self._taint(comp)
            done += sum(len(self.groups[i].rows) for i in comp)
            if progress is not None:
                progress(done, total)

    def _skip(self, comp: list[int]) -> bool:
        """Lenient mode: a component holding a formula that cannot be compiled is skipped."""
        why = next((self.groups[i].skipped for i in comp if self.groups[i].skipped), None)
        if why is None:
            return False
        for i in comp:
            self._mark_skipped(self.groups[i], why, self.groups[i].rows)
        return True

    def _mark_skipped(self, g: Group, why: str, rows: np.ndarray) -> None:
        g.skipped = g.skipped or why
        self.skipped.mark(g.sheet, g.col, rows, why)

    def _taint(self, comp: list[int]) -> None:
        """Lenient mode: the rows of an evaluated component that read a not-evaluated cell
        are not evaluated either (cell by cell, through the intervals each row reads)."""
        for gid in comp:
            g = self.groups[gid]
            for j, why in self.skipped.readers(g.rows, g.refs):
                self._mark_skipped(g, why, g.rows[j : j + 1])

    def _evaluate_rows(self, g: Group, rows: np.ndarray) -> Vec:
        assert g.ast is not None
        try:
            if g.moving and len(rows) > 1:
                raise Rowwise
            step = max(1, _CHUNK_CELLS // g.width)
            if len(rows) <= step:
                return ev(g.ast, Ctx(self.book, rows, g.col))
            return _stack([ev(g.ast, Ctx(self.book, rows[i:i + step], g.col))
                           for i in range(0, len(rows), step)])  # fmt: skip
        except Rowwise:
            return concat_rows(
                [ev(g.ast, Ctx(self.book, rows[i : i + 1], g.col)) for i in range(len(rows))]
            )
        except Unsupported as exc:
            if not self.lenient:
                raise WorkbookError(f"{exc} in {g.label(int(rows[0]))}") from None
            raise _Skip(str(exc)) from None
        except LimitExceeded as exc:
            raise WorkbookError(f"{exc} in {g.label(int(rows[0]))}") from None
        except RecursionError:
            raise WorkbookError(f"the formula in {g.label(int(rows[0]))} nests too deeply "
                                "to evaluate") from None

    def _write(self, g: Group, rows: np.ndarray, v: Vec) -> None:
        n = len(rows)
        if v.shape[1] != 1 and v.anchor is not None and v.dims is not None:
            v = implicit_intersection(v, rows, g.col)
        if v.shape[1] != 1:
            if self.lenient:
                raise _Skip("a range is used where a single value is expected")
            raise WorkbookError(
                f"a range is used where a single value is expected in {g.label(int(rows[0]))}"
            )
        store = self.book.get(g.sheet)
        assert store is not None
        column: Column = store.cols[g.col]  # allocated over every formula row at load
        kinds = np.broadcast_to(v.kinds(), (n, 1))[:, 0]
        num = np.broadcast_to(v.num, (n, 1))[:, 0]
        empty = kinds == EMPTY
        if empty.any():  # a formula showing an empty cell's value shows 0
            kinds = np.where(empty, np.int8(NUM), kinds)
            num = np.where(empty, 0.0, num)
        at = rows - column.lo
        column.kind[at] = kinds
        column.num[at] = num
        if v.obj is not None:
            column.ensure_obj()[at] = np.broadcast_to(v.obj, (n, 1))[:, 0]
        elif column.obj is not None:
            column.obj[at] = None

    def _eval_rows(self, g: Group, rows: np.ndarray) -> None:
        self._write(g, rows, self._evaluate_rows(g, rows))

    def _eval_group(self, g: Group) -> None:
        try:
            self._eval_rows(g, g.rows)
        except _Skip as exc:
            self._mark_skipped(g, str(exc), g.rows)

    def _eval_cells(self, comp: list[int]) -> None:
        """Cell-by-cell evaluation with a depth-first walk (true cycle detection)."""
        try:
            self._walk.run(comp)
        except (_Skip, WorkbookError) as exc:  # lenient: the component is skipped
            if not self.lenient:
                raise
            for i in comp:
                self._mark_skipped(self.groups[i], str(exc), self.groups[i].rows)


class _Skip(Exception):
    """Lenient mode: this group cannot be evaluated (the message says why)."""


def _stack(parts: list[Vec]) -> Vec:
    n = sum(p.shape[0] for p in parts)
    kinds = np.concatenate([np.broadcast_to(p.kinds(), (p.shape[0], 1)) for p in parts])
    nums = np.concatenate([np.broadcast_to(p.num, (p.shape[0], 1)) for p in parts])
    obj = None
    if any(p.obj is not None for p in parts):
        obj = np.concatenate([np.broadcast_to(p.objs(), (p.shape[0], 1)) for p in parts])
    assert kinds.shape[0] == n
    return Vec(kinds, nums, obj)


@contextlib.contextmanager
def _deep_stack() -> Iterator[None]:
    """Room for the recursive parser and evaluator on formulas within Excel's limits: 8,192
    characters allow a 4,000-term operator chain, and names nest such formulas. Python 3.11+
    runs Python-to-Python calls without C recursion, so a higher limit is safe."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, _RECURSION_LIMIT))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


_RECURSION_LIMIT = 100_000
