"""Group formula cells into shifted-copy runs, order the runs, and evaluate them.

Why groups: a generated column holds one formula shifted row by row. Splitting the text on
digit runs gives a skeleton; the digits that are relative row numbers are replaced by their
offset from the cell's row, so every cell of such a column gets the same key at the cost of
two C-level regex calls. Each distinct key is parsed once and evaluated for all its rows with
NumPy. Groups are ordered by the row intervals they read; a group that (maybe) reads itself,
or a cycle of groups, is evaluated cell by cell with a depth-first walk that finds true
circular references.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sheetgen.errors import WorkbookError

from .evaluator import Ctx, Rowwise, ev, implicit_intersection
from .functions import ARITY, FUNCTIONS, PREFIX_AGGREGATES, Unsupported, is_moving_column
from .limits import (
    MAX_CELLS,
    MAX_COL,
    MAX_EXPANDED_NODES,
    MAX_ROW,
    MAX_SPAN_CELLS,
    LimitExceeded,
    check_formula,
)
from .parser import FormulaSyntaxError, Node, parse
from .reader import RawSheet, RawWorkbook
from .refs import a1, index_to_col
from .skipped import Skipped
from .store import Book, Column, SheetStore
from .tokenizer import OffGridError, tokenize
from .values import BOOL, EMPTY, ERR, NUM, STR, ExcelError
from .vec import Vec, concat_rows

_DIGITS = re.compile(r"([1-9]\d*)")  # no leading zeros: "05" stays literal
_CHUNK_CELLS = 4_000_000  # bound on rows x range-width held at once (SUMPRODUCT arrays)


class _Codes(dict[str, int]):
    """Dense integer code per distinct key, assigned on first sight."""

    def __missing__(self, key: str) -> int:
        code = self[key] = len(self)
        return code


@dataclass
class Group:
    """Cells of one column of one sheet sharing a canonical formula."""

    sheet: str
    col: int
    rows: Any  # list[int] while collecting, then a sorted int64 array
    text: str  # formula of the first (origin) row
    origin: int = 0
    ast: Node | None = None
    refs: list[Node] = field(default_factory=list)
    width: int = 1
    moving: bool = False
    skipped: str | None = None  # why the group is not evaluated (lenient engines only)

    def label(self, row: int | None = None) -> str:
        return f"{_q(self.sheet)}!{a1(self.origin if row is None else row, self.col)}"


def _q(sheet: str) -> str:
    return sheet if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", sheet) else f"'{sheet}'"


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
        self._name_cache: dict[tuple[str, str], Node] = {}
        cells = spans = 0
        for sh in raw.sheets:
            f_rows = np.asarray(sh.f_rows, dtype=np.int64)
            f_cols = np.asarray(sh.f_cols, dtype=np.int64)
            store, n_cells = _allocate(sh, f_rows, f_cols)
            cells += n_cells
            spans += sum(c.hi - c.lo for c in store.cols.values())
            _check_budget(cells, spans)
            self.book.add(store)
            self._load_values(store, sh)
            texts = np.empty(len(sh.f_texts), dtype=object)
            texts[:] = sh.f_texts
            for c, idx in _split_by(f_cols):
                column = store.cols[c]
                column.texts = np.full(column.hi - column.lo, None, dtype=object)
                column.texts[f_rows[idx] - column.lo] = texts[idx]
            self._group(sh.name, f_rows, f_cols, sh.f_texts)
        self.n_formulas = sum(len(sh.f_texts) for sh in raw.sheets)

    # ---- loading -------------------------------------------------------------------------
    @staticmethod
    def _load_values(store: SheetStore, sh: Any) -> None:
        for c, idx in _split_by(np.asarray(sh.n_cols, dtype=np.int64)):
            column = store.cols[c]
            rows = sh.n_rows[idx] - column.lo
            column.kind[rows] = NUM
            column.num[rows] = sh.n_vals[idx]
        for r0, c, v in zip(sh.v_rows, sh.v_cols, sh.v_vals, strict=True):
            column = store.cols[c]
            r = r0 - column.lo
            if isinstance(v, bool):
                column.kind[r] = BOOL
                column.num[r] = float(v)
            elif isinstance(v, float | int):
                column.kind[r] = NUM
                column.num[r] = v
            elif isinstance(v, ExcelError):
                column.kind[r] = ERR
                column.num[r] = np.nan
                column.ensure_obj()[r] = v
            elif isinstance(v, str):
                column.kind[r] = STR
                column.num[r] = np.nan
                column.ensure_obj()[r] = v

    def _group(self, sheet: str, rows: np.ndarray, cols: np.ndarray, texts: list[str]) -> None:
        """Fast pass: key = text with the row number replaced, validated once per key.

        ``text.replace(str(row), X)`` is one C call. A key is trusted only if, in its first
        cell, the replaced places are exactly the relative same-row references; then every
        cell with that key (same column) is a shifted copy. Other cells -- and keys held by a
        single cell, as in running totals -- go through the exact digit-run canonical form.
        """
        if not texts:
            return
        mark = "\x01"
        row_list = rows.tolist()
        # map() over builtins keeps these per-cell steps in C
        keys = list(map(str.replace, texts, map(str, row_list), itertools.repeat(mark)))
        codes = np.fromiter(map(_Codes().__getitem__, keys), np.int64, len(keys))
        combined = codes * (int(cols.max()) + 1) + cols
        slow: list[np.ndarray] = []
        for _, idx in _split_by(combined):
            i0 = int(idx[0])
            if len(idx) < 2 or not self._key_valid(texts[i0], row_list[i0], keys[i0]):
                slow.append(idx)
                continue
            g = Group(sheet, int(cols[i0]), rows[idx], texts[i0], origin=row_list[i0])
            self.groups.append(g)
        if slow:
            rest = np.sort(np.concatenate(slow))
            self._group_exact(sheet, rows[rest], cols[rest], [texts[i] for i in rest.tolist()])

    def _key_valid(self, text: str, row: int, key: str) -> bool:
        try:
            _, spans = tokenize(text[1:])
        except FormulaSyntaxError:
            return False
        own = str(row)
        out, pos = [], 0
        for a, b in spans:
            if text[a + 1 : b + 1] == own:
                out.append(text[pos : a + 1])
                out.append("\x01")
                pos = b + 1
        out.append(text[pos:])
        return "".join(out) == key

    def _group_exact(self, sheet: str, rows: np.ndarray, cols: np.ndarray,
                     texts: list[str]) -> None:  # fmt: skip
        roles: dict[str, tuple[int, ...]] = {}
        groups: dict[tuple[Any, ...], Group] = {}
        split = _DIGITS.split
        for r, c, t in zip(rows.tolist(), cols.tolist(), texts, strict=True):
            parts = split(t)
            skel = "\x00".join(parts[0::2])
            rel = roles.get(skel)
            if rel is None:
                rel = roles[skel] = self._roles(sheet, r, c, t)
            digits = parts[1::2]
            for i in rel:
                digits[i] = int(digits[i]) - r
            key = (c, skel, *digits)
            g = groups.get(key)
            if g is None:
                groups[key] = Group(sheet, c, [r], t, origin=r)
            else:
                g.rows.append(r)
        for g in groups.values():
            g.rows = np.asarray(g.rows, dtype=np.int64)
            self.groups.append(g)

    def _roles(self, sheet: str, row: int, col: int, text: str) -> tuple[int, ...]:
        """Indices of the digit runs of `text` that are relative row numbers."""
        try:
            _, spans = tokenize(text[1:])
        except FormulaSyntaxError as exc:
            if self.lenient and not isinstance(exc, OffGridError):
                return ()  # compile() reports the cell as not evaluated
            where = f"{_q(sheet)}!{a1(row, col)}"
            raise WorkbookError(f"cannot parse formula in {where}: {exc}") from None
        rel = {(a + 1, b + 1) for a, b in spans}
        return tuple(i for i, m in enumerate(_DIGITS.finditer(text)) if m.span() in rel)

    # ---- compiling -----------------------------------------------------------------------
    def _resolve_name(self, sheet: str, name: str, depth: int = 0) -> Node:
        key = (sheet, name)
        hit = self._name_cache.get(key)
        if hit is not None:
            return hit
        target = self.local_names.get((sheet, name))
        if target is None:
            target = next((t for n, t in self.names.items() if n.upper() == name), None)
        if target is None or depth > 10:
            node: Node = ("err", "#NAME?")
        else:
            try:
                check_formula(target, f"the defined name {name}")
                parsed = parse(target, sheet, 0)
                node = self._compile_node(parsed, sheet, "", depth + 1, absolute=True)
            except (FormulaSyntaxError, Unsupported):
                node = ("err", "#NAME?")
        self._name_cache[key] = node
        return node

    def _compile_node(self, node: Node, sheet: str, where: str, depth: int = 0,
                      absolute: bool = False) -> Node:  # fmt: skip
        tag = node[0]
        if tag == "name":
            return self._resolve_name(sheet, node[1], depth)
        if tag == "ref" and absolute:
            return ("ref", node[1], node[2], True, node[4])
        if tag == "range" and absolute:
            return ("range", node[1], node[2], True, node[4], node[5], True, node[7])
        if tag == "call":
            fname = node[1]
            if fname not in FUNCTIONS:
                raise Unsupported(f"unsupported function {fname}")
            lo, hi = ARITY[fname]
            if not lo <= len(node[2]) <= hi:
                raise Unsupported(f"{fname} takes {lo} to {hi} arguments, got {len(node[2])}")
            args = [self._compile_node(a, sheet, where, depth, absolute) for a in node[2]]
            return ("call", fname, args)
        if tag == "bin":
            return ("bin", node[1], self._compile_node(node[2], sheet, where, depth, absolute),
                    self._compile_node(node[3], sheet, where, depth, absolute))  # fmt: skip
        if tag in ("neg", "pct"):
            return (tag, self._compile_node(node[1], sheet, where, depth, absolute))
        return node

    def compile(self) -> None:
        """Parse each group's formula once, resolve names, note what it reads."""
        for g in self.groups:
            where = g.label()
            try:
                check_formula(g.text, where)
                ast = parse(g.text, g.sheet, g.origin)
                g.ast = self._compile_node(ast, g.sheet, where)
                _check_expansion(g.ast, where)
            except FormulaSyntaxError as exc:
                if not self.lenient or isinstance(exc, OffGridError):
                    raise WorkbookError(f"cannot parse formula in {where}: {exc}") from None
                g.skipped, g.ast = f"cannot parse formula: {exc}", ("num", 0.0)
            except Unsupported as exc:
                if not self.lenient:
                    raise WorkbookError(f"{exc} in {where}") from None
                g.skipped, g.ast = str(exc), ("num", 0.0)
            except RecursionError:
                raise WorkbookError(f"the formula in {where} nests too deeply to "
                                    "evaluate") from None
            if g.ast[0] == "bin" and g.ast[1] in ("+", "-"):
                g.ast = ("final", g.ast)  # Excel's near-zero rule applies to the last step
            g.refs = list(_iter_refs(g.ast))
            g.moving = _needs_rowwise(g.ast)
            for r in g.refs:
                if r[0] == "range" and r[3] and r[6] and r[5] < MAX_ROW:
                    g.width = max(g.width, (r[5] - r[2] + 1) * (r[7] - r[4] + 1))

    # ---- ordering ------------------------------------------------------------------------
    def _read_intervals(self, g: Group) -> Iterator[tuple[str, int, int, int]]:
        lo_row, hi_row = int(g.rows[0]), int(g.rows[-1])
        for r in g.refs:
            sheet = r[1].upper()
            if r[0] == "ref":
                row = r[2] if r[3] else None
                lo, hi = (row, row) if row is not None else (lo_row + r[2], hi_row + r[2])
                yield sheet, r[4], lo, hi
            else:
                lo1 = r[2] if r[3] else lo_row + r[2]
                hi1 = r[2] if r[3] else hi_row + r[2]
                lo2 = r[5] if r[6] else lo_row + r[5]
                hi2 = r[5] if r[6] else hi_row + r[5]
                for c in range(r[4], min(r[7], 16384) + 1):
                    yield sheet, c, min(lo1, lo2), max(hi1, hi2)

    def order(self) -> list[list[int]]:
        """Strongly connected components of the group graph, dependencies first."""
        by_col: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
        for gid, g in enumerate(self.groups):
            by_col.setdefault((g.sheet.upper(), g.col), []).append(
                (int(g.rows[0]), int(g.rows[-1]), gid)
            )
        index: dict[tuple[str, int], tuple[list[int], list[tuple[int, int, int]], list[int]]] = {}
        for key, items in by_col.items():
            items.sort()
            prefix_hi, m = [], -1
            for _lo, hi, _ in items:
                m = max(m, hi)
                prefix_hi.append(m)
            index[key] = ([lo for lo, _, _ in items], items, prefix_hi)
        cols_with_groups = {k[1] for k in index}
        edges: list[list[int]] = []
        for g in self.groups:
            deps: set[int] = set()
            for sheet, col, lo, hi in self._read_intervals(g):
                if col not in cols_with_groups:
                    continue
                entry = index.get((sheet, col))
                if entry is None:
                    continue
                los, items, prefix_hi = entry
                j = bisect.bisect_right(los, hi) - 1
                while j >= 0 and prefix_hi[j] >= lo:
                    if items[j][1] >= lo:
                        deps.add(items[j][2])
                    j -= 1
            edges.append(sorted(deps))
        self._edges = edges
        return _tarjan(edges)

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
        self._pending: dict[tuple[str, int], _Window] = {}
        self._gid_of: dict[tuple[str, int], _Window] = {}
        for comp in sccs:
            g0 = self.groups[comp[0]]
            if self.lenient and self._skip(comp):
                done += sum(len(self.groups[i].rows) for i in comp)
                continue
            if vectorize and len(comp) == 1 and not self._reads_itself(comp[0]):
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

    def _reads_itself(self, gid: int) -> bool:
        g = self.groups[gid]
        lo_g, hi_g = int(g.rows[0]), int(g.rows[-1])
        key = g.sheet.upper()
        return any(s == key and c == g.col and lo <= hi_g and hi >= lo_g
                   for s, c, lo, hi in self._read_intervals(g))  # fmt: skip

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

    def _eval_group(self, g: Group) -> None:
        try:
            self._write(g, g.rows, self._evaluate_rows(g, g.rows))
        except _Skip as exc:
            self._mark_skipped(g, str(exc), g.rows)

    def _eval_cells(self, comp: list[int]) -> None:
        """Cell-by-cell evaluation with a depth-first walk (true cycle detection)."""
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
                    try:
                        self._dfs(key, row)
                    except (_Skip, WorkbookError) as exc:  # lenient: the component is skipped
                        if not self.lenient:
                            raise
                        for i in comp:
                            self._mark_skipped(self.groups[i], str(exc), self.groups[i].rows)
                        return

    def _cell_deps(self, key: tuple[str, int], row: int) -> Iterator[tuple[tuple[str, int], int]]:
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

    def _dfs(self, key: tuple[str, int], row: int) -> None:
        on_stack: set[tuple[tuple[str, int], int]] = {(key, row)}
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
                rows = np.array([r], dtype=np.int64)
                self._write(g, rows, self._evaluate_rows(g, rows))
                self._pending[k][r] = False
                on_stack.discard((k, r))
                stack.pop()


class _Skip(Exception):
    """Lenient mode: this group cannot be evaluated (the message says why)."""


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


def _allocate(sh: RawSheet, f_rows: np.ndarray, f_cols: np.ndarray) -> tuple[SheetStore, int]:
    """A store whose columns span exactly their present rows; refuse cells off the grid."""
    rows = np.concatenate([f_rows, np.asarray(sh.n_rows, dtype=np.int64),
                           np.asarray(sh.v_rows, dtype=np.int64)])
    cols = np.concatenate([f_cols, np.asarray(sh.n_cols, dtype=np.int64),
                           np.asarray(sh.v_cols, dtype=np.int64)])
    if len(rows) == 0:
        return SheetStore(sh.name, 2), 0
    off = ~((rows >= 1) & (rows <= MAX_ROW) & (cols >= 1) & (cols <= MAX_COL))
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise WorkbookError(
            f"cell {_q(sh.name)}!{index_to_col(int(cols[i]))}{int(rows[i])} is outside Excel's "
            f"grid ({MAX_ROW:,} rows x {MAX_COL:,} columns)")
    keys, inverse = np.unique(cols, return_inverse=True)
    lo = np.full(len(keys), MAX_ROW + 1, dtype=np.int64)
    hi = np.zeros(len(keys), dtype=np.int64)
    np.minimum.at(lo, inverse, rows)
    np.maximum.at(hi, inverse, rows)
    store = SheetStore(sh.name, int(hi.max()) + 1)
    _check_budget(len(rows), int((hi - lo + 1).sum()))
    for c, a, b in zip(keys.tolist(), lo.tolist(), hi.tolist(), strict=True):
        store.add_column(c, a, b + 1)
    return store, len(rows)


def _check_budget(cells: int, spans: int) -> None:
    if cells > MAX_CELLS:
        raise WorkbookError(f"the workbook has more than {MAX_CELLS:,} cells, sheetgen's "
                            "budget for evaluating one workbook; split it")
    if spans > MAX_SPAN_CELLS:
        raise WorkbookError(
            f"the workbook's columns span {spans:,} cells from their first to their last "
            f"used row, more than sheetgen's budget of {MAX_SPAN_CELLS:,}; remove stray "
            "cells far below the data")


def _check_expansion(ast: Node, where: str) -> None:
    """Refuse a formula whose defined names fan out (each name's tree is shared, so the
    compiled formula is a DAG; count its nodes as evaluation would visit them)."""
    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    todo: list[tuple[Node, bool]] = [(ast, False)]
    while todo:  # iterative post-order, memoised by node identity
        node, done = todo.pop()
        key = id(node)
        if key in sizes:
            continue
        kids = _children(node)
        if not done:
            todo.append((node, True))
            todo.extend((k, False) for k in kids if id(k) not in sizes)
            continue
        sizes[key] = 1 + sum(sizes[id(k)] for k in kids)
        depths[key] = 1 + max((depths[id(k)] for k in kids), default=0)
        if sizes[key] > MAX_EXPANDED_NODES:
            raise WorkbookError(
                f"the formula in {where} expands to more than {MAX_EXPANDED_NODES:,} terms "
                "once its defined names are substituted (names that use names many times)")
        if depths[key] > _MAX_DEPTH:
            raise WorkbookError(f"the formula in {where} nests more than {_MAX_DEPTH} levels "
                                "deep once its defined names are substituted")


_MAX_DEPTH = 20_000  # compiled tree depth: the evaluator recurses once or twice per level


def _children(node: Node) -> list[Node]:
    tag = node[0]
    if tag == "call":
        return list(node[2])
    if tag == "bin":
        return [node[2], node[3]]
    if tag in ("neg", "pct", "final"):
        return [node[1]]
    return []


def _split_by(keys: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(key, sorted indices) for each distinct key, in order of first appearance."""
    if len(keys) == 0:
        return
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    cuts = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    chunks = np.split(order, cuts)
    chunks.sort(key=lambda ix: int(ix[0]))
    for ix in chunks:
        yield int(keys[ix[0]]), ix


def _stack(parts: list[Vec]) -> Vec:
    n = sum(p.shape[0] for p in parts)
    kinds = np.concatenate([np.broadcast_to(p.kinds(), (p.shape[0], 1)) for p in parts])
    nums = np.concatenate([np.broadcast_to(p.num, (p.shape[0], 1)) for p in parts])
    obj = None
    if any(p.obj is not None for p in parts):
        obj = np.concatenate([np.broadcast_to(p.objs(), (p.shape[0], 1)) for p in parts])
    assert kinds.shape[0] == n
    return Vec(kinds, nums, obj)


def _needs_rowwise(node: Node) -> bool:
    """True if a moving range appears where only a single row can make it concrete."""
    tag = node[0]
    if tag == "range":
        return not (node[3] and node[6])
    if tag == "call":
        prefix_ok = node[1] in PREFIX_AGGREGATES
        return any(not (prefix_ok and is_moving_column(a)) and _needs_rowwise(a) for a in node[2])
    if tag == "bin":
        return _needs_rowwise(node[2]) or _needs_rowwise(node[3])
    if tag in ("neg", "pct", "final"):
        return _needs_rowwise(node[1])
    return False


def _iter_refs(node: Node) -> Iterator[Node]:
    """Every ref/range node, left to right (iterative: operator chains can be deep)."""
    todo = [node]
    while todo:
        n = todo.pop()
        tag = n[0]
        if tag in ("ref", "range"):
            yield n
        elif tag == "call":
            todo.extend(reversed(n[2]))
        elif tag == "bin":
            todo.append(n[3])
            todo.append(n[2])
        elif tag in ("neg", "pct", "final"):
            todo.append(n[1])


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


def _tarjan(edges: list[list[int]]) -> list[list[int]]:
    """Iterative Tarjan: SCCs in an order where every SCC follows those it depends on."""
    n = len(edges)
    index = [-1] * n
    low = [0] * n
    on = [False] * n
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on[v] = True
            recurse = False
            for j in range(i, len(edges[v])):
                w = edges[v][j]
                if index[w] == -1:
                    work.append((v, j + 1))
                    work.append((w, 0))
                    recurse = True
                    break
                if on[w]:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on[w] = False
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return out
