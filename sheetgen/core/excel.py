"""Excel's rules for numbers near the last bit, shared by the evaluator and the reference model.

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

from typing import Any

import numpy as np

DIGITS = 15


def _digits15(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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
    e, m = _digits15(x)
    with np.errstate(all="ignore"):
        k = (DIGITS - 1) - e
        half = np.trunc(k / 2)
        out = m / np.power(10.0, half) / np.power(10.0, k - half)
    return np.where(np.isfinite(x) & (x != 0), out, x)


def eq(a: Any, b: Any) -> np.ndarray:
    """a = b as Excel compares numbers: equal to 15 significant digits."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    ea, ma = _digits15(a)
    eb, mb = _digits15(b)
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
    return isinstance(value, int | float | np.integer | np.floating) \
        and not isinstance(value, bool | np.bool_) and bool(np.isfinite(value))


def as_bool(value: np.ndarray) -> Any:
    """A 0-d array as a Python bool, anything else as an object array of bools."""
    return bool(value) if np.ndim(value) == 0 else np.asarray(value).astype(object)


__all__ = ["DIGITS", "as_bool", "eq", "ge", "gt", "is_number", "le", "lt", "round15",
           "snap_sum"]
