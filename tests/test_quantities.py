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


@pytest.mark.parametrize(("dtype", "a", "w", "o"), [
    ("fp32", 4, 4, 4), ("tf32", 4, 4, 4), ("fp16", 2, 2, 2),
    ("int8", 1, 1, 2),  # W8A8: the dequantizing epilogue writes bf16
])
def test_dtype_bytes_scale_traffic(dtype, a, w, o):
    row = sheetgen.analyze([(10, 20, 30)], dtype=dtype).iloc[0]
    assert row.bytes_moved == a * 10 * 20 + w * 20 * 30 + o * 10 * 30


def test_w4a16_gemv_hand_figure():
    # int4 weights, bf16 activations and outputs: 2·8192 + 0.5·8192² + 2·8192
    row = sheetgen.analyze([(1, 8192, 8192)], weight_dtype="int4").iloc[0]
    assert row.bytes_moved == 33_587_200
    assert row.intensity == pytest.approx(2 * 8192**2 / 33_587_200)  # 3.996 FLOP/B
    assert row.memory_time == pytest.approx(33_587_200 / A100_BW)
    assert row.regime == "memory-bound"


def test_fp8_compute_writes_bf16_by_default():
    # fp8 A and B, bf16 C: 1·4096² + 1·4096² + 2·4096²
    auto = sheetgen.analyze([(4096, 4096, 4096)], gpu="H100 SXM", dtype="fp8").iloc[0]
    assert auto.bytes_moved == 67_108_864
    assert auto.intensity == 2 * 4096**3 / 67_108_864 == 2048.0
    raw = sheetgen.analyze([(4096, 4096, 4096)], gpu="H100 SXM", dtype="fp8",
                           output_dtype="fp8").iloc[0]
    assert raw.bytes_moved == 3 * 4096**2


def test_operand_choices_each_set_their_own_term():
    m, k, n = 3, 5, 7
    row = sheetgen.analyze([(m, k, n)], activation_dtype="fp32", weight_dtype="nvfp4",
                           output_dtype="int32").iloc[0]
    assert row.bytes_moved == 4 * m * k + 0.5625 * k * n + 4 * m * n == 163.6875
    p = sheetgen.plan(shapes=[(1, 1, 1)], spare_rows=0, dtype="int8", output_dtype="int32",
                      weight_dtype="fp4")
    s = p.model.scalars
    assert (s["act_storage"], s["weight_storage"], s["out_storage"]) == ("int8", "fp4", "int32")
    assert (s["act_elem_bytes"], s["weight_elem_bytes"], s["out_elem_bytes"]) == (1, 0.5, 4)


def test_weight_only_int4_moves_the_ridge_crossing():
    # Decode (m small) is memory-bound; with int4 weights the weight term shrinks 4x, so the
    # What-if crossover m* (intensity = ridge) falls. Hand: m* = R·w·k·n / (2kn − R(a·k + o·n))
    k = n = 8192
    ridge = A100_PEAK / A100_BW
    # R = 200.64: bf16 weights 200.64·2·8192²/(2·8192² − 200.64·4·8192) = 210.98 rows;
    # int4 weights a quarter of that, 52.74 (the weight term is the numerator)
    for w, opts, hand in ((2, {}, 210.98), (0.5, {"weight_dtype": "int4"}, 52.74)):
        p = sheetgen.plan(shapes=[(1, 1, 1)], spare_rows=0, whatif_shape=(1, k, n), **opts)
        expect = ridge * w * k * n / (2 * k * n - ridge * (2 * k + 2 * n))
        assert expect == pytest.approx(hand, abs=0.005)
        assert p.model.scalars["cross_m"] == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("bad", ["int3", "", "tf32"])
def test_unknown_storage_dtype_is_one_error(bad):
    with pytest.raises(sheetgen.errors.InputError, match="weight_dtype"):
        sheetgen.analyze([(1, 1, 1)], weight_dtype=bad)


def test_ridge_is_peak_over_bandwidth():
    p = sheetgen.plan(gpu="H100 SXM", dtype="bf16", shapes=[(1, 1, 1)], spare_rows=0)
    assert p.model.scalars["ridge"] == pytest.approx(989.4e12 / 3.35e12)
    assert p.model.scalars["dtype_bytes_sel"] == 2
    assert p.model.scalars["card_bytes"] == 80 * 2**30  # H100's "80 GB" HBM3 is 80 GiB
    assert p.model.scalars["vram_bytes"] == 78 * 2**30  # less the 2 GiB reserve


def test_capacity_as_gb_is_the_interview_arithmetic():
    s = sheetgen.plan(shapes=[(1, 1, 1)], spare_rows=0, capacity_as="GB").model.scalars
    assert s["card_bytes"] == 42_949_672_960 and s["vram_bytes"] == 40e9  # no reserve
    s = sheetgen.plan(shapes=[(1, 1, 1)], spare_rows=0, memory_reserve=0.5e9).model.scalars
    assert s["vram_bytes"] == 42_949_672_960 - 0.5e9
    with pytest.raises(sheetgen.errors.InputError, match=r"capacity.as"):
        sheetgen.plan(shapes=[(1, 1, 1)], capacity_as="GiB/GB")
    with pytest.raises(sheetgen.errors.InputError, match=r"memory.reserve"):
        sheetgen.plan(shapes=[(1, 1, 1)], memory_reserve=-1)


def test_regime_flips_exactly_at_the_ridge():
    # square n: intensity n/3 (bf16), ridge 312/1.555 = 200.6 -> crossover between 601 and 602
    df = sheetgen.analyze([(601, 601, 601), (602, 602, 602)])
    assert list(df.regime) == ["memory-bound", "compute-bound"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(*(st.integers(1, 2**20),) * 3), min_size=1, max_size=8),
       st.sampled_from(["fp32", "bf16", "int8"]))
def test_reference_equals_direct_arithmetic(shapes, dtype):
    gpu = sheetgen.load_presets().get("A100 40GB SXM")
    a, w, o = {"fp32": (4, 4, 4), "bf16": (2, 2, 2), "int8": (1, 1, 2)}[dtype]
    peak, bw = gpu.peak(dtype), gpu.hbm_bandwidth
    df = sheetgen.analyze(shapes, dtype=dtype)
    for (m, k, n), row in zip(shapes, df.itertuples(), strict=True):
        flops = 2 * m * k * n  # exact integers
        nbytes = a * m * k + w * k * n + o * m * n
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


def test_composed_writes_the_inner_formula_inside_and_computes_it_first():
    """composed(outer, inner): one cell whose formula holds inner's in parentheses wherever
    outer names it, and whose reference computes inner from its own reference:
    (2·3)·(2·3) + 1 = 37. A range of inner has no cell to write inside: refused."""
    from sheetgen.model.vocabulary import Quantity, composed

    inner = Quantity("sq", "x doubled", "", "2*{x}", lambda x: 2 * x)
    outer = Quantity("out", "squared plus y", "", "{sq}*{sq}+{y}", lambda sq, y: sq * sq + y)
    one = composed(outer, inner)
    assert one.template == "(2*{x})*(2*{x})+{y}"
    assert one.dependencies() == {"x", "y"}
    assert one.reference(x=3, y=1) == 37
    assert (one.name, one.label) == ("out", "squared plus y")
    with pytest.raises(ValueError, match="range"):
        composed(Quantity("total", "sum", "", "SUM({sq[]})", lambda sq: sum(sq)), inner)
