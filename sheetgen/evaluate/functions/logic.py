"""Logic and errors: AND OR NOT IF IFS SWITCH IFERROR IFNA, the IS* tests, NA ERROR.TYPE."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sheetgen.core.excel import ERROR_CODES

from ..evaluator import Ctx, compare, ev
from ..parser import Node
from ..values import BOOL, EMPTY, ERR, NA, NUM, STR, VALUE, ExcelError
from ..vec import ErrAcc, Vec, const, select, to_bool
from .base import Func, broadcast_rows, first_error_rows, register


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
            anyr, first = first_error_rows(err, v.objs())
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


register("AND", 1, 255)(lambda args, ctx: _logical(args, ctx, True))
register("OR", 1, 255)(lambda args, ctx: _logical(args, ctx, False))


@register("NOT", 1, 1)
def _not(args: list[Node], ctx: Ctx) -> Vec:
    v = ev(args[0], ctx)
    acc = ErrAcc(v.shape)
    return acc.finish((~to_bool(v, acc)).astype(float), kind=BOOL)


def _error_vec(acc: ErrAcc) -> Vec:
    return Vec(ERR, np.full(acc.shape, np.nan), acc.obj)


@register("IF", 1, 3)
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
        return broadcast_rows(ev(then, ctx), c.shape)
    if acc.mask is None and not cond.any():
        return broadcast_rows(ev(other, ctx), c.shape)
    out = select(cond, ev(then, ctx), ev(other, ctx))
    if acc.mask is not None:
        out = select(acc.mask, _error_vec(acc), out)
    return out


@register("IFS", 2, 254)
def _ifs(args: list[Node], ctx: Ctx) -> Vec:
    """The value after the first TRUE condition; #N/A when none is TRUE."""
    if len(args) % 2:
        from .base import Unsupported

        raise Unsupported("IFS needs condition/value pairs")
    out: Vec | None = None
    done: np.ndarray | None = None
    for cond_node, value_node in zip(args[0::2], args[1::2], strict=True):
        c = ev(cond_node, ctx)
        acc = ErrAcc(c.shape)
        cond = to_bool(c, acc)
        if acc.mask is not None:  # an error condition is the result of its rows
            cond = cond | acc.mask
        here = cond if done is None else cond & ~done
        if here.any():
            v = ev(value_node, ctx)
            if acc.mask is not None:
                v = select(acc.mask, _error_vec(acc), v)
            out = v if out is None else select(here, v, out)
            if done is None and bool(here.all()):
                return broadcast_rows(v, c.shape)
        done = here if done is None else (done | here)
        if bool(done.all()):
            return out  # type: ignore[return-value]
    na = const(NA)
    if out is None or done is None:
        return na
    return select(done, out, na)


@register("SWITCH", 3, 254)
def _switch(args: list[Node], ctx: Ctx) -> Vec:
    """The result paired with the first value equal to the expression, else the default."""
    x = ev(args[0], ctx)
    rest = args[1:]
    default = rest[-1] if len(rest) % 2 else None
    pairs = list(zip(rest[0::2], rest[1::2], strict=False))
    out: Vec = ev(default, ctx) if default is not None else const(NA)
    done = None
    matches = []
    for value_node, result_node in pairs:
        v = ev(value_node, ctx)
        eq = compare("=", x, v, ErrAcc(np.broadcast_shapes(x.shape, v.shape)))
        hit = (eq.kinds() == BOOL) & (np.broadcast_to(eq.num, eq.shape) != 0)
        here = hit if done is None else hit & ~done
        matches.append((here, result_node))
        done = here if done is None else done | here
    for here, result_node in reversed(matches):
        if here.any():
            out = select(here, ev(result_node, ctx), out)
    if x.has(ERR):
        out = select(x.kinds() == ERR, x, out)
    return out


@register("IFERROR", 2, 2)
def _iferror(args: list[Node], ctx: Ctx) -> Vec:
    v = ev(args[0], ctx)
    if not v.has(ERR):
        return v
    alt = ev(args[1], ctx) if args[1][0] != "missing" else const(0.0)
    return select(v.kinds() == ERR, alt, v)


def _is_na(v: Vec) -> np.ndarray:
    kinds = v.kinds()
    if not v.has(ERR):
        return np.zeros(kinds.shape, dtype=bool)
    return (kinds == ERR) & (v.objs() == NA)


@register("IFNA", 2, 2)
def _ifna(args: list[Node], ctx: Ctx) -> Vec:
    v = ev(args[0], ctx)
    na = _is_na(v)
    if not na.any():
        return v
    alt = ev(args[1], ctx) if args[1][0] != "missing" else const(0.0)
    return select(na, alt, v)


def _is(pred: Callable[[Vec], np.ndarray]) -> Func:
    def f(args: list[Node], ctx: Ctx) -> Vec:
        v = ev(args[0], ctx)
        return Vec(BOOL, pred(v).astype(float))

    return f


register("ISNUMBER", 1, 1)(_is(lambda v: v.kinds() == NUM))
register("ISTEXT", 1, 1)(_is(lambda v: v.kinds() == STR))
register("ISBLANK", 1, 1)(_is(lambda v: v.kinds() == EMPTY))
register("ISERROR", 1, 1)(_is(lambda v: v.kinds() == ERR))
register("ISLOGICAL", 1, 1)(_is(lambda v: v.kinds() == BOOL))
register("ISNA", 1, 1)(_is(_is_na))
register("ISERR", 1, 1)(_is(lambda v: (v.kinds() == ERR) & ~_is_na(v)))
register("NA", 0, 0)(lambda args, ctx: const(NA))

_ERROR_NUMBER = {ExcelError(code): float(i + 1) for i, code in enumerate(ERROR_CODES)}


@register("ERROR.TYPE", 1, 1)
def _error_type(args: list[Node], ctx: Ctx) -> Vec:
    """#NULL! 1, #DIV/0! 2, #VALUE! 3, #REF! 4, #NAME? 5, #NUM! 6, #N/A 7; else #N/A."""
    v = ev(args[0], ctx)
    kinds = v.kinds()
    err = kinds == ERR
    acc = ErrAcc(kinds.shape)
    acc.add(~err, NA)
    objs = v.objs()
    out = np.zeros(kinds.shape)
    for idx in zip(*np.nonzero(err), strict=True):
        out[idx] = _ERROR_NUMBER[objs[idx]]
    return acc.finish(out)


# TRUE() and FALSE() as functions: LibreOffice writes VLOOKUP(...,FALSE()) when it saves xlsx.
register("TRUE", 0, 0)(lambda args, ctx: const(True))
register("FALSE", 0, 0)(lambda args, ctx: const(False))
