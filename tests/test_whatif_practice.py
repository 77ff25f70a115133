"""What-if scaling and the crossover formula (against brute force); the Practice sheet's
feedback and reveal switch; LibreOffice agreement for both."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from helpers import scalars
from hypothesis import given, settings
from hypothesis import strategies as st
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from xlsx_edit import cell_of, edit_cells

import sheetgen
from sheetgen.assemble import BuildConfig, input_values, plan_build, sheet_specs
from sheetgen.inputs.shapes import Shape
from sheetgen.layout.planner import plan_workbook
from sheetgen.sheets.practice import random_shapes
from sheetgen.writers.xlsx import write_xlsx


def compute_bound(m: int, k: int, n: int, abytes: tuple[float, float, float],
                  ridge: float) -> bool:
    a, w, o = abytes
    return 2 * m * k * n / (a * m * k + w * k * n + o * m * n) >= ridge


def first_compute_bound(k: int, n: int, abytes: tuple[float, float, float], ridge: float,
                        limit: int) -> int | None:
    """The least m in 1..limit for which compute_bound holds, by trying every m: the same
    arithmetic in the same order over an array of m (exact in float64: 2·m·k·n < 2^53)."""
    a, w, o = abytes
    m = np.arange(1, limit + 1, dtype=np.int64)
    hit = 2 * m * k * n / (a * m * k + w * k * n + o * m * n) >= ridge
    first = int(np.argmax(hit))
    assert compute_bound(first + 1, k, n, abytes, ridge) == bool(hit[first])  # spot check
    return first + 1 if hit[first] else None


#: the sheets the What-if figures are computed from: its inputs, the GPU table, itself
WHATIF_SHEETS = ("Inputs", "GPU Specs", "What-if")


def whatif_scalars(**options) -> dict:
    """helpers.scalars for the What-if figures, with only WHATIF_SHEETS planned: the same
    reference model on the same inputs (test_whatif_alone_plans_as_in_the_whole_workbook
    holds the two equal) at less than half the CPU, for the 60 examples below."""
    cfg = BuildConfig(shapes=[Shape(1, 1, 1)], spare_rows=0, **options).resolved()
    specs = [s for s in sheet_specs(cfg.layout()) if s.name in WHATIF_SHEETS]
    return plan_workbook(specs, input_values(cfg)).model.scalars


@pytest.mark.parametrize("options", [{}, {"whatif_shape": (1, 300, 700), "dtype": "int8",
                                          "weight_dtype": "int4"},
                                     {"whatif_shape": (1, 20_000, 3), "dtype": "fp32",
                                      "output_dtype": "fp32"}])
def test_whatif_alone_plans_as_in_the_whole_workbook(options):
    alone, whole = whatif_scalars(**options), scalars(**options)
    keys = ("act_elem_bytes", "weight_elem_bytes", "out_elem_bytes", "attainable_ridge",
            "cross_m", "cross_m_whole", "cross_n")
    assert {k: alone[k] for k in keys} == {k: whole[k] for k in keys}
    # and every other figure both plans have (arrays too, NaN equal to NaN)
    np.testing.assert_equal({k: v for k, v in alone.items() if k in whole},
                            {k: whole[k] for k in alone if k in whole})


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20_000), st.integers(1, 20_000), st.sampled_from(["bf16", "fp32", "int8"]),
       st.sampled_from([{}, {"weight_dtype": "int4"}, {"output_dtype": "fp32"},
                        {"activation_dtype": "fp8", "weight_dtype": "nvfp4"}]))
def test_crossover_matches_brute_force(k, n, dtype, storage):
    s = whatif_scalars(whatif_shape=(1, k, n), dtype=dtype, **storage)
    ab = (s["act_elem_bytes"], s["weight_elem_bytes"], s["out_elem_bytes"])
    ridge = s["attainable_ridge"]
    found = first_compute_bound(k, n, ab, ridge, 200_000)
    if s["cross_m"] == "never":
        assert found is None
        # and the limit for m -> infinity, 2kn / (a·k + o·n), really is below the ridge
        assert 2 * k * n / (ab[0] * k + ab[2] * n) <= ridge
    elif found is None:
        assert s["cross_m_whole"] > 200_000  # beyond the search, still finite
    else:
        assert s["cross_m_whole"] == found  # the formula's ceiling is the brute-force answer


def test_crossover_for_n_is_symmetric():
    s = scalars(whatif_shape=(512, 4096, 7))
    t = scalars(whatif_shape=(7, 4096, 512))
    assert s["cross_n"] == pytest.approx(t["cross_m"])


def test_scaling_moves_regimes_in_opposite_directions():
    p = sheetgen.plan(shapes=[(1, 1, 1)], spare_rows=0, whatif_shape=(128, 4096, 4096))
    t = p.table("whatif")
    ratio = dict(zip(t.column("scenario").values, t.column("wi_time_ratio").values,
                     strict=True))
    # memory-bound base: doubling m (the small side) barely moves the time ...
    assert ratio["m doubled"] < 1.25
    # ... while a compute-bound base doubles with it
    big = sheetgen.plan(shapes=[(1, 1, 1)], spare_rows=0, whatif_shape=(4096, 4096, 4096))
    tb = big.table("whatif")
    ratio_b = dict(zip(tb.column("scenario").values, tb.column("wi_time_ratio").values,
                       strict=True))
    assert ratio_b["m doubled"] == pytest.approx(2.0)
    assert ratio_b["all doubled"] == pytest.approx(8.0)


def test_practice_shapes_are_seeded():
    assert random_shapes(5, 1) == random_shapes(5, 1)
    assert random_shapes(5, 1) != random_shapes(5, 2)
    assert all(m >= 1 and k >= 256 and n >= 256 for m, k, n in random_shapes(50))


def _practice_plan(guesses, reveal):
    cfg = BuildConfig(shapes=[Shape(8, 8, 8)], spare_rows=0, practice=4).resolved()
    values = input_values(cfg)
    values["reveal"] = reveal
    for key, column in zip(("guess_intensity", "guess_regime", "guess_time"), zip(*guesses,
                                                                                strict=True),
                           strict=True):
        values[key] = list(column)
    return plan_workbook(sheet_specs(cfg.layout()), values)


def test_practice_feedback_and_reveal():
    truth = _practice_plan([(None, None, None)] * 4, 0).table("practice")
    intensity = truth.column("p_intensity").values
    regime = truth.column("p_regime").values
    time = truth.column("p_time").values / 1e6  # the cells hold µs; guesses go in as SI
    guesses = [
        (intensity[0] * 1.05, regime[0], time[0] * 0.95),      # all within 10 %
        (intensity[1] * 1.5, "compute-bound" if regime[1] == "memory-bound" else
         "memory-bound", time[1] * 0.5),                        # off
        ("lots", None, None),                                   # not a number
        (None, None, None),                                     # not answered
    ]
    hidden = _practice_plan(guesses, 0).table("practice")
    fb = [list(hidden.column(c).values) for c in ("fb_intensity", "fb_regime", "fb_time")]
    assert [f[0] for f in fb] == ["correct", "correct", "correct"]
    assert [f[1] for f in fb] == ["too high by 50%", "wrong", "too low by 50%"]
    assert fb[0][2] == "enter a number" and [f[3] for f in fb] == ["", "", ""]
    assert set(hidden.column("ans_intensity").values) == {""}
    shown = _practice_plan(guesses, 1).table("practice")
    assert list(shown.column("ans_regime").values) == list(regime)


@functools.cache
def _practice_build():
    """The Practice workbook's plan, made once (the job and its test read it)."""
    return plan_build(BuildConfig(shapes=[Shape(8, 8, 8)], spare_rows=0, practice=6,
                                  whatif_shape=(300, 5000, 700)))


@libreoffice_job("whatif-practice", to="values")
def _practice_workbooks(tmp: Path) -> dict[str, Path]:
    plan = _practice_build()
    src = write_xlsx(plan, tmp / "practice.xlsx")
    # a user answers two rows and flips the reveal switch
    t = plan.table("practice")
    r = t.first_row + 1  # 1-based row of the first shape
    edited = edit_cells(src, tmp / "answered.xlsx", {
        ("Practice", f"D{r}"): t.column("p_intensity").values[0] * 1.3,
        ("Practice", f"E{r}"): t.column("p_regime").values[0],
        ("Practice", f"D{r + 1}"): "abc",
        cell_of(plan.defined_names["REVEAL"]): 1})
    return {"built": src, "answered": edited}


@needs_libreoffice
def test_libreoffice_agrees_on_whatif_and_practice(libreoffice):
    plan = _practice_build()
    t = plan.table("practice")
    true_i = t.column("p_intensity").values[0]
    out = libreoffice.outputs("whatif-practice")
    assert mismatches(plan, read_values(out["built"])) == []
    cfg = BuildConfig(shapes=[Shape(8, 8, 8)], spare_rows=0, practice=6,
                      whatif_shape=(300, 5000, 700)).resolved()
    values = input_values(cfg)
    values["reveal"] = 1
    values["guess_intensity"] = [true_i * 1.3, "abc", None, None, None, None]
    values["guess_regime"] = [t.column("p_regime").values[0]] + [None] * 5
    expected = plan_workbook(sheet_specs(cfg.layout()), values)
    got = read_values(out["answered"])
    assert mismatches(expected, got) == []
    assert got["Practice"][(t.first_row, 6)] == "too high by 30%"
    assert got["Practice"][(t.first_row, 7)] == "correct"


def test_crossover_denominator_reads_as_digits_with_the_hand_figure():
    # base k = n = 4096, bf16 (b = 2) on the A100: R = 312e12 / 1.555e12 = 200.643 FLOP/B,
    # so 2kn − bR(k+n) = 33,554,432 − 2·200.643·8192 = 30,267,096 (not 3.027E+07)
    from sheetgen.api import plan

    cell = next(c for c in plan(spare_rows=0).sheet("What-if").cells if c.name == "cross_m_den")
    assert cell.fmt == "int"
    assert cell.value == pytest.approx(2 * 4096 * 4096 - 2 * (312e12 / 1.555e12) * 8192,
                                       rel=1e-12)
    assert round(cell.value) == 30_267_096
