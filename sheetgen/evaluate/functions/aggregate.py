"""Aggregates: SUM MAX MIN AVERAGE COUNT (with running totals via prefix sums), COUNTA,
COUNTBLANK, SUMPRODUCT, PRODUCT, SUMSQ, MAXA, and the order statistics MEDIAN LARGE SMALL
STDEV.S. SUM MAX MIN AVERAGE COUNT and COUNTA read a range too large to materialise from
its stored cells (sparse.py)."""

from __future__ import annotations

import numpy as np

from ..evaluator import Ctx, blanks_beyond, ev, take_cells
from ..parser import Node
from ..sparse import Reduction, sparse_reduction
from ..values import BOOL, DIV0, EMPTY, ERR, NUM, NUM_ERR, REF, STR, VALUE
from ..vec import ErrAcc, Vec, error_vec, finite_check
from .base import agg_parts, first_error_rows, register, to_num, values_matrix

PREFIX_AGGREGATES = frozenset({"SUM", "MAX", "MIN", "AVERAGE", "COUNT"})
#: functions that treat each argument as one more list of values, so a union of references
#: among their arguments, =SUM((A1:A3,B1)), is the same as its areas given one by one
AREA_LIST_FUNCTIONS = frozenset({"SUM", "MAX", "MIN", "AVERAGE", "COUNT", "COUNTA", "PRODUCT",
                                 "SUMSQ", "MAXA", "MEDIAN", "STDEV.S", "STDEV"})


def is_moving_column(node: Node) -> bool:
    """A one-column range whose rows move with the formula (e.g. the running ``F$6:F6``)."""
    return node[0] == "range" and not (node[3] and node[6]) and node[4] == node[7]


def _moving_parts(node: Node, ctx: Ctx, kind: str) -> tuple[np.ndarray, ...]:
    """Per-row (total, count, best) over a moving one-column range, via prefix sums.

    This keeps running totals O(n) instead of O(n^2) row-by-row evaluation.
    """
    _, sheet, r1, abs1, col, r2, abs2, _ = node
    rows = ctx.rows
    lo = np.full(ctx.n, r1) if abs1 else rows + r1
    hi = np.full(ctx.n, r2) if abs2 else rows + r2
    lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
    acc = ErrAcc((ctx.n, 1))
    acc.add((lo < 1).reshape(-1, 1), REF)
    base, top = max(1, int(lo.min())), max(1, int(hi.max()))
    m = top - base + 1
    block = take_cells(ctx.book, sheet, col, slice(base, top + 1), m)
    kinds, num = block.kinds()[:, 0], block.num[:, 0]
    incl = kinds == NUM
    lo_i, hi_i = np.clip(lo - base, 0, m), np.clip(hi - base + 1, 0, m)  # half-open
    cs = np.concatenate([[0.0], np.cumsum(np.where(incl, num, 0.0))])
    cc = np.concatenate([[0], np.cumsum(incl)])
    total, count = cs[hi_i] - cs[lo_i], (cc[hi_i] - cc[lo_i]).astype(float)
    err = kinds == ERR
    if err.any() and kind != "COUNT":
        nxt = np.minimum.accumulate(np.where(err, np.arange(m), m)[::-1])[::-1]
        first = np.append(nxt, m)[lo_i]
        acc.add(
            (first < hi_i).reshape(-1, 1), block.objs()[np.minimum(first, m - 1), 0].reshape(-1, 1)
        )
    best = np.zeros(ctx.n)
    if kind in ("MAX", "MIN"):
        fill = -np.inf if kind == "MAX" else np.inf
        vals = np.where(incl, num, fill)
        fn = np.maximum if kind == "MAX" else np.minimum
        nonempty = hi_i > lo_i
        if bool((lo_i == lo_i[0]).all()):
            pre = fn.accumulate(vals[lo_i[0] :]) if lo_i[0] < m else np.full(1, fill)
            best = np.where(nonempty, pre[np.clip(hi_i - 1 - lo_i[0], 0, len(pre) - 1)], fill)
        else:
            spans = zip(lo_i.tolist(), hi_i.tolist(), strict=True)
            best = np.array([fn.reduce(vals[a:b]) if b > a else fill for a, b in spans])
    return total.reshape(-1, 1), count.reshape(-1, 1), best.reshape(-1, 1), acc


def _aggregate(args: list[Node], ctx: Ctx, kind: str) -> Vec:
    n = ctx.n if any(is_moving_column(a) for a in args) and ctx.n > 1 else 1
    vals: list[Vec | Reduction] = []
    moving: list[Node] = []
    for a in args:
        if a[0] == "missing":
            continue
        if ctx.n > 1 and is_moving_column(a):
            moving.append(a)
        elif (sparse := sparse_reduction(a, ctx)) is not None:
            vals.append(sparse)  # a range too large to materialise: its stored cells
        else:
            v = ev(a, ctx)
            vals.append(v)
            n = max(n, v.shape[0])
    acc = ErrAcc((n, 1))
    total = np.zeros((n, 1))
    count = np.zeros((n, 1))
    best = np.full((n, 1), -np.inf if kind == "MAX" else np.inf)
    for node in moving:
        t, c, b, a = _moving_parts(node, ctx, kind)
        acc.add(a.mask, a.obj)
        total, count = total + t, count + c
        best = np.maximum(best, b) if kind == "MAX" else np.minimum(best, b)
    for v in vals:
        if isinstance(v, Reduction):
            if v.error is not None and kind != "COUNT":
                acc.add(np.ones((1, 1), dtype=bool), v.error)
            count = count + v.numbers
            total = total + v.total
            best = (np.maximum(best, v.largest) if kind == "MAX"
                    else np.minimum(best, v.smallest))  # fmt: skip
            continue
        num, incl, a = agg_parts(v, skip_errors=kind == "COUNT")
        if a.mask is not None:
            acc.add(a.mask, a.obj)
        c = incl.sum(axis=1, keepdims=True)
        count = count + c
        if kind in ("SUM", "AVERAGE"):
            total = total + np.where(incl, num, 0.0).sum(axis=1, keepdims=True)
        elif kind == "MAX":
            best = np.maximum(best, np.where(incl, num, -np.inf).max(axis=1, keepdims=True))
        elif kind == "MIN":
            best = np.minimum(best, np.where(incl, num, np.inf).min(axis=1, keepdims=True))
    if kind == "SUM":
        out = total
    elif kind == "AVERAGE":
        acc.add(count == 0, DIV0)
        with np.errstate(all="ignore"):
            out = total / count
    elif kind == "COUNT":
        out = count
    else:
        out = np.where(count == 0, 0.0, best)
    finite_check(out, acc)
    return acc.finish(out)


for _name in ("SUM", "MAX", "MIN", "AVERAGE", "COUNT"):
    register(_name, 1, 255)(lambda args, ctx, _k=_name: _aggregate(args, ctx, _k))


@register("COUNTA", 1, 255)
def _counta(args: list[Node], ctx: Ctx) -> Vec:
    vals = [sparse_reduction(a, ctx) or ev(a, ctx) for a in args]
    n = max(1 if isinstance(v, Reduction) else v.shape[0] for v in vals)
    out = np.zeros((n, 1))
    for a, v in zip(args, vals, strict=True):
        if a[0] == "missing":
            continue
        if isinstance(v, Reduction):  # a range too large to materialise: its stored cells
            out = out + v.nonempty
            continue
        out = out + (v.kinds() != EMPTY).sum(axis=1, keepdims=True)
    return Vec(NUM, out)


@register("COUNTBLANK", 1, 1)
def _countblank(args: list[Node], ctx: Ctx) -> Vec:
    """Empty cells and empty text; a whole-column range counts all 1,048,576 rows."""
    v = ev(args[0], ctx)
    kinds = v.kinds()
    blank = kinds == EMPTY
    if v.obj is not None:
        blank = blank | ((kinds == STR) & (v.objs() == ""))
    hidden = blanks_beyond(v)  # a clipped whole-column range: the rest is empty
    return Vec(NUM, blank.sum(axis=1, keepdims=True).astype(float) + hidden)


@register("SUMPRODUCT", 1, 255)
def _sumproduct(args: list[Node], ctx: Ctx) -> Vec:
    vals = [ev(a, ctx) for a in args]
    widths = {v.shape[1] for v in vals}
    n = max(v.shape[0] for v in vals)
    if len(widths) > 1 and not (len(widths) == 2 and 1 in widths and len(vals) == 1):
        return error_vec(VALUE, (n, 1))
    acc = ErrAcc((n, 1))
    prod: np.ndarray | float = 1.0
    for v in vals:
        kinds = v.kinds()
        err = kinds == ERR
        if err.any():
            e = np.broadcast_to(err, (n, err.shape[1]))
            anyr, first = first_error_rows(e, np.broadcast_to(v.objs(), e.shape))
            acc.add(anyr, first)
        prod = prod * np.where(kinds == NUM, v.num, 0.0)
    out = np.broadcast_to(np.asarray(prod), (n, max(widths))).sum(axis=1, keepdims=True)
    finite_check(out, acc)
    return acc.finish(out)


def _reduce(args: list[Node], ctx: Ctx, fn: str) -> Vec:
    nums, incl, acc = values_matrix(args, ctx)
    with np.errstate(all="ignore"):
        if fn == "PRODUCT":
            out = np.where(incl, nums, 1.0).prod(axis=1, keepdims=True)
            out = np.where(incl.any(axis=1, keepdims=True), out, 0.0)
        else:
            out = np.where(incl, nums * nums, 0.0).sum(axis=1, keepdims=True)
    finite_check(out, acc)
    return acc.finish(out)


register("PRODUCT", 1, 255)(lambda args, ctx: _reduce(args, ctx, "PRODUCT"))
register("SUMSQ", 1, 255)(lambda args, ctx: _reduce(args, ctx, "SUMSQ"))


@register("MAXA", 1, 255)
def _maxa(args: list[Node], ctx: Ctx) -> Vec:
    """MAX that also counts booleans (TRUE 1) and text (0) in references."""
    n = 1
    parts = []
    for a in args:
        if a[0] == "missing":
            continue
        v = ev(a, ctx)
        n = max(n, v.shape[0])
        num, incl, acc1 = agg_parts(v)
        if v.is_ref is True:
            kinds = v.kinds()
            incl = (kinds == NUM) | (kinds == BOOL) | (kinds == STR)
            num = np.where(kinds == STR, 0.0, np.broadcast_to(v.num, kinds.shape))
        parts.append((num, incl, acc1))
    acc = ErrAcc((n, 1))
    best = np.full((n, 1), -np.inf)
    seen = np.zeros((n, 1), dtype=bool)
    for num, incl, a in parts:
        if a.mask is not None:
            acc.add(a.mask, a.obj)
        best = np.maximum(best, np.where(incl, num, -np.inf).max(axis=1, keepdims=True))
        seen |= incl.any(axis=1, keepdims=True)
    return acc.finish(np.where(seen, best, 0.0))


def _order_stat(args: list[Node], ctx: Ctx, fn: str) -> Vec:
    data = args[:1] if fn in ("LARGE", "SMALL") else args
    nums, incl, acc = values_matrix(data, ctx)
    count = incl.sum(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        if fn == "MEDIAN":
            acc.add(count == 0, NUM_ERR)
            out = np.nanmedian(np.where(incl, nums, np.nan), axis=1, keepdims=True) \
                if nums.shape[1] else np.zeros((nums.shape[0], 1))
        elif fn == "STDEV.S":
            acc.add(count < 2, DIV0)
            x = np.where(incl, nums, 0.0)
            mean = x.sum(axis=1, keepdims=True) / count
            dev = np.where(incl, nums - mean, 0.0)
            out = np.sqrt((dev * dev).sum(axis=1, keepdims=True) / (count - 1))
        else:
            kv = ev(args[1], ctx)
            shape = np.broadcast_shapes(count.shape, kv.shape)
            acc2 = ErrAcc(shape)
            acc2.add(acc.mask, acc.obj)
            k = np.trunc(to_num(kv, acc2))  # a fractional k is truncated (as LibreOffice)
            bad = ~((k >= 1) & (k <= count))
            acc2.add(bad, NUM_ERR)
            srt = np.sort(np.where(incl, nums, np.inf), axis=1)
            pos = np.where(bad, 0, (k - 1) if fn == "SMALL" else (count - k)).astype(np.int64)
            rows = np.arange(srt.shape[0]).reshape(-1, 1)
            out = srt[np.broadcast_to(rows, shape), pos] if srt.shape[1] else np.zeros(shape)
            return acc2.finish(np.where(bad, 0.0, out))
    finite_check(np.where(acc.mask, 0.0, out) if acc.mask is not None else out, acc)
    return acc.finish(out)


register("MEDIAN", 1, 255)(lambda args, ctx: _order_stat(args, ctx, "MEDIAN"))
register("STDEV.S", 1, 255)(lambda args, ctx: _order_stat(args, ctx, "STDEV.S"))
register("STDEV", 1, 255)(lambda args, ctx: _order_stat(args, ctx, "STDEV.S"))
register("LARGE", 2, 2)(lambda args, ctx: _order_stat(args, ctx, "LARGE"))
register("SMALL", 2, 2)(lambda args, ctx: _order_stat(args, ctx, "SMALL"))
