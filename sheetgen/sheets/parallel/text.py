"""Live sentences: text cells built from numbers with ROUND and &, never TEXT().

A sentence is declared once as parts (literal text, numbers, other text cells, and IF
branches); `sentence` turns the parts into both the formula and the Python reference, so the
two say the same words. Numbers keep three significant digits (two for percentages) but
never lose whole digits: ROUND(x, MAX(0, d - 1 - floor(log10(|x| + 1E-12)))). A
spreadsheet writes a ROUNDed number into text without trailing zeros; so does
`core.excel.number_to_text`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sheetgen.core import time_cells
from sheetgen.core.excel import excel_round, number_to_text
from sheetgen.model.vocabulary import Quantity

Args = dict[str, Any]


@dataclass(frozen=True)
class Num:
    """A number written into the text: `expr` (a template) and its Python value."""

    expr: str
    value: Callable[[Args], float]
    digits: int = 3


@dataclass(frozen=True)
class Ref:
    """Another text cell, as it is."""

    name: str


@dataclass(frozen=True)
class When:
    """IF(cond, then, other) over parts."""

    cond: str
    test: Callable[[Args], bool]
    then: Sequence[Part]
    other: Sequence[Part] = ()


Part = str | Num | Ref | When


def _digits(x: float, digits: int) -> int:
    """Decimals that keep `digits` significant ones (floor(log10) is ROUNDDOWN of a shifted
    positive number: ROUNDDOWN truncates towards zero)."""
    return max(0, digits + 99 - math.trunc(math.log10(abs(x) + 1e-12) + 100))


def rounded_text(x: float, digits: int = 3) -> str:
    return number_to_text(excel_round(x, _digits(x, digits)))


def _formula(parts: Sequence[Part]) -> str:
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append('"' + p.replace('"', '""') + '"')
        elif isinstance(p, Num):
            e = f"({p.expr})"
            out.append(f"ROUND({e},MAX(0,{p.digits + 99}-ROUNDDOWN(LOG10(ABS({e})+1E-12)+100,0)))")
        elif isinstance(p, Ref):
            out.append(f"{{{p.name}}}")
        else:
            out.append(f"IF({p.cond},{_formula(p.then)},{_formula(p.other)})")
    return "&".join(out) if out else '""'


def _text(parts: Sequence[Part], a: Args) -> str:
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, Num):
            out.append(rounded_text(p.value(a), p.digits))
        elif isinstance(p, Ref):
            out.append(str(a[p.name]))
        else:
            out.append(_text(p.then if p.test(a) else p.other, a))
    return "".join(out)


def sentence(name: str, label: str, parts: Sequence[Part]) -> Quantity:
    """A text cell whose formula and reference both come from `parts`. Its numbers are
    converted by the parts themselves (`ms`), so it takes every reference in SI."""
    return Quantity(name, label, "", _formula(parts), lambda **a: _text(parts, a), fmt="text",
                    si_refs=True)


def ms(name: str) -> Num:
    """A time in milliseconds (the sentence takes it in seconds: si_refs)."""
    factor = time_cells.TIME_FACTORS["ms"]
    return Num(f"{factor:g}*{{{name}}}", lambda a: factor * a[name])


def winner(better: str, pp: Sequence[Part], tp: Sequence[Part], tie: Sequence[Part]) -> When:
    """Branch on a 'better' cell: pipeline | tensor | tie."""
    return When(f'{{{better}}}="pipeline"', lambda a: a[better] == "pipeline", pp,
                (When(f'{{{better}}}="tensor"', lambda a: a[better] == "tensor", tp, tie),))
