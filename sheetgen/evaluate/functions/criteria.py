"""Conditional aggregates: COUNTIF(S) SUMIF(S) AVERAGEIF(S) MAXIFS MINIFS, with Excel's
criteria syntax: a value (equality), or text with an operator (=, <>, <, <=, >, >=) before a
number, a boolean or text; * ? and ~ wildcards in text equality; "" for blank cells, "=" for
empty cells only, "<>" for non-empty cells. Text matches case-insensitively.

A criterion is turned into a mask over the range once per distinct criterion; plain
equality criteria (a row's own key, as in a group total) go through one hash index of the
range instead, so SUMIF($A:$A,A2,$B:$B) down a column costs O(rows + range), not their product.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from sheetgen.core import excel as xn

from ..evaluator import Ctx, Rowwise, blanks_beyond, ev
from ..parser import Node
from ..values import BOOL, DIV0, EMPTY, ERR, NUM, STR, VALUE, text_key, text_to_number
from ..vec import ErrAcc, Vec
from .base import Unsupported, block_arg, register

_OPS = ("<=", ">=", "<>", "<", ">", "=")
_NUM_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "=": xn.eq, "<>": lambda a, b: ~xn.eq(a, b), "<": xn.lt, "<=": xn.le, ">": xn.gt,
    ">=": xn.ge}  # fmt: skip
_TEXT_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}
_key = np.frompyfunc(text_key, 1, 1)
_lower = np.frompyfunc(lambda s: str(s).lower(), 1, 1)


def wildcard(s: str) -> re.Pattern[str] | None:
    """Excel's wildcards (* any run, ? one character, ~ escapes the next), case-insensitive;
    None when `s` has none (an exact match). Shared by the *IF(S) criteria and MATCH/VLOOKUP."""
    if "*" not in s and "?" not in s and "~" not in s:
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
    return re.compile(out, re.S | re.I)


class Cells:
    """One criteria range's kinds, numbers and payloads as flat arrays."""

    def __init__(self, v: Vec, node: Node) -> None:
        if v.shape[0] != 1:
            raise Unsupported("a conditional aggregate over a per-row array")
        self.kinds = v.kinds()[0]
        self.num = np.broadcast_to(v.num, v.shape)[0]
        self.obj = v.objs()[0]
        self.dims = v.dims or (1, v.shape[1])
        self.hidden = blanks_beyond(v)  # a clipped whole-column range: the rest is empty
        self._strs: np.ndarray | None = None

    def texts(self) -> np.ndarray:
        if self._strs is None:
            self._strs = np.where(self.kinds == STR, self.obj, "").astype(object)
        return self._strs


def parse_criterion(kind: int, num: float, obj: Any) -> tuple[str, str, Any]:
    """(operator, type, operand) of one criterion value: type is num (a number), numtext (a
    number written as text, which also matches cells of numeric text), bool, text or blank."""
    if kind in (NUM, EMPTY):
        return "=", "num", float(num)
    if kind == BOOL:
        return "=", "bool", bool(num)
    if kind == ERR:
        return "=", "err", obj
    s = str(obj)
    op = next((o for o in _OPS if s.startswith(o)), "")
    rest = s[len(op):]
    if rest == "":
        return (op or ""), "blank", None
    x = text_to_number(rest)
    if x is not None:
        return op or "=", "numtext", x
    if rest.upper() in ("TRUE", "FALSE"):
        return op or "=", "bool", rest.upper() == "TRUE"
    return op or "=", "text", rest


def criterion_mask(c: Cells, crit: tuple[str, str, Any]) -> tuple[np.ndarray, bool]:
    """(mask over the cells, whether an empty cell matches) for one parsed criterion."""
    op, typ, x = crit
    k = c.kinds
    if typ == "blank":
        if op == "":
            return (k == EMPTY) | ((k == STR) & (c.texts() == "")), True
        if op == "=":
            return k == EMPTY, True
        if op == "<>":
            return k != EMPTY, False
        return np.zeros(k.shape, dtype=bool), False
    if typ == "err":
        return (k == ERR) & (c.obj == x), False
    neg = op == "<>"
    if typ in ("num", "numtext"):
        nums = c.num
        isnum = k == NUM
        if typ == "numtext" and op in ("=", "<>") and (k == STR).any():  # "5" is "5"
            as_num = np.array([text_to_number(t) if t else None for t in c.texts()],
                              dtype=float)  # None -> nan
            isnum = isnum | ((k == STR) & ~np.isnan(as_num))
            nums = np.where(k == STR, as_num, nums)
        hit = isnum & _NUM_OPS["=" if neg else op](nums, x)
    elif typ == "bool":
        if op in ("=", "<>"):
            hit = (k == BOOL) & ((c.num != 0) == x)
        else:
            hit = (k == BOOL) & _TEXT_OPS[op](c.num, float(x))
    elif op in ("=", "<>"):
        pat = wildcard(x)
        strs = k == STR
        if pat is None:
            hit = strs & (_lower(c.texts()) == x.lower())
        else:
            hit = strs & np.array([bool(pat.fullmatch(t)) for t in c.texts()], dtype=bool)
    else:
        strs = k == STR
        hit = strs & _TEXT_OPS[op](_key(c.texts()), text_key(x)).astype(bool)
    return (~hit, True) if neg else (hit, False)


def _equality_key(kind: int, num: float, obj: Any) -> Any:
    """A hashable key for plain-equality criteria (no operator, no wildcard), else None."""
    if kind == NUM:
        e, m = xn.digits15(np.array([num]))
        return ("n", float(e[0]), float(m[0]))
    if kind == STR:
        s = str(obj)
        if not s or s[0] in "<>=" or wildcard(s) is not None or text_to_number(s) is not None \
                or s.upper() in ("TRUE", "FALSE"):
            return None
        return ("s", s.lower())
    return None


def _range_codes(c: Cells) -> tuple[np.ndarray, dict[Any, int]]:
    """A code per cell (-1: never equal to a plain criterion) and the code of each key."""
    codes = np.full(c.kinds.shape, -1, dtype=np.int64)
    table: dict[Any, int] = {}
    nums = c.kinds == NUM
    if nums.any():
        e, m = xn.digits15(c.num[nums])
        pairs, inv = np.unique(np.stack([e, m], axis=1), axis=0, return_inverse=True)
        codes[nums] = inv.reshape(-1)
        for i, (ee, mm) in enumerate(pairs.tolist()):
            table[("n", ee, mm)] = i
    strs = np.flatnonzero(c.kinds == STR)
    for i in strs.tolist():
        key = ("s", str(c.obj[i]).lower())
        codes[i] = table.setdefault(key, len(table))
    return codes, table


def _values_of(node: Node, ctx: Ctx, like: Cells, like_node: Node) -> Cells:
    """The aggregated range, resized like the criteria range from its top-left (as Excel)."""
    v = block_arg(node, ctx)
    cells = Cells(v, node)
    if cells.dims != like.dims and node[0] == "ref":
        if not node[3] and ctx.n != 1:
            raise Rowwise
        row = node[2] if node[3] else node[2] + int(ctx.rows[0])
        node = ("range", node[1], row, True, node[4], row, True, node[4])
    if cells.dims != like.dims and node[0] == "range" and node[3] and node[6]:
        h, w = like.dims
        resized = ("range", node[1], node[2], True, node[4], node[2] + h - 1, True, node[4] + w - 1)
        cells = Cells(block_arg(resized, ctx), resized)
    if cells.dims != like.dims:
        raise Unsupported("a conditional aggregate over ranges of different sizes")
    return cells


def _conditional(args: list[Node], ctx: Ctx, how: str, multi: bool) -> Vec:
    """COUNT/SUM/AVERAGE/MAX/MIN over the cells meeting every criterion."""
    if multi:
        if how == "COUNT":
            pairs, target = list(zip(args[0::2], args[1::2], strict=False)), None
        else:
            pairs, target = list(zip(args[1::2], args[2::2], strict=False)), args[0]
        if len(args) % 2 != (0 if how == "COUNT" else 1):
            raise Unsupported(f"{how}IFS needs range/criteria pairs")
    else:
        pairs = [(args[0], args[1])]
        target = args[2] if len(args) > 2 and args[2][0] != "missing" else (
            None if how == "COUNT" else args[0])
    ranges = [Cells(block_arg(r, ctx), r) for r, _ in pairs]
    crits = [ev(c, ctx) for _, c in pairs]
    if any(r.dims != ranges[0].dims for r in ranges):
        n = max(c.shape[0] for c in crits)
        acc = ErrAcc((n, 1))
        acc.add(np.ones((n, 1), dtype=bool), VALUE)
        return acc.finish(np.zeros((n, 1)))
    values = _values_of(target, ctx, ranges[0], pairs[0][0]) if target is not None else None
    n = max(c.shape[0] for c in crits)
    ck = [np.broadcast_to(c.kinds(), (n, 1))[:, 0] for c in crits]
    cn = [np.broadcast_to(c.num, (n, 1))[:, 0] for c in crits]
    co = [np.broadcast_to(c.objs(), (n, 1))[:, 0] for c in crits]
    if values is not None:
        vnum = np.where(values.kinds == NUM, values.num, 0.0)
        visnum = values.kinds == NUM
        verr = values.kinds == ERR
    out = np.zeros(n)
    acc = ErrAcc((n, 1))
    cache: dict[tuple[Any, ...], int] = {}
    results: list[tuple[float, Any]] = []
    fast = None
    if len(ranges) == 1 and how in ("COUNT", "SUM", "AVERAGE") and n > 8:
        keys = [_equality_key(int(k), x, o) for k, x, o in zip(ck[0], cn[0], co[0], strict=True)]
        if all(key is not None for key in keys):
            fast = keys
    if fast is not None:
        codes, table = _range_codes(ranges[0])
        size = len(table) + 2  # then a slot for cells no key matches, one always empty
        idx = np.where(codes >= 0, codes, size - 2)
        count = np.bincount(idx, weights=None if values is None else visnum.astype(float),
                            minlength=size)
        total = np.bincount(idx, weights=vnum, minlength=size) if values is not None else count
        errs = np.bincount(idx, weights=verr.astype(float), minlength=size) \
            if values is not None else np.zeros(size)
        pos = np.array([table.get(key, size - 1) for key in fast], dtype=np.int64)
        cnt, tot = count[pos], total[pos]
        bad = errs[pos] > 0
        if bad.any():
            first = {}
            for j in np.flatnonzero(verr & (codes >= 0)).tolist():
                first.setdefault(int(codes[j]), values.obj[j])  # type: ignore[union-attr]
            acc.add(bad.reshape(-1, 1), np.array([first.get(int(p)) for p in pos],
                                                 dtype=object).reshape(-1, 1))
        if how == "COUNT":
            out = cnt
        elif how == "SUM":
            out = tot
        else:
            acc.add((cnt == 0).reshape(-1, 1), DIV0)
            with np.errstate(all="ignore"):
                out = np.where(cnt == 0, 0.0, tot / np.where(cnt == 0, 1, cnt))
        return acc.finish(out.reshape(-1, 1))
    for i in range(n):
        key = tuple((int(k[i]), float(x[i]) if k[i] != STR else 0.0, o[i])
                    for k, x, o in zip(ck, cn, co, strict=True))
        slot = cache.get(key)
        if slot is None:
            mask = np.ones(ranges[0].kinds.shape, dtype=bool)
            empty_ok = True
            for r, (kk, xx, oo) in zip(ranges, key, strict=True):
                m, e = criterion_mask(r, parse_criterion(kk, xx, oo))
                mask &= m
                empty_ok &= e
            results.append(_aggregate(how, mask, values, empty_ok, ranges))
            slot = cache[key] = len(results) - 1
        value, err = results[slot]
        out[i] = value
        if err is not None:
            acc.add(_row_mask(n, i), err)
    return acc.finish(out.reshape(-1, 1))


def _row_mask(n: int, i: int) -> np.ndarray:
    m = np.zeros((n, 1), dtype=bool)
    m[i, 0] = True
    return m


def _aggregate(how: str, mask: np.ndarray, values: Cells | None, empty_ok: bool,
               ranges: list[Cells]) -> tuple[float, Any]:
    if values is None:
        hidden = ranges[0].hidden if empty_ok and all(r.hidden == ranges[0].hidden
                                                      for r in ranges) else 0
        return float(mask.sum()) + hidden, None
    errs = mask & (values.kinds == ERR)
    if errs.any():
        return 0.0, values.obj[int(np.argmax(errs))]
    take = mask & (values.kinds == NUM)
    x = values.num[take]
    if how == "SUM":
        return float(x.sum()), None
    if how == "AVERAGE":
        return (float(x.mean()), None) if len(x) else (0.0, DIV0)
    if how == "MAX":
        return (float(x.max()) if len(x) else 0.0), None
    return (float(x.min()) if len(x) else 0.0), None


register("COUNTIF", 2, 2)(lambda args, ctx: _conditional(args, ctx, "COUNT", False))
register("SUMIF", 2, 3)(lambda args, ctx: _conditional(args, ctx, "SUM", False))
register("AVERAGEIF", 2, 3)(lambda args, ctx: _conditional(args, ctx, "AVERAGE", False))
register("COUNTIFS", 2, 254)(lambda args, ctx: _conditional(args, ctx, "COUNT", True))
register("SUMIFS", 3, 255)(lambda args, ctx: _conditional(args, ctx, "SUM", True))
register("AVERAGEIFS", 3, 255)(lambda args, ctx: _conditional(args, ctx, "AVERAGE", True))
register("MAXIFS", 3, 255)(lambda args, ctx: _conditional(args, ctx, "MAX", True))
register("MINIFS", 3, 255)(lambda args, ctx: _conditional(args, ctx, "MIN", True))
