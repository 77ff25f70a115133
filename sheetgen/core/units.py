"""Unit constants and human-readable formatting: the one place scale factors live."""

from __future__ import annotations

import math

KILO, MEGA, GIGA, TERA, PETA = 1e3, 1e6, 1e9, 1e12, 1e15
MICRO, NANO, MILLI = 1e-6, 1e-9, 1e-3
KIBI, MEBI, GIBI, TEBI = 2.0**10, 2.0**20, 2.0**30, 2.0**40

#: Every time unit sheetgen reads or writes, as its power of ten of a second: the one
#: declaration of time scales (exact powers, so 1 µs is 1e-06 s and 1 s is 1e+06 µs exactly).
TIME_EXPONENTS: dict[str, int] = {"s": 0, "ms": -3, "µs": -6, "us": -6, "ns": -9,
                                  "ps": -12, "fs": -15}
#: Seconds per unit of the time spellings people put in headers.
TIME_UNITS: dict[str, float] = {u: 10.0 ** TIME_EXPONENTS[u] for u in ("s", "ms", "us", "ns")}
#: Scale of each (lower-case) prefix: decimal SI, and binary for bytes.
PREFIXES: dict[str, float] = {"": 1.0, "k": KILO, "m": MEGA, "g": GIGA, "t": TERA, "p": PETA,
                              "ki": KIBI, "mi": MEBI, "gi": GIBI, "ti": TEBI}


PICO, FEMTO = 1e-12, 1e-15
_TIME_SCALES = tuple((10.0 ** TIME_EXPONENTS[u], u) for u in ("s", "ms", "µs", "ns", "ps", "fs"))


def seconds(value: float) -> str:
    """A duration in the unit that keeps 1-999 before the point, s down to fs ('6.41 fs',
    never '6.41e-06 ns'); 0 is '0 s', and so is anything that rounds to 0 fs (a fitted
    floor or latency at its lower bound ends a few e-27 s above it: '0 s', not '4.33e-27 s')."""
    if not math.isfinite(value):
        return str(value)
    for scale, unit in _TIME_SCALES:
        if abs(value) >= scale * (1 - 5e-4):  # 999.96 µs rounds to '1e+03 µs': say 1 ms
            text = f"{value / scale:.3g}"
            return f"{text} {unit}" if "e" not in text else f"{value / scale:.0f} {unit}"
    femto = _TIME_SCALES[-1][0]
    return f"{value / femto:.0f} fs" if abs(value) >= 0.5 * femto else "0 s"


def si(value: float, unit: str) -> str:
    """A quantity with a decimal SI prefix: 3.12e14 FLOP/s -> '312 TFLOP/s'."""
    if not math.isfinite(value) or value == 0:
        return f"{value:g} {unit}"
    for scale, prefix in ((PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


#: dtypes whose peaks count integer operations, quoted as OP/s (TOP/s), not FLOP/s
INTEGER_DTYPES = frozenset({"int8"})


def rate_unit(dtype: str) -> str:
    """The unit of a dtype's peak: 'OP/s' for integer types (int8 TOP/s), else 'FLOP/s'."""
    return "OP/s" if dtype in INTEGER_DTYPES else "FLOP/s"
