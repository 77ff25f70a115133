"""Fitting the refined roofline to measured times: efficiencies, launch floor, and one more
degree of freedom when held-out rows show it helps: wave quantization or a smooth overlap of
compute and memory time (sheetgen.model.refined.overlap_factor).

The model is the workbook's: FLOPs, bytes and the compute/memory times come from the Matmul
sheet's quantities' Python references (sheetgen.sheets.matmul), the floor, tiles and waves
from sheetgen.model.refined, so the fit, the reference model and the formulas cannot drift apart.
b independent matmuls of one shape (a batch) multiply FLOPs, bytes and output tiles by b.

The fit is scipy.optimize.least_squares on the relative error (predicted − measured) /
measured with a soft-L1 (robust) loss, efficiencies bounded to (0, 1] and the floor to ≥ 0.
Rows faster than the pure roofline allows are left out of it: no efficiency ≤ 1 can explain
them, and letting them pull the fit would hide a timing bug or a cache effect.

The overlap exponent p (1 ≤ p ≤ MAX_OVERLAP_EXPONENT) replaces the roofline's hard
max(compute, memory) with their p-norm: p = 1 adds the two times, a large p is the hard max.
It was chosen over separate floors per regime on the held-out halves of the published NVIDIA
tables (docs/measuring.md). Three terms run after it (sheetgen.model.kernel_terms): the serial
K loop (a fitted latency per unit of k, 0 where the GEMM runs split-K) and the split-K
reduction kernel's floor (fitted), forms the held-out half must choose, and, when the
measurement file says its timings include one, a separate activation-quantize pass (its bytes
per element are the file's, never fitted). A further form adds a Hill-type ramp of the compute
efficiency in the matmul's FLOPs (kernel_terms.compute_ramp: F_half and h fitted), chosen on
the NVIDIA tables' held-out halves like the others. The last, only where the file states a
pass, gives the pass a roofline of its own (kernel_terms.quantize_time: its own bandwidth
efficiency, a serial cost per row of A and one row's time, fitted).

predict is timed(fixed_terms(...)): what no fitted parameter changes (FLOPs, bytes, the wave
efficiency, the split-K switch, the quantize pass's bytes) is computed once per fit, and the
optimizer's thousands of residual evaluations run only timed, the same arithmetic in the same
order, so the fitted values are those of predict itself. The fits run BLAS on one thread
(threads.py), and the numerical Jacobian's points are evaluated in one call (OneCall); neither
changes a result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sheetgen.calibrate.data import Measurements
from sheetgen.calibrate.threads import one_blas_thread
from sheetgen.inputs.presets import MAX_RAMP_EXPONENT, MAX_WRITE_COST, MIN_RAMP_EXPONENT
from sheetgen.model import factories as rf
from sheetgen.model import kernel_terms, refined
from sheetgen.sheets import matmul

MIN_EFFICIENCY = 1e-3  # the lower bound of a fitted efficiency (the upper one is 1)
ROBUST_SCALE = 0.05  # soft-L1 turns linear beyond a 5 % relative error
MIN_HELD_OUT_ROWS = 6  # fewer rows than this: no held-out comparison, waves stay off
TILE_CANDIDATES = ((128, 128), (128, 256), (256, 128))
MAX_OVERLAP_EXPONENT = 64.0  # beyond this the p-norm is the hard max to within 1.1 %
#: A row counts as faster than the roof only when it beats it by more than this: repeated
#: timings of one large matmul spread by about a percent, and a measured peak (measure's
#: device preset) is itself such a timing.
ROOF_TOLERANCE = 0.02
#: the write cost's starting points: the fit without it, and half again
WRITE_STARTS = (1.0 + 1e-6, 1.5)
#: the quantize kernel's (row latency, element latency) starting points, in units of the
#: fastest time over the largest b·m or k: none, a little, as large as the floor, and one
#: without the other
QUANTIZE_STARTS = ((0.0, 0.0), (1.0, 1.0), (10.0, 10.0), (10.0, 0.0), (0.0, 10.0))


@dataclass(frozen=True)
class Device:
    """The figures the model needs for one GPU and dtype (spec values, SI)."""

    name: str
    peak: float  # FLOP/s
    bandwidth: float  # B/s
    dtype_bytes: float
    sm_count: int | None  # None: the preset gives none (waves stay off, as on the sheet)
    #: (a, w, o): bytes per element of A, B and C as stored; None: all dtype_bytes
    operand_bytes: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class Params:
    """The refined model's free parameters."""

    compute_efficiency: float = 1.0
    memory_efficiency: float = 1.0
    launch_overhead: float = 0.0  # s
    waves: bool = False
    tile_m: int = 128
    tile_n: int = 128
    overlap: float = 0.0  # the overlap exponent p; 0 = the hard max
    k_latency: float = 0.0  # s per unit of k: the serial K loop (kernel_terms.k_loop_time)
    k_loop: bool = False  # whether k_latency is a fitted term of this form
    quantize_bytes: float = 0.0  # bytes per element of A of a separate quantize pass (data's)
    split_floor: float = 0.0  # s: the split-K reduction kernel's floor (kernel_terms)
    split_min_k: float = 0.0  # k from which an under-filled GEMM runs split-K; 0 = off
    ramp_flops: float = 0.0  # F_half of the compute-efficiency ramp (FLOPs); 0 = off
    ramp_exponent: float = 1.0  # its exponent h (kernel_terms.compute_ramp)
    #: the quantize pass's own roofline (kernel_terms.quantize_time): its bandwidth efficiency
    #: (0: memory_efficiency's), s per row of A, s per element of one row; fitted when
    #: quantize_kernel
    quantize_efficiency: float = 0.0
    quantize_row_latency: float = 0.0
    quantize_k_latency: float = 0.0
    quantize_kernel: bool = False
    #: the K loop's latency grows with the library's tile for m (kernel_terms.k_tile_scale),
    #: and then bounds the GEMM with each tile's own cost, s (kernel_terms.total_time)
    k_tile_growth: bool = False
    tile_latency: float = 0.0
    #: FLOPs where the compute ramp ends (kernel_terms.compute_ramp): compute_efficiency is
    #: the one the ramp reaches there, held beyond; 0 = compute_efficiency is the asymptote
    #: (how fit() works; calibrate states the efficiency at the largest matmul measured:
    #: held_from)
    ramp_end: float = 0.0
    #: a byte of C written costs this many bytes read (kernel_terms.write_memory_time);
    #: fitted when `write` (1: the roofline's)
    write_cost: float = 1.0
    write: bool = False

    @property
    def form(self) -> str:
        """The model's extra degrees of freedom, in words."""
        if self.waves:
            out = f"waves ({self.tile_m}x{self.tile_n} tiles)"
        elif self.overlap >= refined.MIN_OVERLAP_EXPONENT:
            out = f"smooth max (p = {self.overlap:.3g})"
        else:
            out = "hard max"
        out += " + K-loop latency" if self.k_loop else ""
        out += (f" growing with the tile ({self.tile_latency:.3g} s a tile)"
                if self.k_loop and self.k_tile_growth else "")
        out += f" + split-K floor (k ≥ {self.split_min_k:g})" if self.split_min_k else ""
        out += (f" + compute ramp (F_half = {self.ramp_flops:.3g} FLOPs, h = "
                f"{self.ramp_exponent:.3g}" + (f", held from {self.ramp_end:.3g} FLOPs"
                                               if self.ramp_end else "") + ")"
                if self.ramp_flops else "")
        out += f" + write cost ({self.write_cost:.3g} reads a byte)" if self.write else ""
        return out + (" + quantize kernel" if self.quantize_kernel else "")

    @property
    def asymptote(self) -> float:
        """The compute efficiency the ramp approaches beyond its end (compute_efficiency
        itself without an end): a figure the data never reached, for the record only."""
        if not self.ramp_flops or not self.ramp_end:
            return float(self.compute_efficiency)
        return float(self.compute_efficiency / kernel_terms.compute_ramp(
            self.ramp_end, self.ramp_flops, self.ramp_exponent))

    @property
    def has_quantize_kernel(self) -> bool:
        """Whether the quantize pass has a roofline of its own (fitted, or a preset's)."""
        return self.quantize_kernel or any(
            float(v) != 0 for v in (self.quantize_efficiency, self.quantize_row_latency,
                                    self.quantize_k_latency))

    def quantize_bandwidth_efficiency(self) -> Any:
        """The quantize pass's bandwidth efficiency: its own, else the GEMM's."""
        return np.where(np.asarray(self.quantize_efficiency) > 0, self.quantize_efficiency,
                        self.memory_efficiency)


PURE = Params()  # the seed's pure roofline: spec figures, no floor, no quantization


@dataclass(frozen=True)
class Fixed:
    """The quantities of some rows' predicted times that no fitted parameter changes (FLOPs,
    bytes, the wave efficiency, the split-K switch, the quantize pass's bytes): computed once
    per fit, not on each of the optimizer's thousands of evaluations (predict = timed of
    fixed_terms)."""

    #: (waves on, tile_m, tile_n, split_min_k, quantize_bytes, K-loop tile growth): the Params
    #: fields they assume
    switches: tuple[bool, int, int, float, float, bool]
    flops: np.ndarray  # b matmuls' FLOPs
    moved: np.ndarray  # b matmuls' bytes moved
    k: np.ndarray
    wave_eff: np.ndarray | None  # None: waves off, or no SM count
    split: np.ndarray  # 1.0 where the GEMM runs split-K
    quantize_moved: np.ndarray  # bytes the activation-quantize pass moves
    rows_a: np.ndarray  # b·m: the rows of A the quantize pass walks
    k_tile: np.ndarray  # the K loop's tile scale (kernel_terms.k_tile_scale)
    library_waves: np.ndarray  # waves of the library's tiles (kernel_terms.library_waves)
    written: np.ndarray  # b matmuls' bytes of C written (part of moved)


def switches(device: Device, params: Params) -> tuple[bool, int, int, float, float, bool]:
    """The Params fields fixed_terms depends on (a fit changes none of them)."""
    return (params.waves and refined.sms_known(device.sm_count), params.tile_m,
            params.tile_n, params.split_min_k, params.quantize_bytes, params.k_tile_growth)


def fixed_terms(device: Device, params: Params, data: Measurements) -> Fixed:
    """The parameter-independent part of predict for these rows and params' switches."""
    m, k, n, b = data.m, data.k, data.n, data.b
    a, w, o = device.operand_bytes or (device.dtype_bytes,) * 3
    moved = b * matmul.BYTES.reference(m=m, k=k, n=n, **dict(zip(
        (rf.ACT_BYTES, rf.WEIGHT_BYTES, rf.OUT_BYTES), (a, w, o), strict=True)))
    key = switches(device, params)
    tiles = b * refined.tiles(m, n, params.tile_m, params.tile_n)
    wave_eff = None
    if key[0]:  # waves on and an SM count (without one waves stay off, as on the sheet)
        waves = refined.waves(tiles, device.sm_count)
        wave_eff = refined.wave_efficiency(tiles, waves, device.sm_count)
    split = kernel_terms.split_k(tiles, device.sm_count, k, params.split_min_k)
    flops = b_flops(data)
    quantize_moved = kernel_terms.quantize_bytes(b, m, k, params.quantize_bytes)
    return Fixed(key, flops, moved, k, wave_eff, split, quantize_moved, b * m,
                 kernel_terms.k_tile_scale(m, params.k_tile_growth),
                 kernel_terms.library_waves(b, m, n, device.sm_count, params.k_tile_growth),
                 b * m * n * o)


def timed(device: Device, params: Params, fixed: Fixed) -> np.ndarray:
    """Predicted seconds per row from the fixed terms and the fitted parameters."""
    if fixed.switches != switches(device, params):
        raise ValueError(f"terms fixed for {fixed.switches}, not {switches(device, params)}")
    flops = fixed.flops
    ramp = kernel_terms.compute_ramp(flops, params.ramp_flops, params.ramp_exponent,
                                     params.ramp_end)
    compute = matmul.COMPUTE_TIME.reference(
        flops=flops, attainable_flops=device.peak * params.compute_efficiency * ramp)
    bandwidth = device.bandwidth * params.memory_efficiency
    memory = kernel_terms.write_memory_time(
        matmul.MEMORY_TIME.reference(bytes_moved=fixed.moved, attainable_bw=bandwidth),
        fixed.written, params.write_cost, bandwidth)
    if fixed.wave_eff is not None:
        compute = refined.quantized_compute_time(compute, fixed.wave_eff)
    roof = refined.refined_time(params.launch_overhead, compute, memory, params.overlap)
    if params.has_quantize_kernel:
        quantize = kernel_terms.quantize_time(
            fixed.quantize_moved, device.bandwidth, params.quantize_bandwidth_efficiency(),
            fixed.rows_a, fixed.k, params.quantize_row_latency, params.quantize_k_latency)
    else:  # the pass charged its bytes at the GEMM's bandwidth
        quantize = matmul.MEMORY_TIME.reference(
            bytes_moved=fixed.quantize_moved,
            attainable_bw=device.bandwidth * params.memory_efficiency)
    split = fixed.split
    return np.asarray(kernel_terms.total_time(
        roof, kernel_terms.k_loop_time(fixed.k, params.k_latency, split, fixed.k_tile),
        split * params.split_floor, quantize, params.launch_overhead, params.k_tile_growth,
        fixed.library_waves, params.tile_latency), dtype=float)


def predict(device: Device, params: Params, data: Measurements) -> np.ndarray:
    """Predicted seconds per row: the refined time of b matmuls of m×k×n."""
    return timed(device, params, fixed_terms(device, params, data))


def relative_error(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """(predicted − measured) / measured: +0.5 predicts 50 % too slow."""
    return (predicted - measured) / measured


def faster_than_roof(device: Device, data: Measurements) -> np.ndarray:
    """Rows measured faster than the pure roofline allows, beyond ROOF_TOLERANCE."""
    return data.measured < (1.0 - ROOF_TOLERANCE) * predict(device, PURE, data)


def fit(device: Device, data: Measurements, *, waves: bool = False, tile_m: int = 128,
        tile_n: int = 128, overlap: bool = False, k_loop: bool = False,
        split_k: bool = False, ramp: bool = False, quantize_kernel: bool = False,
        k_tile_growth: bool = False, write: bool = False,
        base: Params | None = None) -> Params:
    """The robust least-squares fit of efficiencies and floor, of the overlap exponent when
    `overlap`, of the K loop's latency per unit of k when `k_loop`, of the split-K kernel's
    floor when `split_k`, of the compute ramp's F_half and h when `ramp` and of the quantize
    pass's own efficiency and latencies when `quantize_kernel` and the data states a pass
    (flagged rows excluded; the pass's bytes come from the data), of the cost of a byte of C
    written when `write`; `k_tile_growth` makes the K loop's latency grow with the library's
    tile for m (kernel_terms.k_tile_scale). `base`: this call's result without its last form
    (`quantize_kernel`, else `write`, else `ramp`), when the caller has it (the fit starts
    from it; else it is fitted)."""
    keep = ~faster_than_roof(device, data)
    qbytes = data.quantize_bytes
    quantize_kernel = quantize_kernel and qbytes > 0
    if not keep.any():
        return replace(PURE, waves=waves, tile_m=tile_m, tile_n=tile_n, k_loop=k_loop,
                       quantize_bytes=qbytes, k_tile_growth=k_tile_growth and k_loop,
                       split_min_k=kernel_terms.SPLIT_K_MIN_K if split_k else 0.0)
    rows = data.subset(keep)
    scale = float(np.min(rows.measured))  # the floor in units of the fastest time
    k_scale = scale / float(np.max(rows.k))  # latency per k in units of that over the max k
    row_scale = scale / float(np.max(rows.b * rows.m))  # the same per row of A
    n_base = 4 if overlap else 3
    tile = k_tile_growth and k_loop  # each tile's own latency is fitted beside the K loop
    n_tile = n_base + (1 if k_loop else 0)
    n_split = n_tile + (1 if tile else 0)
    n_ramp = n_split + (1 if split_k else 0)
    n_write = n_ramp + (2 if ramp else 0)
    n_quant = n_write + (1 if write else 0)
    # the ramp's F_half is fitted as log10 FLOPs, from the data's decades
    log_flops = np.log10(b_flops(rows))

    def params(x: np.ndarray) -> Params:
        """The parameters at x; x of shape (points, n) gives each fitted field as a column
        of one value per point (broadcast over the rows: see OneCall)."""
        def v(i: int) -> Any:
            return float(x[i]) if x.ndim == 1 else x[:, i:i + 1]

        def half(i: int) -> Any:  # F_half from its log, a scalar power per point either way
            if x.ndim == 1:
                return float(10.0 ** x[i])
            return np.array([[float(10.0 ** xi)] for xi in x[:, i]])

        out = Params(v(0), v(1), v(2) * scale, waves, tile_m, tile_n,
                     v(3) if overlap else 0.0,
                     v(n_base) * k_scale if k_loop else 0.0, k_loop, qbytes,
                     v(n_split) * scale if split_k else 0.0,
                     kernel_terms.SPLIT_K_MIN_K if split_k else 0.0,
                     half(n_ramp + 1) if ramp else 0.0,
                     v(n_ramp) if ramp else 1.0, k_tile_growth=tile,
                     tile_latency=v(n_tile) * scale if tile else 0.0,
                     write_cost=v(n_write) if write else 1.0, write=write)
        if not quantize_kernel:
            return out
        return replace(out, quantize_efficiency=v(n_quant),
                       quantize_row_latency=v(n_quant + 1) * row_scale,
                       quantize_k_latency=v(n_quant + 2) * k_scale, quantize_kernel=True)

    def base_point(base: Params, with_ramp: bool, with_write: bool = False) -> list[float]:
        """The fitted values of `base`, the same form without its last term, as the start
        of this fit's point (params' inverse; the ramp's only `with_ramp`, the write cost's
        only `with_write`)."""
        x = [base.compute_efficiency, base.memory_efficiency, base.launch_overhead / scale]
        x += [base.overlap] if overlap else []
        x += [base.k_latency / k_scale] if k_loop else []
        x += [base.tile_latency / scale] if tile else []
        x += [base.split_floor / scale] if split_k else []
        x += [base.ramp_exponent, np.log10(max(base.ramp_flops, 1e-30))] if with_ramp else []
        x += [base.write_cost] if with_write else []
        return x

    def residuals(x: np.ndarray) -> np.ndarray:
        return relative_error(timed(device, params(x), fixed), rows.measured)

    lower = [MIN_EFFICIENCY, MIN_EFFICIENCY, 0.0]
    upper = [1.0, 1.0, np.inf]
    starts = [[0.8, 0.8, 0.5], [0.5, 0.5, 0.9], [0.95, 0.3, 0.1], [0.3, 0.95, 0.1]]
    if overlap:
        lower.append(refined.MIN_OVERLAP_EXPONENT)
        upper.append(MAX_OVERLAP_EXPONENT)
        starts = [[*x0, p] for x0 in starts for p in (1.5, 4.0)]
    if k_loop:
        lower.append(0.0)
        upper.append(np.inf)
        # a K loop that bounds the GEMM (k_tile_growth) has no gradient until it is longer
        # than some row's refined time: it starts at ten fastest times over the longest k
        starts = [[*x0, 10.0 if k_tile_growth else 0.5] for x0 in starts]
    if tile:  # each tile's latency, in fastest times
        lower.append(0.0)
        upper.append(np.inf)
        starts = [[*x0, 0.1] for x0 in starts]
    if split_k:
        lower.append(0.0)
        upper.append(np.inf)
        starts = [[*x0, 0.3] for x0 in starts]
    if ramp:
        lower += [MIN_RAMP_EXPONENT, float(log_flops.min()) - 3.0]
        upper += [MAX_RAMP_EXPONENT, float(log_flops.max()) + 1.0]
    if write:
        lower.append(1.0)
        upper.append(MAX_WRITE_COST)
    if quantize_kernel:  # from the same form's fit without it (a pass at the GEMM's bandwidth)
        lower += [MIN_EFFICIENCY, 0.0, 0.0]
        upper += [1.0, np.inf, np.inf]
        if base is None:
            base = fit(device, data, waves=waves, tile_m=tile_m, tile_n=tile_n,
                       overlap=overlap, k_loop=k_loop, split_k=split_k, ramp=ramp,
                       k_tile_growth=k_tile_growth, write=write)
        x_base = base_point(base, ramp, write)
        x_base = list(np.clip(x_base, np.add(lower[:len(x_base)], 1e-9),
                              np.subtract(upper[:len(x_base)], 1e-9)))
        starts = [[*x_base, min(base.memory_efficiency, 0.99), r, kk]
                  for r, kk in QUANTIZE_STARTS]
    elif write:  # from the same form's fit without it (a write cost of 1 is that fit)
        if base is None:
            base = fit(device, data, waves=waves, tile_m=tile_m, tile_n=tile_n,
                       overlap=overlap, k_loop=k_loop, split_k=split_k, ramp=ramp,
                       k_tile_growth=k_tile_growth)
        x_base = list(np.clip(base_point(base, ramp), np.add(lower[:-1], 1e-9),
                              np.subtract(upper[:-1], 1e-9)))
        starts = [[*x_base, w] for w in WRITE_STARTS]
    elif ramp:  # from the same form's fit without the ramp (a ramp of F_half → 0 is that fit)
        if base is None:
            base = fit(device, data, waves=waves, tile_m=tile_m, tile_n=tile_n,
                       overlap=overlap, k_loop=k_loop, split_k=split_k,
                       k_tile_growth=k_tile_growth)
        x_base = base_point(base, False)
        mid = [float(np.percentile(log_flops, q)) for q in (25, 50, 75)]
        starts = [[*x0, h, lf] for x0 in (x_base, starts[0])
                  for h, lf in ((1.0, mid[0]), (2.0, mid[1]), (0.5, mid[2]))]
    from scipy.optimize import least_squares  # half a second to import: only when fitting

    fixed = fixed_terms(device, params(np.asarray(starts[0], dtype=float)), rows)
    best = None
    with one_blas_thread():  # the same result, many times faster on busy cores (threads.py)
        for x0 in starts:
            result = least_squares(residuals, x0=x0, bounds=(lower, upper), loss="soft_l1",
                                   f_scale=ROBUST_SCALE, method="trf",
                                   workers=OneCall(residuals))
            if best is None or result.cost < best.cost:
                best = result
    assert best is not None
    return params(best.x)


class OneCall:
    """A map for least_squares(workers=...) that answers in one call. scipy's
    forward-difference Jacobian wants the residuals at x0 + h·e_i for each of the n
    parameters, one point at a time (n calls of the model, each a few dozen numpy operations
    over the rows, half a fit's time); given the points as rows of one array, the residual
    function evaluates them all at once, each parameter a column broadcast over the table's
    rows. scipy still picks the steps (bounds included), so only the evaluation changes."""

    def __init__(self, residuals: Callable[[np.ndarray], np.ndarray]) -> None:
        self.residuals = residuals

    def __call__(self, fun: Callable[[np.ndarray], np.ndarray],
                 points: Iterable[np.ndarray]) -> list[np.ndarray]:
        """`fun` at each point: scipy's wrapper of `self.residuals`, whose own checks (a 1-D
        result) the rows of the stacked call meet."""
        return list(self.residuals(np.stack(list(points))))


def b_flops(data: Measurements) -> np.ndarray:
    """FLOPs per row: b matmuls of m×k×n (what the compute ramp is a function of)."""
    return data.b * matmul.FLOPS.reference(m=data.m, k=data.k, n=data.n)


def largest_row(data: Measurements, flagged: np.ndarray) -> int:
    """The row of the largest matmul measured (most FLOPs), among the rows the fit used
    (those not faster than the roofline) where any remain."""
    flops = b_flops(data)
    return int(np.argmax(flops if flagged.all() else np.where(flagged, -np.inf, flops)))


def held_from(params: Params, end: float) -> Params:
    """params with the compute efficiency stated where the ramp ends, at `end` FLOPs (the
    largest matmul measured), and held beyond: the same times up to `end`, and none predicted
    from an asymptote the data never reached (kernel_terms.compute_ramp). Unchanged without a
    ramp."""
    if not params.ramp_flops or not end > 0 or params.ramp_end:
        return params
    share = float(kernel_terms.compute_ramp(end, params.ramp_flops, params.ramp_exponent))
    return replace(params, compute_efficiency=params.compute_efficiency * share,
                   ramp_end=float(end))


def stats(errors: np.ndarray) -> tuple[float, float]:
    """(median, p90) of |error|."""
    a = np.abs(errors)
    return float(np.median(a)), float(np.percentile(a, 90))


def split_halves(device: Device, data: Measurements) -> tuple[np.ndarray, np.ndarray]:
    """Alternate rows in order of pure-roofline time into a fit half and a test half, so both
    halves span the small, the memory-bound and the compute-bound shapes."""
    order = np.argsort(predict(device, PURE, data), kind="stable")
    train = np.zeros(len(data), dtype=bool)
    train[order[::2]] = True
    return train, ~train


@dataclass(frozen=True)
class HeldOut:
    """One model fitted on the fit half and scored on the test half (and on its own fit
    half: train_* say how much better it does on rows it has seen)."""

    model: str
    params: Params
    median_abs_error: float
    p90_abs_error: float
    rows: int
    train_median_abs_error: float = float("nan")
    train_p90_abs_error: float = float("nan")


SMOOTH_K_LOOP = "calibrated + smooth max + K loop"
SMOOTH_K_SPLIT = "calibrated + smooth max + K loop + split-K"
SMOOTH_K_SPLIT_RAMP = "calibrated + smooth max + K loop + split-K + ramp"
SMOOTH_K_SPLIT_RAMP_QUANT = SMOOTH_K_SPLIT_RAMP + " + quantize kernel"
#: the K loop growing with the library's tile for m, never split (kernel_terms.k_tile_scale)
SMOOTH_K_TILE = "calibrated + smooth max + K loop growing with the tile"
SMOOTH_K_TILE_RAMP = SMOOTH_K_TILE + " + ramp"
SMOOTH_K_TILE_RAMP_QUANT = SMOOTH_K_TILE_RAMP + " + quantize kernel"
#: the cost of a byte of C written, on the better family's last form (kernel_terms)
WRITE = " + write cost"


def held_out(device: Device, data: Measurements, tiles: Sequence[tuple[int, int]]
             = TILE_CANDIDATES) -> list[HeldOut]:
    """Pure roofline, fitted floor + efficiencies (hard max), the same with a smooth overlap,
    with a smooth overlap and the K loop's latency (+ the split-K floor (+ the compute
    ramp (+ the quantize kernel, where the data states a pass))), with a smooth overlap and a
    K loop that grows with the tile and is never split (+ the compute ramp (+ the quantize
    kernel)), the last form of the family that fits the fit half better + the write cost,
    and with waves for each tile shape, each scored on the rows it was not fitted to."""
    train, test = split_halves(device, data)
    fit_rows, test_rows = data.subset(train), data.subset(test)
    pure = replace(PURE, quantize_bytes=data.quantize_bytes)
    out = [_score("pure roofline", PURE, device, test_rows, fit_rows)]
    if pure != PURE:
        out.append(_score("roofline + quantize pass", pure, device, test_rows, fit_rows))
    out.append(_score("calibrated", fit(device, fit_rows), device, test_rows, fit_rows))
    out.append(_score("calibrated + smooth max", fit(device, fit_rows, overlap=True), device,
                      test_rows, fit_rows))
    out.append(_score(SMOOTH_K_LOOP, fit(device, fit_rows, overlap=True, k_loop=True), device,
                      test_rows, fit_rows))
    families = []  # (family, its ramp fit, its last form's score)
    for names, family in (((SMOOTH_K_SPLIT, SMOOTH_K_SPLIT_RAMP, SMOOTH_K_SPLIT_RAMP_QUANT),
                           {"split_k": True}),
                          ((SMOOTH_K_TILE, SMOOTH_K_TILE_RAMP, SMOOTH_K_TILE_RAMP_QUANT),
                           {"k_tile_growth": True})):
        # one kernel family: its K loop form, + the compute ramp (+ the quantize kernel), each
        # fit starting from the one before
        first = fit(device, fit_rows, overlap=True, k_loop=True, **family)
        ramp = fit(device, fit_rows, overlap=True, k_loop=True, ramp=True, base=first, **family)
        out += [_score(names[0], first, device, test_rows, fit_rows),
                _score(names[1], ramp, device, test_rows, fit_rows)]
        if data.quantize_bytes:
            out.append(_score(names[2], fit(device, fit_rows, overlap=True, k_loop=True,
                                            ramp=True, quantize_kernel=True, base=ramp,
                                            **family), device, test_rows, fit_rows))
        families.append((family, ramp, out[-1]))
    # the write cost, on the family whose last form fits the fit half better (chosen before
    # the step: after it, a family's extra freedom can win on rows it then misses)
    family, ramp, last = min(families, key=lambda f: f[2].train_median_abs_error)
    write = fit(device, fit_rows, overlap=True, k_loop=True, ramp=True, write=True, base=ramp,
                **family)
    if data.quantize_bytes:
        write = fit(device, fit_rows, overlap=True, k_loop=True, ramp=True, write=True,
                    quantize_kernel=True, base=write, **family)
    out.append(_score(last.model + WRITE, write, device, test_rows, fit_rows))
    for tm, tn in dict.fromkeys(tiles):
        p = fit(device, fit_rows, waves=True, tile_m=tm, tile_n=tn)
        out.append(_score(f"calibrated + waves ({tm}x{tn} tiles)", p, device, test_rows,
                          fit_rows))
    return out


def _score(model: str, params: Params, device: Device, rows: Measurements,
           train: Measurements) -> HeldOut:
    med, p90 = stats(relative_error(predict(device, params, rows), rows.measured))
    t_med, t_p90 = stats(relative_error(predict(device, params, train), train.measured))
    return HeldOut(model, params, med, p90, len(rows), t_med, t_p90)


def choose(device: Device, data: Measurements, tiles: Sequence[tuple[int, int]]
           = TILE_CANDIDATES) -> tuple[Params, list[HeldOut]]:
    """The final fit on every row, in the form (hard max, smooth max, smooth max + K loop (+
    split-K floor (+ compute ramp (+ quantize kernel))), smooth max + K loop growing with the
    tile (+ compute ramp (+ quantize kernel)), either family's last form + the write cost, or
    waves with the tile shape that did best)
    that predicted the held-out half best (lowest median |error|; the simpler form wins
    ties)."""
    if len(data) < MIN_HELD_OUT_ROWS:
        return fit(device, data), []
    scores = held_out(device, data, tiles)
    best = min((s for s in scores if s.model.startswith("calibrated")),
               key=lambda s: s.median_abs_error)
    p = best.params
    return fit(device, data, waves=p.waves, tile_m=p.tile_m, tile_n=p.tile_n,
               overlap=p.overlap >= refined.MIN_OVERLAP_EXPONENT, k_loop=p.k_loop,
               split_k=p.split_min_k > 0, ramp=p.ramp_flops > 0,
               quantize_kernel=p.quantize_kernel, k_tile_growth=p.k_tile_growth,
               write=p.write), scores
