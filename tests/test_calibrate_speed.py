"""What makes the fit fast without changing it: the rows' parameter-independent terms computed
once per fit (values by hand), the guard against using them with other switches, the ramp fit
started from a base the caller already has, and one BLAS thread while fitting (set, restored,
and the same fitted values as with the library's own thread count)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
import pytest

from sheetgen.calibrate import fit, threads
from sheetgen.calibrate.data import Measurements, read_measurements

ROOT = Path(__file__).resolve().parent.parent
XLA = ROOT / "benchmarks" / "data" / "xla_h100_sm90.csv"
DEVICE = fit.Device("H100 SXM", 989.4e12, 3.35e12, 2, 132)


def _data(shapes: list[tuple[int, int, int]], seconds: np.ndarray | None = None,
          quantize: float = 0.0) -> Measurements:
    m, k, n = (np.asarray(x, dtype=float) for x in zip(*shapes, strict=True))
    t = seconds if seconds is not None else np.ones(len(shapes))
    meta = {"activation_quantize_bytes_per_element": str(quantize)} if quantize else {}
    return Measurements("synthetic", "time_s", "bf16", m, k, n, np.ones(len(shapes)), t,
                        list(range(2, len(shapes) + 2)), meta, "cuda")


def test_fixed_terms_by_hand():
    """4096³ bf16: 2·4096³ FLOPs, 2·3·4096² B, 32·32 = 1,024 tiles of 128×128 in 8 waves of
    132 SMs: wave efficiency 1024 / 1056, not split-K (tiles ≥ SMs); 1×4096×32: one tile on
    132 SMs with k = 4096 ≥ 2048 runs split-K, and a 5 B/element quantize pass moves 5·4096 B.
    """
    data = _data([(4096, 4096, 4096), (1, 4096, 32)])
    params = fit.Params(waves=True, split_min_k=2048, quantize_bytes=5.0)
    terms = fit.fixed_terms(DEVICE, params, data)
    assert terms.switches == (True, 128, 128, 2048, 5.0, False)
    assert list(terms.k_tile) == [1.0, 1.0]  # the K loop's tile does not grow with m
    # growing, m = 4096 runs the largest tile (4 × 64×64), m = 1 the smallest
    grown = fit.fixed_terms(DEVICE, fit.Params(k_loop=True, k_tile_growth=True), data)
    assert grown.switches[-1] is True and list(grown.k_tile) == [4.0, 1.0]
    # the library's tiles: 4096² in 128×128 is 1,024 tiles, 8 waves of 132; 1×32 one tile
    assert list(grown.library_waves) == [8.0, 1.0] and list(terms.library_waves) == [1.0, 1.0]
    assert list(terms.flops) == [2 * 4096**3, 2 * 4096 * 32]
    # the ramp off (F_half 0) is a factor of exactly 1 on every row
    assert list(fit.kernel_terms.compute_ramp(terms.flops, 0.0, 1.0)) == [1.0, 1.0]
    assert list(terms.moved) == [2 * 3 * 4096**2, 2 * (4096 + 4096 * 32 + 32)]
    assert terms.wave_eff is not None
    assert terms.wave_eff[0] == pytest.approx(1024 / 1056, rel=1e-15)
    assert list(terms.split) == [0.0, 1.0]
    assert list(terms.quantize_moved) == [5 * 4096**2, 5 * 4096]
    off = fit.fixed_terms(DEVICE, fit.PURE, data)
    assert off.wave_eff is None and list(off.split) == [0.0, 0.0]
    assert list(off.quantize_moved) == [0.0, 0.0]
    # no SM count: waves stay off and nothing runs split-K, whatever the switches say
    blind = fit.fixed_terms(fit.Device("x", 1e15, 1e12, 2, None), params, data)
    assert blind.switches[0] is False and blind.wave_eff is None
    assert list(blind.split) == [0.0, 0.0]


def test_timed_refuses_terms_fixed_for_other_switches():
    """Terms fixed with waves off cannot price a model with waves on (or other tiles, split-K
    switch or quantize bytes): the wave efficiency would silently be missing."""
    data = _data([(4096, 4096, 4096)])
    terms = fit.fixed_terms(DEVICE, fit.PURE, data)
    for other in (fit.Params(waves=True), fit.Params(tile_m=256), fit.Params(split_min_k=2048),
                  fit.Params(quantize_bytes=5.0)):
        with pytest.raises(ValueError, match="terms fixed for"):
            fit.timed(DEVICE, other, terms)
    # the efficiencies, floor, overlap, K-loop latency, split floor and ramp are free
    free = fit.Params(0.8, 0.9, 5e-6, overlap=2.0, k_latency=1e-9, split_floor=1e-6,
                      ramp_flops=1e9, ramp_exponent=2.0)
    # 2·4096³ / (989.4e12 · 0.8 · ramp) with ramp = 1 / (1 + (1e9 / 2·4096³)²), the p = 2 norm
    # with the memory time 2·3·4096² / (3.35e12 · 0.9), + 5 µs + k · 1e-9
    flops = 2 * 4096**3
    compute = flops / (989.4e12 * 0.8 / (1 + (1e9 / flops) ** 2))
    memory = 2 * 3 * 4096**2 / (3.35e12 * 0.9)
    expect = 5e-6 + (compute**2 + memory**2) ** 0.5 + 4096 * 1e-9
    assert fit.timed(DEVICE, free, terms)[0] == pytest.approx(expect, rel=1e-12)


def test_the_ramp_fit_from_a_given_base_is_the_one_that_fits_its_own():
    """held_out hands the ramp fit the same form's fit without the ramp, which it already made;
    the result is the one the ramp fit gets by fitting that base itself, to the last bit."""
    shapes = [(m, k, n) for m in (1, 64, 1024, 8192) for k in (512, 4096) for n in (256, 8192)]
    data = _data(shapes)
    rng = np.random.default_rng(3)
    true = fit.Params(0.75, 0.85, 4e-6, ramp_flops=5e8, ramp_exponent=1.2)
    data.measured = fit.predict(DEVICE, true, data) * np.exp(rng.normal(0, 0.03, len(shapes)))
    base = fit.fit(DEVICE, data)
    ramp = fit.fit(DEVICE, data, ramp=True, base=base)
    assert ramp == fit.fit(DEVICE, data, ramp=True)
    assert ramp.ramp_flops > 0 and ramp.ramp_exponent != base.ramp_exponent


def test_one_blas_thread_sets_and_restores_the_count():
    import scipy.optimize  # noqa: F401  (loads scipy's BLAS, as fitting does)
    from threadpoolctl import threadpool_info

    def counts() -> list[int]:
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    before = counts()
    assert before  # numpy's and scipy's BLAS are loaded
    with threads.one_blas_thread():
        assert counts() == [1] * len(before)
    assert counts() == before


def test_one_blas_thread_changes_no_fitted_value(monkeypatch: pytest.MonkeyPatch):
    """The XLA H100 bf16 table's smooth max + K loop + split-K fit with OpenBLAS's own thread
    count and with one thread: the same parameters, bit for bit."""
    data = read_measurements(XLA, dtype="bf16")
    form = dict(overlap=True, k_loop=True, split_k=True)
    one = fit.fit(DEVICE, data, **form)
    monkeypatch.setattr(fit, "one_blas_thread", contextlib.nullcontext)
    assert fit.fit(DEVICE, data, **form) == one


def test_one_call_evaluates_the_jacobians_points_together():
    """OneCall answers scipy's map with one call of the residuals on the points stacked as
    rows, and returns one row per point, as the map would."""
    calls: list[tuple[int, ...]] = []

    def residuals(x: np.ndarray) -> np.ndarray:
        calls.append(x.shape)
        return np.atleast_2d(x) * 2.0

    points = [np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])]
    out = fit.OneCall(residuals)(lambda x: x, iter(points))
    assert calls == [(3, 2)]
    assert [list(r) for r in out] == [[2.0, 4.0], [6.0, 8.0], [10.0, 12.0]]


def test_one_call_changes_no_fitted_value(monkeypatch: pytest.MonkeyPatch):
    """The Jacobian's points in one call (the parameters as columns broadcast over the rows,
    F_half's power taken per point as the single call takes it) fit XLA's H100 table to the
    same bits as scipy's own one-point-at-a-time map, the ramp and every term included."""
    table = read_measurements(XLA, dtype="bf16")
    data = table.subset(fit.split_halves(DEVICE, table)[0])  # bench_accuracy's fit half
    forms = dict(overlap=True, k_loop=True, split_k=True, ramp=True)
    together = fit.fit(DEVICE, data, **forms)
    monkeypatch.setattr(fit, "OneCall", lambda residuals: map)
    assert fit.fit(DEVICE, data, **forms) == together
    assert together.ramp_flops > 0 and together.k_loop
