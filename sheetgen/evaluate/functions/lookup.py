"""Lookup and reference: INDEX (with Excel 2019's implicit intersection for a 0 row or
column), MATCH VLOOKUP HLOOKUP LOOKUP CHOOSE ROW ROWS COLUMN COLUMNS."""

from __future__ import annotations

import numpy as np

from ..evaluator import Ctx, ev, range_bounds, take_block
from ..parser import Node
from ..values import BOOL, ERR, NA, NUM, REF, STR, VALUE
from ..vec import ErrAcc, Vec, error_vec, select
from .base import Unsupported, block_arg, literal_int, register, to_num, with_errors
from .criteria import wildcard


@register("INDEX", 2, 3)
def _index(args: list[Node], ctx: Ctx) -> Vec:
    block = block_arg(args[0], ctx)
    if block.shape[0] != 1:
        return error_vec(VALUE, (ctx.n, 1))
    h, w = block.dims  # type: ignore[misc]
    r = ev(args[1], ctx) if args[1][0] != "missing" else Vec(NUM, np.zeros((1, 1)))
    c = ev(args[2], ctx) if len(args) > 2 and args[2][0] != "missing" else None
    shape = r.shape if c is None else np.broadcast_shapes(r.shape, c.shape)
    acc = ErrAcc(shape)
    ri = np.trunc(to_num(r, acc))
    if c is None:
        ci = np.zeros(shape) if len(args) > 2 else np.ones(shape)
        if h == 1 and len(args) == 2:  # INDEX(row_range, k) picks the k-th column
            ri, ci = np.ones(shape), ri
    else:
        ci = np.trunc(to_num(c, acc))
    ri, ci = np.broadcast_to(ri, shape), np.broadcast_to(ci, shape)
    if h == 1:
        ri = np.where(ri == 0, 1, ri)  # a one-row block: row 0 is its only row
    if w == 1:
        ci = np.where(ci == 0, 1, ci)
    if ((ri == 0) | (ci == 0)).any():
        return _index_slice(ctx, block, ri, ci, acc)
    bad = ~((ri >= 1) & (ci >= 1) & (ri <= h) & (ci <= w))  # NaN (error rows) is bad too
    acc.add(bad, REF)
    flat = np.where(bad, 0, (ri - 1) * w + (ci - 1)).astype(np.int64)
    kinds = block.kinds()[0][flat]
    num = np.broadcast_to(block.num, block.shape)[0][flat]
    obj = None if block.obj is None else np.broadcast_to(block.obj, block.shape)[0][flat]
    return with_errors(acc, Vec(kinds, num, obj, is_ref=True))


def _index_slice(ctx: Ctx, block: Vec, ri: np.ndarray, ci: np.ndarray, acc: ErrAcc) -> Vec:
    """A whole row or column of the block (row or column 0), as a range: an aggregate reads
    it all, a single cell takes the value in its own row or column (implicit intersection)."""
    if ri.size != 1 or acc.mask is not None or block.anchor is None:
        raise Unsupported("INDEX with a row or column 0 that changes from row to row")
    h, w = block.dims  # type: ignore[misc]
    r, c = int(ri.flat[0]), int(ci.flat[0])
    if not (0 <= r <= h and 0 <= c <= w):
        return error_vec(REF)
    sheet, r1, c1 = block.anchor
    top, bottom = (r1, r1 + h - 1) if r == 0 else (r1 + r - 1, r1 + r - 1)
    left, right = (c1, c1 + w - 1) if c == 0 else (c1 + c - 1, c1 + c - 1)
    v = take_block(ctx.book, sheet, top, left, bottom, right)
    v.anchor = (sheet, top, left)
    return v


def _key(k: int, n: float, o: object) -> tuple[int, object] | None:
    if k == NUM:
        return (0, float(n))
    if k == STR:
        return (1, str(o).lower())
    if k == BOOL:
        return (2, bool(n))
    return None


def _lookup_positions(x: Vec, keys: Vec, mtype: int, acc: ErrAcc) -> np.ndarray:
    """0-based position in keys for each row of x (-1 = #N/A), Excel MATCH semantics."""
    kk = keys.kinds()[0]
    kn = np.broadcast_to(keys.num, keys.shape)[0]
    ko = keys.objs()[0]
    xk, xn, xo = x.kinds()[:, :1], np.broadcast_to(x.num, x.shape)[:, :1], x.objs()[:, :1]
    pos = np.full(xk.shape, -1, dtype=np.int64)
    acc.add(xk == ERR, xo)
    if mtype == 0:
        table: dict[tuple[int, object], int] = {}
        for i in range(len(kk) - 1, -1, -1):
            key = _key(int(kk[i]), kn[i], ko[i])
            if key is not None:
                table[key] = i
        cache: dict[tuple[int, object], int] = {}
        for r in range(xk.shape[0]):
            key = _key(int(xk[r, 0]), xn[r, 0], xo[r, 0])
            if key is None:
                continue
            hit = cache.get(key)
            if hit is None:
                hit = table.get(key, -1)
                pat = wildcard(key[1]) if key[0] == 1 and hit < 0 else None  # type: ignore[arg-type]
                if pat is not None:
                    hit = next((i for i in range(len(kk)) if kk[i] == STR
                                and pat.fullmatch(str(ko[i]).lower())), -1)  # fmt: skip
                cache[key] = hit
            pos[r, 0] = hit
    else:
        keyed = [_key(int(kk[i]), kn[i], ko[i]) for i in range(len(kk))]
        for r in range(xk.shape[0]):
            key = _key(int(xk[r, 0]), xn[r, 0], xo[r, 0])
            if key is None:
                continue
            best = -1
            for i, kv in enumerate(keyed):  # approximate match: Excel's "sorted data" scan
                if kv is None or kv[0] != key[0]:
                    continue
                if (kv[1] <= key[1]) if mtype > 0 else (kv[1] >= key[1]):  # type: ignore[operator]
                    best = i
                else:
                    break
            pos[r, 0] = best
    acc.add(pos < 0, NA)
    return pos


@register("MATCH", 2, 3)
def _match(args: list[Node], ctx: Ctx) -> Vec:
    mtype = literal_int(args[2], 1) if len(args) > 2 else 1
    if mtype is None:
        raise Unsupported("MATCH with a computed match_type")
    mtype = (mtype > 0) - (mtype < 0)
    x = ev(args[0], ctx)
    keys = block_arg(args[1], ctx)
    h, w = keys.dims  # type: ignore[misc]
    acc = ErrAcc((x.shape[0], 1))
    if h != 1 and w != 1:
        acc.add(np.ones((x.shape[0], 1), dtype=bool), NA)
        return acc.finish(np.zeros((x.shape[0], 1)))
    pos = _lookup_positions(x, keys, mtype, acc)
    return acc.finish(pos.astype(float) + 1.0)


@register("VLOOKUP", 3, 4)
def _vlookup(args: list[Node], ctx: Ctx) -> Vec:
    return _table_lookup(args, ctx, "VLOOKUP", vertical=True)


@register("HLOOKUP", 3, 4)
def _hlookup(args: list[Node], ctx: Ctx) -> Vec:
    return _table_lookup(args, ctx, "HLOOKUP", vertical=False)


def _table_lookup(args: list[Node], ctx: Ctx, name: str, *, vertical: bool) -> Vec:
    """VLOOKUP (match in the first column, return from column k) and HLOOKUP (first row,
    row k): one search, the table read along the other axis."""
    mode = literal_int(args[3], 1) if len(args) > 3 else 1
    if mode is None:
        raise Unsupported(f"{name} with a computed range_lookup")
    x = ev(args[0], ctx)
    table = block_arg(args[1], ctx)
    h, w = table.dims  # type: ignore[misc]
    indexv = ev(args[2], ctx)
    n = max(x.shape[0], indexv.shape[0])
    acc = ErrAcc((n, 1))
    index = np.broadcast_to(np.trunc(to_num(indexv, acc)), (n, 1))
    keys = slice(None, None, w) if vertical else slice(None, w)  # first column / first row
    first = Vec(table.kinds()[:, keys], np.broadcast_to(table.num, table.shape)[:, keys],
                table.objs()[:, keys])  # fmt: skip
    pos = np.broadcast_to(_lookup_positions(x, first, 1 if mode else 0, acc), (n, 1))
    bound = w if vertical else h
    acc.add(index < 1, VALUE)
    acc.add(index > bound, REF)
    ok = (pos >= 0) & (index >= 1) & (index <= bound)
    at = pos * w + index - 1 if vertical else (index - 1) * w + pos
    flat = np.where(ok, at, 0).astype(np.int64)
    kinds = table.kinds()[0][flat]
    num = np.broadcast_to(table.num, table.shape)[0][flat]
    obj = None if table.obj is None else table.objs()[0][flat]
    return with_errors(acc, Vec(kinds, num, obj, is_ref=True))


def _vector(v: Vec, h: int, w: int, last: bool) -> Vec:
    """The first (or last) row of a wide block, or column of a tall one, as a 1-row Vec."""
    kinds, num, objs = v.kinds()[0], np.broadcast_to(v.num, v.shape)[0], v.objs()[0]
    if h == 1 or w == 1:
        sel = slice(None)
    elif w > h:
        sel = slice((h - 1) * w, h * w) if last else slice(0, w)
    else:
        sel = slice(w - 1, None, w) if last else slice(0, None, w)
    return Vec(kinds[sel].reshape(1, -1), num[sel].reshape(1, -1), objs[sel].reshape(1, -1),
               is_ref=True)


@register("LOOKUP", 2, 3)
def _lookup(args: list[Node], ctx: Ctx) -> Vec:
    """Approximate match in a sorted vector: the largest value not above the key."""
    x = ev(args[0], ctx)
    keys = block_arg(args[1], ctx)
    h, w = keys.dims  # type: ignore[misc]
    result = block_arg(args[2], ctx) if len(args) > 2 else keys
    rh, rw = result.dims  # type: ignore[misc]
    kvec = _vector(keys, h, w, last=False)
    rvec = _vector(result, rh, rw, last=len(args) == 2)
    acc = ErrAcc((x.shape[0], 1))
    pos = _lookup_positions(x, kvec, 1, acc)
    m = rvec.shape[1]
    acc.add(pos >= m, NA)
    flat = np.where((pos >= 0) & (pos < m), pos, 0).astype(np.int64)
    picked = Vec(rvec.kinds()[0][flat], rvec.num[0][flat], rvec.objs()[0][flat], is_ref=True)
    return with_errors(acc, picked)


@register("CHOOSE", 2, 255)
def _choose(args: list[Node], ctx: Ctx) -> Vec:
    kv = ev(args[0], ctx)
    acc = ErrAcc(kv.shape)
    k = np.trunc(to_num(kv, acc))
    acc.add(~((k >= 1) & (k <= len(args) - 1)), VALUE)
    out: Vec | None = None
    for i, node in enumerate(args[1:], start=1):
        here = k == i
        if not here.any():
            continue
        v = ev(node, ctx) if node[0] != "missing" else Vec(NUM, np.zeros((1, 1)))
        out = v if out is None else select(here, v, out)
    if out is None:
        return acc.finish(np.zeros(kv.shape))
    return with_errors(acc, out)


def _ref_span(node: Node, ctx: Ctx) -> tuple[int, int, int, int]:
    """(r1, c1, r2, c2) of a reference argument."""
    if node[0] == "ref":
        if node[3]:
            return node[2], node[4], node[2], node[4]
        if ctx.n != 1:
            from ..evaluator import Rowwise

            raise Rowwise
        row = int(ctx.rows[0]) + node[2]
        return row, node[4], row, node[4]
    if node[0] == "range":
        return range_bounds(node, ctx)
    raise Unsupported("ROW/COLUMN/ROWS/COLUMNS of something other than a reference")


def _position(args: list[Node], ctx: Ctx, col: bool) -> Vec:
    if not args or args[0][0] == "missing":
        if col:
            return Vec(NUM, np.full((1, 1), float(ctx.col)))
        return Vec(NUM, ctx.rows.astype(float).reshape(-1, 1))
    node = args[0]
    if node[0] == "ref" and not node[3] and not col:
        return Vec(NUM, (ctx.rows + node[2]).astype(float).reshape(-1, 1))
    r1, c1, _r2, _c2 = _ref_span(node, ctx)
    return Vec(NUM, np.full((1, 1), float(c1 if col else r1)))


def _size(args: list[Node], ctx: Ctx, col: bool) -> Vec:
    node = args[0]
    if node[0] in ("ref", "range"):
        r1, c1, r2, c2 = _ref_span(node, ctx)
        return Vec(NUM, np.full((1, 1), float(c2 - c1 + 1 if col else r2 - r1 + 1)))
    v = block_arg(node, ctx)
    h, w = v.dims  # type: ignore[misc]
    return Vec(NUM, np.full((1, 1), float(w if col else h)))


register("ROW", 0, 1)(lambda args, ctx: _position(args, ctx, False))
register("COLUMN", 0, 1)(lambda args, ctx: _position(args, ctx, True))
register("ROWS", 1, 1)(lambda args, ctx: _size(args, ctx, False))
register("COLUMNS", 1, 1)(lambda args, ctx: _size(args, ctx, True))
