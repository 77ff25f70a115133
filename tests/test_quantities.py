"""Each quantity's reference against hand-computed values, and its formula's shape."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sheetgen
from sheetgen.sheets import matmul
from sheetgen.sheets.matmul import BAD_ROW, row_status

A100_PEAK, A100_BW = 312e12, 1.555e12


def test_hand_computed_square_4096_on_a100_bf16():
    df = sheetgen.analyze([(4096, 4096, 4096)])
    row = df.iloc[0]
    assert row.flops == 2 * 4096**3 == 137_438_953_472
    assert row.bytes_moved == 2 * 3 * 4096**2 == 100_663_296
    assert row.intensity == pytest.approx(4096 / 3)  # 2n^3 / (2 * 3n^2) = n/3
    assert row.regime == "compute-bound"
    assert row.compute_time == pytest.approx(137_438_953_472 / A100_PEAK, rel=1e-12)
    assert row.memory_time == pytest.approx(100_663_296 / A100_BW, rel=1e-12)
    assert row.predicted_time == row.compute_time
    assert row.attained_flops == pytest.approx(A100_PEAK)
    assert row.peak_fraction == pytest.approx(1.0)
    assert row.shape_label == "4096x4096x4096"


def test_hand_computed_gemv_is_memory_bound():
    row = sheetgen.analyze([(1, 8192, 8192)]).iloc[0]
    flops, nbytes = 2 * 8192 * 8192, 2 * (8192 + 8192 * 8192 + 8192)
    assert row.intensity == pytest.approx(flops / nbytes)
    assert row.intensity < 1.0
    assert row.regime == "memory-bound"
    assert row.predicted_time == pytest.approx(nbytes / A100_BW)
    assert row.peak_fraction == pytest.approx((flops / (nbytes / A100_BW)) / A100_PEAK)


@pytest.mark.parametrize(("dtype", "nbytes"), [("fp32", 4), ("tf32", 4), ("fp16", 2),
                                               ("int8", 1)])
def test_dtype_bytes_scale_traffic(dtype, nbytes):
    row = sheetgen.analyze([(10, 20, 30)], dtype=dtype).iloc[0]
    assert row.bytes_moved == nbytes * (10 * 20 + 20 * 30 + 10 * 30)


def test_ridge_is_peak_over_bandwidth():
    p = sheetgen.plan(gpu="H100 SXM", dtype="bf16", shapes=[(1, 1, 1)], spare_rows=0)
    assert p.model.scalars["ridge"] == pytest.approx(989.4e12 / 3.35e12)
    assert p.model.scalars["dtype_bytes_sel"] == 2
    assert p.model.scalars["vram_bytes"] == 80e9


def test_regime_flips_exactly_at_the_ridge():
    # square n: intensity n/3 (bf16), ridge 312/1.555 = 200.6 -> crossover between 601 and 602
    df = sheetgen.analyze([(601, 601, 601), (602, 602, 602)])
    assert list(df.regime) == ["memory-bound", "compute-bound"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(*(st.integers(1, 2**20),) * 3), min_size=1, max_size=8),
       st.sampled_from(["fp32", "bf16", "int8"]))
def test_reference_equals_direct_arithmetic(shapes, dtype):
    gpu = sheetgen.load_presets().get("A100 40GB SXM")
    b = {"fp32": 4, "bf16": 2, "int8": 1}[dtype]
    peak, bw = gpu.peak(dtype), gpu.hbm_bandwidth
    df = sheetgen.analyze(shapes, dtype=dtype)
    for (m, k, n), row in zip(shapes, df.itertuples(), strict=True):
        flops = 2 * m * k * n  # exact integers
        nbytes = b * (m * k + k * n + m * n)
        # spreadsheets hold doubles: exact below 2**53, within one rounding above it
        assert math.isclose(row.flops, flops, rel_tol=2**-52)
        assert row.bytes_moved == nbytes
        assert math.isclose(row.intensity, flops / nbytes, rel_tol=1e-12)
        t = max(flops / peak, nbytes / bw)
        assert math.isclose(row.predicted_time, t, rel_tol=1e-12)
        assert row.regime == ("compute-bound" if flops / nbytes >= peak / bw else "memory-bound")


@pytest.mark.parametrize(("m", "k", "n", "status"), [
    (1, 2, 3, "ok"), (4096.0, 1, 1, "ok"), (None, None, None, ""), (5, None, 3, ""),
    (0, 1, 1, BAD_ROW), (-3, 1, 1, BAD_ROW), (1.5, 1, 1, BAD_ROW), ("abc", 1, 1, BAD_ROW),
    ("4096", 1, 1, BAD_ROW), (True, 1, 1, BAD_ROW),
])
def test_row_status_matches_the_sheet_guard(m, k, n, status):
    assert list(row_status([m], [k], [n])) == [status]


def test_every_derived_column_is_declared_once():
    names = [q.name for q in matmul.TABLE.columns]
    assert len(names) == len(set(names))
    # the regime column comes before any time column
    assert names.index("regime") < min(names.index(t) for t in
                                       ("compute_time", "memory_time", "predicted_time"))


def test_efficiency_lowers_the_roof():
    p = sheetgen.plan(shapes=[(4096, 4096, 4096)], spare_rows=0)
    assert p.model.scalars["attainable_flops"] == p.model.scalars["peak_flops"]
    assert np.isclose(p.model.scalars["attainable_ridge"], p.model.scalars["ridge"])
