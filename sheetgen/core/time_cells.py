"""Time cells in the unit people read (µs, ms) while every reference stays in SI seconds.

A number format can only divide by powers of 1000, so a cell cannot show 2.159E-05 s as
21.59 µs by format alone. Each sheet therefore declares the unit its time cells hold
(`SheetSpec.time_unit`, or an item's own `time_unit`), and a time cell holds SI × factor
(21.59 for 21.59 µs) under a header that names the unit. Everything else is derived here:

* the planner rewrites each formula so the units meet (`plan_conversion`): a formula is
  evaluated in one common time unit; references held in another unit, and the result, are
  converted by a power of ten. Rates (FLOP/s, B/s, rows/s) stay SI in their cells, so
  `=F6/PEAK_FLOPS*1E+06` is a compute time in µs and `=MAX(G6,H6)` needs no conversion;
* the writers cache SI × factor; the checker reads inputs back as cell ÷ factor;
* `read` and the API divide by the factor again, so they always give seconds.

The conversion is pure dimensional analysis on the declared units, so a unit declared wrongly
shows up as a 1000× disagreement between the SI reference model and the spreadsheet engines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sheetgen.core.excel import is_number
from sheetgen.core.units import TIME_EXPONENTS

#: cell value = seconds × factor, for the units a time cell may hold (from core/units.py)
TIME_FACTORS: dict[str, float] = {u: 10.0 ** -TIME_EXPONENTS[u] for u in ("s", "ms", "µs")}
TIME = "s"


def time_exponent(unit: str) -> int:
    """The power of seconds in a declared unit: 1 for "s", -1 for any rate ("FLOP/s",
    "rows/s"), 0 otherwise."""
    if unit == TIME:
        return 1
    if unit.endswith("/s"):
        return -1
    return 0


def check_time_unit(unit: str) -> str:
    if unit not in TIME_FACTORS:
        raise ValueError(f"time unit {unit!r}: choose one of {', '.join(TIME_FACTORS)}")
    return unit


def scaled(values: Any, factor: float) -> Any:
    """Values (a scalar or a column) multiplied by `factor` where they are numbers; text,
    blanks, booleans and error values pass through."""
    if factor == 1.0:
        return values
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "f":
            return values * factor
        out = values.copy()
        if values.ndim != 1:
            for i, v in enumerate(values.tolist()):
                if is_number(v):
                    out[i] = v * factor
            return out
        # is_number for every cell, its common answers inline (a plain float, text, a
        # blank): a per-layer table at --layers 100000 has hundreds of thousands of them
        numbers = np.fromiter(
            ((type(v) is float and math.isfinite(v))
             or (type(v) is not float and type(v) is not str and v is not None
                 and is_number(v)) for v in values.tolist()), dtype=bool, count=values.size)
        out[numbers] = values[numbers] * factor
        return out
    if isinstance(values, list | tuple):
        return type(values)(scaled(v, factor) for v in values)
    return values * factor if is_number(values) else values


@dataclass(frozen=True)
class Ref:
    """One placeholder of a template as the planner sees it."""

    exponent: int  # power of seconds in its unit
    factor: float  # its cell holds SI × factor (1 unless a time)
    whole_range: bool  # a range (or running range): cannot be converted inside a formula


@dataclass(frozen=True)
class Conversion:
    """How one formula meets its references' units: it is evaluated with times in `common`
    (seconds × common); each reference is multiplied by ref_multiplier, the result by
    `result`."""

    common: float
    result: float

    def ref_multiplier(self, ref: Ref) -> float:
        return (self.common / ref.factor) ** ref.exponent if ref.exponent else 1.0


def plan_conversion(exponent: int, factor: float, refs: Sequence[Ref], *,
                    may_wrap: bool, si_refs: bool = False) -> Conversion:
    """The common time unit that needs the fewest conversions (ties: SI first).

    `exponent`/`factor` describe the quantity's own cell; `may_wrap` is False when the
    template can give text (a "" branch), which a trailing multiplication would turn into an
    error value. A range can never be converted in place (SUM(A1:A9/1000) needs an array
    formula), so a common unit that would need it is ruled out.
    """
    candidates = [1.0] if si_refs else sorted({1.0, factor, *(r.factor for r in refs)})
    best: tuple[float, float] | None = None
    for common in candidates:
        cost = 0.0
        for r in refs:
            if r.exponent and r.factor != common:
                cost += math.inf if r.whole_range else 1
        if exponent and factor != common:
            cost += 1 if may_wrap else math.inf
        if best is None or cost < best[1]:
            best = (common, cost)
    assert best is not None
    if math.isinf(best[1]):
        raise ValueError("no common time unit: a range reference or a text result would need "
                         "converting (declare the cells' time units consistently)")
    common = best[0]
    return Conversion(common, (factor / common) ** exponent if exponent else 1.0)


def power_of_ten(multiplier: float) -> tuple[str, str]:
    """('*', '1E+06') or ('/', '1E+03'): the operator and literal that apply `multiplier`."""
    p = round(math.log10(multiplier))
    if not math.isclose(10.0 ** p, multiplier, rel_tol=1e-12):
        raise ValueError(f"time factors must be powers of ten, not {multiplier}")
    return ("*", f"1E+{p:02d}") if p > 0 else ("/", f"1E+{-p:02d}")


def convert_ref(text: str, multiplier: float) -> str:
    if multiplier == 1.0:
        return text
    op, literal = power_of_ten(multiplier)
    return f"({text}{op}{literal})"


def convert_result(body: str, multiplier: float) -> str:
    if multiplier == 1.0:
        return body
    op, literal = power_of_ten(multiplier)
    return f"{body}{op}{literal}" if _product_at_top(body) else f"({body}){op}{literal}"


def _product_at_top(body: str) -> bool:
    """Whether `body` has no operator at paren depth 0 that binds looser than * and /
    (so `body*1E+06` means (body)*1E+06). Unary minus, ^ and % bind tighter."""
    depth, quoted, prev, before = 0, False, "(", ""
    for ch in body:
        if quoted:
            quoted = ch != '"'
        elif ch == '"':
            quoted = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and _looser_than_product(ch, prev, before):
            return False
        if not ch.isspace():
            prev, before = ch, prev
    return True


def _looser_than_product(ch: str, prev: str, before: str) -> bool:
    if ch in "&=<>":
        return True
    binary = ch in "+-" and prev not in "(*/^,=<>&+-"
    return binary and not (prev in "eE" and before.isdigit())  # 1E+06 is one number


def may_give_text(template: str) -> bool:
    """A template with a string literal that could be its result ("" for a blank)."""
    return '""' in template or "&" in template
