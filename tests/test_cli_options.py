"""Efficiency options on build/show/plot/push, and `show` formatting at the extremes.

Expected figures are hand computations from the A100 40GB SXM datasheet (312 TFLOP/s bf16
dense, 1,555 GB/s HBM2).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import run

from sheetgen.cli import cli
from sheetgen.inputs.presets import builtin_presets
from sheetgen.verify.check import check_workbook

PEAK, BW = 312e12, 1555e9


def test_show_efficiencies_scale_the_times(shapes_csv):
    path = shapes_csv("m,k,n\n8,4096,4096\n8192,8192,8192\n")
    result = run("show", "--shapes", str(path), "--compute-eff", "0.8", "--memory-eff", "0.9",
                 "--json")
    assert result.exit_code == 0, result.output
    small, big = json.loads(result.output)["rows"]
    # 8×4096×4096 bf16: 2·(8·4096 + 4096² + 8·4096) B over 0.9 × 1,555 GB/s
    assert small["memory_time"] == pytest.approx(2 * (2 * 8 * 4096 + 4096**2) / (0.9 * BW))
    # 8192³: 2·8192³ FLOP at 0.8 × 312 TFLOP/s = 4.405 ms
    assert big["predicted_time"] == pytest.approx(2 * 8192**3 / (0.8 * PEAK))
    assert big["predicted_time"] == pytest.approx(4.405e-3, rel=1e-3)


@pytest.mark.parametrize("flag", ["--compute-eff", "--memory-eff", "--link-eff"])
@pytest.mark.parametrize("value", ["0", "1.5", "nan"])
def test_bad_efficiency_is_one_error_line(flag: str, value: str):
    result = run("show", flag, value)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"Error: {flag} must be a fraction from 0.0001 to 1 (1 = pure roofline) or "
        f"measured, got {float(value)!r}"]


def test_build_writes_the_efficiencies_into_the_inputs(tmp_path: Path):
    out = tmp_path / "e.xlsx"
    result = run("build", str(out), "--compute-eff", "0.7", "--memory-eff", "0.9",
                 "--link-eff", "0.5", "--spare-rows", "0")
    assert result.exit_code == 0, result.output
    read = run("read", str(out), "--sheet", "Inputs", "--format", "json")
    values = {r["name"]: r["value"] for r in json.loads(read.output)}  # evaluated, not cached
    assert (values["compute_eff"], values["memory_eff"], values["link_eff"]) == (0.7, 0.9, 0.5)
    assert values["attainable_flops"] == pytest.approx(0.7 * PEAK)
    assert values["attainable_bw"] == pytest.approx(0.9 * BW)
    assert check_workbook(out).ok


def test_efficiency_options_on_every_model_command():
    for name in ("build", "show", "plot", "push"):
        params = {p.name for p in cli.commands[name].params}
        assert {"compute_eff", "memory_eff", "link_eff"} <= params, name


def test_show_aligns_at_the_largest_dimension_and_never_prints_exponents(shapes_csv):
    path = shapes_csv(f"m,k,n\n{2**31 - 1},1,1\n1,1,1\n")
    result = run("show", "--shapes", str(path))
    assert result.exit_code == 0, result.output
    header, *rows = result.output.splitlines()[1:]
    # right-aligned: every value ends exactly where its column's header ends
    edges = [m.end() for m in re.finditer(r"\S+(?: \S+)*", header)]  # "of peak": one
    for row in rows:
        assert len(row) == len(header)
        for e in edges:
            assert row[e - 1] != " " and (e == len(row) or row[e] == " "), (header, row, e)
    assert "2147483647" in rows[0]
    assert "e-" not in result.output and "e+" not in result.output
    # 1×1×1: 2 FLOP at 312 TFLOP/s = 6.41 fs
    assert "6.41 fs" in rows[1]


def test_read_block_gives_the_pipeline_totals_and_parallel_comparison(tmp_path: Path):
    """Hand figures for the default pipeline (72 layers of 8192×32768 bf16 weights, m = 4096)
    on a 40 GB A100: weights 72·8192·32768·2 B = 38,654,705,664 B; the largest live pair is
    a type-1 layer's input 4096×32768 plus output 4096×8192, 2 B each = 335,544,320 B;
    headroom 40 GiB − 2 GiB reserve − both = 1,811,939,328 B (40e9 − both = 1,009,750,016 B
    with --capacity-as GB); compute 72·2·4096·8192·32768 FLOP / 312 TFLOP/s."""
    out = tmp_path / "r.xlsx"
    assert run("build", str(out), "--spare-rows", "0").exit_code == 0
    result = run("read", str(out), "--sheet", "Pipeline", "--block", "--format", "json")
    assert result.exit_code == 0, result.output
    totals = {r["name"]: r["value"] for r in json.loads(result.output)}
    assert totals["total_weight_bytes"] == 72 * 8192 * 32768 * 2
    assert totals["peak_live_act"] == (4096 * 32768 + 4096 * 8192) * 2
    assert totals["headroom"] == (40 * 2**30 - 2 * 2**30 - 72 * 8192 * 32768 * 2
                                  - (4096 * 32768 + 4096 * 8192) * 2) == 1_811_939_328
    assert totals["pipe_fits"] is True
    assert totals["total_compute_time"] == pytest.approx(72 * 2 * 4096 * 8192 * 32768 / PEAK)
    par = run("read", str(out), "--sheet", "Parallelism", "--block", "--format", "json")
    comparison = {r["name"]: r["value"] for r in json.loads(par.output)}
    # G = 2: each GPU holds half the weights either way
    assert comparison["pp_weights"] == comparison["tp_weights"] == 72 * 8192 * 32768
    assert comparison["b_weights"] == "tie"
    table = run("read", str(out), "--sheet", "Pipeline")
    assert table.output.startswith("row,layer,") and "total_weight_bytes" not in table.output


def test_measured_takes_the_presets_figure_for_the_dtype():
    """H100 SXM in fp8: the FP8 MAMF share, 1402.6 of 1979 TFLOP/s = 70.9 %, not bf16's
    80.3 %; the memory and link efficiencies are the preset's sourced ones."""
    result = run("show", "--gpu", "H100 SXM", "--dtype", "fp8", "--compute-eff", "measured",
                 "--memory-eff", "Measured", "--link-eff", "measured", "--json")
    assert result.exit_code == 0, result.output
    g = json.loads(result.output)["gpu"]
    h100 = builtin_presets().get("H100 SXM")
    assert g["compute_eff"] == 0.709
    assert (g["memory_eff"], g["attainable_flops"]) == (
        h100.measured_memory_efficiency, pytest.approx(0.709 * 1978.9e12))


def test_a_word_other_than_measured_is_one_error_line():
    result = run("show", "--compute-eff", "measurd")
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "Error: Invalid value for '--compute-eff': 'measurd' is neither a fraction nor "
        "measured"]
