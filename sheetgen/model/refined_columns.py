"""The refined time's columns: launch floor, tiles and waves, the compute ramp, the overlap of
compute and memory time, and the kernel terms after it (K loop, split-K floor), as quantity
factories. The single-matmul, What-if and Pipeline sheets and the Measured sheet call them with
their own operand and input names, so each formula is written once; sheetgen.model.refined
and sheetgen.model.kernel_terms hold the Python reference they evaluate with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sheetgen.core import excel as xn
from sheetgen.model import kernel_terms, refined
from sheetgen.model.factories import OUT_BYTES
from sheetgen.model.vocabulary import Dimmed, Quantity

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
    #: the kernel terms after the refined time (sheetgen.model.kernel_terms)
    k_latency: str = "k_latency"  # the K loop's latency per unit of k (0: off)
    k_tile: str = "k_tile_growth"  # "on": the K loop grows with the library's tile for m
    tile_latency: str = "tile_latency"  # each tile's own cost beside its K loop (growth on)
    split_floor: str = "split_k_floor"  # the split-K reduction kernel's floor
    split_min_k: str = "split_k_min_k"  # k from which an under-filled GEMM splits k (0: off)
    write_cost: str = "write_cost"  # a byte of C written in bytes read (1: off)


INPUTS = RefinedInputs()


def _ref(name: str) -> str:
    return f"{{{name}}}"


def tile_count(rows: str, cols: str, tm: str, tn: str, gemms: str = "") -> str:
    """ceil(rows/tm)·ceil(cols/tn) as a template (refined.tiles), all four templates, times
    `gemms` (a template) GEMMs where given: the one place the tile count is written."""
    times = f"{gemms}*" if gemms else ""
    return f"{times}ROUNDUP({rows}/{tm},0)*ROUNDUP({cols}/{tn},0)"


def tiles(name: str, rows: str, cols: str, label: str = "tiles", *,
          inputs: RefinedInputs = INPUTS, batch: str | None = None) -> Quantity:
    """ceil(rows/tile_m)·ceil(cols/tile_n): the output tiles, one thread block each (times
    `batch` independent matmuls when given)."""
    tm, tn = inputs.tile_m, inputs.tile_n

    def reference(**a: Any) -> Any:
        count = refined.tiles(a[rows], a[cols], a[tm], a[tn])
        return a[batch] * count if batch else count

    return Quantity(
        name, label, "",
        tile_count(_ref(rows), _ref(cols), _ref(tm), _ref(tn), _ref(batch) if batch else ""),
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


def write_memory_expr(memory: str, written: str, bandwidth: str,
                      inputs: RefinedInputs = INPUTS) -> str:
    """memory + (write cost − 1) · written / bandwidth, the three templates given
    (kernel_terms.write_memory_time): the one place the write cost's formula is written."""
    return f"{memory}+({{{inputs.write_cost}}}-1)*{written}/{bandwidth}"


def write_memory(name: str, memory: str, rows: str, cols: str, bandwidth: str,
                 label: str = "memory time with the write cost", *,
                 inputs: RefinedInputs = INPUTS, batch: str | None = None) -> Quantity:
    """`memory` with each byte of C (b·rows·cols elements in C's storage) costing the write
    cost in bytes read at `bandwidth` (kernel_terms.write_memory_time): the refined time's
    memory side."""
    w = inputs.write_cost
    written = (f"{{{batch}}}*" if batch else "") + f"{{{rows}}}*{{{cols}}}*{{{OUT_BYTES}}}"

    def reference(**a: Any) -> Any:
        b = np.asarray(a[batch], dtype=float) if batch else 1.0
        nbytes = (b * np.asarray(a[rows], dtype=float) * np.asarray(a[cols], dtype=float)
                  * a[OUT_BYTES])
        return kernel_terms.write_memory_time(a[memory], nbytes, a[w], a[bandwidth])

    return Quantity(name, label, "s",
                    write_memory_expr(f"{{{memory}}}", written, f"{{{bandwidth}}}", inputs),
                    reference,
                    fmt="time", doc="memory time + (write cost − 1) · C's bytes / bandwidth: "
                                    "each byte written costs that many read.")


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


# The kernel terms after the refined time (sheetgen.model.kernel_terms has the reference and
# the measurements behind each): a serial K loop, a split-K reduction kernel's floor, and a K
# loop that grows with the library's tile for m (then it bounds the time rather than adding).
ON = "on"  # how an on/off switch reads in a cell (the sheet compares without case, as here)


def library_edges(rows: str) -> tuple[str, str]:
    """The library's tile edges Tm and Tn for m (kernel_terms.library_tile), as templates of
    `rows`, a template of m."""
    small, large = f"{kernel_terms.TILE_EDGE_SMALL:g}", f"{kernel_terms.TILE_EDGE_LARGE:g}"
    return (f"IF({rows}<={kernel_terms.K_TILE_MEDIUM_M},{small},{large})",
            f"IF({rows}<={kernel_terms.K_TILE_SMALL_M},{small},{large})")


def split_share(tiles_: str, inner: str, inputs: RefinedInputs = INPUTS) -> str:
    """1 where `tiles_` (a template of a kernel's output tiles) under-fill the SMs and k
    (`inner`, a template) ≥ split-K from k, else 0 (kernel_terms.split_k), as a template."""
    sms, min_k = _ref(inputs.sm_count), _ref(inputs.split_min_k)
    return f"IF(AND(ISNUMBER({sms}),{tiles_}<{sms},{inner}>={min_k},{min_k}>0),1,0)"


def tile_scale(rows: str, inputs: RefinedInputs = INPUTS) -> str:
    """The K loop's tile scale for m (`rows`, a template; kernel_terms.k_tile_scale), as a
    template: the library's tile area over 64×64 while the growth is on, else 1."""
    tm, tn = library_edges(rows)
    return (f'IF({_ref(inputs.k_tile)}="{ON}",{tm}*{tn}/{kernel_terms.TILE_EDGE_SMALL**2:g},'
            "1)")


def library_wave_count(rows: str, cols: str, gemms: str = "",
                       inputs: RefinedInputs = INPUTS) -> str:
    """Waves of the library's tiles over the SMs (kernel_terms.library_waves) for m × n
    (templates), times `gemms` GEMMs where given, while the growth is on; else 1."""
    sms = _ref(inputs.sm_count)
    tm, tn = library_edges(rows)
    return (f'IF(AND({_ref(inputs.k_tile)}="{ON}",ISNUMBER({sms})),'
            f"ROUNDUP({tile_count(rows, cols, tm, tn, gemms)}/{sms},0),1)")


def split_k(name: str, tiles_: str, inner: str, label: str = "runs split-K (1 = yes)", *,
            inputs: RefinedInputs = INPUTS) -> Quantity:
    """1 where the output tiles under-fill the SMs and k ≥ split-K from k (the GEMM splits k
    over blocks and sums them in a second kernel), else 0; 0 without an SM count."""
    sms, min_k = inputs.sm_count, inputs.split_min_k
    return Quantity(
        name, label, "", split_share(_ref(tiles_), _ref(inner), inputs),
        lambda **a: kernel_terms.split_k(a[tiles_], a[sms], a[inner], a[min_k]),
        fmt="int", doc="1 where the tiles under-fill the SMs and k ≥ split-K from k.")


def k_tile_scale(name: str, rows: str, label: str = "K-loop tile scale", *,
                 inputs: RefinedInputs = INPUTS) -> Quantity:
    """The library's tile area over 64×64 for the rows m (1, 2, 4) where the K loop grows
    with the tile; 1 where it does not."""
    growth = inputs.k_tile
    return Quantity(
        name, label, "", tile_scale(_ref(rows), inputs),
        # the switch read as the sheet reads it ("on" in any case), as the waves' is
        lambda **a: kernel_terms.k_tile_scale(a[rows], refined.waves_on(a[growth])),
        fmt="int", doc="The tile's area over 64×64 where the library's tile grows with m: 1 "
                       "up to m = 64, 2 up to 128, 4 beyond; 1 when the growth is off.")


def library_waves(name: str, rows: str, cols: str, label: str = "waves of the library's tiles",
                  *, inputs: RefinedInputs = INPUTS, batch: str | None = None) -> Quantity:
    """⌈b·⌈m/Tm⌉·⌈n/Tn⌉ / SMs⌉ of the library's 64×64, 64×128 or 128×128 tile where the K loop
    grows with it; 1 when the growth is off or without an SM count."""
    growth, sms = inputs.k_tile, inputs.sm_count
    return Quantity(
        name, label, "",
        library_wave_count(_ref(rows), _ref(cols), _ref(batch) if batch else "", inputs),
        lambda **a: kernel_terms.library_waves(a[batch] if batch else 1.0, a[rows], a[cols],
                                               a[sms], refined.waves_on(a[growth])),
        fmt="int", doc="Where the K loop grows with the tile: waves of the library's tiles "
                       "over the SMs; 1 when off or without an SM count.")


def k_loop(name: str, inner: str, split: str, scale: str, label: str = "K-loop latency", *,
           inputs: RefinedInputs = INPUTS) -> Quantity:
    """k · the latency per unit of k · the tile scale: the serial K loop of one block; 0
    where the GEMM runs split-K (each block loops over a slice)."""
    latency = inputs.k_latency
    return Quantity(
        name, label, "s", f"(1-{{{split}}})*{{{inner}}}*{{{latency}}}*{{{scale}}}",
        lambda **a: kernel_terms.k_loop_time(a[inner], a[latency], a[split], a[scale]),
        fmt="time", doc="k · the K-loop latency per unit of k · the tile scale (serial K "
                        "loop); 0 where the GEMM runs split-K.")


def split_k_floor(name: str, split: str, label: str = "split-K kernel floor", *,
                  inputs: RefinedInputs = INPUTS) -> Quantity:
    """The second (reduction) kernel's floor where the GEMM runs split-K."""
    floor = inputs.split_floor
    return Quantity(
        name, label, "s", f"{{{split}}}*{{{floor}}}",
        lambda **a: np.asarray(a[split], dtype=float) * a[floor],
        fmt="time", doc="A second (reduction) kernel where the GEMM runs split-K.")


def kernel_time(name: str, gemm: str, k_loop_: str, split_floor: str, waves_: str,
                label: str = "refined time", *, inputs: RefinedInputs = INPUTS,
                plus: str | None = None) -> Quantity:
    """The refined GEMM time with its kernel terms (kernel_terms.total_time): plus the K loop,
    or, where the K loop grows with the tile, the larger of the two (floor + waves of tiles ·
    (tile latency + K loop)); then plus the split-K floor (and `plus`, a pass run after)."""
    growth, floor, tile = inputs.k_tile, inputs.launch_overhead, inputs.tile_latency
    after = f"+{{{plus}}}" if plus else ""

    def reference(**a: Any) -> Any:
        return kernel_terms.total_time(a[gemm], a[k_loop_], a[split_floor],
                                       a[plus] if plus else 0.0, a[floor],
                                       refined.waves_on(a[growth]), a[waves_], a[tile])

    return Quantity(
        name, label, "s",
        f'IF({{{growth}}}="{ON}",MAX({{{gemm}}},{{{floor}}}+{{{waves_}}}*({{{tile}}}+'
        f"{{{k_loop_}}})),{{{gemm}}}+{{{k_loop_}}})+{{{split_floor}}}{after}",
        reference, fmt="time",
        doc="The kernel terms run one after the other with the GEMM; where the K loop grows "
            "with the tile it bounds the GEMM's time (the larger of the two, the floor once) "
            "rather than adding to it.")


@dataclass(frozen=True)
class KernelTerms:
    """The kernel terms of one matmul after its refined GEMM time (kernel_terms)."""

    gemm: Quantity  # the refined time before them: floor, waves, ramp, overlap
    split: Quantity
    scale: Quantity
    library_waves: Quantity
    k_loop: Quantity
    split_floor: Quantity

    def columns(self) -> tuple[Quantity, ...]:
        return (self.gemm, self.split, self.scale, self.library_waves, self.k_loop,
                self.split_floor)


def kernel_terms_of(prefix: str, gemm: Quantity, tiles_: str, rows: str, inner: str, cols: str,
                    *, label: Any = str, inputs: RefinedInputs = INPUTS,
                    batch: str | None = None) -> KernelTerms:
    """The five kernel-term quantities of a rows×inner · inner×cols matmul whose refined GEMM
    time is `gemm`, named `prefix` + role."""
    s, sc, w = prefix + "split", prefix + "k_tile", prefix + "library_waves"
    return KernelTerms(
        gemm,
        split_k(s, tiles_, inner, label("runs split-K (1 = yes)"), inputs=inputs),
        k_tile_scale(sc, rows, label("K-loop tile scale"), inputs=inputs),
        library_waves(w, rows, cols, label("waves of the library's tiles"), inputs=inputs,
                      batch=batch),
        k_loop(prefix + "k_loop", inner, s, sc, label("K-loop latency"), inputs=inputs),
        split_k_floor(prefix + "split_k", s, label("split-K kernel floor"), inputs=inputs),
    )


@dataclass(frozen=True)
class RefinedTime:
    """The refined-time chain of one matmul, beside (never replacing) its roofline."""

    tiles: Quantity
    waves: Quantity
    wave_efficiency: Quantity
    quantized_compute_time: Quantity
    time: Quantity
    ramp: Quantity | None = None  # the compute ramp's share, where the matmul's FLOPs are given
    #: the kernel terms, where the matmul's k is given: `time` adds them to kernel.gemm
    kernel: KernelTerms | None = None
    #: the memory time with the write cost, where the bandwidth is given (write_memory)
    write: Quantity | None = None

    def columns(self) -> tuple[Quantity, ...]:
        ramp = (self.ramp,) if self.ramp is not None else ()
        write = (self.write,) if self.write is not None else ()
        kernel = self.kernel.columns() if self.kernel is not None else ()
        return (self.tiles, self.waves, self.wave_efficiency, *ramp,
                self.quantized_compute_time, *write, *kernel, self.time)


def refined_roofline(prefix: str, rows: str, cols: str, compute: str, memory: str, *,
                     what: str = "", inputs: RefinedInputs = INPUTS,
                     batch: str | None = None, flops_: str | None = None,
                     inner: str | None = None, bandwidth: str | None = None) -> RefinedTime:
    """The refined-time quantities of a rows×cols output, named `prefix` + role. With
    `flops_` (one matmul's FLOPs) the compute time runs at the compute ramp's share of the
    efficiency, in a column of its own; without it, `compute` already does (or no ramp).
    With `bandwidth` (the attainable one `memory` is at) the memory side charges the write
    cost on C's bytes, in a column of its own (write_memory).
    With `inner` (its k) the kernel terms follow in columns of their own, and the refined
    time is the GEMM's time before them (`prefix`gemm_time) with them added."""

    def label(text: str) -> str:
        return f"{what} {text}" if what else text

    t, w, e, q, r = (prefix + "tiles", prefix + "waves", prefix + "wave_efficiency",
                     prefix + "quantized_compute_time", prefix + "compute_ramp")
    ramp = compute_ramp(r, flops_, label("compute ramp"), inputs=inputs) if flops_ else None
    by = ramp.name if ramp else None
    write = (write_memory(prefix + "write_memory_time", memory, rows, cols, bandwidth,
                          label("memory time with the write cost"), inputs=inputs, batch=batch)
             if bandwidth else None)
    memory = write.name if write else memory
    final = prefix + "refined_time"
    gemm = refined_time(prefix + "gemm_time" if inner else final, compute, q, memory,
                        label("time before K loop, split-K") if inner else label("refined time"),
                        inputs=inputs, ramp=by)
    kernel = time = None
    if inner:
        kernel = kernel_terms_of(prefix, gemm, t, rows, inner, cols, label=label,
                                 inputs=inputs, batch=batch)
        time = kernel_time(final, gemm.name, kernel.k_loop.name, kernel.split_floor.name,
                           kernel.library_waves.name, label("refined time"), inputs=inputs)
    return RefinedTime(
        tiles(t, rows, cols, label("tiles"), inputs=inputs, batch=batch),
        waves(w, t, label("waves"), inputs=inputs),
        wave_efficiency(e, t, w, label("wave efficiency"), inputs=inputs),
        quantized_compute_time(q, compute, e, label("quantized compute time"), ramp=by),
        time or gemm,
        ramp,
        kernel,
        write,
    )


def dimmed_while_off(r: RefinedTime, inputs: RefinedInputs = INPUTS) -> tuple[Dimmed, ...]:
    """`r`'s columns greyed while the term behind them is off, so an unused figure does not
    read as a result: the wave columns while waves are off or there is no SM count (a refined
    time below the quantized compute time is then no contradiction), the compute ramp's with
    F_half 0, and each kernel term's while it is off (every built-in preset has them off),
    the time before them while all are (it is the refined time then)."""
    waves = (r.tiles, r.waves, r.wave_efficiency, r.quantized_compute_time)
    out = [Dimmed(tuple(c.name for c in waves),
                  f'OR({{{inputs.wave_quant}}}="off",NOT(ISNUMBER({{{inputs.sm_count}}})))')]
    if r.ramp is not None:
        out.append(Dimmed((r.ramp.name,), f"{{{inputs.ramp_flops}}}<=0"))
    if r.write is not None:
        out.append(Dimmed((r.write.name,), f"{{{inputs.write_cost}}}<=1"))
    if r.kernel is not None:
        k = r.kernel
        growth_off = f'{{{inputs.k_tile}}}<>"{ON}"'
        split_off, loop_off = f"{{{inputs.split_min_k}}}<=0", f"{{{inputs.k_latency}}}<=0"
        out += [Dimmed((k.split.name, k.split_floor.name), split_off),
                Dimmed((k.k_loop.name,), loop_off),
                Dimmed((k.scale.name, k.library_waves.name), growth_off),
                Dimmed((k.gemm.name,), f"AND({loop_off},{split_off},{growth_off})")]
    return tuple(out)
