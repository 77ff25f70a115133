"""The function registry and the argument helpers every family of functions shares.

Every function takes its argument nodes and the Ctx (so IF/IFERROR can skip a branch that no
row needs, and lookups can read ranges as blocks) and returns a Vec for all rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..evaluator import Ctx, ev
from ..parser import Node
from ..registry import ARITY, FUNCTIONS, register
from ..values import BOOL, EMPTY, ERR, NUM, STR, VALUE, ExcelError, text_to_number
from ..vec import ErrAcc, Vec, error_vec, finite_check, select
from ..vec import to_number as to_num

Func = Callable[[list[Node], Ctx], Vec]


class Unsupported(Exception):
    """A construct the evaluator does not implement (never silently approximated)."""


def first_error_rows(err: np.ndarray, objs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: any error along axis 1, and the first such error object."""
    any_err = err.any(axis=1, keepdims=True)
    first = np.argmax(err, axis=1)
    return any_err, objs[np.arange(objs.shape[0]), first].reshape(-1, 1)


def agg_parts(v: Vec, numeric_text: bool = True, skip_errors: bool = False
              ) -> tuple[np.ndarray, np.ndarray, ErrAcc]:
    """(numbers, included mask, errors) of one aggregate argument.

    References contribute only their numeric cells; direct values also count booleans and
    numeric text, and non-numeric text is #VALUE! (Excel's SUM/MAX/... rules). COUNT skips
    errors and text instead (skip_errors).
    """
    shape = v.shape
    kinds = v.kinds()
    acc = ErrAcc((shape[0], 1))
    err = kinds == ERR
    if err.any() and not skip_errors:
        anyr, first = first_error_rows(err, v.objs())
        acc.add(anyr, first)
    num = np.broadcast_to(v.num, shape)
    if v.is_ref is True:
        return num, kinds == NUM, acc
    incl = (kinds == NUM) | (kinds == BOOL)
    strs = kinds == STR
    if isinstance(v.is_ref, np.ndarray):  # IF/IFERROR mixing references and values per row
        refs = np.broadcast_to(v.is_ref, shape)
        incl = np.where(refs, kinds == NUM, incl)
        strs = strs & ~refs
    if v.dims is not None and v.dims != (1, 1) and not v.is_ref:  # an array constant
        incl = kinds == NUM
        strs = np.zeros(shape, dtype=bool)
    if strs.any():
        num = np.array(num)
        incl = np.array(incl)
        bad = np.zeros(shape, dtype=bool)
        objs = v.objs()
        for idx in zip(*np.nonzero(strs), strict=True):
            x = text_to_number(objs[idx]) if numeric_text else None
            if x is None:
                bad[idx] = True
            else:
                num[idx], incl[idx] = x, True
        if not skip_errors:
            acc.add(bad.any(axis=1, keepdims=True), VALUE)
    return num, incl, acc


def numeric_fn(args: list[Node], ctx: Ctx, f: Callable[..., np.ndarray],
               check: Callable[..., list[tuple[np.ndarray, ExcelError]] | None] | None = None
               ) -> Vec:
    """Element-wise numeric function: arguments coerced to numbers, errors propagated."""
    vals = [ev(a, ctx) if a[0] != "missing" else None for a in args]
    present = [v for v in vals if v is not None]
    shape = present[0].shape if present else (1, 1)
    for v in present[1:]:
        shape = np.broadcast_shapes(shape, v.shape)
    acc = ErrAcc(shape)
    nums = [to_num(v, acc) if v is not None else None for v in vals]
    if check is not None:
        for mask, err in check(*nums) or ():
            acc.add(mask, err)
    with np.errstate(all="ignore"):
        out = f(*nums)
    finite_check(np.where(acc.mask, 0.0, out) if acc.mask is not None else out, acc)
    return acc.finish(out)


def block_arg(node: Node, ctx: Ctx) -> Vec:
    """An argument read as a block; a single value is a 1x1 block."""
    v = ev(node, ctx)
    if v.dims is None:
        v.dims = (1, 1) if v.shape[1] == 1 else (1, v.shape[1])
    return v


def literal_int(node: Node, default: int) -> int | None:
    """The integer a literal argument spells (match types, flags), or None if computed."""
    if node[0] == "missing":
        return default
    if node[0] in ("num", "bool"):
        return int(node[1])
    if node[0] == "call" and node[1] in ("TRUE", "FALSE") and not node[2]:
        return int(node[1] == "TRUE")
    if node[0] == "neg" and node[1][0] == "num":
        return -int(node[1][1])
    return None


def broadcast_rows(v: Vec, shape: tuple[int, int]) -> Vec:
    """v repeated down to shape[0] rows (a branch that every row took)."""
    if v.shape[0] >= shape[0]:
        return v
    target = (shape[0], v.shape[1])
    kind = v.kind if isinstance(v.kind, int) else np.broadcast_to(v.kind, target)
    obj = None if v.obj is None else np.broadcast_to(v.obj, target)
    return Vec(kind, np.broadcast_to(v.num, target), obj, is_ref=v.is_ref, dims=v.dims)


def with_errors(acc: ErrAcc, picked: Vec) -> Vec:
    """picked where acc has no error, the error elsewhere."""
    if acc.mask is None:
        return picked
    is_ref = picked.is_ref
    out = select(acc.mask, Vec(ERR, np.full(acc.shape, np.nan), acc.obj), picked)
    out.is_ref = is_ref
    return out


def values_matrix(args: list[Node], ctx: Ctx, *, skip_text: bool = True
                  ) -> tuple[np.ndarray, np.ndarray, ErrAcc]:
    """(numbers, included, errors) of every argument side by side, shape (n, total width)."""
    parts = [agg_parts(ev(a, ctx), numeric_text=True) for a in args if a[0] != "missing"]
    n = max(p[0].shape[0] for p in parts)
    acc = ErrAcc((n, 1))
    for _num, _incl, a in parts:
        if a.mask is not None:
            acc.add(a.mask, a.obj)
    nums = np.concatenate([np.broadcast_to(p[0], (n, p[0].shape[1])) for p in parts], axis=1)
    incl = np.concatenate([np.broadcast_to(p[1], (n, p[1].shape[1])) for p in parts], axis=1)
    return nums, incl, acc


__all__ = ["ARITY", "BOOL", "EMPTY", "ERR", "FUNCTIONS", "NUM", "STR", "Func", "Unsupported",
           "agg_parts", "block_arg", "broadcast_rows", "error_vec", "first_error_rows",
           "literal_int", "numeric_fn", "register", "to_num", "values_matrix",
           "with_errors"]
