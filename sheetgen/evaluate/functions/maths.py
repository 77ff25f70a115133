"""Maths: ROUND ROUNDUP ROUNDDOWN TRUNC INT CEILING FLOOR CEILING.MATH FLOOR.MATH MROUND
QUOTIENT MOD ABS SIGN SQRT POWER EXP LN LOG LOG10 PI, element-wise with Excel's errors."""

from __future__ import annotations

import numpy as np

from sheetgen.core import excel as xn

from ..evaluator import Ctx
from ..parser import Node
from ..values import DIV0, NUM_ERR
from ..vec import Vec, const
from .base import Func, numeric_fn, register


def _round(mode: str) -> Func:
    return lambda args, ctx: numeric_fn(args, ctx, lambda x, d: np.asarray(xn.round_to(x, d, mode)))


for _m in ("ROUND", "ROUNDUP", "ROUNDDOWN"):
    register(_m, 2, 2)(_round(_m))


@register("TRUNC", 1, 2)
def _trunc(args: list[Node], ctx: Ctx) -> Vec:
    return numeric_fn(args, ctx, lambda x, d=None: np.asarray(
        xn.round_to(x, 0.0 if d is None else d, "ROUNDDOWN")))


def _whole(q: np.ndarray) -> np.ndarray:
    """q, snapped to the nearest integer when equal to it in 15 digits (0.3/0.1 is 3)."""
    r = np.round(q)
    return np.where(xn.eq(q, r), r, q)


def _ceiling(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.where(s == 0, 0.0, np.ceil(_whole(x / np.where(s == 0, 1, s))) * s)


def _floor(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.floor(_whole(x / np.where(s == 0, 1, s))) * s


register("CEILING", 2, 2)(lambda args, ctx: numeric_fn(
    args, ctx, _ceiling, lambda x, s: [((x > 0) & (s < 0), NUM_ERR)]))
register("FLOOR", 2, 2)(lambda args, ctx: numeric_fn(
    args, ctx, _floor, lambda x, s: [((x > 0) & (s < 0), NUM_ERR), (s == 0, DIV0)]))


def _math(up: bool) -> Func:
    """CEILING.MATH / FLOOR.MATH: |significance| (default 1); mode turns the direction of
    negative numbers (away from zero for CEILING.MATH, toward zero for FLOOR.MATH)."""

    def f(x: np.ndarray, s: np.ndarray | None = None, mode: np.ndarray | None = None
          ) -> np.ndarray:
        s = np.abs(1.0 if s is None else s)
        flip = (x < 0) & ((0.0 if mode is None else mode) != 0)
        q = _whole(x / np.where(s == 0, 1, s))
        r = np.where(up != flip, np.ceil(q), np.floor(q)) * s
        return np.where(s == 0, 0.0, r)

    return lambda args, ctx: numeric_fn(args, ctx, f)


register("CEILING.MATH", 1, 3)(_math(True))
register("FLOOR.MATH", 1, 3)(_math(False))


def _mround(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    q = np.abs(x / np.where(m == 0, 1, m))
    r = np.sign(x) * np.floor(q + 0.5 + q * xn.ROUND_EPS) * np.abs(m)
    return np.where(m == 0, 0.0, xn.round15(r))  # 1.3 to 0.2 is 1.4, not 1.4000000000000001


register("MROUND", 2, 2)(lambda args, ctx: numeric_fn(
    args, ctx, _mround, lambda x, m: [((x * m) < 0, NUM_ERR)]))
register("QUOTIENT", 2, 2)(lambda args, ctx: numeric_fn(
    args, ctx, lambda a, b: np.trunc(a / b), lambda a, b: [(b == 0, DIV0)]))
register("MOD", 2, 2)(lambda args, ctx: numeric_fn(
    args, ctx, lambda a, b: a - b * np.floor(a / b), lambda a, b: [(b == 0, DIV0)]))
register("INT", 1, 1)(lambda args, ctx: numeric_fn(args, ctx, np.floor))
register("ABS", 1, 1)(lambda args, ctx: numeric_fn(args, ctx, np.abs))
register("SIGN", 1, 1)(lambda args, ctx: numeric_fn(args, ctx, np.sign))
register("SQRT", 1, 1)(lambda args, ctx: numeric_fn(
    args, ctx, np.sqrt, lambda x: [(x < 0, NUM_ERR)]))
register("POWER", 2, 2)(lambda args, ctx: numeric_fn(
    args, ctx, np.power, lambda x, y: [((x == 0) & (y < 0), DIV0), ((x == 0) & (y == 0), NUM_ERR)]))
register("EXP", 1, 1)(lambda args, ctx: numeric_fn(args, ctx, np.exp))
register("LN", 1, 1)(lambda args, ctx: numeric_fn(
    args, ctx, np.log, lambda x: [(x <= 0, NUM_ERR)]))
register("LOG10", 1, 1)(lambda args, ctx: numeric_fn(
    args, ctx, np.log10, lambda x: [(x <= 0, NUM_ERR)]))


def _log(x: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    return np.log10(x) if b is None else np.log(x) / np.log(b)


register("LOG", 1, 2)(lambda args, ctx: numeric_fn(args, ctx, _log, lambda x, b=None: [
    (x <= 0, NUM_ERR), *([] if b is None else [(b <= 0, NUM_ERR), (b == 1, DIV0)])]))
register("PI", 0, 0)(lambda args, ctx: const(float(np.pi)))
