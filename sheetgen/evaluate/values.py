"""Excel value model: error values, kind codes and Excel's text rendering of numbers.

Cells are stored column-wise as (kind, number, object) triples so that whole columns can be
evaluated with NumPy; the kind codes below say how to read each triple.
"""

from __future__ import annotations

from typing import Any

EMPTY, NUM, STR, BOOL, ERR = 0, 1, 2, 3, 4

ERROR_CODES = ("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A")


class ExcelError:
    """An Excel error value such as ``#DIV/0!``; errors are values, not exceptions."""

    __slots__ = ("code",)

    def __init__(self, code: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown Excel error code {code!r}")
        self.code = code

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExcelError) and other.code == self.code

    def __hash__(self) -> int:
        return hash(("ExcelError", self.code))

    def __repr__(self) -> str:
        return f"ExcelError({self.code!r})"

    def __str__(self) -> str:
        return self.code


DIV0 = ExcelError("#DIV/0!")
VALUE = ExcelError("#VALUE!")
NA = ExcelError("#N/A")
NAME = ExcelError("#NAME?")
REF = ExcelError("#REF!")
NUM_ERR = ExcelError("#NUM!")


def number_to_text(x: float) -> str:
    """Render a number as Excel's General format does in ``&`` (15 significant digits)."""
    if x == 0:
        return "0"
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    s = f"{x:.15g}"
    if "e" in s:
        mant, exp = s.split("e")
        e = int(exp)
        if -10 < e < 0:  # Excel writes small numbers in fixed notation up to ~1E-10
            s = f"{x:.{15 - e}f}".rstrip("0").rstrip(".")
            return s
        return f"{mant}E{'+' if e >= 0 else '-'}{abs(e):02d}"
    return s


def to_python(kind: int, num: float, obj: Any) -> Any:
    """Turn one stored (kind, num, obj) triple into the public value."""
    if kind == NUM:
        return float(num)
    if kind == EMPTY:
        return None
    if kind == BOOL:
        return bool(num)
    return obj

