"""The compute-efficiency ramp (a Hill-type curve in the matmul's FLOPs), the K loop that
split-K GEMMs do not pay, and per-dtype activation-quantize bytes: values by hand, the
calibrate → preset → --no-fit round trip, and one-line errors for bad preset values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import one_line_error, run

from sheetgen.calibrate import fit
from sheetgen.calibrate.data import Measurements, read_measurements
from sheetgen.calibrate.report import calibrate_file, measured_inputs
from sheetgen.inputs.presets import load_preset_file
from sheetgen.model import kernel_terms

ROOT = Path(__file__).resolve().parent.parent
XLA = ROOT / "benchmarks" / "data" / "xla_h100_sm90.csv"

#: round figures: 1 PFLOP/s, 10 TB/s, a 2 µs floor and a ramp to half the efficiency at
#: 2 GFLOP with h = 2
RAMP_PRESET = """
[[gpu]]
name = "Ramp"
peak_flops = { bf16 = 1e15, fp8 = 2e15 }
hbm_bandwidth = 1e13
memory_bytes = 8e10
link_bandwidth = 1e11
link_latency = 1e-6
host_bandwidth = 3e10
sm_count = 100
launch_overhead = 2e-6
compute_ramp_flops = 2e9
compute_ramp_exponent = 2
activation_quantize_bytes_by_dtype = { fp8 = 5 }
"""


def test_compute_ramp_by_hand():
    """1 / (1 + (F_half / F)^h): F = F_half is half way; F_half = 1e9, h = 0.5 at F = 4e9 is
    1 / (1 + 0.5) = 2/3; h = 2 at F = 2e9 is 1 / (1 + 0.25) = 0.8; F_half = 0 is off (1)."""
    got = kernel_terms.compute_ramp(np.array([1e9, 4e9]), 1e9, 0.5)
    assert list(got) == pytest.approx([0.5, 2 / 3], rel=1e-15)
    assert float(kernel_terms.compute_ramp(2e9, 1e9, 2.0)) == pytest.approx(0.8, rel=1e-15)
    assert list(kernel_terms.compute_ramp(np.array([1.0, 1e12]), 0.0, 3.0)) == [1.0, 1.0]
    # in the model: 1000³ bf16 (2e9 FLOPs) at 80 % of 1 PFLOP/s with F_half = 1e9, h = 2:
    # 2e9 / (1e15 · 0.8 · 0.8) = 3.125 µs of compute against 6e6 B / 1e13 B/s = 0.6 µs
    device = fit.Device("round", 1e15, 1e13, 2, 100)
    data = Measurements("t", "time_s", "bf16", *(np.array([v], float) for v in
                                                (1000, 1000, 1000, 1, 1e-5)))
    p = fit.Params(0.8, 1.0, 0.0, ramp_flops=1e9, ramp_exponent=2.0)
    assert fit.predict(device, p, data)[0] == pytest.approx(3.125e-6, rel=1e-12)
    assert fit.predict(device, fit.Params(0.8, 1.0, 0.0), data)[0] == pytest.approx(2.5e-6,
                                                                                rel=1e-12)


def test_a_ramp_that_ends_holds_the_efficiency_reached_there():
    """With an end (the largest matmul measured) the efficiency is the one reached there and
    held beyond. F_half = 2e9, h = 2, end 4e9: the asymptotic ramp is 1 / (1 + 1/4) = 0.8 at
    the end and 1 / (1 + 4) = 0.2 at 1e9, so 0.2 / 0.8 = 0.25 of the end's efficiency; 2e9
    is 0.5 / 0.8 = 0.625; 4e9 and 8e9 are 1 (the asymptotic ramp would give 0.941 / 0.8)."""
    got = kernel_terms.compute_ramp(np.array([1e9, 2e9, 4e9, 8e9]), 2e9, 2.0, 4e9)
    assert list(got) == pytest.approx([0.25, 0.625, 1.0, 1.0], rel=1e-15)
    # no end is the asymptotic ramp; no ramp is 1 whatever the end
    assert float(kernel_terms.compute_ramp(8e9, 2e9, 2.0, 0.0)) == pytest.approx(16 / 17)
    assert float(kernel_terms.compute_ramp(1e9, 0.0, 2.0, 4e9)) == 1.0
    # held_from restates a fitted asymptote of 0.8 at the end (0.8 · 0.8 = 0.64): the same
    # times up to the end, the end's efficiency beyond it
    device = fit.Device("round", 1e15, 1e13, 2, 100)
    sides = np.array([1000.0, 1260.0, 2000.0])  # 2e9, 4.0e9, 1.6e10 FLOPs
    data = Measurements("t", "time_s", "bf16", sides, sides, sides, np.ones(3), np.ones(3))
    asymptotic = fit.Params(0.8, 1.0, 0.0, ramp_flops=2e9, ramp_exponent=2.0)
    held = fit.held_from(asymptotic, 2 * 1260.0**3)
    assert held.compute_efficiency == pytest.approx(0.8 / (1 + (2e9 / (2 * 1260.0**3))**2))
    assert held.asymptote == pytest.approx(0.8, rel=1e-15)
    before, after = fit.predict(device, asymptotic, data), fit.predict(device, held, data)
    assert after[:2] == pytest.approx(before[:2], rel=1e-14)
    assert after[2] == pytest.approx(1.6e10 / (1e15 * held.compute_efficiency), rel=1e-14)
    assert fit.held_from(fit.Params(0.8, 1.0, 0.0), 1e12) == fit.Params(0.8, 1.0, 0.0)


def test_k_loop_is_not_paid_where_the_gemm_runs_split_k():
    """A split-K GEMM cuts k into slices that run side by side: the serial K loop is 0 there.
    On 132 SMs, 1×4096×32 (one tile, k ≥ 2048) runs split-K: 1.5 µs floor, no 4096 · 1 ns
    loop; 1×1024×32 (k below the switch) pays 1024 · 1 ns = 1.024 µs and no floor."""
    assert kernel_terms.k_loop_time(2048, 1.2e-9, 1.0) == 0.0
    assert kernel_terms.k_loop_time(2048, 1.2e-9, 0.0) == pytest.approx(2.4576e-6, rel=1e-12)
    device = fit.Device("H100", 989.4e12, 3.35e12, 2, 132)
    data = Measurements("t", "time_s", "bf16", *(np.array(v, float) for v in
                                                ([1, 1], [4096, 1024], [32, 32], [1, 1],
                                                 [5e-6, 5e-6])))
    base = fit.Params(0.8, 0.8, 2.5e-6)
    terms = fit.Params(0.8, 0.8, 2.5e-6, k_latency=1e-9, k_loop=True, split_floor=1.5e-6,
                       split_min_k=2048)
    extra = fit.predict(device, terms, data) - fit.predict(device, base, data)
    assert list(extra) == pytest.approx([1.5e-6, 1.024e-6], rel=1e-12)


def test_hand_made_ramp_preset_predicts_by_hand(tmp_path):
    """--no-fit with a preset's ramp: 1000³ bf16 is 2e9 FLOPs, half way up the ramp, so
    2e9 / (1e15 · 0.5) = 4 µs of compute (memory 6e6 B / 1e13 = 0.6 µs), + 2 µs floor = 6 µs;
    2000³ is 1.6e10 FLOPs: ramp 1 / (1 + (1/8)²) = 64/65, compute 16.25 µs, + 2 µs = 18.25 µs."""
    preset = tmp_path / "ramp.toml"
    preset.write_text(RAMP_PRESET)
    gpu = load_preset_file(preset).get("Ramp")
    assert (gpu.compute_ramp_flops, gpu.compute_ramp_exponent) == (2e9, 2.0)
    src = tmp_path / "t.csv"
    src.write_text("m,k,n,time_s\n1000,1000,1000,6e-6\n2000,2000,2000,1.8e-5\n")
    cal = calibrate_file(src, gpu="Ramp", gpu_file=preset, dtype="bf16", no_fit=True)
    assert cal.calibrated == pytest.approx([6e-6, 18.25e-6], rel=1e-12)
    cells = measured_inputs(cal)
    assert (cells.ramp_flops, cells.ramp_exponent) == (2e9, 2.0)


def test_preset_out_carries_the_compute_ramp(tmp_path):
    """On XLA's H100 bf16 table the held-out half chooses the ramp; --preset-out writes F_half
    and h, the loaded preset holds the JSON's values, and --no-fit with it predicts the same
    times (to the preset's 6 digits)."""
    preset = tmp_path / "h100.toml"
    proc = run("calibrate", str(XLA), "--gpu", "H100 SXM", "--dtype", "bf16", "--json",
               "--preset-out", str(preset), "--name", "H100 ramp")
    assert proc.exit_code == 0, proc.stderr
    fitted = json.loads(proc.stdout)
    assert "compute ramp" in fitted["form"]
    assert 1e8 < fitted["compute_ramp_flops"] < 1e11  # F_half: about a GFLOP
    gpu = load_preset_file(preset).get("H100 ramp")
    assert gpu.compute_ramp_flops == pytest.approx(fitted["compute_ramp_flops"], rel=1e-5)
    assert gpu.compute_ramp_exponent == pytest.approx(fitted["compute_ramp_exponent"],
                                                      rel=1e-5)
    assert "xla_h100_sm90.csv" in gpu.sources["compute_ramp_flops"]
    checked = calibrate_file(XLA, gpu="H100 ramp", gpu_file=preset, dtype="bf16", no_fit=True)
    same = np.array([r["calibrated_s"] for r in fitted["rows"]])
    assert np.allclose(checked.calibrated, same, rtol=1e-4)
    assert checked.params.ramp_flops == gpu.compute_ramp_flops
    # the ramp ends at the largest matmul measured, 4096³ x4, and the preset's efficiency is
    # the fit's at that size (not the asymptote beyond it), so the main workbook's roofline
    # uses no figure beyond the data: within 3 points of MAMF's 80.3 % for H100 bf16 (the
    # write cost moved it from 82.3 % to 83.0 %; the model has the 4096³ x4 row 2.8 % fast)
    assert gpu.compute_ramp_end_flops == fitted["compute_ramp_end_flops"] == 4 * 2 * 4096**3
    assert "xla_h100_sm90.csv" in gpu.sources["compute_ramp_end_flops"]
    share = 1 / (1 + (fitted["compute_ramp_flops"] / (8 * 4096**3))
                 ** fitted["compute_ramp_exponent"])
    assert fitted["compute_efficiency"] == pytest.approx(
        fitted["compute_efficiency_asymptote"] * share, rel=1e-12)
    assert fitted["compute_efficiency"] < fitted["compute_efficiency_asymptote"]
    assert gpu.measured_compute_efficiency == pytest.approx(fitted["compute_efficiency"],
                                                            rel=1e-5)
    assert abs(gpu.measured_compute_efficiency - 0.803) < 0.03


def test_every_refined_field_is_written_and_read():
    """What --preset-out writes for a fit's refined model is exactly what refined_by_dtype
    may hold, and each is a field of the GPU preset (for_dtype replaces it)."""
    from sheetgen.calibrate.report import refined_fields
    from sheetgen.inputs.presets import GPU, REFINED_FIELDS

    assert set(refined_fields(fit.Params())) == set(REFINED_FIELDS)
    assert set(REFINED_FIELDS) <= set(GPU.__dataclass_fields__)


def test_a_dtypes_own_refined_model_by_hand(tmp_path):
    """refined_by_dtype: fp8 has its own floor (4 µs) and no ramp, bf16 the preset's (2 µs,
    the ramp): 1000³ in bf16 is 6 µs (test_hand_made_ramp_preset_predicts_by_hand); in fp8,
    2e9 FLOPs at the 2 PFLOP/s fp8 peak is 1 µs (memory: 1e6 + 1e6 + 2e6 B at 10 TB/s,
    0.4 µs), + 4 µs, + the preset's fp8 quantize pass (5 B × 1e6 elements at 10 TB/s,
    0.5 µs) = 5.5 µs."""
    preset = tmp_path / "own.toml"
    preset.write_text(RAMP_PRESET + "refined_by_dtype = { fp8 = { launch_overhead = 4e-6, "
                      "compute_ramp_flops = 0 } }\n")
    gpu = load_preset_file(preset).get("Ramp")
    assert gpu.refined_by_dtype == {"fp8": {"launch_overhead": 4e-6, "compute_ramp_flops": 0.0}}
    assert gpu.for_dtype("fp8").launch_overhead == 4e-6 and gpu.for_dtype("bf16") is gpu
    src = tmp_path / "t.csv"
    src.write_text("m,k,n,time_s\n1000,1000,1000,6e-6\n")
    times = {d: float(calibrate_file(src, gpu="Ramp", gpu_file=preset, dtype=d,
                                     no_fit=True).calibrated[0]) for d in ("bf16", "fp8")}
    assert times == pytest.approx({"bf16": 6e-6, "fp8": 5.5e-6}, rel=1e-12)


def test_quantize_bytes_per_dtype(tmp_path):
    """A file with bf16 and fp8 rows states the fp8 path's quantize pass on a line of its own;
    the merged preset keeps bf16's 0 and fp8's 5 (activation_quantize_bytes_by_dtype), and
    --no-fit reads each dtype's back."""
    src = tmp_path / "both.csv"
    rows = "".join(f"{m},{k},{n},{d},{t}\n" for d, scale in (("bf16", 1.0), ("fp8", 0.6))
                   for m, k, n, t in ((4096, 4096, 4096, 2.1e-4), (1, 8192, 8192, 4.6e-5),
                                      (256, 256, 256, 5.2e-6), (1024, 1024, 1024, 2e-5)))
    src.write_text("# activation_quantize_bytes_per_element.fp8: 5\nm,k,n,dtype,time_s\n"
                   + rows)
    assert read_measurements(src, dtype="fp8").quantize_bytes == 5.0
    assert read_measurements(src, dtype="bf16").quantize_bytes == 0.0
    preset = tmp_path / "both.toml"
    proc = run("calibrate", str(src), "--gpu", "H100 SXM", "--preset-out", str(preset),
               "--name", "H100 both")
    assert proc.exit_code == 0, proc.stderr
    gpu = load_preset_file(preset).get("H100 both")
    assert gpu.activation_quantize_bytes == 0.0
    assert gpu.quantize_bytes_by_dtype == {"fp8": 5.0}
    assert (gpu.quantize_bytes("bf16"), gpu.quantize_bytes("fp8")) == (0.0, 5.0)
    plain = tmp_path / "plain.csv"
    plain.write_text("m,k,n,time_s\n4096,4096,4096,1.2e-4\n")
    for dtype, want in (("bf16", 0.0), ("fp8", 5.0)):
        cal = calibrate_file(plain, gpu="H100 both", gpu_file=preset, dtype=dtype, no_fit=True)
        assert cal.params.quantize_bytes == want, dtype


@pytest.mark.parametrize(("edit", "needle"), [
    (("compute_ramp_exponent = 2", "compute_ramp_exponent = 0.1"),
     "field 'compute_ramp_exponent': expected 0.25 to 4, got 0.1"),
    (("compute_ramp_exponent = 2", "compute_ramp_exponent = true"),
     "field 'compute_ramp_exponent'"),
    (("compute_ramp_flops = 2e9", "compute_ramp_flops = -2e9"),
     "field 'compute_ramp_flops': expected 0 to 1e+18 FLOPs"),
    (("{ fp8 = 5 }", "{ fp8 = 100 }"),
     "field 'activation_quantize_bytes_by_dtype.fp8': expected 0 to 64 bytes per element"),
    (("{ fp8 = 5 }", "{ fp16 = 5 }"),
     "field 'activation_quantize_bytes_by_dtype.fp16': the GPU has no fp16 peak"),
    (("{ fp8 = 5 }", "5"), "field 'activation_quantize_bytes_by_dtype' must be a table"),
    (("compute_ramp_exponent = 2", "compute_ramp_exponent = 2\n"
      "refined_by_dtype = { fp8 = { overlap_exponent = 0.5 } }"),
     "refined_by_dtype.fp8: field 'overlap_exponent': expected 0 (the hard max) or 1 to 64"),
    (("compute_ramp_exponent = 2", "compute_ramp_exponent = 2\n"
      "refined_by_dtype = { fp8 = { measured_compute_efficiency = 0.5 } }"),
     "field 'refined_by_dtype.fp8': unknown field 'measured_compute_efficiency'"),
    (("compute_ramp_exponent = 2", "compute_ramp_exponent = 2\n"
      "refined_by_dtype = { fp16 = { launch_overhead = 1e-6 } }"),
     "field 'refined_by_dtype.fp16': the GPU has no fp16 peak"),
    (("compute_ramp_exponent = 2", "compute_ramp_exponent = 2\n"
      "refined_by_dtype = { fp8 = 3 }"), "field 'refined_by_dtype' must be a table of dtype"),
    (("compute_ramp_exponent = 2", "compute_ramp_exponent = 2\n"
      "refined_by_dtype = { fp8 = { split_k_floor = 1e-6 } }"),
     "field 'refined_by_dtype.fp8': a split_k_floor needs split_k_min_k"),
])
def test_bad_ramp_and_quantize_values_are_one_error_line(tmp_path, edit, needle):
    bad = tmp_path / "bad.toml"
    bad.write_text(RAMP_PRESET.replace(*edit))
    src = tmp_path / "t.csv"
    src.write_text("m,k,n,time_s\n1000,1000,1000,6e-6\n")
    proc = run("calibrate", str(src), "--gpu-file", str(bad), "--gpu", "Ramp", "--no-fit")
    one_line_error(proc, "bad.toml", "gpu 'Ramp'", needle)
