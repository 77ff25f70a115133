"""Evaluate one compiled formula (tuple AST) over a set of rows at once.

A Ctx names the rows; a relative reference becomes a slice of a column store, an absolute one
a (1, 1) scalar, a fixed range a (1, m) block. Ranges whose rows move with the formula are
concrete only for a single row, so formulas using them run row by row (Rowwise signal) unless
a function handles them itself.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from sheetgen.core import excel as xn

from .limits import MAX_COL, MAX_RANGE_CELLS, MAX_ROW, LimitExceeded
from .parser import Node
from .refs import index_to_col
from .registry import FUNCTIONS
from .store import Book, SheetStore
from .values import (
    BOOL,
    DIV0,
    EMPTY,
    ERR,
    NAME,
    NUM,
    NUM_ERR,
    REF,
    STR,
    VALUE,
    ExcelError,
    text_key,
)
from .vec import ErrAcc, Vec, array_vec, const, error_vec, finite_check, to_number


class Rowwise(Exception):
    """Raised when a moving range is met while evaluating many rows at once."""


class Ctx:
    """The rows being evaluated: `rows` (sorted int array) and, if contiguous, `start`."""

    __slots__ = ("book", "col", "n", "rows", "start")

    def __init__(self, book: Book, rows: np.ndarray, col: int = 0) -> None:
        self.book = book
        self.col = col  # the formula's column (COLUMN())
        self.rows = rows
        self.n = len(rows)
        contiguous = self.n > 0 and int(rows[-1]) - int(rows[0]) + 1 == self.n
        self.start: int | None = int(rows[0]) if contiguous else None


def take_cells(book: Book, sheet: str, col: int, idx: np.ndarray | slice, n: int) -> Vec:
    """Values of one column at the given rows, shape (n, 1), marked as a reference."""
    store = book.get(sheet)
    if store is None:
        return error_vec(REF, (n, 1))
    column = store.cols.get(col)
    if isinstance(idx, slice):
        a, b = idx.start, idx.stop
        if a >= 1 and column is None:
            return Vec(EMPTY, np.zeros((n, 1)), is_ref=True)
        if a >= 1 and column is not None and column.lo <= a and b <= column.hi:
            a, b = a - column.lo, b - column.lo
            obj = None if column.obj is None else column.obj[a:b].reshape(n, 1)
            return Vec(column.kind[a:b].reshape(n, 1), column.num[a:b].reshape(n, 1), obj,
                       is_ref=True)  # fmt: skip
        idx = np.arange(a, b)
    idx = np.asarray(idx)
    below = idx < 1
    if column is None:
        kind = np.zeros(idx.shape, dtype=np.int8)
        num = np.zeros(idx.shape)
        obj = None
    else:
        inside = (idx >= column.lo) & (idx < column.hi)
        safe = np.where(inside, idx - column.lo, 0)
        kind = np.where(inside, column.kind[safe], EMPTY).astype(np.int8)
        num = np.where(inside, column.num[safe], 0.0)
        obj = None if column.obj is None else np.where(inside, column.obj[safe], None)
    if below.any():
        kind[below] = ERR
        num[below] = np.nan
        obj = np.full(idx.shape, None, dtype=object) if obj is None else obj
        obj[below] = REF
    return Vec(kind.reshape(n, 1), num.reshape(n, 1),
               None if obj is None else obj.reshape(n, 1), is_ref=True)  # fmt: skip


_CLIP_CELLS = 1_000_000  # smaller rectangles are taken whole, exactly as written


def take_block(book: Book, sheet: str, r1: int, c1: int, r2: int, c2: int) -> Vec:
    """A fixed rectangle as a (1, h*w) Vec, row-major, with dims (h, w).

    A whole-column reference, or any rectangle over _CLIP_CELLS, is materialised only where
    it can hold cells: clipped at the sheet's last present row and column (its top-left
    corner stays, so positions within it keep their meaning); ``nominal`` keeps the written
    size for functions that count blanks.
    """
    store = book.get(sheet)
    if store is None or r1 < 1 or c1 < 1 or r2 > MAX_ROW or c2 > MAX_COL:
        return error_vec(REF)
    nominal = (r2 - r1 + 1, c2 - c1 + 1)
    r2, c2 = clip_block(store, r1, c1, r2, c2)
    h, w = r2 - r1 + 1, c2 - c1 + 1
    if h * w > MAX_RANGE_CELLS:
        raise LimitExceeded(
            f"the range {index_to_col(c1)}{r1}:{index_to_col(c2)}{r2} of {sheet} spans "
            f"{h * w:,} cells that may hold values, more than sheetgen's budget of "
            f"{MAX_RANGE_CELLS:,} for one range")
    if w > 1:
        cols = [take_cells(book, sheet, c, slice(r1, r2 + 1), h) for c in range(c1, c2 + 1)]
        kind = np.concatenate([c.kinds() for c in cols], axis=1).reshape(1, h * w)
        num = np.concatenate([c.num for c in cols], axis=1).reshape(1, h * w)
        obj = None
        if any(c.obj is not None for c in cols):
            obj = np.concatenate([c.objs() for c in cols], axis=1).reshape(1, h * w)
        return _nominal(Vec(kind, num, obj, is_ref=True, dims=(h, w)), nominal)
    v = take_cells(book, sheet, c1, slice(r1, r2 + 1), h)
    kind = v.kind.reshape(1, h) if not isinstance(v.kind, int) else v.kind
    obj = None if v.obj is None else v.obj.reshape(1, h)
    return _nominal(Vec(kind, v.num.reshape(1, h), obj, is_ref=True, dims=(h, 1)), nominal)


def clip_block(store: SheetStore, r1: int, c1: int, r2: int, c2: int) -> tuple[int, int]:
    """The (r2, c2) take_block materialises a rectangle to: a whole-column reference ends at
    the sheet's last present row, and a rectangle over _CLIP_CELLS at its last present row
    and column (the top-left corner stays)."""
    if r2 >= MAX_ROW:  # whole-column reference: nothing lives below the last used row
        r2 = max(r1, store.cap - 1)
    if (r2 - r1 + 1) * (c2 - c1 + 1) > _CLIP_CELLS:
        r2 = max(r1, min(r2, store.cap - 1))
        c2 = max(c1, min(c2, store.max_col))
    return r2, c2


def _nominal(v: Vec, nominal: tuple[int, int]) -> Vec:
    v.nominal = nominal
    return v


def blanks_beyond(v: Vec) -> int:
    """Cells of a range reference beyond the part materialised by take_block (all empty)."""
    if v.nominal is None or v.dims is None:
        return 0
    return v.nominal[0] * v.nominal[1] - v.dims[0] * v.dims[1]


def range_bounds(node: Node, ctx: Ctx) -> tuple[int, int, int, int]:
    """Concrete (r1, c1, r2, c2) of a range node; needs a single row if the range moves."""
    _, _sheet, r1, a1, c1, r2, a2, c2 = node
    if not (a1 and a2):
        if ctx.n != 1:
            raise Rowwise
        row = int(ctx.rows[0])
        r1 = r1 if a1 else r1 + row
        r2 = r2 if a2 else r2 + row
        r1, r2 = min(r1, r2), max(r1, r2)
    return r1, c1, r2, c2


def ev(node: Node, ctx: Ctx) -> Vec:
    """Evaluate a node for every row of ctx."""
    tag = node[0]
    if tag == "ref":
        _, sheet, row, absolute, col = node
        if absolute:
            return take_cells(ctx.book, sheet, col, slice(row, row + 1), 1)
        if ctx.start is not None:
            return take_cells(ctx.book, sheet, col, slice(ctx.start + row, ctx.start + row + ctx.n),
                              ctx.n)  # fmt: skip
        return take_cells(ctx.book, sheet, col, ctx.rows + row, ctx.n)
    if tag == "bin":
        return binary(node[1], ev(node[2], ctx), ev(node[3], ctx))
    if tag == "final":  # the formula's last operation is + or -
        inner = node[1]
        return binary(inner[1], ev(inner[2], ctx), ev(inner[3], ctx), final=True)
    if tag == "call":
        return FUNCTIONS[node[1]](node[2], ctx)
    if tag in ("num", "str", "bool"):
        return const(node[1])
    if tag == "range":
        r1, c1, r2, c2 = range_bounds(node, ctx)
        v = take_block(ctx.book, node[1], r1, c1, r2, c2)
        v.anchor = (node[1], r1, c1)
        return v
    if tag == "array":
        return array_vec(node[1])
    if tag == "neg":
        v = ev(node[1], ctx)
        acc = ErrAcc(v.shape)
        return acc.finish(-to_number(v, acc))
    if tag == "pct":
        v = ev(node[1], ctx)
        acc = ErrAcc(v.shape)
        return acc.finish(to_number(v, acc) / 100.0)
    if tag == "err":
        return const(ExcelError(node[1]))
    if tag == "missing":
        return const(None)
    if tag == "name":
        return const(NAME)
    raise AssertionError(f"unknown node {tag}")


_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "^": np.power,
}  # fmt: skip
_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "=": operator.eq, "<>": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}  # fmt: skip
# numbers compare at 15 significant digits (sheetgen.core.excel)
_NUM_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "=": xn.eq, "<>": lambda a, b: ~xn.eq(a, b), "<": xn.lt,
    "<=": xn.le, ">": xn.gt, ">=": xn.ge,
}  # fmt: skip


def _shape(a: Vec, b: Vec) -> tuple[int, int]:
    return np.broadcast_shapes(a.shape, b.shape)  # type: ignore[return-value]


def binary(op: str, a: Vec, b: Vec, final: bool = False) -> Vec:
    """Arithmetic, comparison or concatenation with Excel's coercions and error rules.

    `final`: this + or - is the formula's last operation, whose result snaps to 0 when it
    cancels to 15 digits (Excel's near-zero rule, sheetgen.core.excel.snap_sum)."""
    shape = _shape(a, b)
    acc = ErrAcc(shape)
    fn = _ARITH.get(op)
    if fn is not None:
        x = to_number(a, acc)
        y = to_number(b, acc)
        with np.errstate(all="ignore"):
            r = fn(x, y)
        if op == "/":
            acc.add(y == 0, DIV0)
        elif op == "^":
            acc.add((x == 0) & (y < 0), DIV0)
            acc.add((x == 0) & (y == 0), NUM_ERR)
        elif final:
            r = xn.snap_sum(x, y, r, op)
        finite_check(r, acc)
        return acc.finish(r)
    if op == "&":
        acc.add_vec_errors(a)
        acc.add_vec_errors(b)
        out = np.add(to_text(a), to_text(b))
        if acc.mask is None:
            return Vec(STR, np.full(shape, np.nan), np.broadcast_to(out, shape))
        res = acc.finish(np.full(shape, np.nan), kind=STR)
        res.obj = np.where(acc.mask, acc.obj, out)
        return res
    return compare(op, a, b, acc)


_fmt = np.frompyfunc(xn.number_to_text, 1, 1)


def _num_text(num: np.ndarray) -> np.ndarray:
    """Excel text of numbers; whole numbers (the common case) skip the general formatter."""
    out = np.empty(num.shape, dtype=object)
    whole = (num == np.trunc(num)) & (np.abs(num) < 1e15)
    if whole.all():
        out[...] = np.array(list(map(str, num.astype(np.int64).ravel().tolist())),
                            dtype=object).reshape(num.shape)  # fmt: skip
        return out
    out[...] = _fmt(num)
    return out


_lower = np.frompyfunc(str.lower, 1, 1)
_text_key = np.frompyfunc(text_key, 1, 1)


def to_text(v: Vec) -> np.ndarray:
    """Object array of the text each element shows in ``&`` (errors handled by the caller)."""
    u = v.uniform()
    if u == STR:
        assert v.obj is not None
        return v.obj
    if u == NUM:
        return _num_text(v.num)
    if u == EMPTY:
        return np.full(v.shape, "", dtype=object)
    kinds = v.kinds()
    out = np.full(v.shape, "", dtype=object)
    m = kinds == NUM
    if m.any():
        out[m] = _num_text(np.broadcast_to(v.num, v.shape)[m])
    m = kinds == STR
    if m.any():
        out[m] = v.objs()[m]
    m = kinds == BOOL
    if m.any():
        out[m] = np.where(np.broadcast_to(v.num, v.shape)[m] != 0, "TRUE", "FALSE")
    return out


_CLASS = np.array([-1, 0, 1, 2, -2], dtype=np.int8)  # EMPTY NUM STR BOOL ERR -> order class


def compare(op: str, a: Vec, b: Vec, acc: ErrAcc) -> Vec:
    """Excel comparison: numbers < text < booleans, empty adapts; numbers equal to 15 digits
    are equal; text is case-insensitive in Excel's order (symbols < digits < letters).

    Vectorised: the class of each side decides mixed-type pairs, numbers and booleans compare
    on ``num``; only text-vs-text pairs touch Python strings.
    """
    shape = acc.shape
    acc.add_vec_errors(a)
    acc.add_vec_errors(b)
    fn, num_fn = _CMP[op], _NUM_CMP[op]
    if a.only(NUM, EMPTY) and b.only(NUM, EMPTY):
        return acc.finish(num_fn(a.num, b.num).astype(float), kind=BOOL)
    if a.only(BOOL, EMPTY) and b.only(BOOL, EMPTY):
        return acc.finish(fn(a.num, b.num).astype(float), kind=BOOL)
    ca = np.broadcast_to(_CLASS[a.kinds()], shape)
    cb = np.broadcast_to(_CLASS[b.kinds()], shape)
    ea, eb = ca == -1, cb == -1
    ca, cb = np.where(ea, np.where(eb, 0, cb), ca), np.where(eb, np.where(ea, 0, ca), cb)
    out = np.asarray(fn(ca, cb), dtype=float)
    same_num = (ca == cb) & (ca != 1)
    if same_num.any():
        an, bn = np.broadcast_to(a.num, shape), np.broadcast_to(b.num, shape)
        num = np.where(ca == 0, num_fn(an, bn), fn(an, bn))
        out = np.where(same_num, num, out)
    same_str = (ca == cb) & (ca == 1)
    if same_str.any():
        idx = np.nonzero(same_str)
        ta = np.where(ea, "", a.objs())[idx] if a.obj is not None else np.full(len(idx[0]), "")
        tb = np.where(eb, "", b.objs())[idx] if b.obj is not None else np.full(len(idx[0]), "")
        key = _lower if op in ("=", "<>") else _text_key
        out[idx] = np.asarray(fn(key(ta.astype(object)), key(tb.astype(object))), float)
    return acc.finish(out, kind=BOOL)


def implicit_intersection(v: Vec, rows: np.ndarray, col: int) -> Vec:
    """Excel 2019's implicit intersection: a range where one value is expected gives the cell
    in the formula's own row (a column range) or column (a row range); #VALUE! if none."""
    h, w = v.dims  # type: ignore[misc]
    _sheet, r1, c1 = v.anchor  # type: ignore[misc]
    i = rows - r1 if h > 1 else np.zeros(len(rows), dtype=np.int64)
    j = col - c1 if w > 1 else 0
    ok = (i >= 0) & (i < h) & (0 <= j < w)
    flat = np.where(ok, i * w + j, 0).astype(np.int64)
    kinds = np.where(ok, v.kinds()[0][flat], ERR).astype(np.int8).reshape(-1, 1)
    num = np.where(ok, np.broadcast_to(v.num, v.shape)[0][flat], np.nan).reshape(-1, 1)
    obj = np.where(ok, v.objs()[0][flat], VALUE).reshape(-1, 1)
    return Vec(kinds, num, obj)


__all__ = ["NUM", "Ctx", "Rowwise", "binary", "blanks_beyond", "ev", "implicit_intersection",
           "range_bounds", "take_block", "take_cells"]
