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
It was chosen over a Hill-type ramp of the compute efficiency (e_max·F^h / (F^h + F_half^h)),
separate floors per regime and a latency per unit of k, on the held-out halves of the
published NVIDIA tables (docs/measuring.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from sheetgen.calibrate.data import Measurements
from sheetgen.model import factories as rf
from sheetgen.model import refined
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

    @property
    def form(self) -> str:
        """The model's extra degree of freedom, in words."""
        if self.waves:
            return f"waves ({self.tile_m}x{self.tile_n} tiles)"
        if self.overlap >= refined.MIN_OVERLAP_EXPONENT:
            return f"smooth max (p = {self.overlap:.3g})"
        return "hard max"


PURE = Params()  # the seed's pure roofline: spec figures, no floor, no quantization


def predict(device: Device, params: Params, data: Measurements) -> np.ndarray:
    """Predicted seconds per row: the refined time of b matmuls of m×k×n."""
    m, k, n, b = data.m, data.k, data.n, data.b
    flops = b * matmul.FLOPS.reference(m=m, k=k, n=n)
    a, w, o = device.operand_bytes or (device.dtype_bytes,) * 3
    moved = b * matmul.BYTES.reference(m=m, k=k, n=n, **dict(zip(
        (rf.ACT_BYTES, rf.WEIGHT_BYTES, rf.OUT_BYTES), (a, w, o), strict=True)))
    compute = matmul.COMPUTE_TIME.reference(
        flops=flops, attainable_flops=device.peak * params.compute_efficiency)
    memory = matmul.MEMORY_TIME.reference(
        bytes_moved=moved, attainable_bw=device.bandwidth * params.memory_efficiency)
    if params.waves and refined.sms_known(device.sm_count):  # no SM count: waves off
        tiles = b * refined.tiles(m, n, params.tile_m, params.tile_n)
        waves = refined.waves(tiles, device.sm_count)
        compute = refined.quantized_compute_time(
            compute, refined.wave_efficiency(tiles, waves, device.sm_count))
    return np.asarray(refined.refined_time(params.launch_overhead, compute, memory,
                                           params.overlap), dtype=float)


def relative_error(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """(predicted − measured) / measured: +0.5 predicts 50 % too slow."""
    return (predicted - measured) / measured


def faster_than_roof(device: Device, data: Measurements) -> np.ndarray:
    """Rows measured faster than the pure roofline allows, beyond ROOF_TOLERANCE."""
    return data.measured < (1.0 - ROOF_TOLERANCE) * predict(device, PURE, data)


def fit(device: Device, data: Measurements, *, waves: bool = False, tile_m: int = 128,
        tile_n: int = 128, overlap: bool = False) -> Params:
    """The robust least-squares fit of efficiencies and floor, and of the overlap exponent
    when `overlap` (flagged rows excluded)."""
    keep = ~faster_than_roof(device, data)
    if not keep.any():
        return replace(PURE, waves=waves, tile_m=tile_m, tile_n=tile_n)
    rows = data.subset(keep)
    scale = float(np.min(rows.measured))  # the floor in units of the fastest time

    def params(x: np.ndarray) -> Params:
        return Params(float(x[0]), float(x[1]), float(x[2]) * scale, waves, tile_m, tile_n,
                      float(x[3]) if overlap else 0.0)

    def residuals(x: np.ndarray) -> np.ndarray:
        return relative_error(predict(device, params(x), rows), rows.measured)

    lower = [MIN_EFFICIENCY, MIN_EFFICIENCY, 0.0]
    upper = [1.0, 1.0, np.inf]
    starts = [[0.8, 0.8, 0.5], [0.5, 0.5, 0.9], [0.95, 0.3, 0.1], [0.3, 0.95, 0.1]]
    if overlap:
        lower.append(refined.MIN_OVERLAP_EXPONENT)
        upper.append(MAX_OVERLAP_EXPONENT)
        starts = [[*x0, p] for x0 in starts for p in (1.5, 4.0)]
    best = None
    for x0 in starts:
        result = least_squares(residuals, x0=x0, bounds=(lower, upper), loss="soft_l1",
                               f_scale=ROBUST_SCALE, method="trf")
        if best is None or result.cost < best.cost:
            best = result
    assert best is not None
    return params(best.x)


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
    """One model fitted on the fit half and scored on the test half."""

    model: str
    params: Params
    median_abs_error: float
    p90_abs_error: float
    rows: int


def held_out(device: Device, data: Measurements, tiles: Sequence[tuple[int, int]]
             = TILE_CANDIDATES) -> list[HeldOut]:
    """Pure roofline, fitted floor + efficiencies (hard max), the same with a smooth overlap,
    and with waves for each tile shape, each scored on the rows it was not fitted to."""
    train, test = split_halves(device, data)
    fit_rows, test_rows = data.subset(train), data.subset(test)
    out = [_score("pure roofline", PURE, device, test_rows)]
    out.append(_score("calibrated", fit(device, fit_rows), device, test_rows))
    out.append(_score("calibrated + smooth max", fit(device, fit_rows, overlap=True), device,
                      test_rows))
    for tm, tn in dict.fromkeys(tiles):
        p = fit(device, fit_rows, waves=True, tile_m=tm, tile_n=tn)
        out.append(_score(f"calibrated + waves ({tm}x{tn} tiles)", p, device, test_rows))
    return out


def _score(model: str, params: Params, device: Device, rows: Measurements) -> HeldOut:
    med, p90 = stats(relative_error(predict(device, params, rows), rows.measured))
    return HeldOut(model, params, med, p90, len(rows))


def choose(device: Device, data: Measurements, tiles: Sequence[tuple[int, int]]
           = TILE_CANDIDATES) -> tuple[Params, list[HeldOut]]:
    """The final fit on every row, in the form (hard max, smooth max, or waves with the tile
    shape that did best) that predicted the held-out half best (lowest median |error|; the
    plain form wins ties)."""
    if len(data) < MIN_HELD_OUT_ROWS:
        return fit(device, data), []
    scores = held_out(device, data, tiles)
    best = min(scores[1:], key=lambda s: s.median_abs_error)
    p = best.params
    return fit(device, data, waves=p.waves, tile_m=p.tile_m, tile_n=p.tile_n,
               overlap=p.overlap >= refined.MIN_OVERLAP_EXPONENT), scores
