"""Unit constants and human-readable formatting: the one place scale factors live."""

from __future__ import annotations

import math

KILO, MEGA, GIGA, TERA, PETA = 1e3, 1e6, 1e9, 1e12, 1e15
MICRO, NANO, MILLI = 1e-6, 1e-9, 1e-3
KIBI, MEBI, GIBI, TEBI = 2.0**10, 2.0**20, 2.0**30, 2.0**40

#: Seconds per unit of the time spellings people put in headers.
TIME_UNITS: dict[str, float] = {"s": 1.0, "ms": MILLI, "us": MICRO, "ns": NANO}
#: Scale of each (lower-case) prefix: decimal SI, and binary for bytes.
PREFIXES: dict[str, float] = {"": 1.0, "k": KILO, "m": MEGA, "g": GIGA, "t": TERA, "p": PETA,
                              "ki": KIBI, "mi": MEBI, "gi": GIBI, "ti": TEBI}


def seconds(value: float) -> str:
    """A duration in the unit that keeps 1-999 before the point: ns, µs, ms or s."""
    if not math.isfinite(value):
        return str(value)
    for scale, unit in ((1.0, "s"), (MILLI, "ms"), (MICRO, "µs"), (NANO, "ns")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / NANO:.3g} ns"


def si(value: float, unit: str) -> str:
    """A quantity with a decimal SI prefix: 3.12e14 FLOP/s -> '312 TFLOP/s'."""
    if not math.isfinite(value) or value == 0:
        return f"{value:g} {unit}"
    for scale, prefix in ((PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.3g} {unit}"
