"""Recognising a hand-made sheet's columns by their headers, and the units in them."""

from __future__ import annotations

import re

from sheetgen.core.excel import ExcelError
from sheetgen.core.units import PREFIXES, TIME_UNITS

#: quantity -> (kind of unit, header spellings). Spellings are compared after `normalise`:
#: lower case, units in brackets dropped, `_ - . : ,` as spaces, no spaces around `/`.
ALIASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "flops": ("count", ("flops", "flop", "flop count", "flops count", "total flops",
                        "num flops", "number of flops", "# flops", "#flops", "work")),
    "bytes_moved": ("bytes", ("bytes", "bytes moved", "byte", "memory traffic", "traffic",
                              "data moved", "total bytes", "bytes accessed", "memory bytes",
                              "hbm bytes", "hbm traffic", "bytes transferred")),
    "intensity": ("intensity", ("intensity", "arithmetic intensity", "ai", "oi",
                                "operational intensity", "flop/byte", "flops/byte", "flop/b",
                                "flops/b", "flop per byte", "flops per byte")),
    "regime": ("text", ("regime", "bound", "bottleneck", "limited by", "bound by", "limiter",
                        "compute or memory bound", "compute/memory bound", "roofline regime")),
    "compute_time": ("time", ("compute time", "time compute", "t compute",
                              "flop time", "math time", "compute bound time")),
    "memory_time": ("time", ("memory time", "time memory", "t memory", "mem time",
                             "bandwidth time", "io time", "memory bound time", "t mem")),
    "predicted_time": ("time", ("time", "predicted time", "runtime", "run time", "latency",
                                "t", "estimated time", "est time", "predicted runtime",
                                "roofline time", "total time", "execution time", "exec time",
                                "predicted latency", "time predicted", "t predicted",
                                "predicted", "duration")),
    "attained_flops": ("rate", ("achieved flop/s", "attained flop/s", "attained flops",
                                "achieved flops", "attained flops/s", "achieved flops/s",
                                "attained performance", "achieved performance",
                                "performance", "throughput", "flop/s", "flops/s",
                                "attainable flop/s", "attained", "achieved")),
    "peak_fraction": ("fraction", ("fraction of peak", "% of peak", "%of peak", "peak fraction",
                                   "of peak", "utilization", "utilisation", "mfu",
                                   "efficiency", "% peak", "percent of peak", "peak %",
                                   "% of peak flops", "peak utilization")),
}
_BY_SPELLING = {s: q for q, (_kind, spellings) in ALIASES.items() for s in spellings}
KINDS = {q: kind for q, (kind, _s) in ALIASES.items()}

_BRACKETED = re.compile(r"\(([^)]*)\)|\[([^\]]*)\]|\{([^}]*)\}")

_UNIT_PATTERNS = {
    "time": re.compile(r"^(?:(?P<s>s|sec|secs|seconds?)|(?P<ms>ms|msec|milliseconds?)"
                       r"|(?P<us>us|usec|microseconds?)|(?P<ns>ns|nsec|nanoseconds?))$"),
    "count": re.compile(r"^(?P<p>[kmgtp]?)(?:flop|flops)$"),
    "bytes": re.compile(r"^(?P<p>[kmgtp]?i?)(?:b|byte|bytes)$"),
    "rate": re.compile(r"^(?P<p>[kmgtp]?)(?:flop/s|flops/s|flop/sec|flops|flop/second)$"),
    "bw": re.compile(r"^(?P<p>[kmgtp]?i?)(?:b/s|byte/s|bytes/s|bps|b/sec)$"),
    "intensity": re.compile(r"^(?:flop/b|flop/byte|flops/byte|flops/b|flop/bytes)$"),
}


def normalise(text: object) -> str:
    """A header as ALIASES spells it: lower case, no brackets, single spaces."""
    t = str(text).lower().replace("µ", "u").replace("μ", "u")
    t = _BRACKETED.sub(" ", t)
    t = re.sub(r"[_\-:.,]+", " ", t)
    t = re.sub(r"\s*/\s*", "/", t)
    return " ".join(t.split())


def unit_scale(unit: str, kind: str) -> float | None:
    """SI factor of a unit of the given kind ("ms" as time -> 1e-3), or None."""
    u = unit.strip().lower().replace("µ", "u").replace("μ", "u").replace(" ", "")
    if kind == "fraction":
        return 0.01 if u == "%" else (1.0 if u in ("fraction", "x") else None)
    pattern = _UNIT_PATTERNS.get(kind)
    m = pattern.match(u) if pattern is not None else None
    if m is None:
        return None
    if kind == "time":
        return next(TIME_UNITS[g] for g, v in m.groupdict().items() if v)
    return PREFIXES[m.groupdict().get("p") or ""] if "p" in m.groupdict() else 1.0


def bracket_units(text: str) -> list[str]:
    inner = " ".join(next(g for g in m.groups() if g is not None)
                     for m in _BRACKETED.finditer(text))
    return [t for t in re.split(r"[,;\s]+", inner) if t]


def recognise(header: object) -> tuple[str, str | None, float | None] | None:
    """(quantity, unit text, SI scale) a header names, or None.

    Units come from brackets ("Time (ms)") or a last word after the name ("time ms",
    "bytes in GB"); a bracketed word that is no unit (a note) is ignored.
    """
    if header is None or isinstance(header, bool | int | float | ExcelError):
        return None
    raw = str(header).strip()
    if not raw:
        return None
    key = normalise(raw)
    words = key.split(" ")
    unit: str | None = None
    quantity = _BY_SPELLING.get(key)
    if quantity is None and len(words) > 1:  # a trailing unit word: "time ms", "bytes in gb"
        rest = words[:-1][:-1] if len(words) > 2 and words[-2] in ("in", "per") else words[:-1]
        q = _BY_SPELLING.get(" ".join(rest))
        if q is not None and unit_scale(words[-1], KINDS[q]) is not None:
            quantity, unit = q, words[-1]
    if quantity is None:
        return None
    kind = KINDS[quantity]
    if unit is None:
        unit = next((u for u in bracket_units(raw) if unit_scale(u, kind) is not None), None)
    if unit is None and kind == "fraction" and "%" in raw:
        unit = "%"
    return quantity, unit, None if unit is None else unit_scale(unit, kind)
