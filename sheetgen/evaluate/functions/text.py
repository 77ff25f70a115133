"""Text: CONCATENATE CONCAT TEXTJOIN TEXT LEFT RIGHT MID LEN TRIM UPPER LOWER VALUE N T
EXACT REPT. Numbers become text as ``&`` writes them (core.excel.number_to_text)."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import numpy as np

from sheetgen.core.excel import number_to_text

from ..evaluator import Ctx, ev, to_text
from ..parser import Node
from ..values import BOOL, EMPTY, ERR, NUM, STR, VALUE, text_to_number
from ..vec import ErrAcc, Vec
from .base import Unsupported, register, to_num

MAX_TEXT = 32767  # Excel's limit on the characters of one cell


def _text_result(out: np.ndarray, acc: ErrAcc) -> Vec:
    res = acc.finish(np.full(acc.shape, np.nan), kind=STR)
    res.obj = out if acc.mask is None else np.where(acc.mask, acc.obj, out)
    return res


def _scalar_texts(node: Node, ctx: Ctx, acc: ErrAcc | None = None) -> tuple[np.ndarray, Vec]:
    v = ev(node, ctx) if node[0] != "missing" else Vec(EMPTY, np.zeros((1, 1)))
    if v.shape[1] != 1:
        raise Unsupported("a range where a text function expects a single value")
    return to_text(v), v


def _elementwise(args: list[Node], ctx: Ctx, f: Callable[..., Any], kinds: str) -> Vec:
    """Apply f per row to the arguments, each read as text (t) or number (n)."""
    vals = [ev(a, ctx) if a[0] != "missing" else None for a in args]
    n = max((v.shape[0] for v in vals if v is not None), default=1)
    acc = ErrAcc((n, 1))
    cols: list[Any] = []
    for v, k in zip(vals, kinds, strict=False):
        if v is None:
            cols.append(None)
            continue
        if v.shape[1] != 1:
            raise Unsupported("a range where a text function expects a single value")
        if k == "t":
            acc.add_vec_errors(v)
            cols.append(np.broadcast_to(to_text(v), (n, 1))[:, 0])
        else:
            cols.append(np.broadcast_to(to_num(v, acc), (n, 1))[:, 0])
    out = np.empty((n, 1), dtype=object)
    bad = np.zeros((n, 1), dtype=bool)
    for i in range(n):
        try:
            out[i, 0] = f(*[None if c is None else c[i] for c in cols])
        except ValueError:
            bad[i, 0], out[i, 0] = True, ""
    acc.add(bad, VALUE)
    too_long = np.array([[isinstance(s, str) and len(s) > MAX_TEXT] for s in out[:, 0]])
    acc.add(too_long, VALUE)
    return _text_result(out, acc)


@register("CONCATENATE", 1, 255)
def _concatenate(args: list[Node], ctx: Ctx) -> Vec:
    return _elementwise(args, ctx, lambda *t: "".join(t), "t" * len(args))


def _flat_texts(args: list[Node], ctx: Ctx, acc: ErrAcc | None, n: int
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """(texts, is-empty) of every cell of every argument, each (n, width)."""
    out = []
    for a in args:
        if a[0] == "missing":
            continue
        v = ev(a, ctx)
        if acc is not None and v.has(ERR):
            err = v.kinds() == ERR
            first = np.argmax(err, axis=1)
            objs = v.objs()
            acc.add(err.any(axis=1, keepdims=True),
                    objs[np.arange(objs.shape[0]), first].reshape(-1, 1))
        t = np.broadcast_to(to_text(v), (max(n, v.shape[0]), v.shape[1]))
        out.append((t, np.broadcast_to(v.kinds() == EMPTY, t.shape)))
    return out


def _rows(args: list[Node], ctx: Ctx) -> int:
    return max([ev(a, ctx).shape[0] for a in args if a[0] != "missing"] or [1])


@register("CONCAT", 1, 254)
def _concat(args: list[Node], ctx: Ctx) -> Vec:
    n = _rows(args, ctx)
    acc = ErrAcc((n, 1))
    parts = _flat_texts(args, ctx, acc, n)
    out = np.empty((n, 1), dtype=object)
    for i in range(n):
        out[i, 0] = "".join("".join(t[min(i, t.shape[0] - 1)]) for t, _e in parts)
    return _text_result(out, acc)


@register("TEXTJOIN", 3, 254)
def _textjoin(args: list[Node], ctx: Ctx) -> Vec:
    n = _rows(args, ctx)
    acc = ErrAcc((n, 1))
    delim, _ = _scalar_texts(args[0], ctx)
    skip_v = ev(args[1], ctx)
    from ..vec import to_bool

    skip = np.broadcast_to(to_bool(skip_v, acc), (n, 1))[:, 0]
    parts = _flat_texts(args[2:], ctx, acc, n)
    out = np.empty((n, 1), dtype=object)
    d = np.broadcast_to(delim, (n, 1))[:, 0]
    for i in range(n):
        items: list[str] = []
        for t, e in parts:
            r = min(i, t.shape[0] - 1)
            items.extend(s for s, empty in zip(t[r], e[r], strict=True)
                         if not (skip[i] and (empty or s == "")))
        out[i, 0] = str(d[i]).join(items)
    return _text_result(out, acc)


# --- TEXT(value, format) for the en-US codes people use ----------------------------------
_FIXED = re.compile(r"^(?P<int>[#,0]*0|#)(?:\.(?P<dec>0+))?(?P<pct>%?)$")
_SCI = re.compile(r"^(?P<int>0)(?:\.(?P<dec>0+))?E(?P<sign>[+-])(?P<exp>0+)$", re.I)


def _decimal(x: float) -> Decimal:
    return Decimal(f"{x:.15g}")  # the 15 digits Excel holds, so 2.675 rounds to 2.68


def format_number(x: float, fmt: str) -> str:
    """Excel's TEXT of a number for fixed (0.00, #,##0), percent (0%) and scientific
    (0.0E+00) codes and General; other codes are not supported."""
    code = fmt.strip()
    if code.lower() == "general" or code == "":
        return number_to_text(x) if code else ""
    m = _FIXED.match(code)
    if m is not None:
        if m.group("pct"):
            x *= 100
        places = len(m.group("dec") or "")
        q = _decimal(x).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
        body = f"{abs(q):,.{places}f}" if "," in m.group("int") else f"{abs(q):.{places}f}"
        if m.group("int") == "#" and body.split(".")[0] == "0":  # '#' shows no lone zero
            body = body[1:]
        return ("-" if x < 0 else "") + body + ("%" if m.group("pct") else "")
    m = _SCI.match(code)
    if m is not None:
        places = len(m.group("dec") or "")
        if x == 0:
            mant, exp = Decimal(0).quantize(Decimal(1).scaleb(-places)), 0
        else:
            d = _decimal(abs(x))
            exp = d.adjusted()
            mant = d.scaleb(-exp).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
            if mant >= 10:
                mant, exp = (mant / 10).quantize(Decimal(1).scaleb(-places)), exp + 1
        width = len(m.group("exp"))
        sign = "-" if exp < 0 else ("+" if m.group("sign") == "+" else "")
        return f"{'-' if x < 0 else ''}{mant}E{sign}{abs(exp):0{width}d}"
    raise Unsupported(f"TEXT format {fmt!r}")


@register("TEXT", 2, 2)
def _text(args: list[Node], ctx: Ctx) -> Vec:
    v = ev(args[0], ctx)
    fmts, fv = _scalar_texts(args[1], ctx)
    n = max(v.shape[0], fv.shape[0])
    acc = ErrAcc((n, 1))
    acc.add_vec_errors(v)
    acc.add_vec_errors(fv)
    kinds = np.broadcast_to(v.kinds(), (n, 1))[:, 0]
    nums = np.broadcast_to(v.num, (n, 1))[:, 0]
    texts = np.broadcast_to(to_text(v), (n, 1))[:, 0]
    f = np.broadcast_to(fmts, (n, 1))[:, 0]
    out = np.empty((n, 1), dtype=object)
    for i in range(n):
        k = int(kinds[i])
        if k == ERR:
            out[i, 0] = ""
            continue
        x = float(nums[i]) if k in (NUM, EMPTY) else None
        if k == STR:
            x = text_to_number(str(texts[i]))
        if x is None or k == BOOL:
            out[i, 0] = str(texts[i])
        else:
            out[i, 0] = format_number(x, str(f[i]))
    return _text_result(out, acc)


def _count(x: float | None, default: int = 1) -> int:
    if x is None:
        return default
    if x < 0:
        raise ValueError("negative count")
    return int(x)


def _mid(t: str, start: float, k: float) -> str:
    if start < 1 or k < 0:
        raise ValueError("bad MID")
    return t[int(start) - 1 : int(start) - 1 + int(k)]


register("LEFT", 1, 2)(lambda args, ctx: _elementwise(
    args, ctx, lambda t, k=None: t[: _count(k)], "tn"))
register("RIGHT", 1, 2)(lambda args, ctx: _elementwise(
    args, ctx, lambda t, k=None: t[len(t) - min(len(t), _count(k)):], "tn"))
register("MID", 3, 3)(lambda args, ctx: _elementwise(args, ctx, _mid, "tnn"))
register("TRIM", 1, 1)(lambda args, ctx: _elementwise(
    args, ctx, lambda t: " ".join(p for p in t.split(" ") if p), "t"))
register("UPPER", 1, 1)(lambda args, ctx: _elementwise(args, ctx, str.upper, "t"))
register("LOWER", 1, 1)(lambda args, ctx: _elementwise(args, ctx, str.lower, "t"))
register("REPT", 2, 2)(lambda args, ctx: _elementwise(
    args, ctx, lambda t, k: t * _count(k), "tn"))


def _len(args: list[Node], ctx: Ctx) -> Vec:
    v = _elementwise(args, ctx, lambda t: t, "t")
    if v.obj is None:
        return v
    kinds = v.kinds()
    lens = np.array([[len(s) if isinstance(s, str) else 0] for s in v.objs()[:, 0]], float)
    acc = ErrAcc(v.shape)
    acc.add(kinds == ERR, v.objs())
    return acc.finish(lens)


register("LEN", 1, 1)(_len)


@register("EXACT", 2, 2)
def _exact(args: list[Node], ctx: Ctx) -> Vec:
    a, b = ev(args[0], ctx), ev(args[1], ctx)
    shape = np.broadcast_shapes(a.shape, b.shape)
    acc = ErrAcc(shape)
    acc.add_vec_errors(a)
    acc.add_vec_errors(b)
    eq = np.asarray(np.broadcast_to(to_text(a), shape) == np.broadcast_to(to_text(b), shape))
    return acc.finish(eq.astype(float), kind=BOOL)


@register("VALUE", 1, 1)
def _value(args: list[Node], ctx: Ctx) -> Vec:
    """Text read as a number; a number stays; a boolean is #VALUE! (as in Excel)."""
    v = ev(args[0], ctx)
    acc = ErrAcc(v.shape)
    acc.add(v.kinds() == BOOL, VALUE)
    return acc.finish(to_num(v, acc))


@register("N", 1, 1)
def _n(args: list[Node], ctx: Ctx) -> Vec:
    v = ev(args[0], ctx)
    kinds = v.kinds()
    acc = ErrAcc(v.shape)
    acc.add(kinds == ERR, v.objs())
    return acc.finish(np.where((kinds == NUM) | (kinds == BOOL), v.num, 0.0))


@register("T", 1, 1)
def _t(args: list[Node], ctx: Ctx) -> Vec:
    v = ev(args[0], ctx)
    acc = ErrAcc(v.shape)
    acc.add_vec_errors(v)
    kinds = v.kinds()
    out = np.where(kinds == STR, v.objs(), "").astype(object)
    return _text_result(out, acc)
