"""Roofline quantity factories: the one place the matmul roofline formulas are written.

The single-matmul sheet, the pipeline's layers, the micro-batched layers and the tensor-parallel
shards all apply the same maths to different operands; each calls these factories with its own
operand names, so the formula for (say) bytes moved exists exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sheetgen.core import excel as xn
from sheetgen.model.vocabulary import COMPUTE_BOUND, MEMORY_BOUND, Quantity


def flops(name: str, rows: str, inner: str, cols: str, label: str = "FLOPs") -> Quantity:
    """2·rows·inner·cols: one multiply and one add per (row, col, inner) triple."""
    return Quantity(
        name, label, "FLOP", f"2*{{{rows}}}*{{{inner}}}*{{{cols}}}",
        lambda **a: 2.0 * a[rows] * a[inner] * a[cols], fmt="sci",
        doc="A multiply and an add per (row, col, inner) triple.",
    )


#: The named cells (Inputs sheet) holding bytes per element of each operand's storage:
#: A (rows×inner, activations), B (inner×cols, weights), C (rows×cols, outputs).
#: sheetgen.inputs.precision says how "auto" picks them from the compute dtype.
ACT_BYTES, WEIGHT_BYTES, OUT_BYTES = "act_elem_bytes", "weight_elem_bytes", "out_elem_bytes"


def bytes_moved(name: str, rows: str, inner: str, cols: str,
                label: str = "bytes moved", *, a: str = ACT_BYTES, w: str = WEIGHT_BYTES,
                o: str = OUT_BYTES) -> Quantity:
    """a·rows·inner + w·inner·cols + o·rows·cols: read A and B once, write C once, each in
    its own storage precision (a, w, o bytes per element). The one bytes formula: every
    sheet's roofline, and the sweeps' one-cell times, derive from it. `a`, `w`, `o` name
    other per-operand cells (the Transformer sheet's weight, KV-cache and activation
    dtypes)."""
    return Quantity(
        name, label, "B",
        f"{{{a}}}*{{{rows}}}*{{{inner}}}+{{{w}}}*{{{inner}}}*{{{cols}}}"
        f"+{{{o}}}*{{{rows}}}*{{{cols}}}",
        lambda **k: (k[a] * k[rows] * k[inner] + k[w] * k[inner] * k[cols]
                     + k[o] * k[rows] * k[cols]),
        fmt="sci", doc="Read both operands once and write the result once, each in its own "
                       "precision: minimum traffic.",
    )


def ratio(name: str, num: str, den: str, label: str, unit: str, fmt: str = "ratio",
          doc: str = "") -> Quantity:
    """num / den (intensity, attained throughput, fractions)."""
    return Quantity(name, label, unit, f"{{{num}}}/{{{den}}}",
                    lambda **a: a[num] / a[den], fmt=fmt, doc=doc)


def intensity(name: str, flops_: str, bytes_: str,
              label: str = "arithmetic intensity") -> Quantity:
    return ratio(name, flops_, bytes_, label, "FLOP/B",
                 doc="FLOPs per byte moved; compare with the ridge point.")


def _regime(x: Any, ridge: Any) -> Any:
    """The regime as the sheet's IF decides it: >= at Excel's 15 digits (excel_numbers)."""
    out = np.where(xn.ge(x, ridge), COMPUTE_BOUND, MEMORY_BOUND).astype(object)
    return out if out.ndim else out.item()


def regime(name: str, intensity_: str, label: str = "bound regime") -> Quantity:
    return Quantity(
        name, label, "",
        f'IF({{{intensity_}}}>={{attainable_ridge}},"{COMPUTE_BOUND}","{MEMORY_BOUND}")',
        lambda **a: _regime(a[intensity_], a["attainable_ridge"]),
        fmt="text", doc="Intensity at or above the attainable ridge: compute-bound.",
    )


def compute_time(name: str, flops_: str, label: str = "compute time") -> Quantity:
    return ratio(name, flops_, "attainable_flops", label, "s", fmt="time",
                 doc="FLOPs at the attainable (efficiency-adjusted) peak.")


def memory_time(name: str, bytes_: str, label: str = "memory time") -> Quantity:
    return ratio(name, bytes_, "attainable_bw", label, "s", fmt="time",
                 doc="Bytes at the attainable (efficiency-adjusted) HBM bandwidth.")


def time_of(name: str, rows: str, inner: str, cols: str, label: str, *,
            floor: str | None = None) -> Quantity:
    """One matmul's predicted time in a single cell: max(FLOPs / attainable FLOP/s,
    bytes / attainable bandwidth), composed from `flops` and `bytes_moved` above (the sweep
    tables need a whole roofline per cell, not seven columns); `floor` names a time each
    call pays on top (a kernel's launch floor), as `matmul_roofline`'s."""
    f, b = flops("_f", rows, inner, cols), bytes_moved("_b", rows, inner, cols)

    def reference(**a: Any) -> Any:
        roof = np.maximum(f.reference(**a) / a["attainable_flops"],
                          b.reference(**a) / a["attainable_bw"])
        return roof + a[floor] if floor else roof

    roof = f"MAX(({f.template})/{{attainable_flops}},({b.template})/{{attainable_bw}})"
    return Quantity(name, label, "s", f"{{{floor}}}+{roof}" if floor else roof, reference,
                    fmt="time", doc="The roofline: the slower of compute and memory"
                    + (", plus the launch floor." if floor else "."))


def larger(name: str, a_: str, b_: str, label: str, unit: str = "s", fmt: str = "time",
           doc: str = "") -> Quantity:
    """MAX of two values (the roofline's overlap assumption, among others)."""
    return Quantity(name, label, unit, f"MAX({{{a_}}},{{{b_}}})",
                    lambda **a: np.maximum(a[a_], a[b_]), fmt=fmt, doc=doc)


def predicted_time(name: str, compute: str, memory: str,
                   label: str = "predicted time") -> Quantity:
    return larger(name, compute, memory, label,
                  doc="Roofline: compute and memory traffic overlap; the slower one wins.")


def product(name: str, a_: str, b_: str, label: str, unit: str, fmt: str = "sci",
            doc: str = "") -> Quantity:
    """a·b (a batch count times a per-matmul figure, among others)."""
    return Quantity(name, label, unit, f"{{{a_}}}*{{{b_}}}", lambda **k: k[a_] * k[b_],
                    fmt=fmt, doc=doc)


def relative_error(name: str, predicted: str, measured: str, label: str) -> Quantity:
    """(predicted − measured) / measured: +0.5 predicts 50 % too slow."""
    return Quantity(name, label, "fraction", f"({{{predicted}}}-{{{measured}}})/{{{measured}}}",
                    lambda **k: (k[predicted] - k[measured]) / k[measured], fmt="pct",
                    doc="(predicted − measured) / measured")


def absolute(name: str, value: str, label: str, fmt: str = "pct") -> Quantity:
    return Quantity(name, label, "fraction", f"ABS({{{value}}})",
                    lambda **k: np.abs(k[value]), fmt=fmt)


def _numbers(values: Any) -> np.ndarray:
    """The numeric entries of a column (a guarded column's blank rows hold "")."""
    return np.asarray([v for v in np.ravel(np.asarray(values, dtype=object))
                       if isinstance(v, int | float | np.integer | np.floating)
                       and not isinstance(v, bool)], dtype=float)


def mean(name: str, column: str, label: str, fmt: str = "pct") -> Quantity:
    """SUM/COUNT over a column's numbers (the portable mean; blanks and text are skipped)."""

    def reference(**k: Any) -> float:
        nums = _numbers(k[column])
        return float(np.sum(nums) / len(nums)) if len(nums) else float("nan")

    return Quantity(name, label, "fraction", f"SUM({{{column}[]}})/COUNT({{{column}[]}})",
                    reference, fmt=fmt)


def total(name: str, column: str, label: str, unit: str, fmt: str = "sci",
          doc: str = "") -> Quantity:
    """SUM over a whole column."""
    return Quantity(name, label, unit, f"SUM({{{column}[]}})",
                    lambda **a: float(np.sum(a[column])), fmt=fmt, doc=doc)


def largest(name: str, column: str, label: str, unit: str, fmt: str = "sci",
            doc: str = "") -> Quantity:
    """MAX over a whole column."""
    return Quantity(name, label, unit, f"MAX({{{column}[]}})",
                    lambda **a: float(np.max(a[column])), fmt=fmt, doc=doc)


def at_most(name: str, value: str, limit: str, label: str, doc: str = "") -> Quantity:
    """value <= limit, as TRUE/FALSE (fit checks)."""
    return Quantity(name, label, "", f"{{{value}}}<={{{limit}}}",
                    lambda **a: xn.as_bool(xn.le(a[value], a[limit])), fmt="bool", doc=doc)


def elements_bytes(name: str, a: str, b: str, label: str, doc: str = "", *,
                   per: str = "dtype_bytes_sel") -> Quantity:
    """Bytes of an a×b tensor, `per` bytes per element: the compute dtype's by default;
    ACT_BYTES, WEIGHT_BYTES or OUT_BYTES for a tensor stored as that operand is."""
    return Quantity(name, label, "B", f"{{{per}}}*{{{a}}}*{{{b}}}",
                    lambda **k: k[per] * k[a] * k[b], fmt="sci", doc=doc)


def plus(name: str, terms: tuple[str, ...], label: str, unit: str, fmt: str = "sci",
         doc: str = "") -> Quantity:
    """The sum of a few values."""
    return Quantity(name, label, unit, "+".join(f"{{{t}}}" for t in terms),
                    lambda **k: sum(k[t] for t in terms), fmt=fmt, doc=doc)


def memory_fit(memory: str, fits: str, weights: str, activations: str, memory_label: str,
               fits_label: str, *, capacity: str = "vram_bytes",
               doc: str = "") -> tuple[Quantity, Quantity]:
    """The memory/fit chain, one definition for every sheet that asks whether a model fits:
    memory = weights + activations (bytes per GPU), and whether memory <= the GPU's capacity
    (TRUE/FALSE). The Pipeline sheet and the Parallelism sheet's one GPU, pipeline and tensor
    columns each make theirs here."""
    return (plus(memory, (weights, activations), memory_label, "B"),
            at_most(fits, memory, capacity, fits_label, doc=doc))


def same_as(name: str, other: str, label: str, unit: str, fmt: str = "sci",
            doc: str = "") -> Quantity:
    """A value shown again in another place, by reference (never recomputed)."""
    return Quantity(name, label, unit, f"{{{other}}}", lambda **k: k[other], fmt=fmt, doc=doc)


def ceil_div(name: str, num: str, den: str, label: str, unit: str = "",
             doc: str = "") -> Quantity:
    """ROUNDUP(num/den, 0): how uneven splits are rounded (the larger share)."""
    return Quantity(name, label, unit, f"ROUNDUP({{{num}}}/{{{den}}},0)",
                    lambda **k: np.ceil(np.asarray(k[num], dtype=float) / k[den]) * 1.0
                    if np.ndim(k[num]) else float(np.ceil(k[num] / k[den])),
                    fmt="int", doc=doc)


def shape_text(name: str, label: str, *dims: str, doc: str = "") -> Quantity:
    """The dimensions joined with "x" ("4096x8192"), each written as ``&`` writes a number
    (xn.number_to_text: a typed 2.5 stays "2.5", as in every engine)."""
    def reference(**a: Any) -> np.ndarray:
        return np.asarray(["x".join(xn.number_to_text(float(v)) for v in row)
                           for row in np.broadcast(*(a[d] for d in dims))], dtype=object)

    return Quantity(name, label, "", '&"x"&'.join(f"{{{d}}}" for d in dims), reference,
                    fmt="text", doc=doc)


def first_of(name: str, column: str, label: str, unit: str, fmt: str = "ratio",
             doc: str = "") -> Quantity:
    """INDEX(column, 1): the first row's value (e.g. layer 1)."""
    return Quantity(name, label, unit, f"INDEX({{{column}[]}},1)",
                    lambda **k: np.asarray(k[column], dtype=object)[0], fmt=fmt, doc=doc)


def sum_where_equal(name: str, key: str, column: str, label: str, unit: str,
                    fmt: str = "sci", doc: str = "") -> Quantity:
    """Per row: the sum of `column` over the rows whose `key` equals this row's (a group sum)."""

    def reference(**k: Any) -> np.ndarray:
        # one pass over the groups (np.unique, then a weighted count per group), not a
        # comparison of every row with every other: --layers 100000 has that many rows
        keys, vals = np.asarray(k[key], dtype=float), np.asarray(k[column], dtype=float)
        if keys.size == 0:
            return np.zeros(0)
        groups, where = np.unique(keys, return_inverse=True)
        sums = np.bincount(where.ravel(), weights=vals, minlength=groups.size)[where.ravel()]
        return np.where(np.isnan(keys), 0.0, sums)  # NaN equals nothing, not even itself

    return Quantity(name, label, unit, f"SUMPRODUCT(({{{key}[]}}={{{key}}})*{{{column}[]}})",
                    reference, fmt=fmt, doc=doc)


TIE_RTOL = 1e-9  # closer than this counts as a tie: engines round differently below it


def better(name: str, pp: str, tp: str, *, lower_is_better: bool = True) -> Quantity:
    """Which of pipeline and tensor parallelism wins a row (a near-equal pair is a tie)."""
    factor = f"(1-{TIE_RTOL:.0E})" if lower_is_better else f"(1+{TIE_RTOL:.0E})"
    lt = "<" if lower_is_better else ">"
    scale = 1 - TIE_RTOL if lower_is_better else 1 + TIE_RTOL

    def wins(a: Any, b: Any) -> Any:  # compared as the sheet's < and > compare (15 digits)
        return xn.lt(a, b * scale) if lower_is_better else xn.gt(a, b * scale)

    def reference(**k: Any) -> Any:
        a, b = k[pp], k[tp]
        if np.ndim(a) or np.ndim(b):  # a table column (the sweep)
            return np.where(wins(a, b), "pipeline",
                            np.where(wins(b, a), "tensor", "tie")).astype(object)
        return "pipeline" if bool(wins(a, b)) else "tensor" if bool(wins(b, a)) else "tie"

    return Quantity(
        name, "better", "",
        f'IF({{{pp}}}{lt}{{{tp}}}*{factor},"pipeline",'
        f'IF({{{tp}}}{lt}{{{pp}}}*{factor},"tensor","tie"))',
        reference, fmt="text", doc="Within a relative 1e-9 the two count as a tie.")


def better_fit(name: str, pp: str, tp: str) -> Quantity:
    """Which of pipeline and tensor parallelism fits (TRUE/FALSE inputs)."""

    def reference(**k: Any) -> str:
        a, b = bool(k[pp]), bool(k[tp])
        return "both" if a and b else "pipeline" if a else "tensor" if b else "neither"

    return Quantity(name, "better", "",
                    f'IF(AND({{{pp}}},{{{tp}}}),"both",IF({{{pp}}},"pipeline",'
                    f'IF({{{tp}}},"tensor","neither")))', reference, fmt="text")


@dataclass(frozen=True)
class MatmulRoofline:
    """The roofline chain of one matmul: work, traffic, intensity, regime, then the times."""

    flops: Quantity
    bytes: Quantity
    intensity: Quantity
    regime: Quantity
    compute_time: Quantity
    memory_time: Quantity
    time: Quantity

    def columns(self) -> tuple[Quantity, ...]:
        return (self.flops, self.bytes, self.intensity, self.regime, self.compute_time,
                self.memory_time, self.time)


def floored_time(name: str, compute: str, memory: str, floor: str,
                 label: str = "time") -> Quantity:
    """The launch floor + the roofline: what one kernel call costs where every call pays
    the floor (the parallel schedules, whose micro-batches and shards each launch one)."""
    return Quantity(name, label, "s", f"{{{floor}}}+MAX({{{compute}}},{{{memory}}})",
                    lambda **a: a[floor] + np.maximum(a[compute], a[memory]), fmt="time",
                    doc="launch floor + max(compute, memory)")


def matmul_roofline(prefix: str, rows: str, inner: str, cols: str, *, what: str = "",
                    bytes_name: str | None = None, time_name: str | None = None,
                    floor: str | None = None) -> MatmulRoofline:
    """The seven quantities of a rows×inner · inner×cols matmul, named `prefix` + role.

    `what` prefixes the labels ("micro-batch", "TP per GPU") so headers say which matmul.
    `floor`: the time is the launch floor + the roofline (`floored_time`).
    """

    def label(text: str) -> str:
        return f"{what} {text}" if what else text

    f, b = prefix + "flops", bytes_name or prefix + "bytes"
    i, ct, mt = prefix + "intensity", prefix + "compute_time", prefix + "memory_time"
    return MatmulRoofline(
        flops(f, rows, inner, cols, label("FLOPs")),
        bytes_moved(b, rows, inner, cols, label("bytes moved")),
        intensity(i, f, b, label("arithmetic intensity")),
        regime(prefix + "regime", i, label("bound regime")),
        compute_time(ct, f, label("compute time")),
        memory_time(mt, b, label("memory time")),
        floored_time(time_name or prefix + "time", ct, mt, floor, label("time + launch floor"))
        if floor else predicted_time(time_name or prefix + "time", ct, mt,
                                     label("predicted time")),
    )
