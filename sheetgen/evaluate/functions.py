"""Vectorised implementations of the portable function set.

Every function takes its argument nodes and the Ctx (so IF/IFERROR can skip a branch that no
row needs, and lookups can read ranges as blocks) and returns a Vec for all rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from .evaluator import Ctx, blanks_beyond, ev, take_cells
from .parser import Node
from .values import BOOL, DIV0, EMPTY, ERR, NA, NUM, NUM_ERR, REF, STR, VALUE, ExcelError
from .vec import ErrAcc, Vec, const, error_vec, finite_check, select, text_to_number, to_bool
from .vec import to_number as _num

Func = Callable[[list[Node], Ctx], Vec]
FUNCTIONS: dict[str, Func] = {}
ARITY: dict[str, tuple[int, int]] = {}


def _register(name: str, lo: int, hi: int) -> Callable[[Func], Func]:
    def deco(f: Func) -> Func:
        FUNCTIONS[name] = f
        ARITY[name] = (lo, hi)
        return f

    return deco


def _first_error_rows(err: np.ndarray, objs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: any error along axis 1, and the first such error object."""
    any_err = err.any(axis=1, keepdims=True)
    first = np.argmax(err, axis=1)
    return any_err, objs[np.arange(objs.shape[0]), first].reshape(-1, 1)


def _agg_parts(v: Vec, numeric_text: bool = True) -> tuple[np.ndarray, np.ndarray, ErrAcc]:
    """(numbers, included mask, errors) of one aggregate argument.

    References contribute only their numeric cells; direct values also count booleans and
    numeric text, and non-numeric text is #VALUE! (Excel's SUM/MAX/... rules).
    """
    shape = v.shape
    kinds = v.kinds()
    acc = ErrAcc((shape[0], 1))
    err = kinds == ERR
    if err.any():
        anyr, first = _first_error_rows(err, v.objs())
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
        acc.add(bad.any(axis=1, keepdims=True), VALUE)
    return num, incl, acc


PREFIX_AGGREGATES = frozenset({"SUM", "MAX", "MIN", "AVERAGE", "COUNT"})


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
    if err.any():
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
    vals: list[Vec] = []
    moving: list[Node] = []
    for a in args:
        if a[0] == "missing":
            continue
        if ctx.n > 1 and is_moving_column(a):
            moving.append(a)
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
        num, incl, a = _agg_parts(v)
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
    _register(_name, 1, 255)(lambda args, ctx, _k=_name: _aggregate(args, ctx, _k))


@_register("COUNTA", 1, 255)
def _counta(args: list[Node], ctx: Ctx) -> Vec:
    vals = [ev(a, ctx) for a in args]
    n = max(v.shape[0] for v in vals)
    out = np.zeros((n, 1))
    for a, v in zip(args, vals, strict=True):
        if a[0] == "missing":
            continue
        out = out + (v.kinds() != EMPTY).sum(axis=1, keepdims=True)
    return Vec(NUM, out)


@_register("COUNTBLANK", 1, 1)
def _countblank(args: list[Node], ctx: Ctx) -> Vec:
    v = ev(args[0], ctx)
    kinds = v.kinds()
    blank = kinds == EMPTY
    if v.obj is not None:
        blank = blank | ((kinds == STR) & (v.objs() == ""))
    beyond = blanks_beyond(v)  # a clipped whole-column range: the rest is empty
    return Vec(NUM, blank.sum(axis=1, keepdims=True).astype(float) + beyond)


@_register("SUMPRODUCT", 1, 255)
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
            anyr, first = _first_error_rows(e, np.broadcast_to(v.objs(), e.shape))
            acc.add(anyr, first)
        prod = prod * np.where(kinds == NUM, v.num, 0.0)
    out = np.broadcast_to(np.asarray(prod), (n, max(widths))).sum(axis=1, keepdims=True)
    finite_check(out, acc)
    return acc.finish(out)


def _logical(args: list[Node], ctx: Ctx, is_and: bool) -> Vec:
    vals = [ev(a, ctx) for a in args if a[0] != "missing"]
    n = max(v.shape[0] for v in vals)
    acc = ErrAcc((n, 1))
    seen = np.zeros((n, 1), dtype=bool)
    res = np.full((n, 1), is_and)
    for v in vals:
        kinds = v.kinds()
        err = kinds == ERR
        if err.any():
            anyr, first = _first_error_rows(err, v.objs())
            acc.add(anyr, first)
        if v.is_ref is True:
            incl = (kinds == NUM) | (kinds == BOOL)
            b = np.broadcast_to(v.num, v.shape) != 0
        else:
            refs = np.broadcast_to(v.is_ref, v.shape)  # per-element when IF mixed refs/values
            a2 = ErrAcc(v.shape)
            b = to_bool(v, a2)
            if a2.mask is not None:
                acc.add((a2.mask & ~refs).any(axis=1, keepdims=True), VALUE)
            incl = np.where(refs, (kinds == NUM) | (kinds == BOOL), kinds != ERR)
        seen |= incl.any(axis=1, keepdims=True)
        if is_and:
            res &= np.where(incl, b, True).all(axis=1, keepdims=True)
        else:
            res |= np.where(incl, b, False).any(axis=1, keepdims=True)
    acc.add(~seen, VALUE)
    return acc.finish(res.astype(float), kind=BOOL)


_register("AND", 1, 255)(lambda args, ctx: _logical(args, ctx, True))
_register("OR", 1, 255)(lambda args, ctx: _logical(args, ctx, False))


@_register("NOT", 1, 1)
def _not(args: list[Node], ctx: Ctx) -> Vec:
    v = ev(args[0], ctx)
    acc = ErrAcc(v.shape)
    return acc.finish((~to_bool(v, acc)).astype(float), kind=BOOL)


@_register("IF", 1, 3)
def _if(args: list[Node], ctx: Ctx) -> Vec:
    c = ev(args[0], ctx)
    acc = ErrAcc(c.shape)
    cond = to_bool(c, acc)
    then = args[1] if len(args) > 1 else ("bool", True)
    other = args[2] if len(args) > 2 else ("bool", False)
    if then[0] == "missing":
        then = ("num", 0.0)
    if other[0] == "missing":
        other = ("num", 0.0)
    if acc.mask is None and cond.all():
        return _broadcast_rows(ev(then, ctx), c.shape)
    if acc.mask is None and not cond.any():
        return _broadcast_rows(ev(other, ctx), c.shape)
    out = select(cond, ev(then, ctx), ev(other, ctx))
    if acc.mask is not None:
        out = select(acc.mask, Vec(ERR, np.full(acc.shape, np.nan), acc.obj), out)
    return out


def _broadcast_rows(v: Vec, shape: tuple[int, int]) -> Vec:
    if v.shape[0] >= shape[0]:
        return v
    target = (shape[0], v.shape[1])
    kind = v.kind if isinstance(v.kind, int) else np.broadcast_to(v.kind, target)
    obj = None if v.obj is None else np.broadcast_to(v.obj, target)
    return Vec(kind, np.broadcast_to(v.num, target), obj)


@_register("IFERROR", 2, 2)
def _iferror(args: list[Node], ctx: Ctx) -> Vec:
    v = ev(args[0], ctx)
    if not v.has(ERR):
        return v
    alt = ev(args[1], ctx) if args[1][0] != "missing" else const(0.0)
    return select(v.kinds() == ERR, alt, v)


def _is(pred: Callable[[np.ndarray], np.ndarray]) -> Func:
    def f(args: list[Node], ctx: Ctx) -> Vec:
        v = ev(args[0], ctx)
        return Vec(BOOL, pred(v.kinds()).astype(float))

    return f


_register("ISNUMBER", 1, 1)(_is(lambda k: k == NUM))
_register("ISTEXT", 1, 1)(_is(lambda k: k == STR))
_register("ISBLANK", 1, 1)(_is(lambda k: k == EMPTY))
_register("ISERROR", 1, 1)(_is(lambda k: k == ERR))
_register("ISLOGICAL", 1, 1)(_is(lambda k: k == BOOL))


def _numeric_fn(args: list[Node], ctx: Ctx, f: Callable[..., np.ndarray],
                check: Callable[..., np.ndarray | None] | None = None) -> Vec:  # fmt: skip
    vals = [ev(a, ctx) for a in args]
    shape = vals[0].shape
    for v in vals[1:]:
        shape = np.broadcast_shapes(shape, v.shape)
    acc = ErrAcc(shape)
    nums = [_num(v, acc) for v in vals]
    if check is not None:
        bad = check(*nums)
        if bad is not None:
            for mask, err in bad:  # type: ignore[union-attr]
                acc.add(mask, err)
    with np.errstate(all="ignore"):
        out = f(*nums)
    finite_check(np.where(acc.mask, 0.0, out) if acc.mask is not None else out, acc)
    return acc.finish(out)


_EPS = 2.0**-44  # absorbs binary representation error as Excel's decimal rounding does


def _round(mode: str) -> Func:
    def f(args: list[Node], ctx: Ctx) -> Vec:
        def g(x: np.ndarray, d: np.ndarray | float = 0.0) -> np.ndarray:
            d = np.trunc(d)
            scale = np.power(10.0, d)
            y = np.abs(x) * scale
            if mode == "ROUND":
                r = np.floor(y + 0.5 + y * _EPS)
            elif mode == "ROUNDUP":
                r = np.ceil(y - y * _EPS)
            else:
                r = np.floor(y + y * _EPS)
            return np.sign(x) * r / scale

        return _numeric_fn(args, ctx, g)

    return f


for _m in ("ROUND", "ROUNDUP", "ROUNDDOWN"):
    _register(_m, 2, 2)(_round(_m))
_register("INT", 1, 1)(lambda args, ctx: _numeric_fn(args, ctx, np.floor))
_register("ABS", 1, 1)(lambda args, ctx: _numeric_fn(args, ctx, np.abs))
_register("LOG10", 1, 1)(
    lambda args, ctx: _numeric_fn(args, ctx, np.log10, lambda x: [(x <= 0, NUM_ERR)])
)
_register("SQRT", 1, 1)(
    lambda args, ctx: _numeric_fn(args, ctx, np.sqrt, lambda x: [(x < 0, NUM_ERR)])
)
_register("MOD", 2, 2)(
    lambda args, ctx: _numeric_fn(
        args, ctx, lambda a, b: a - b * np.floor(a / b), lambda a, b: [(b == 0, DIV0)]
    )
)


def _block_arg(node: Node, ctx: Ctx) -> Vec:
    v = ev(node, ctx)
    if v.dims is None:
        v.dims = (1, 1) if v.shape[1] == 1 else (1, v.shape[1])
    return v


@_register("INDEX", 2, 3)
def _index(args: list[Node], ctx: Ctx) -> Vec:
    block = _block_arg(args[0], ctx)
    if block.shape[0] != 1:
        return error_vec(VALUE, (ctx.n, 1))
    h, w = block.dims  # type: ignore[misc]
    r = ev(args[1], ctx)
    c = ev(args[2], ctx) if len(args) > 2 and args[2][0] != "missing" else None
    shape = r.shape if c is None else np.broadcast_shapes(r.shape, c.shape)
    acc = ErrAcc(shape)
    ri = np.trunc(_num(r, acc))
    if c is None:
        ci = np.ones(shape)
        if h == 1:  # INDEX(row_range, k) picks the k-th column
            ri, ci = np.ones(shape), ri
    else:
        ci = np.trunc(_num(c, acc))
    ri, ci = np.broadcast_to(ri, shape), np.broadcast_to(ci, shape)
    if ((ri == 0) | (ci == 0)).any():
        from .engine import Unsupported

        raise Unsupported("INDEX with row or column 0 (a whole row/column)")
    bad = ~((ri >= 1) & (ci >= 1) & (ri <= h) & (ci <= w))  # NaN (error rows) is bad too
    acc.add(bad, REF)
    flat = np.where(bad, 0, (ri - 1) * w + (ci - 1)).astype(np.int64)
    kinds = block.kinds()[0][flat]
    num = np.broadcast_to(block.num, block.shape)[0][flat]
    obj = None if block.obj is None else np.broadcast_to(block.obj, block.shape)[0][flat]
    picked = Vec(kinds, num, obj, is_ref=True)
    if acc.mask is None:
        return picked
    out = select(acc.mask, Vec(ERR, np.full(acc.shape, np.nan), acc.obj), picked)
    out.is_ref = True  # error rows stay errors either way; the others are references
    return out


def _key(k: int, n: float, o: object) -> tuple[int, object] | None:
    if k == NUM:
        return (0, float(n))
    if k == STR:
        return (1, str(o).lower())
    if k == BOOL:
        return (2, bool(n))
    return None


def _wildcard(s: str) -> re.Pattern[str] | None:
    if "*" not in s and "?" not in s:
        return None
    out, i = "", 0
    while i < len(s):
        ch = s[i]
        if ch == "~" and i + 1 < len(s):
            out += re.escape(s[i + 1])
            i += 2
            continue
        out += ".*" if ch == "*" else "." if ch == "?" else re.escape(ch)
        i += 1
    return re.compile(out, re.S)


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
                pat = _wildcard(key[1]) if key[0] == 1 and hit < 0 else None  # type: ignore[arg-type]
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


def _literal_int(node: Node, default: int) -> int | None:
    if node[0] == "missing":
        return default
    if node[0] == "num":
        return int(node[1])
    if node[0] == "bool":
        return int(node[1])
    if node[0] == "call" and node[1] in ("TRUE", "FALSE") and not node[2]:
        return int(node[1] == "TRUE")
    if node[0] == "neg" and node[1][0] == "num":
        return -int(node[1][1])
    return None


@_register("MATCH", 2, 3)
def _match(args: list[Node], ctx: Ctx) -> Vec:
    mtype = _literal_int(args[2], 1) if len(args) > 2 else 1
    if mtype is None:
        from .engine import Unsupported

        raise Unsupported("MATCH with a computed match_type")
    mtype = (mtype > 0) - (mtype < 0)
    x = ev(args[0], ctx)
    keys = _block_arg(args[1], ctx)
    h, w = keys.dims  # type: ignore[misc]
    acc = ErrAcc((x.shape[0], 1))
    if h != 1 and w != 1:
        acc.add(np.ones((x.shape[0], 1), dtype=bool), NA)
        return acc.finish(np.zeros((x.shape[0], 1)))
    pos = _lookup_positions(x, keys, mtype, acc)
    return acc.finish(pos.astype(float) + 1.0)


@_register("VLOOKUP", 3, 4)
def _vlookup(args: list[Node], ctx: Ctx) -> Vec:
    mode = _literal_int(args[3], 1) if len(args) > 3 else 1
    if mode is None:
        from .engine import Unsupported

        raise Unsupported("VLOOKUP with a computed range_lookup")
    x = ev(args[0], ctx)
    table = _block_arg(args[1], ctx)
    w = table.dims[1]  # type: ignore[index]
    colv = ev(args[2], ctx)
    n = max(x.shape[0], colv.shape[0])
    acc = ErrAcc((n, 1))
    col = np.broadcast_to(np.trunc(_num(colv, acc)), (n, 1))
    first = Vec(table.kinds()[:, ::w], np.broadcast_to(table.num, table.shape)[:, ::w],
                table.objs()[:, ::w])  # fmt: skip
    pos = np.broadcast_to(_lookup_positions(x, first, 1 if mode else 0, acc), (n, 1))
    acc.add(col < 1, VALUE)
    acc.add(col > w, REF)
    ok = (pos >= 0) & (col >= 1) & (col <= w)
    flat = np.where(ok, pos * w + col - 1, 0).astype(np.int64)
    kinds = table.kinds()[0][flat]
    num = np.broadcast_to(table.num, table.shape)[0][flat]
    obj = None if table.obj is None else table.objs()[0][flat]
    picked = Vec(kinds, num, obj, is_ref=True)
    if acc.mask is None:
        return picked
    out = select(acc.mask, Vec(ERR, np.full(acc.shape, np.nan), acc.obj), picked)
    out.is_ref = True  # error rows stay errors either way; the others are references
    return out


__all__ = ["ARITY", "FUNCTIONS", "ExcelError"]


# TRUE() and FALSE() as functions: LibreOffice writes VLOOKUP(...,FALSE()) when it saves xlsx.
_register("TRUE", 0, 0)(lambda args, ctx: const(True))
_register("FALSE", 0, 0)(lambda args, ctx: const(False))
