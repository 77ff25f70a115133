"""Excel's number rules, shared by the evaluator, the reference model and the readers: what
ISNUMBER and ISBLANK say of a value, ROUND, comparisons near the last bit, and the text of
a number that ``&`` writes.

Excel calculates in IEEE doubles but compares and shows 15 significant digits (Microsoft,
"Floating-point arithmetic may give inaccurate results in Excel",
https://learn.microsoft.com/en-us/office/troubleshoot/excel/floating-point-arithmetic-inaccurate-result;
Apache POI's NumberComparer reproduces the comparison: "(0.06-0.01)=0.05" is TRUE,
https://poi.apache.org/apidocs/org/apache/poi/ss/util/NumberComparer.html). So
``=0.1+0.2=0.3`` and ``=1+4E-15=1`` are TRUE in Excel. The same KB describes the second rule:
when the last operation of a formula is an addition or subtraction whose result is at or very
near zero, Excel returns 0 (``=0.1+0.2-0.3`` shows 0, ``=1*(0.1+0.2-0.3)`` does not).

The model's regime and fit checks use `ge`/`le`/`lt` so that `check` and the sheet agree on
a value that sits on the ridge to the last bit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

DIGITS = 15

#: Excel's error values (the ones every engine shares).
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


def digits15(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(decimal exponent, signed integer mantissa of 15 digits) of each finite x (0 -> 0, 0)."""
    x = np.asarray(x, dtype=float)
    a = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        e = np.where(a > 0, np.floor(np.log10(np.where(a > 0, a, 1.0))), 0.0)
        k = (DIGITS - 1) - e
        half = np.trunc(k / 2)  # two steps: 10**k alone overflows for tiny numbers
        m = np.round(x * np.power(10.0, half) * np.power(10.0, k - half))
        big = np.abs(m) >= 10.0**DIGITS  # 9.9999999999999995 rounds up a decade
        m = np.where(big, np.round(m / 10.0), m)
        e = np.where(big, e + 1, e)
    return e, m


def round15(x: Any) -> np.ndarray:
    """x rounded to 15 significant digits (what Excel holds after decimal rounding)."""
    x = np.asarray(x, dtype=float)
    e, m = digits15(x)
    with np.errstate(all="ignore"):
        k = (DIGITS - 1) - e
        half = np.trunc(k / 2)
        out = m / np.power(10.0, half) / np.power(10.0, k - half)
    return np.where(np.isfinite(x) & (x != 0), out, x)


def eq(a: Any, b: Any) -> np.ndarray:
    """a = b as Excel compares numbers: equal to 15 significant digits."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    ea, ma = digits15(a)
    eb, mb = digits15(b)
    return np.asarray((a == b) | ((ea == eb) & (ma == mb)))


def lt(a: Any, b: Any) -> np.ndarray:
    """a < b, Excel's way (never true of two numbers equal to 15 digits)."""
    return np.asarray((np.asarray(a) < np.asarray(b)) & ~eq(a, b))


def le(a: Any, b: Any) -> np.ndarray:
    """a <= b, Excel's way."""
    return np.asarray((np.asarray(a) < np.asarray(b)) | eq(a, b))


def ge(a: Any, b: Any) -> np.ndarray:
    """a >= b, Excel's way."""
    return le(b, a)


def gt(a: Any, b: Any) -> np.ndarray:
    """a > b, Excel's way."""
    return lt(b, a)


def snap_sum(x: np.ndarray, y: np.ndarray, result: np.ndarray, op: str) -> np.ndarray:
    """The final-result rule: x+y or x-y that cancels to 15 digits is exactly 0."""
    cancels = eq(x, y) if op == "-" else eq(x, -np.asarray(y))
    return np.where(cancels & np.isfinite(result), 0.0, result)


def is_number(value: Any) -> bool:
    """What ISNUMBER says of a cell's value: a finite int or float (NumPy's too), never a
    boolean (TRUE is no number to ISNUMBER) and never NaN or ±inf (no cell holds them; the
    model's NaN stands for a cell that shows text, such as 'n/a')."""
    kind = type(value)
    if kind is float:  # the common cases first: the model calls this per cell
        return math.isfinite(value)
    if kind is int:
        return True
    return isinstance(value, int | float | np.integer | np.floating) \
        and not isinstance(value, bool | np.bool_) and bool(np.isfinite(value))


#: element types whose float() is the number ISNUMBER sees (when finite); bool is not one
_PLAIN_NUMBERS = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})


def number_mask(values: Any) -> np.ndarray:
    """is_number of every element of an array (any shape, 0-d included). A model column of
    plain numbers and "" (a guarded column: the best-M table converts nine cases of 512 rows
    per evaluation) is judged with NumPy, not by a Python call per cell."""
    arr = np.asarray(values, dtype=object)
    if arr.ndim == 0:
        return np.asarray(is_number(arr[()]))
    blank = arr == ""
    filled = arr[~blank]
    if set(map(type, filled)) <= _PLAIN_NUMBERS:
        out = np.zeros(arr.shape, dtype=bool)
        out[~blank] = np.isfinite(filled.astype(float))
        return out
    return np.vectorize(is_number, otypes=[bool])(arr)


def is_blank(value: Any) -> bool:
    """What ISBLANK says of a value as the model holds a cell: empty (None), or NaN (an empty
    cell in a numeric column). Text, even "", is not blank, as in Excel (ISBLANK("") is
    FALSE)."""
    return value is None or (isinstance(value, float | np.floating) and bool(np.isnan(value)))


def looks_blank(value: Any) -> bool:
    """A cell a reader of a user's file skips: empty, or text of spaces only (a CSV field, a
    hand-made sheet's "  "). Not ISBLANK: that is `is_blank`."""
    return value is None or (isinstance(value, str) and not value.strip())


#: Excel rounds decimal digits, not binary ones: 2.675 is 2.674999999999999822... in binary,
#: yet ROUND(2.675, 2) is 2.68. A relative nudge of 2**-44 (far above a double's
#: 2**-52 error, far below a 15-digit decimal step) absorbs the binary error the same way.
ROUND_EPS = 2.0**-44


def round_to(x: Any, digits: Any = 0, mode: str = "ROUND") -> Any:
    """Excel's ROUND (halves away from zero), ROUNDUP (away from zero) and ROUNDDOWN
    (towards zero) to `digits` decimal places (negative: tens, hundreds); element-wise over
    arrays, a float for scalars."""
    x_arr = np.asarray(x, dtype=float)
    d = np.trunc(np.asarray(digits, dtype=float))
    scale = np.power(10.0, d)
    y = np.abs(x_arr) * scale
    if mode == "ROUND":
        r = np.floor(y + 0.5 + y * ROUND_EPS)
    elif mode == "ROUNDUP":
        r = np.ceil(y - y * ROUND_EPS)
    elif mode == "ROUNDDOWN":
        r = np.floor(y + y * ROUND_EPS)
    else:
        raise ValueError(f"mode must be ROUND, ROUNDUP or ROUNDDOWN, got {mode!r}")
    out = np.sign(x_arr) * r / scale
    return float(out) if out.ndim == 0 else out


def excel_round(x: float, digits: int = 0) -> float:
    """ROUND(x, digits) of one number, as Excel, LibreOffice and Google Sheets give it."""
    return float(round_to(x, digits))


def as_bool(value: np.ndarray) -> Any:
    """A 0-d array as a Python bool, anything else as an object array of bools."""
    return bool(value) if np.ndim(value) == 0 else np.asarray(value).astype(object)


__all__ = [
    "DIGITS",
    "ERROR_CODES",
    "ROUND_EPS",
    "ExcelError",
    "as_bool",
    "digits15",
    "eq",
    "excel_round",
    "ge",
    "gt",
    "is_blank",
    "is_number",
    "le",
    "looks_blank",
    "lt",
    "number_mask",
    "number_to_text",
    "round15",
    "round_to",
    "snap_sum",
]


#: characters (sign aside) that Excel's number-to-text keeps in fixed form
FIXED_WIDTH = 20


def number_to_text(x: float) -> str:
    """Excel's text of a number in ``&`` and text functions: 15 significant digits, fixed
    notation while it fits in 20 characters, else scientific (``1.42857142857143E-06``).

    The width rule reproduces published readings of Excel 16: 1E+19 -> "10000000000000000000",
    1E+20 -> "1E+20", 1E-18 -> "0.000000000000000001", 1E-19 -> "1E-19".
    """
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    mant, exp = f"{abs(x):.14e}".split("e")
    e = int(exp)
    digits = mant.replace(".", "").rstrip("0") or "0"
    if e >= 0:
        whole = (digits + "0" * max(0, e + 1 - len(digits)))[: e + 1]
        frac = digits[e + 1 :]
        fixed = whole + ("." + frac if frac else "")
    else:
        fixed = "0." + "0" * (-e - 1) + digits
    sign = "-" if x < 0 else ""
    if len(fixed) <= FIXED_WIDTH:
        return sign + fixed
    sci = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{sci}E{'+' if e >= 0 else '-'}{abs(e):02d}"
