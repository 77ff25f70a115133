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
from sheetgen.model import kernel_terms, refined
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


def time_of(name: str, rows: str, inner: str, cols: str, label: str) -> Quantity:
    """One matmul's predicted time in a single cell: max(FLOPs / attainable FLOP/s,
    bytes / attainable bandwidth), composed from `flops` and `bytes_moved` above (the sweep
    tables need a whole roofline per cell, not seven columns)."""
    f, b = flops("_f", rows, inner, cols), bytes_moved("_b", rows, inner, cols)

    def reference(**a: Any) -> Any:
        return np.maximum(f.reference(**a) / a["attainable_flops"],
                          b.reference(**a) / a["attainable_bw"])

    return Quantity(name, label, "s",
                    f"MAX(({f.template})/{{attainable_flops}},({b.template})/{{attainable_bw}})",
                    reference, fmt="time", doc="The roofline: the slower of compute and memory.")


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


def matmul_roofline(prefix: str, rows: str, inner: str, cols: str, *, what: str = "",
                    bytes_name: str | None = None, time_name: str | None = None
                    ) -> MatmulRoofline:
    """The seven quantities of a rows×inner · inner×cols matmul, named `prefix` + role.

    `what` prefixes the labels ("micro-batch", "TP per GPU") so headers say which matmul.
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
        predicted_time(time_name or prefix + "time", ct, mt, label("predicted time")),
    )


# The refined time: a launch floor, tile and wave quantization and the overlap of compute and
# memory time (sheetgen.model.refined holds the Python reference). The inputs come from the
# Inputs sheet: tile_m, tile_n, sm_count, launch_overhead, the wave_quant switch ("on"/"off")
# and the overlap exponent; the Measured sheet passes its own (fitted) input names through
# RefinedInputs.


@dataclass(frozen=True)
class RefinedInputs:
    """The names of the inputs the refined-time formulas read."""

    tile_m: str = "tile_m"
    tile_n: str = "tile_n"
    sm_count: str = "sm_count"
    launch_overhead: str = "launch_overhead"
    wave_quant: str = "wave_quant"
    overlap: str = "overlap"
    ramp_flops: str = "compute_ramp_flops"  # the compute ramp's F_half (0: off)
    ramp_exponent: str = "compute_ramp_h"  # its exponent h
    ramp_end: str = "compute_ramp_end"  # the FLOPs it ends at (0: none)


INPUTS = RefinedInputs()


def tiles(name: str, rows: str, cols: str, label: str = "tiles", *,
          inputs: RefinedInputs = INPUTS, batch: str | None = None) -> Quantity:
    """ceil(rows/tile_m)·ceil(cols/tile_n): the output tiles, one thread block each (times
    `batch` independent matmuls when given)."""
    tm, tn = inputs.tile_m, inputs.tile_n
    times = f"{{{batch}}}*" if batch else ""

    def reference(**a: Any) -> Any:
        count = refined.tiles(a[rows], a[cols], a[tm], a[tn])
        return a[batch] * count if batch else count

    return Quantity(
        name, label, "", f"{times}ROUNDUP({{{rows}}}/{{{tm}}},0)*ROUNDUP({{{cols}}}/{{{tn}}},0)",
        reference, fmt="int",
        doc="Output tiles of tile_m×tile_n: one thread block, on one SM, each.")


def _per_row(value: Any, like: Any) -> Any:
    """A scalar result (the "n/a" of a GPU without an SM count) as one per row of `like`."""
    shape = np.shape(like)
    return np.full(shape, value, dtype=object) if shape else value


def waves(name: str, tiles_: str, label: str = "waves", *,
          inputs: RefinedInputs = INPUTS) -> Quantity:
    """ceil(tiles/SMs): a partial last wave still takes a whole wave; "n/a" when the GPU
    has no SM count (a preset made from a datasheet may leave it out)."""
    sms = inputs.sm_count

    def reference(**a: Any) -> Any:
        if not refined.sms_known(a[sms]):
            return _per_row(refined.NO_SMS, a[tiles_])
        return refined.waves(a[tiles_], a[sms])

    return Quantity(name, label, "",
                    f'IF(ISNUMBER({{{sms}}}),ROUNDUP({{{tiles_}}}/{{{sms}}},0),'
                    f'"{refined.NO_SMS}")',
                    reference, fmt="int",
                    doc="One tile per SM per wave; the last wave is rounded up.")


def wave_efficiency(name: str, tiles_: str, waves_: str, label: str = "wave efficiency", *,
                    inputs: RefinedInputs = INPUTS) -> Quantity:
    """tiles / (waves·SMs): the share of SM slots that do work ("n/a" without an SM count)."""
    sms = inputs.sm_count

    def reference(**a: Any) -> Any:
        if not refined.sms_known(a[sms]):
            return _per_row(refined.NO_SMS, a[tiles_])
        return refined.wave_efficiency(a[tiles_], a[waves_], a[sms])

    return Quantity(name, label, "fraction",
                    f'IF(ISNUMBER({{{sms}}}),{{{tiles_}}}/({{{waves_}}}*{{{sms}}}),'
                    f'"{refined.NO_SMS}")',
                    reference, fmt="pct",
                    doc="1.0 when the tiles fill every wave; idle SMs lower it.")


def ramp_share(flops_: str, inputs: RefinedInputs = INPUTS) -> str:
    """The compute ramp's share as a template, `flops_` a template of one matmul's FLOPs (one
    reference, or an expression in parentheses; kernel_terms.compute_ramp): 1 with the ramp
    off (F_half 0), and from its end on."""
    half, h, end = (f"{{{x}}}" for x in (inputs.ramp_flops, inputs.ramp_exponent,
                                          inputs.ramp_end))
    return (f"IF({half}>0,MIN(1,(1+IF({end}>0,({half}/{end})^{h},0))"
            f"/(1+({half}/{flops_})^{h})),1)")


def compute_ramp(name: str, flops_: str, label: str = "compute ramp", *,
                 inputs: RefinedInputs = INPUTS) -> Quantity:
    """The share of the compute efficiency a matmul of `flops_` FLOPs reaches (ramp_share)."""
    half, h, end = inputs.ramp_flops, inputs.ramp_exponent, inputs.ramp_end
    return Quantity(
        name, label, "fraction", ramp_share(f"{{{flops_}}}", inputs),
        lambda **a: kernel_terms.compute_ramp(a[flops_], a[half], a[h], a[end]),
        fmt="pct", doc="The share of the compute efficiency a matmul of F FLOPs reaches: "
                       "1 from the ramp's end (the largest matmul measured) on, and with "
                       "the ramp off.")


def _over(compute: str, ramp: str | None) -> str:
    """The compute time's template, at the ramp's share of the efficiency when given."""
    return f"{{{compute}}}/{{{ramp}}}" if ramp else f"{{{compute}}}"


def _ramped(a: dict[str, Any], compute: str, ramp: str | None) -> Any:
    c = np.asarray(a[compute], dtype=float)
    return c / np.asarray(a[ramp], dtype=float) if ramp else c


def quantized_compute_time(name: str, compute: str, wave_eff: str,
                           label: str = "quantized compute time", *,
                           ramp: str | None = None) -> Quantity:
    """compute time (/ the compute ramp, when given) / wave efficiency: the idle SMs of the
    last wave are paid for ("n/a" where the wave efficiency is, for want of an SM count)."""

    def reference(**a: Any) -> Any:
        c = _ramped(a, compute, ramp)
        if np.asarray(a[wave_eff]).dtype.kind in "fiu":  # numbers: the usual, fast path
            return refined.quantized_compute_time(c, a[wave_eff])
        eff = np.asarray(a[wave_eff], dtype=object)
        known = xn.number_mask(eff)
        if known.all():
            return refined.quantized_compute_time(c, eff.astype(float))
        out = np.full(eff.shape, refined.NO_SMS, dtype=object)
        if known.any():
            out[known] = refined.quantized_compute_time(
                np.broadcast_to(c, eff.shape)[known], eff[known].astype(float))
        return out if eff.ndim else out[()]

    return Quantity(name, label, "s",
                    f'IF(ISNUMBER({{{wave_eff}}}),{_over(compute, ramp)}/{{{wave_eff}}},'
                    f'"{refined.NO_SMS}")',
                    reference, fmt="time",
                    doc="Compute time when a partial last wave costs a whole one"
                        + (" (at the ramp's share of the efficiency)." if ramp else "."))


def overlapped(compute: str, memory: str, p: str) -> str:
    """The p-norm of two time templates, as refined.refined_time takes it: the slower times
    (1 + (faster/slower)^p)^(1/p) for p ≥ 1, the slower alone (the hard max) below."""
    slower, faster = f"MAX({compute},{memory})", f"MIN({compute},{memory})"
    return (f"{slower}*IF({{{p}}}>={refined.MIN_OVERLAP_EXPONENT:g},"
            f"(1+({faster}/{slower})^{{{p}}})^(1/{{{p}}}),1)")


def refined_time(name: str, compute: str, quantized: str, memory: str,
                 label: str = "refined time", *, inputs: RefinedInputs = INPUTS,
                 ramp: str | None = None) -> Quantity:
    """floor + max(c, memory)·overlap, c = the quantized compute time when waves are on (and
    the GPU has an SM count), else the compute time (/ the compute ramp, when given);
    overlap = (1 + (min/max)^p)^(1/p) for p ≥ 1, 1 (the hard max) below. Without an SM count
    this is the plain roofline plus the floor, a number, never a gap: the sheet says so
    beside it (waves_note)."""
    floor, switch, p, sms = (inputs.launch_overhead, inputs.wave_quant, inputs.overlap,
                             inputs.sm_count)

    def reference(**a: Any) -> Any:
        chosen = refined.chosen_compute_time(_ramped(a, compute, ramp), a[quantized],
                                             a[switch], a[sms])
        return refined.refined_time(a[floor], chosen, a[memory], a[p])

    chosen = (f'IF(AND({{{switch}}}="on",ISNUMBER({{{sms}}})),{{{quantized}}},'
              f'{_over(compute, ramp)})')
    return Quantity(
        name, label, "s", f"{{{floor}}}+{overlapped(chosen, f'{{{memory}}}', p)}",
        reference, fmt="time",
        doc="Launch floor + the p-norm of compute (quantized when waves are on) and memory "
            "time: the slower of the two when the overlap exponent p is 0.")


def waves_note(name: str, label: str = "wave quantization", *,
               inputs: RefinedInputs = INPUTS) -> Quantity:
    """What the refined time assumes about waves, in words: "waves on", "waves off", or
    "waves off: preset has no SM count" (whatever the switch says)."""
    switch, sms = inputs.wave_quant, inputs.sm_count

    def reference(**a: Any) -> str:
        if not refined.sms_known(a[sms]):
            return refined.NO_SMS_NOTE
        return "waves " + ("on" if refined.waves_on(a[switch]) else "off")

    return Quantity(
        name, label, "",
        f'IF(ISNUMBER({{{sms}}}),IF({{{switch}}}="on","waves on","waves off"),'
        f'"{refined.NO_SMS_NOTE}")',
        reference, fmt="text",
        doc="The wave assumption the refined time makes: off without an SM count.")


@dataclass(frozen=True)
class RefinedTime:
    """The refined-time chain of one matmul, beside (never replacing) its roofline."""

    tiles: Quantity
    waves: Quantity
    wave_efficiency: Quantity
    quantized_compute_time: Quantity
    time: Quantity
    ramp: Quantity | None = None  # the compute ramp's share, where the matmul's FLOPs are given

    def columns(self) -> tuple[Quantity, ...]:
        ramp = (self.ramp,) if self.ramp is not None else ()
        return (self.tiles, self.waves, self.wave_efficiency, *ramp,
                self.quantized_compute_time, self.time)


def refined_roofline(prefix: str, rows: str, cols: str, compute: str, memory: str, *,
                     what: str = "", inputs: RefinedInputs = INPUTS,
                     batch: str | None = None, flops_: str | None = None) -> RefinedTime:
    """The refined-time quantities of a rows×cols output, named `prefix` + role. With
    `flops_` (one matmul's FLOPs) the compute time runs at the compute ramp's share of the
    efficiency, in a column of its own; without it, `compute` already does (or no ramp)."""

    def label(text: str) -> str:
        return f"{what} {text}" if what else text

    t, w, e, q, r = (prefix + "tiles", prefix + "waves", prefix + "wave_efficiency",
                     prefix + "quantized_compute_time", prefix + "compute_ramp")
    ramp = compute_ramp(r, flops_, label("compute ramp"), inputs=inputs) if flops_ else None
    by = ramp.name if ramp else None
    return RefinedTime(
        tiles(t, rows, cols, label("tiles"), inputs=inputs, batch=batch),
        waves(w, t, label("waves"), inputs=inputs),
        wave_efficiency(e, t, w, label("wave efficiency"), inputs=inputs),
        quantized_compute_time(q, compute, e, label("quantized compute time"), ramp=by),
        refined_time(prefix + "refined_time", compute, q, memory, label("refined time"),
                     inputs=inputs, ramp=by),
        ramp,
    )
