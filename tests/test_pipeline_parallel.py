"""Parts 2 and 3: hand-computed totals, fit verdicts, parallelism formulas, bad options, and
LibreOffice recalculating both sheets."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import one_line_error
from helpers import scalars as planned_scalars
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from xlsx_edit import cell_of, edit_cells

import sheetgen
from sheetgen.assemble import BuildConfig, input_values, plan_build, sheet_specs
from sheetgen.cli import cli
from sheetgen.inputs.shapes import Shape
from sheetgen.layout.planner import plan_workbook
from sheetgen.writers.xlsx import write_xlsx

M, K, N, L = 4096, 8192, 32768, 72


@functools.cache
def scalars(**options):
    """helpers.scalars, planned once per set of options (two tests read the defaults')."""
    return planned_scalars(**options)


def test_default_totals_by_hand():
    s = scalars()
    assert s["n_layers"] == L
    assert s["total_weight_bytes"] == L * 2 * K * N == 38_654_705_664
    assert s["peak_live_act"] == 2 * M * (N + K)  # type 1 reads m×n, writes m×k
    assert s["memory_needed"] == s["total_weight_bytes"] + s["peak_live_act"]
    layer_flops = 2 * M * K * N
    assert s["total_flops"] == L * layer_flops
    assert s["total_compute_time"] == pytest.approx(L * layer_flops / 312e12, rel=1e-12)
    per_layer_bytes = 2 * (M * N + N * K + M * K)
    assert s["total_memory_time"] == pytest.approx(L * per_layer_bytes / 1.555e12, rel=1e-12)
    # every layer is compute-bound here, so full overlap = compute time
    assert s["pipe_predicted"] == pytest.approx(s["total_compute_time"], rel=1e-12)
    assert s["pipe_no_overlap"] == pytest.approx(s["total_compute_time"]
                                                 + s["total_memory_time"], rel=1e-12)


#: The fit's capacity on the A100 40GB: its 40 GiB less the default 2 GiB reserve
FIT = 40 * 2**30 - 2 * 2**30  # 40,802,189,312 B


def test_fit_verdicts_on_both_sides_of_the_line():
    fits = scalars()
    assert fits["pipe_fits"] is True
    assert fits["headroom"] == 40_802_189_312 - 38_990_249_984 == 1_811_939_328
    # the interview's 40 GB arithmetic is one switch away
    assert scalars(capacity_as="GB")["headroom"] == 40e9 - 38_990_249_984
    assert fits["stream_bytes"] == 0 and fits["stream_time"] == 0
    fp32 = scalars(dtype="fp32")  # twice the bytes: 78 GB on a 40 GiB card
    assert fp32["pipe_fits"] is False
    assert fp32["headroom"] < 0
    assert fp32["stream_bytes"] == pytest.approx(fp32["memory_needed"] - FIT)
    assert fp32["stream_time"] == pytest.approx(fp32["stream_bytes"] / 31.5e9)
    # 38 GB over PCIe 4 (1.2 s) hides behind 8.1 s of fp32 (non-tensor) compute ...
    assert fp32["stream_time"] == pytest.approx((2 * 38_990_249_984 - FIT) / 31.5e9)
    assert fp32["pipe_predicted"] == pytest.approx(L * 2 * M * K * N / 19.5e12)
    assert fp32["stream_hidden"] is True
    # ... but 67 GB of streamed weights cannot hide behind a small batch's 88 ms
    small = scalars(layers=200, pipeline_shape=(256, 8192, 32768))
    assert small["stream_bytes"] == pytest.approx(200 * 2 * K * N + 2 * 256 * (N + K) - FIT)
    assert small["stream_hidden"] is False
    assert small["pipe_with_stream"] == small["stream_time"]
    assert fp32["pipe_with_stream"] == max(fp32["pipe_predicted"], fp32["stream_time"])
    assert scalars(gpu="A100 80GB SXM", dtype="fp32")["pipe_fits"] is True
    assert scalars(gpu="L4")["pipe_fits"] is False
    assert fits["largest_ws_fits"] is True
    assert fits["largest_ws"] == 2 * (M * N + N * K + M * K)


def test_api_frames():
    layers, totals = sheetgen.pipeline(layers=4)
    assert list(layers.layer_type) == [1, 2, 1, 2]
    assert list(layers.in_shape[:2]) == [f"{M}x{N}", f"{M}x{K}"]
    assert totals.loc["pipe_fits", "value"] in (True, False)
    comp = sheetgen.parallelism(gpus=2, micro_batches=8)
    assert set(comp.columns) == {"unit", "single", "pipeline", "tensor", "better"}
    assert comp.loc["bubble fraction", "pipeline"] == pytest.approx(1 / 9)
    assert comp.loc["latency, one batch, M micro-batches", "better"] == "tensor"
    auto = sheetgen.parallelism(gpus=2, micro_batches=None)  # auto: M = 19
    assert auto.loc["bubble fraction", "pipeline"] == pytest.approx(1 / 20)
    assert auto.loc["latency, one batch, M micro-batches", "better"] == "tie"


@pytest.mark.parametrize(("args", "needles"), [
    (["--layers", "0"], ["--layers", "from 1"]),
    (["--layers", "7.5"], ["--layers", "7.5"]),
    (["--gpus", "0"], ["--gpus"]),
    (["--micro-batches", "0"], ["--micro-batches"]),
    (["--micro-batches", "5000"], ["more than the pipeline's m = 4096"]),
    (["--link-bw", "0"], ["--link-bw must be a positive"]),
    (["--link-latency", "-1"], ["--link-latency"]),
    (["--pipeline-shape", "0", "8", "8"], ["--pipeline-shape m"]),
    (["--host-link-latency", "-1"], ["--host-link-latency"]),
    (["--link-over", "pcie"], ["--link-over"]),
    (["--tp-pairing", "auto"], ["--tp-pairing"]),
])
def test_bad_parallel_options(tmp_path, args, needles):
    out = tmp_path / "o.xlsx"
    one_line_error(CliRunner().invoke(cli, ["build", str(out), *args]), *needles)
    assert not out.exists()


VARIANTS = {
    "default": {},
    "g4_uneven": {"gpus": 4, "layers": 73, "pipeline_shape": (1000, 8190, 4096),
                  "micro_batches": 3},
    "h100_fp8_link": {"gpu": "H100 SXM", "dtype": "fp8", "link_bw": 50e9, "gpus": 4,
                      "pipeline_shape": (512, 4096, 16384), "layers": 10},
    "l4_small_m": {"gpu": "L4", "dtype": "fp16", "pipeline_shape": (64, 2048, 8192),
                   "layers": 8, "micro_batches": 64},
    "one_gpu_more_gpus_than_layers": {"gpus": 1, "micro_batches": 1, "layers": 1},
    "g5_three_layers": {"gpus": 5, "layers": 3, "pipeline_shape": (7, 9, 11),
                        "micro_batches": 7},
}


@functools.cache
def _variant_plans() -> dict:
    """The variants' plans, made once: the job writes them and its test compares with them
    (neither edits one)."""
    return {key: plan_build(BuildConfig(shapes=[Shape(8, 8, 8)], spare_rows=1, **opts))
            for key, opts in VARIANTS.items()}


@libreoffice_job("pipeline-parallel-variants", to="values")
def _variants(tmp: Path) -> dict[str, Path]:
    plans = _variant_plans()
    files = {key: write_xlsx(p, tmp / f"{key}.xlsx") for key, p in plans.items()}
    # a user flips the dtype and the GPU count in the sheet
    names = plans["default"].defined_names
    edited = edit_cells(files["default"], tmp / "edited.xlsx", {
        cell_of(names[name]): value
        for name, value in (("DTYPE", "fp32"), ("PAR_GPUS", 4), ("MICRO_BATCHES", 16))})
    return {**files, "edited": edited}


@needs_libreoffice
def test_libreoffice_agrees_on_pipeline_and_parallelism(libreoffice):
    plans = _variant_plans()
    out = libreoffice.outputs("pipeline-parallel-variants")
    for key in VARIANTS:
        values = read_values(out[key])
        assert mismatches(plans[key], values) == [], key
    cfg = BuildConfig(shapes=[Shape(8, 8, 8)], spare_rows=1, dtype="fp32", gpus=4,
                      micro_batches=16).resolved()
    expected = plan_workbook(sheet_specs(), input_values(cfg))
    values = read_values(out["edited"])
    assert mismatches(expected, values) == []
    assert math.isclose(expected.model.scalars["pp_bubble"], 3 / 19)
    # the fp32 flip pushes the model out of the A100's memory, and LibreOffice says so
    assert expected.model.scalars["pipe_fits"] is False
    pipe = next(c for c in expected.sheet("Pipeline").cells if c.name == "pipe_fits")
    # FALSE; LibreOffice saves a result under the "TRUE";"TRUE";"FALSE" format as 0
    assert values["Pipeline"][(pipe.row, pipe.col)] in (False, 0)
