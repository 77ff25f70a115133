"""The published measured-matmul tables in benchmarks/data (XLA's H100, MI300X and B200 tables,
NVIDIA aiconfigurator's A100/H100/H200/B200/B300/GB200/GB300/L40S tables through TensorRT-LLM,
its A100/H100/H200/B200/B300/GB200/GB300 tables through vLLM and SGLang, its RTX PRO 6000
Server tables through all three and its Intel Arc Pro B60 table, AMD aiter's MI300X int8 and
MI355X bf16, int8 and fp8 tables, DeepSeek DeepGEMM's H800 fp8 table): every table listed is
readable against its preset, the copied rates are intact, and the rows agree with independently
published figures."""

from __future__ import annotations

import csv
import importlib
import math
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

from sheetgen.calibrate.data import read_measurements
from sheetgen.calibrate.report import calibrate_file
from sheetgen.inputs.presets import load_presets

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"
TABLES = tomllib.loads((DATA / "tables.toml").read_text("utf-8"))["table"]
#: rows per table (by file, or by name where a file holds two dtypes' tables), as
#: benchmarks/data/NOTICE states them
ROWS = {"xla_h100_sm90.csv": 375, "xla_mi300x_bf16.csv": 376, "aic_a100_sxm_bf16.csv": 1680,
        "xla_b200_sm100.csv": 375, "xla_h100_sm90_fp8.csv": 375,
        "aic_h100_sxm_vllm_bf16.csv": 1920, "aic_h100_sxm_vllm_fp8.csv": 1920,
        "aic_h100_sxm_sglang_bf16.csv": 1920, "aic_h100_sxm_sglang_fp8.csv": 1920,
        **{f"aic_{gpu}_sxm_{fw}_{dtype}.csv": 1920 for gpu in ("a100", "h200", "b200")
           for fw in ("vllm", "sglang") for dtype in ("bf16", "fp8")},
        **{f"aic_{gpu}_{fw}_{dtype}.csv": 1920
           for gpu in ("b300_sxm", "gb200", "gb300", "rtx_pro_6000_server")
           for fw in ("vllm", "sglang") for dtype in ("bf16", "fp8")},
        "aic_b60_vllm_bf16.csv": 2002, "aiter_mi300x_int8.csv": 32, "deepgemm_h800_fp8.csv": 28,
        "aiter MI355X int8": 452, "aiter MI355X fp8": 101, "aiter_mi355x_a8w8_bpreshuffle.csv": 481,
        "aiter_mi355x_bf16.csv": 112, "aiter_mi355x_models_bf16.csv": 1975,
        "aiter_mi355x_dsv3_fp8.csv": 131,
        "aic_a100_sxm_vllm_bf16.csv": 1680}


def _rows(name: str) -> list[dict[str, str]]:
    text = (DATA / name).read_text("utf-8").splitlines()
    return list(csv.DictReader(ln for ln in text if not ln.startswith("#")))


@pytest.mark.parametrize("table", TABLES, ids=[t["name"] for t in TABLES])
def test_every_listed_table_reads_against_its_preset(table):
    data = read_measurements(DATA / table["file"], dtype=table["dtype"])
    gpu = load_presets().get(table["gpu"])
    assert gpu.peak(table["dtype"]) > 0
    assert len(data) == ROWS.get(table["name"], ROWS.get(table["file"], 1900))
    assert table["url"].startswith("https://github.com/")
    assert table["file"] in (DATA / "NOTICE").read_text("utf-8")


@pytest.mark.parametrize("name", ["xla_h100_sm90.csv", "xla_mi300x_bf16.csv",
                                  "xla_b200_sm100.csv", "xla_h100_sm90_fp8.csv"])
def test_xla_rates_are_whole_nanosecond_timings(name):
    """XLA's generator writes each rate as 2·b·m·n·k / t, to the unit, for a whole number of
    nanoseconds t; a mistyped digit in a copied rate breaks that (the MI300X rates were
    copied by hand from the text protobuf, see NOTICE)."""
    for row in _rows(name):
        work = 2 * int(row["b"]) * int(row["m"]) * int(row["n"]) * int(row["k"]) * 10**9
        rate = int(row["flops_per_s"])
        t = round(work / rate)
        assert abs(rate - work / t) <= 1, row


def test_mi300x_rows_hand_checked():
    """Two rows read off openxla/xla@336bb15c default_matmul_perf_table.txtpb (gfx942):
    b=1 4096³ at 583,139,376,939,004 FLOP/s = 235.69 µs; b=4 4096³ at 570,675,049,165,250."""
    rows = {(r["b"], r["m"], r["k"], r["n"]): r for r in _rows("xla_mi300x_bf16.csv")}
    one = rows[("1", "4096", "4096", "4096")]
    assert one["flops_per_s"] == "583139376939004"
    assert float(one["time_s"]) == pytest.approx(2 * 4096**3 / 583139376939004, rel=1e-6)
    assert float(one["time_s"]) == pytest.approx(235.69e-6, rel=1e-4)
    assert rows[("4", "4096", "4096", "4096")]["flops_per_s"] == "570675049165250"
    assert {r["device"] for r in rows.values()} == {"rocm"}


def _faster_when_doubled(name: str, dtype: str) -> tuple[int, int]:
    """(pairs of shapes that differ by doubling one of b, m, k or n, those whose larger
    shape is more than 20 % faster); a shape timed twice counts at its faster time."""
    data = read_measurements(DATA / name, dtype=dtype)
    fastest: dict[tuple[int, ...], float] = {}
    for shape, t in zip(zip(data.b, data.m, data.k, data.n, strict=True), data.measured,
                        strict=True):
        key = tuple(int(x) for x in shape)
        fastest[key] = min(t, fastest.get(key, t))
    pairs = faster = 0
    for (b, m, k, n), t in fastest.items():
        for bigger in ((2 * b, m, k, n), (b, 2 * m, k, n), (b, m, 2 * k, n), (b, m, k, 2 * n)):
            if bigger in fastest:
                pairs += 1
                faster += fastest[bigger] < 0.8 * t
    return pairs, faster


@pytest.mark.parametrize(("name", "label", "pairs", "faster"), [
    ("xla_mi300x_bf16.csv", "XLA's MI300X bf16", 1150, 25),
    ("xla_h100_sm90.csv", "XLA's H100 bf16", 1150, 1),
    ("xla_b200_sm100.csv", "XLA's B200 bf16", 1150, 3),
    ("aic_h100_sxm_bf16.csv", "aiconfigurator's H100 bf16", 4930, 0),
    ("aic_a100_sxm_bf16.csv", "aiconfigurator's A100 bf16", 4332, 66)])
def test_how_often_a_doubled_shape_runs_faster_is_as_documented(name, label, pairs, faster):
    """docs/measuring.md explains the MI300X table's p90 by its larger shapes that run faster
    (a model whose time grows with every dimension misses one side of each such pair): the
    counts it gives are the data's."""
    assert _faster_when_doubled(name, "bf16") == (pairs, faster)
    page = " ".join((ROOT / "docs" / "measuring.md").read_text("utf-8").split())
    assert f"{faster:,} of {pairs:,} pairs on {label}" in page or \
        f"{faster:,} of {pairs:,} on {label}" in page


def test_b200_rows_hand_checked():
    """Rows read off the same file's sm_100_B200 section: b=1 4096³ bf16 at
    1,416,867,213,789,406 FLOP/s = 97.0 µs (63 % of the 2.25 PFLOP/s dense peak), fp8 at
    2,764,981,863,158,106 = 49.7 µs; every shape has one bf16 and one fp8 row."""
    rows = _rows("xla_b200_sm100.csv")
    by = {(r["b"], r["m"], r["k"], r["n"], r["dtype"]): r for r in rows}
    bf16 = by[("1", "4096", "4096", "4096", "bf16")]
    assert bf16["flops_per_s"] == "1416867213789406"
    assert float(bf16["time_s"]) == pytest.approx(97.003e-6, rel=1e-4)
    assert by[("1", "4096", "4096", "4096", "fp8")]["flops_per_s"] == "2764981863158106"
    assert sorted(r["dtype"] for r in rows).count("fp8") == 375 == len(rows) - 375


def test_xla_h100_fp8_rates_exceed_the_dense_peak():
    """The current file's sm_90 fp8 rows (e4m3 x e4m3 -> bf16): b=4 4096³ at
    2,592,796,435,858,738 FLOP/s, 1.31x the H100 SXM's dense fp8 peak (1,979 TFLOP/s, NVIDIA
    H100 datasheet; 3,958 is with sparsity); 29 of 375 rates are above it, so calibrate flags
    those rows and the table is not counted for the goal."""
    rows = _rows("xla_h100_sm90_fp8.csv")
    top = max(rows, key=lambda r: int(r["flops_per_s"]))
    assert (top["b"], top["m"], top["k"], top["n"]) == ("4", "4096", "4096", "4096")
    assert int(top["flops_per_s"]) == 2592796435858738
    peak = load_presets().get("H100 SXM").peak("fp8")
    assert peak == 1978.9e12  # 3,957.8 with sparsity, halved
    assert sum(int(r["flops_per_s"]) > peak for r in rows) == 29


@pytest.mark.parametrize(("name", "dtype", "flagged", "fastest"),
                         [("aic_l40s_bf16.csv", "bf16", 429, 3.14),
                          ("aic_l40s_fp8.csv", "fp8", 93, 1.96)])
def test_l40s_rows_beat_the_dram_roof(name, dtype, flagged, fastest):
    """aiconfigurator's L40S tables move many memory-bound GEMMs' bytes faster than its 864
    GB/s GDDR6 allows (up to 3.1x the pure roofline's speed): those operands come from the
    96 MB L2, which the model has no term for, so the tables are scored but not counted."""
    from sheetgen.calibrate import fit
    from sheetgen.calibrate.report import device_for

    device = device_for(load_presets().get("L40S"), dtype)
    data = read_measurements(DATA / name, dtype=dtype)
    fast = fit.faster_than_roof(device, data)
    roof = fit.predict(device, fit.PURE, data)
    assert int(fast.sum()) == flagged
    assert (fit.b_flops(data)[fast] / device.peak < roof[fast]).all()  # all memory-bound
    assert float(np.max(roof / data.measured)) == pytest.approx(fastest, abs=0.005)
    table = next(t for t in TABLES if t["file"] == name)
    assert not table.get("goal", True) and f"{flagged} rows" in table["why"]


def test_preset_efficiencies_read_off_their_tables():
    """The L40S's, the Arc Pro B60's and the RTX PRO 6000 Server's measured efficiencies are
    the aiconfigurator tables' figures their sources name, recomputed from the CSVs: the
    L40S's fastest bf16 GEMM
    (8192×4096×512) at 271.0 of 362.05 TFLOP/s; the B60's fastest, 1024×8192×65536, at 97.0
    of 98.3, and its 8×32768×32768 GEMM streaming a 2 GiB weight at 454 of 456 GB/s."""
    presets = load_presets()
    l40s = max(_rows("aic_l40s_bf16.csv"), key=lambda r: float(r["flops_per_s"]))
    assert (l40s["m"], l40s["k"], l40s["n"]) == ("8192", "4096", "512")
    gpu = presets.get("L40S")
    assert float(l40s["flops_per_s"]) / gpu.peak("bf16") == pytest.approx(
        gpu.measured_compute_efficiency, abs=5e-4)
    b60_rows = _rows("aic_b60_vllm_bf16.csv")
    b60 = max(b60_rows, key=lambda r: float(r["flops_per_s"]))
    assert (b60["m"], b60["k"], b60["n"]) == ("1024", "8192", "65536")
    gpu = presets.get("Arc Pro B60")
    assert float(b60["flops_per_s"]) / gpu.peak("bf16") == pytest.approx(
        gpu.measured_compute_efficiency, abs=5e-4)
    m, k, n = 8, 32768, 32768
    stream = next(r for r in b60_rows if (r["m"], r["k"], r["n"]) == (str(m), str(k), str(n)))
    moved = 2 * (m * k + k * n + m * n)  # bf16 A, W and C, once each
    assert moved / float(stream["time_s"]) / gpu.hbm_bandwidth == pytest.approx(
        gpu.measured_memory_efficiency, abs=5e-4)
    gpu = presets.get("RTX PRO 6000 Server")  # its fastest bf16 and fp8 GEMMs: 435.6, 828.4
    for dtype, shape in (("bf16", ("16384", "8192", "4096")), ("fp8", ("4096", "8192", "65536"))):
        fastest = max(_rows(f"aic_rtx_pro_6000_server_{dtype}.csv"),
                      key=lambda r: float(r["flops_per_s"]))
        assert (fastest["m"], fastest["k"], fastest["n"]) == shape
        assert float(fastest["flops_per_s"]) / gpu.peak(dtype) == pytest.approx(
            gpu.compute_efficiency(dtype), abs=5e-4)


def _time_us(name: str, m: int, k: int, n: int) -> float:
    row = next(r for r in _rows(name) if (r["m"], r["k"], r["n"]) == (str(m), str(k), str(n)))
    return float(row["time_s"]) * 1e6


def test_framework_fp8_quantize_costs_more_than_its_bytes():
    """Why vLLM's and SGLang's H100 fp8 tables miss the goal where TensorRT-LLM's meets it:
    their activation-quantize kernels are slow at skinny shapes, for reasons other than the
    bytes the model charges them. vLLM's per-tensor scale takes one thread block per row of A,
    each ending in an atomic on the one scale: m = 32,768 rows of 32 take 238.6 µs, half of
    them 122.0 µs (7.3 ns a row), where the bf16 GEMM takes 3.8 µs and TensorRT-LLM's fp8 one
    15.2 µs. SGLang's per-token quantization reads each row with one warp: one row of 65,536
    takes 40.2 µs, where the bf16 GEMM takes 7.8 µs and TensorRT-LLM's fp8 one 16.9 µs."""
    vllm, sglang, trt = ("aic_h100_sxm_vllm_fp8.csv", "aic_h100_sxm_sglang_fp8.csv",
                         "aic_h100_sxm_fp8.csv")
    assert _time_us(vllm, 32768, 32, 32) == pytest.approx(238.65, abs=0.01)
    assert _time_us(vllm, 16384, 32, 32) == pytest.approx(122.03, abs=0.01)
    per_row = (_time_us(vllm, 32768, 32, 32) - _time_us(vllm, 16384, 32, 32)) / 16384
    assert per_row * 1e3 == pytest.approx(7.1, abs=0.1)  # ns
    assert _time_us(vllm, 32768, 32, 32) > 15 * _time_us(trt, 32768, 32, 32)
    assert _time_us("aic_h100_sxm_vllm_bf16.csv", 32768, 32, 32) < 4.0
    assert _time_us(sglang, 1, 65536, 32) == pytest.approx(40.19, abs=0.01)
    assert _time_us(sglang, 1, 65536, 32) > 2 * _time_us(trt, 1, 65536, 32)
    assert _time_us("aic_h100_sxm_sglang_bf16.csv", 1, 65536, 32) < 8.0
    for name, qbytes in ((vllm, 5.0), (sglang, 3.0)):
        assert read_measurements(DATA / name, dtype="fp8").quantize_bytes == qbytes


@pytest.mark.parametrize(("gpu", "vllm_us", "per_row_ns", "sglang_us"),
                         [("h200", 240.19, 7.2, 39.80), ("b200", 213.19, 6.3, 46.69)])
def test_framework_fp8_quantize_costs_the_same_on_the_h200_and_b200(gpu, vllm_us, per_row_ns,
                                                                     sglang_us):
    """The H100's story on the H200 and the B200, read off their rows: vLLM's m = 32,768 rows
    of 32 cost 6–7 ns a row (over 10× TensorRT-LLM's fp8 GEMM of the shape, 50× the bf16
    one), SGLang's one row of 65,536 over 2× TensorRT-LLM's. The quantize kernels, not the
    GPU, are what these tables add."""
    vllm, sglang = f"aic_{gpu}_sxm_vllm_fp8.csv", f"aic_{gpu}_sxm_sglang_fp8.csv"
    trt = f"aic_{gpu}_sxm_fp8.csv"
    assert _time_us(vllm, 32768, 32, 32) == pytest.approx(vllm_us, abs=0.01)
    per_row = (_time_us(vllm, 32768, 32, 32) - _time_us(vllm, 16384, 32, 32)) / 16384
    assert per_row * 1e3 == pytest.approx(per_row_ns, abs=0.1)
    assert _time_us(vllm, 32768, 32, 32) > 10 * _time_us(trt, 32768, 32, 32)
    assert _time_us(vllm, 32768, 32, 32) > 40 * _time_us(f"aic_{gpu}_sxm_vllm_bf16.csv",
                                                         32768, 32, 32)
    assert _time_us(sglang, 1, 65536, 32) == pytest.approx(sglang_us, abs=0.01)
    assert _time_us(sglang, 1, 65536, 32) > 2 * _time_us(trt, 1, 65536, 32)
    for name, qbytes in ((vllm, 5.0), (sglang, 3.0)):
        assert read_measurements(DATA / name, dtype="fp8").quantize_bytes == qbytes


@pytest.mark.parametrize(("name", "mamf"), [("aic_h100_sxm_bf16.csv", 794.5e12),
                                             ("aic_a100_sxm_bf16.csv", 271.2e12)])
def test_aiconfigurator_large_square_bf16_matches_mamf(name, mamf):
    """aiconfigurator's 4096³ bf16 GEMM lands within 3 % of ml-engineering's maximum
    achievable matmul FLOPS (stas00/ml-engineering@744d01e, compute/accelerator/README.md):
    H100 SXM 794.5, A100 SXM 271.2 TFLOP/s; two independent measurements of one figure."""
    row = next(r for r in _rows(name) if (r["m"], r["k"], r["n"]) == ("4096",) * 3)
    rate = 2 * 4096**3 / float(row["time_s"])
    assert rate == pytest.approx(mamf, rel=0.03)


def test_aiconfigurator_converter_rebuilds_a_row(tmp_path):
    """benchmarks/aiconfigurator_gemm_table.py on a two-row table: ms -> s, FLOP/s, and the
    power-of-two sample (m = 3 is left out)."""
    import pandas as pd  # and pyarrow for the parquet file: both test dependencies
    frame = pd.DataFrame({"framework": ["TRTLLM"] * 2, "version": ["1.3.0rc20"] * 2,
                          "device": ["NVIDIA H100 80GB HBM3"] * 2, "op_name": ["gemm"] * 2,
                          "kernel_source": ["torch_flow"] * 2,
                          "gemm_dtype": ["bfloat16"] * 2, "m": [4096, 3], "n": [4096, 4096],
                          "k": [4096, 4096], "latency": [0.1742853, 0.01]})
    src = tmp_path / "gemm_perf.parquet"
    frame.to_parquet(src)
    conv = _benchmark("aiconfigurator_gemm_table")
    rows = conv.rows(pd.read_parquet(src), "bf16")
    assert rows == [{"b": 1, "m": 4096, "k": 4096, "n": 4096, "dtype": "bf16",
                     "device": "cuda", "time_s": "1.742853e-04",
                     "flops_per_s": f"{2 * 4096**3 / 1.742853e-4:.0f}"}]
    committed = [r for r in _rows("aic_h100_sxm_bf16.csv") if (r["m"], r["k"], r["n"])
                 == ("4096",) * 3]
    assert committed[0]["time_s"] == rows[0]["time_s"]


def test_aiconfigurator_converter_states_each_frameworks_quantize_pass():
    """An fp8 table's CSV says which activation-quantize pass its times include, by the
    collector's framework (TensorRT-LLM's and vLLM's per-tensor 5 B per element, SGLang's
    per-token 3 B); a bf16 table says none; an Intel device is "xpu"; an unknown framework
    is refused rather than given another's pass."""
    conv = _benchmark("aiconfigurator_gemm_table")
    row = [{"b": 1, "m": 1, "k": 32, "n": 32, "dtype": "fp8", "device": "cuda",
            "time_s": "1e-05", "flops_per_s": "204800"}]
    for framework, qbytes in (("TRTLLM", "5"), ("VLLM", "5"), ("SGLang", "3")):
        text = conv.csv_text(row, "NVIDIA H100 80GB HBM3", "src", "fp8", framework)
        assert f"# activation_quantize_bytes_per_element: {qbytes}\n" in text, framework
    assert "activation_quantize_bytes" not in conv.csv_text(row, "x", "src", "bf16", "VLLM")
    with pytest.raises(ValueError, match="framework 'XLA'"):
        conv.csv_text(row, "x", "src", "fp8", "XLA")
    assert conv.device_kind(["Intel(R) Arc(TM) Pro B60 Graphics"]) == "xpu"
    assert conv.device_kind(["NVIDIA L40S"]) == "cuda"
    committed = (DATA / "aic_h100_sxm_sglang_fp8.csv").read_text("utf-8")
    assert "sgl_per_token_quant_fp8" in committed
    assert {r["device"] for r in _rows("aic_b60_vllm_bf16.csv")} == {"xpu"}


def test_aiter_rows_hand_checked():
    """Two rows of ROCm/aiter@e4048607 aiter/configs/a8w8_bpreshuffle_tuned_gemm.csv
    (gfx942, 304 CUs), read off the file: M 64, N 1536, K 5120 in 16.7759 µs, which aiter's
    own tflops column gives as 60.0; M 40960, N 5120, K 1280 in 475.7676 µs (1128.43). Its
    M, N, K are y = x·Wᵀ's (x M×K, W N×K), so m = M, k = K, n = N; the int8 GEMM writes bf16
    and times no quantize pass. gfx942 with 80 CUs (a partitioned part) is refused."""
    rows = {(r["m"], r["k"], r["n"]): r for r in _rows("aiter_mi300x_int8.csv")}
    small = rows[("64", "5120", "1536")]
    assert float(small["time_s"]) == pytest.approx(16.7759e-6, rel=1e-6)
    assert float(small["flops_per_s"]) / 1e12 == pytest.approx(60.0, abs=0.005)
    big = rows[("40960", "1280", "5120")]
    assert float(big["flops_per_s"]) / 1e12 == pytest.approx(1128.43, abs=0.005)
    assert {r["dtype"] for r in rows.values()} == {"int8"} and len(rows) == 32
    data = read_measurements(DATA / "aiter_mi300x_int8.csv", dtype="int8")
    assert data.quantize_bytes == 0
    # gfx950 with 256 CUs (an MI350X or an MI355X), ROCm/aiter@e4048607
    # aiter/configs/a8w8_tuned_gemm.csv: int8 M 1, N 100, K 5120 in 8.7502 µs; fp8 M 128,
    # N 128, K 941,696 (one output tile, a 941,696-step K loop) in 1,362.3745 µs
    # and bf16_tuned_gemm.csv: M 64, N 256, K 5120 in 7.9191 µs, writing fp32 (its outdtype)
    bf16 = next(r for r in _rows("aiter_mi355x_bf16.csv")
                if (r["m"], r["k"], r["n"]) == ("64", "5120", "256"))
    assert float(bf16["time_s"]) == pytest.approx(7.9191e-6, rel=1e-6)
    assert read_measurements(DATA / "aiter_mi355x_bf16.csv").metadata["output_dtype"].startswith(
        "fp32")
    assert next(t for t in TABLES if t["name"] == "aiter MI355X bf16")["output_dtype"] == "fp32"
    mi355 = {(r["m"], r["k"], r["n"], r["dtype"]): r for r in _rows("aiter_mi355x_a8w8.csv")}
    assert float(mi355[("1", "5120", "100", "int8")]["time_s"]) == pytest.approx(8.7502e-6,
                                                                               rel=1e-6)
    assert float(mi355[("128", "941696", "128", "fp8")]["time_s"]) == pytest.approx(
        1362.3745e-6, rel=1e-6)
    conv = _benchmark("aiter_gemm_table")
    with pytest.raises(SystemExit):  # a partitioned part: no one device
        conv.main([str(DATA / "aiter_mi300x_int8.csv"), "--gfx", "gfx942", "--cu-num", "80"])


def _benchmark(name: str) -> ModuleType:
    """A script of benchmarks/ imported by its name (it imports its siblings the same way)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def _bench() -> ModuleType:
    return _benchmark("bench_accuracy")


#: held-out (median, p90) of the model (smooth max + compute ramp + K loop, with a split-K
#: floor or growing with the tile, whichever fits the fit half better, + the quantize pass
#: where the file states one, as a kernel with a roofline of its own) per table, as
#: docs/measuring.md reports them
DOCUMENTED = {
    "XLA H100 SXM bf16": (0.035, 0.085),
    "XLA H100 SXM tf32": (0.053, 0.157),
    "XLA H100 SXM fp8": (0.120, 0.303),
    "XLA MI300X bf16": (0.099, 0.272),
    "XLA B200 bf16": (0.020, 0.089),
    "XLA B200 fp8": (0.039, 0.110),
    "aiconfigurator A100 SXM bf16": (0.063, 0.217),
    "aiconfigurator H100 SXM bf16": (0.043, 0.142),
    "aiconfigurator H100 SXM fp8": (0.028, 0.102),
    "aiconfigurator H200 bf16": (0.043, 0.132),
    "aiconfigurator H200 fp8": (0.030, 0.092),
    "aiconfigurator B200 bf16": (0.061, 0.208),
    "aiconfigurator B200 fp8": (0.046, 0.132),
    "aiconfigurator H100 SXM bf16, vLLM": (0.046, 0.166),
    "aiconfigurator H100 SXM fp8, vLLM": (0.038, 0.129),
    "aiconfigurator H100 SXM bf16, SGLang": (0.054, 0.157),
    "aiconfigurator H100 SXM fp8, SGLang": (0.082, 0.215),
    "aiconfigurator A100 SXM bf16, vLLM": (0.072, 0.224),
    "aiconfigurator A100 SXM bf16, SGLang": (0.074, 0.211),
    "aiconfigurator H200 bf16, vLLM": (0.045, 0.152),
    "aiconfigurator H200 fp8, vLLM": (0.038, 0.144),
    "aiconfigurator H200 bf16, SGLang": (0.063, 0.187),
    "aiconfigurator H200 fp8, SGLang": (0.083, 0.219),
    "aiconfigurator B200 bf16, vLLM": (0.067, 0.199),
    "aiconfigurator B200 fp8, vLLM": (0.043, 0.325),
    "aiconfigurator B200 bf16, SGLang": (0.072, 0.245),
    "aiconfigurator B200 fp8, SGLang": (0.069, 0.259),
    "aiconfigurator B300 SXM bf16": (0.067, 0.198),
    "aiconfigurator B300 SXM fp8": (0.040, 0.110),
    "aiconfigurator B300 SXM bf16, vLLM": (0.060, 0.199),
    "aiconfigurator B300 SXM fp8, vLLM": (0.031, 0.141),
    "aiconfigurator GB200 bf16": (0.063, 0.210),
    "aiconfigurator GB200 fp8": (0.045, 0.109),
    "aiconfigurator GB200 bf16, vLLM": (0.064, 0.224),
    "aiconfigurator GB200 fp8, vLLM": (0.032, 0.158),
    "aiconfigurator GB200 bf16, SGLang": (0.075, 0.219),
    "aiconfigurator GB200 fp8, SGLang": (0.060, 0.226),
    "aiconfigurator GB300 bf16": (0.064, 0.199),
    "aiconfigurator GB300 fp8": (0.041, 0.107),
    "aiconfigurator GB300 bf16, vLLM": (0.062, 0.197),
    "aiconfigurator GB300 fp8, vLLM": (0.030, 0.142),
    "aiconfigurator GB300 bf16, SGLang": (0.068, 0.202),
    "aiconfigurator GB300 fp8, SGLang": (0.052, 0.176),
    "aiconfigurator RTX PRO 6000 Server bf16": (0.083, 0.511),
    "aiconfigurator RTX PRO 6000 Server fp8": (0.068, 0.356),
    "aiconfigurator RTX PRO 6000 Server bf16, vLLM": (0.069, 0.354),
    "aiconfigurator RTX PRO 6000 Server fp8, vLLM": (0.055, 0.291),
    "aiconfigurator RTX PRO 6000 Server bf16, SGLang": (0.068, 0.312),
    "aiconfigurator RTX PRO 6000 Server fp8, SGLang": (0.052, 0.259),
    "aiconfigurator L40S bf16": (0.113, 0.993),
    "aiconfigurator L40S fp8": (0.078, 0.687),
    "aiconfigurator Arc Pro B60 bf16, vLLM": (0.059, 0.211),
    "aiter MI300X int8": (0.057, 0.243),
    "DeepGEMM H800 fp8": (0.052, 0.170),
    "aiter MI355X bf16": (0.078, 0.208),
    "aiter MI355X bf16, model shapes": (0.066, 0.225),
    "aiter MI355X fp8, DeepSeek-V3 shapes": (0.074, 0.294),
    "aiter MI355X int8": (0.122, 0.347),
    "aiter MI355X fp8": (0.059, 0.204),
    "aiter MI355X fp8, preshuffled": (0.064, 0.223),
}
#: scored but not counted for the goal: rates a dense GEMM at the spec peak cannot reach
#: (XLA's H100 fp8), rows served from L2 faster than the DRAM allows (L40S, RTX PRO 6000)
NOT_COUNTED = {"XLA H100 SXM fp8", "aiconfigurator L40S bf16", "aiconfigurator L40S fp8"} | {
    n for n in DOCUMENTED if "RTX PRO 6000" in n}
#: the tables the model's form was chosen on (the NVIDIA tables published when it was);
#: the rest were scored after the choice
CHOSEN_ON = {"XLA H100 SXM bf16", "XLA H100 SXM tf32", "XLA B200 bf16", "XLA B200 fp8",
             "aiconfigurator A100 SXM bf16", "aiconfigurator H100 SXM bf16",
             "aiconfigurator H100 SXM fp8", "aiconfigurator H200 bf16",
             "aiconfigurator H200 fp8", "aiconfigurator B200 bf16", "aiconfigurator B200 fp8"}
#: Blackwell's B300, GB200 and GB300 (their presets and tables added last)
BLACKWELL = {n for n in DOCUMENTED if re.search(r"\b(B300|GB200|GB300)\b", n)}
#: fp8 through vLLM and SGLang: their activation-quantize kernels cost more than their bytes
#: (the B300 has no SGLang table of its own: aiconfigurator's is the GB300's, copied)
FRAMEWORK_FP8 = {f"aiconfigurator {gpu} fp8, {fw}"
                 for gpu in ("H100 SXM", "H200", "B200", "GB200", "GB300")
                 for fw in ("vLLM", "SGLang")} | {"aiconfigurator B300 SXM fp8, vLLM"}
#: aiter's gfx950 tables (an MI350X or an MI355X) that miss the p90 (its bf16 ones meet it)
MI355X = {"aiter MI355X int8", "aiter MI355X fp8", "aiter MI355X fp8, preshuffled",
          "aiter MI355X fp8, DeepSeek-V3 shapes"}
#: the tables whose files state an activation-quantize pass (every aiconfigurator fp8 one)
QUANTIZE_PASS = {n for n in DOCUMENTED if n.startswith("aiconfigurator") and " fp8" in n}
#: where the goal (held-out median ≤ 10 %, p90 ≤ 25 %) holds today: the quantize kernel's
#: roofline brings vLLM's fp8 medians under 10 %, and the K loop growing with the tile
#: SGLang's (8.3 % on the H100, 10.0 % on the H200, 8.9 % on the B200)
MEDIAN_GOAL_MET = set(DOCUMENTED) - NOT_COUNTED - {"aiter MI355X int8"}
#: the K loop growing with the tile, in waves of the library's tiles, brings every vLLM and
#: SGLang fp8 p90 under 25 % but the B200's (32.5 %, 25.9 %), and aiter's gfx950 fp8 ones
#: (20.4 %, 22.3 %); the write cost brings SGLang's bf16 tables of the A100 and the B200
#: under it (25.7 % to 21.2 %, 26.1 % to 24.5 %)
FRAMEWORK_FP8_MET = FRAMEWORK_FP8 - {"aiconfigurator B200 fp8, vLLM",
                                     "aiconfigurator B200 fp8, SGLang"}
MI355X_FP8_MET = {"aiter MI355X fp8", "aiter MI355X fp8, preshuffled"}
P90_GOAL_MET = MEDIAN_GOAL_MET - (FRAMEWORK_FP8 - FRAMEWORK_FP8_MET) - (MI355X - MI355X_FP8_MET) - {
    "XLA MI300X bf16"}


@pytest.fixture(scope="module")
def scores():
    bench = _bench()
    return {t.name: bench.score_table(t) for t in bench.published_tables()}


def test_every_table_is_scored_and_documented(scores):
    assert set(scores) == set(DOCUMENTED) == {t["name"] for t in TABLES}
    doc = (ROOT / "docs" / "measuring.md").read_text("utf-8")
    for name, s in scores.items():
        median, p90 = DOCUMENTED[name]
        assert s.model.median_abs_error == pytest.approx(median, abs=0.0006), name
        assert s.model.p90_abs_error == pytest.approx(p90, abs=0.0006), name
        assert f"**{median:.1%} / {p90:.1%}**" in doc, name


def test_per_table_goals(scores):
    """Held-out median ≤ 10 % and p90 ≤ 25 %: where it holds; the model halves the roofline's
    median on every counted table, AMD's included, and its p90 is never above the hard max's.
    The ramp was chosen on the NVIDIA tables: it lowers the held-out median on 8 of the 11
    counted ones (A100: 8.6 % to 6.8 %) and raises it on XLA's B200 fp8 (3.5 % to 4.6 %) and,
    scored after the choice, on AMD's MI300X (9.2 % to 9.9 %), where calibrate's own held-out
    choice leaves it out."""
    for name, s in scores.items():
        if name in NOT_COUNTED:
            assert not s.table.goal, name
            continue
        assert s.model.p90_abs_error <= s.hard_max.p90_abs_error, name
        assert s.model.median_abs_error < 0.5 * s.roofline.median_abs_error, name
        assert s.goals() == (name in MEDIAN_GOAL_MET, name in P90_GOAL_MET), name
    def lower(names: set[str]) -> set[str]:  # where the ramp lowers the held-out median
        return {n for n in names
                if scores[n].ramp.median_abs_error < scores[n].split_k.median_abs_error - 0.0005}

    assert len(CHOSEN_ON) == 11 and len(lower(CHOSEN_ON)) == 8, lower(CHOSEN_ON)
    # scored after the choice: the ramp lowers the median on 19 of the 23 counted tables
    # (B60: 10.5 % to 6.0 %; DeepGEMM 7.6 % to 6.9 %; aiter's MI355X fp8 16.2 % to 9.9 %,
    # its bf16 11.5 % to 8.1 % and its models' bf16 shapes 14.5 % to 7.0 %),
    # raises it on vLLM's H100 bf16 (5.2 % to 5.4 %), aiter's MI300X int8 (5.0 % to 5.7 %)
    # and SGLang's B200 bf16 (8.0 % to 8.3 %), and leaves SGLang's B200 fp8 where it was
    # (14.8 %)
    after = set(DOCUMENTED) - CHOSEN_ON - NOT_COUNTED - {"XLA MI300X bf16"} - BLACKWELL
    assert len(after) == 23 and after - lower(after) == {
        "aiconfigurator H100 SXM bf16, vLLM", "aiter MI300X int8",
        "aiconfigurator B200 bf16, SGLang", "aiconfigurator B200 fp8, SGLang"}
    assert lower(after) >= MI355X | {"aiter MI355X bf16", "aiter MI355X bf16, model shapes"}
    # and on the B300, GB200 and GB300 (scored later still): lower on all 8 fp8 tables and
    # GB300's bf16 one, and within 0.06 points either way on the other 7 bf16 tables
    assert len(BLACKWELL) == 16
    assert lower(BLACKWELL) == {n for n in BLACKWELL if " fp8" in n} | {
        "aiconfigurator GB300 bf16"}
    for name in BLACKWELL:
        s = scores[name]
        assert s.ramp.median_abs_error < s.split_k.median_abs_error + 0.0006, name
    b60 = scores["aiconfigurator Arc Pro B60 bf16, vLLM"]
    assert b60.split_k.median_abs_error > 0.10 > 0.07 > b60.model.median_abs_error
    a100 = scores["aiconfigurator A100 SXM bf16"]
    assert a100.split_k.median_abs_error > 0.08 > 0.07 > a100.model.median_abs_error
    mi300x = scores["XLA MI300X bf16"]
    assert mi300x.hard_max.median_abs_error > 0.13  # one efficiency per regime: 14 %
    assert mi300x.split_k.median_abs_error < mi300x.model.median_abs_error  # the ramp loses
    p = mi300x.split_k.params  # without the ramp the fit reads physically there
    assert p.compute_efficiency == pytest.approx(668.4 / 1307.4, abs=0.03)  # MAMF
    assert p.split_floor < 1e-12  # the split-K floor finds nothing there
    # the split-K floor is about one more launch floor wherever aiconfigurator's tables fit it
    # (1.6 of them at most: the write cost moved the H100's floor from 1.76 to 1.67 µs)
    for name in ("aiconfigurator H100 SXM bf16", "aiconfigurator H200 bf16",
                 "aiconfigurator B200 bf16", "aiconfigurator B300 SXM bf16",
                 "aiconfigurator GB200 bf16", "aiconfigurator GB300 bf16"):
        for p in (scores[name].split_k.params, scores[name].model.params):
            assert 0.5 * p.launch_overhead < p.split_floor < 1.6 * p.launch_overhead, name


#: twin pairs (B200 / GB200, B300 / GB300; the same collector and framework version), and
#: the shapes whose times differ by more than 1.5x either way, counted from the CSVs alone
TWIN_DISAGREEMENTS = {
    ("aic_b200_sxm_bf16.csv", "aic_gb200_bf16.csv"): 2,
    ("aic_b200_sxm_fp8.csv", "aic_gb200_fp8.csv"): 0,
    ("aic_b200_sxm_vllm_bf16.csv", "aic_gb200_vllm_bf16.csv"): 28,
    ("aic_b200_sxm_vllm_fp8.csv", "aic_gb200_vllm_fp8.csv"): 94,
    ("aic_b200_sxm_sglang_bf16.csv", "aic_gb200_sglang_bf16.csv"): 53,
    ("aic_b200_sxm_sglang_fp8.csv", "aic_gb200_sglang_fp8.csv"): 60,
    ("aic_b300_sxm_bf16.csv", "aic_gb300_bf16.csv"): 3,
    ("aic_b300_sxm_fp8.csv", "aic_gb300_fp8.csv"): 1,
    ("aic_b300_sxm_vllm_bf16.csv", "aic_gb300_vllm_bf16.csv"): 2,
    ("aic_b300_sxm_vllm_fp8.csv", "aic_gb300_vllm_fp8.csv"): 0,
}


def _times(name: str) -> dict[tuple[str, ...], float]:
    return {(r["b"], r["m"], r["k"], r["n"]): float(r["time_s"]) for r in _rows(name)}


@pytest.mark.parametrize(("files", "disagree"), TWIN_DISAGREEMENTS.items(),
                         ids=[a for a, _ in TWIN_DISAGREEMENTS])
def test_twin_tables_agree_but_where_the_b200_frameworks_did_not_repeat(files, disagree):
    """A B200 in an HGX board and in a GB200 rack (and a B300 and a GB300), timed by the same
    collector through the same framework version: the median ratio of their times is within
    5 % of 1 and the middle half within 12 %, so a shape that differs by 1.5x did not repeat.
    TensorRT-LLM's pairs and the B300's disagree on at most 3 of 1,900 shapes; vLLM's and
    SGLang's B200 tables on 28 to 94 (vLLM fp8: m = 64, n = 32, k = 65,536 takes 302.6 µs
    on the B200 and 49.4 µs on the GB200, where m = 32 takes 50.0 µs on both)."""
    tables = {t["file"]: t["name"] for t in TABLES}
    assert {t["twin"] for t in TABLES if t["file"] == files[0]} == {tables[files[1]]}
    assert {t["twin"] for t in TABLES if t["file"] == files[1]} == {tables[files[0]]}
    ours, theirs = _times(files[0]), _times(files[1])
    assert len(set(ours) & set(theirs)) >= 1900
    ratio = np.array([ours[s] / theirs[s] for s in ours if s in theirs])
    assert abs(np.median(ratio) - 1) < 0.05
    assert np.percentile(ratio, 25) > 0.88 and np.percentile(ratio, 75) < 1.12
    assert int(((ratio > 1.5) | (ratio < 1 / 1.5)).sum()) == disagree
    if files[0] == "aic_b200_sxm_vllm_fp8.csv":
        assert ours[("1", "64", "65536", "32")] == pytest.approx(302.6e-6, rel=1e-3)
        assert theirs[("1", "64", "65536", "32")] == pytest.approx(49.4e-6, rel=1e-3)
        assert ours[("1", "32", "65536", "32")] == pytest.approx(50.0e-6, rel=2e-3)


def test_repeated_rows_by_hand():
    """A row repeats where the twin timed its shape within 1.5x either way; a shape the twin
    lacks does not."""
    bench = _bench()

    def table(times: dict[tuple[int, int, int, int], float]):
        b, m, k, n = (np.array([s[i] for s in times], dtype=float) for i in range(4))
        return SimpleNamespace(b=b, m=m, k=k, n=n, measured=np.array(list(times.values())))

    ours = table({(1, 1, 32, 32): 10.0, (1, 2, 32, 32): 10.0, (1, 4, 32, 32): 10.0,
                  (1, 8, 32, 32): 10.0, (2, 1, 32, 32): 10.0})
    theirs = table({(1, 1, 32, 32): 14.9, (1, 2, 32, 32): 15.1, (1, 4, 32, 32): 6.8,
                    (1, 8, 32, 32): 6.6})
    assert list(bench.repeated_rows(ours, theirs)) == [True, False, True, False, False]


#: the model's held-out (median, p90) on the rows the twin table repeats, and how many of the
#: held-out rows those are, where the table misses the goal on all its rows
REPEATED = {"aiconfigurator B200 fp8, vLLM": (912, 0.040, 0.194),
            "aiconfigurator B200 fp8, SGLang": (927, 0.067, 0.241)}


def test_the_b200_framework_misses_are_rows_their_twin_does_not_repeat(scores):
    """The two B200 framework tables that miss the p90 meet the goal on the held-out rows
    their GB200 twin repeats within 1.5x (the same fit); every other table with a twin meets
    it on all its rows, and there leaving rows out moves its p90 by at most 1.6 points.
    docs/measuring.md shows the table."""
    doc = (ROOT / "docs" / "measuring.md").read_text("utf-8")
    twins = {t["name"] for t in TABLES if "twin" in t}
    assert len(twins) == 20 and {n for n, s in scores.items() if s.repeated} == twins
    for name in twins:
        s, r = scores[name], scores[name].repeated
        assert r.of == s.model.rows and 900 <= r.rows <= r.of, name
        assert f"**{r.median_abs_error:.1%} / {r.p90_abs_error:.1%}**" in doc, name
        assert all(r.goals()), name
        if name in REPEATED:
            assert not s.goals()[1], name
            rows, median, p90 = REPEATED[name]
            assert (r.rows, r.median_abs_error, r.p90_abs_error) == (
                rows, pytest.approx(median, abs=0.0006), pytest.approx(p90, abs=0.0006))
        else:
            assert all(s.goals()), name
            assert abs(r.p90_abs_error - s.model.p90_abs_error) < 0.016, name


def test_bench_accuracy_gpu_without_a_gpu_is_one_error_line():
    """`bench_accuracy.py --gpu` where there is no CUDA GPU (or no PyTorch): measure's own
    Error line, exit 2, no traceback, and no CSV left in benchmarks/data."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a CUDA GPU is here: --gpu would measure it")
    keep = DATA / "cuda_measured.csv"
    existed = keep.exists()
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_accuracy.py"),
                           "--skip-cpu", "--gpu", "--gpu-seconds", "1"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    assert keep.exists() == existed


def test_the_quantize_kernels_roofline_reads_the_rows(scores):
    """Where a file states a quantize pass, the model gives the pass a roofline of its own
    (kernel_terms.quantize_time). It lowers the held-out median on all 21 such tables and the
    p90 on every counted one, and its fitted figures are the ones read off the rows by hand
    (test_framework_fp8_quantize_costs_more_than_its_bytes): vLLM's serial cost per row of A
    is the 7.1 ns of (238.6 − 122.0) µs over 16,384 rows on the H100 (7.2 and 6.3 ns on the
    H200 and the B200), TensorRT-LLM's per-tensor pass has none (a few hundredths of a ns),
    and SGLang's one row of 65,536 elements in 40.2 µs is 0.61 ns an element."""
    assert len(QUANTIZE_PASS) == 21
    for name in QUANTIZE_PASS:
        s = scores[name]
        assert s.model.params.quantize_kernel and s.quantize_bytes in (3.0, 5.0), name
        # within the split-K family, the same form with the pass as a kernel and without
        assert s.split_family.median_abs_error < s.ramp.median_abs_error, name
        if name not in NOT_COUNTED:
            assert s.split_family.p90_abs_error < s.ramp.p90_abs_error, name
    for name, ns in (("H100 SXM", 7.1), ("H200", 7.2), ("B200", 6.3)):
        p = scores[f"aiconfigurator {name} fp8, vLLM"].model.params
        assert p.quantize_row_latency * 1e9 == pytest.approx(ns, rel=0.05), name
        trt = scores[f"aiconfigurator {name} fp8"].model.params
        assert trt.quantize_row_latency * 1e9 < 0.2, name
    sglang = scores["aiconfigurator H100 SXM fp8, SGLang"].model.params
    assert sglang.quantize_row_latency * 1e9 < 0.5
    # one row of 65,536 (n = 32): the floor, one 64×64 tile's K loop and the pass, 46.5 µs
    # for the 40.2 µs measured
    from sheetgen.calibrate import fit
    from sheetgen.calibrate.report import device_for

    row = read_measurements(DATA / "aic_h100_sxm_sglang_fp8.csv", dtype="fp8")
    row = row.subset((row.m == 1) & (row.k == 65536) & (row.n == 32))
    assert row.measured[0] == pytest.approx(40.19e-6, rel=1e-3)
    device = device_for(load_presets().get("H100 SXM"), "fp8")
    assert fit.predict(device, sglang, row)[0] == pytest.approx(40.19e-6, rel=0.2)
    # every other table fits and scores exactly as before: no pass, no kernel
    for name in set(DOCUMENTED) - QUANTIZE_PASS:
        s = scores[name]
        assert s.split_family is s.ramp and s.family in (s.ramp, s.tile_family), name
        assert s.model.model == s.family.model + fit.WRITE, name
        assert not s.model.params.quantize_kernel, name
    assert not Path(ROOT / "benchmarks" / "quantize_kernel_experiment.py").exists()


def test_the_k_loop_grows_with_vllms_tile(scores):
    """vLLM's and SGLang's fp8 GEMMs on Hopper are CUTLASS kernels that never split k and pick
    their tile by m (64×64 to m = 64, 64×128 to 128, 128×128 beyond). The rows show it: at
    n = 32, k = 65,536 on the H100 one GEMM takes 50.9 µs at m = 64, 94.9 at 128 and 196.0 at
    256, about 1 : 2 : 4, where a 64×64 tile's 2·64·64 FLOPs a unit of k at 1/132 of 73 %
    of the 1,979 TFLOP/s fp8 peak take 0.75 ns: 49 µs. The model whose K loop grows with the
    tile (and bounds the GEMM, in waves of the library's tiles, rather than adding to it) fits
    the fit half better on all four Hopper tables, lowers the held-out p90 of each by 8 to 13
    points, under 25 % on all four, and its fitted latency per unit of k is that one tile's
    within 30 % (0.56–0.59 ns against 0.64–0.78 ns at each table's own fitted compute
    efficiency); each tile's own cost beside its loop fits 1.2–1.9 µs, where the rows read
    1.5 µs a wave (m = 1, k = 32: 6.7 µs at n = 16,384, two waves of 64-wide tiles on 132
    SMs, 15.6 µs at 65,536, eight)."""
    rows = read_measurements(DATA / "aic_h100_sxm_vllm_fp8.csv", dtype="fp8")
    at = {int(m): t for m, k, n, t in zip(rows.m, rows.k, rows.n, rows.measured, strict=True)
          if k == 65536 and n == 32}
    assert at[64] == pytest.approx(50.9e-6, rel=0.01) and at[256] == pytest.approx(196e-6, rel=0.01)
    assert 1.8 < at[128] / at[64] < 2.0 and 3.7 < at[256] / at[64] < 4.0
    wide = {int(n): t for m, k, n, t in zip(rows.m, rows.k, rows.n, rows.measured,
                                            strict=True) if m == 1 and k == 32}
    per_wave = (wide[65536] - wide[16384]) / (8 - 2)
    assert per_wave == pytest.approx(1.48e-6, rel=0.02)
    h100 = load_presets().get("H100 SXM")
    one_tile = 2 * 64 * 64 / (h100.peak("fp8") * 0.73 / h100.sm_count)
    assert one_tile == pytest.approx(0.75e-9, rel=0.01)
    assert 65536 * one_tile == pytest.approx(at[64], rel=0.05)
    for name in (f"aiconfigurator {gpu} fp8, {fw}" for gpu in ("H100 SXM", "H200")
                 for fw in ("vLLM", "SGLang")):
        s = scores[name]
        p = s.model.params
        assert s.family is s.tile_family and p.k_tile_growth, name
        assert s.tile_family.p90_abs_error < s.split_family.p90_abs_error - 0.08, name
        assert s.tile_family.median_abs_error < s.split_family.median_abs_error, name
        tile = 2 * 64 * 64 / (h100.peak("fp8") * p.compute_efficiency / h100.sm_count)
        assert p.k_latency == pytest.approx(tile, rel=0.3), name
        assert 1.2e-6 < p.tile_latency < 1.9e-6, name
        assert p.tile_latency == pytest.approx(per_wave, rel=0.3), name
    assert {n for n in FRAMEWORK_FP8 if scores[n].model.p90_abs_error <= 0.25} \
        == FRAMEWORK_FP8_MET
    # cuBLAS splits k instead: the bf16 tables keep the split-K floor
    for name in ("aiconfigurator H100 SXM bf16", "aiconfigurator H100 SXM bf16, vLLM",
                 "aiconfigurator H200 bf16, SGLang"):
        assert scores[name].family is scores[name].split_family, name


def test_quantize_pass_is_what_the_fp8_tables_were_missing(tmp_path):
    """Without its `activation_quantize_bytes_per_element` line, aiconfigurator's H100 fp8
    table is fitted as a bare fp8 GEMM and the held-out p90 stays above 30 % (40 % with the
    smooth max alone); with the 5-byte quantize pass it is 14.3 %."""
    from sheetgen.calibrate import fit
    from sheetgen.calibrate.report import device_for

    text = (DATA / "aic_h100_sxm_fp8.csv").read_text("utf-8")
    bare = tmp_path / "bare.csv"
    bare.write_text("\n".join(ln for ln in text.splitlines()
                              if "activation_quantize_bytes_per_element" not in ln))
    device = device_for(load_presets().get("H100 SXM"), "fp8")
    by_model = {h.model: h for h in fit.held_out(device, read_measurements(bare), ())}
    assert by_model[fit.SMOOTH_K_SPLIT].p90_abs_error > 0.30
    assert by_model[fit.SMOOTH_K_SPLIT].params.quantize_bytes == 0


def test_blackwell_tables_fit_the_same_with_any_sm_count_from_129_to_255():
    """NVIDIA publishes no SM count for the GB200's and GB300's GPUs (the B300 ships with 148
    or 152), so their presets take 148. The fit uses the count only in the split-K switch
    (tiles < SMs and k ≥ 2,048; waves are off): on these tables, whose m and n are powers
    of two, the switch is the same row for row for any count from 129 to 255, so the
    held-out figures are too. Without a count it never fires."""
    from sheetgen.model import kernel_terms, refined

    for table in (t for t in TABLES if t["name"] in BLACKWELL):
        gpu = load_presets().get(table["gpu"])
        assert gpu.sm_count == 148
        data = read_measurements(DATA / table["file"], dtype=table["dtype"])
        tiles = refined.tiles(data.m, data.n, gpu.tile_m, gpu.tile_n)
        switch = kernel_terms.split_k(tiles, 148, data.k, 2048)
        assert 0 < switch.sum() < len(switch), table["name"]
        for sms in (129, 152, 160, 255):
            assert np.array_equal(kernel_terms.split_k(tiles, sms, data.k, 2048), switch)
        assert kernel_terms.split_k(tiles, 128, data.k, 2048).sum() < switch.sum()
        assert not kernel_terms.split_k(tiles, None, data.k, 2048).any()


def test_deepgemm_bandwidth_is_fp8_in_bf16_out():
    """DeepGEMM's README gives each shape's memory bandwidth beside its TFLOPS. sheetgen's
    bytes for an fp8 GEMM (A and B read in fp8, C written in bf16: the fp8 dtype's auto
    storage) over the table's time give the same GB/s: 64×7168×2112 (m×k×n) at 206 TFLOPS
    moves 458,752 + 15,138,816 + 270,336 B = 15.87 MB in 9.41 µs, 1,688 GB/s; its grouped
    GEMMs are b = groups GEMMs, each with its own weight."""
    from sheetgen.calibrate import fit
    from sheetgen.calibrate.report import device_for

    published = {(1, 64, 7168, 2112): 1688, (1, 4096, 16384, 7168): 384,  # (b, m, k, n): GB/s
                 (4, 8192, 7168, 4096): 434, (1, 1024, 7168, 4096): 924,
                 (8, 4096, 2048, 7168): 826, (4, 256, 7168, 4096): 2064}
    data = read_measurements(DATA / "deepgemm_h800_fp8.csv", dtype="fp8")
    assert len(data) == 28 and data.quantize_bytes == 0
    device = device_for(load_presets().get("H100 SXM"), "fp8")
    rate = fit.fixed_terms(device, fit.PURE, data).moved / data.measured
    keys = list(zip(data.b.astype(int), data.m.astype(int), data.k.astype(int),
                    data.n.astype(int), strict=True))
    for key, gbps in published.items():
        assert keys.count(key) == 1, key
        assert rate[keys.index(key)] / 1e9 == pytest.approx(gbps, rel=0.006), key


def test_aiter_converter_joins_files_and_leaves_out_biased_gemms(tmp_path):
    """Several aiter files make one table, each shape once (from the first file that has
    it); a GEMM with a bias is left out; a device the files lack is refused; files whose
    GEMMs write different output dtypes are refused."""
    conv = _benchmark("aiter_gemm_table")
    head = ("gfx,cu_num,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,"
            "us,kernelName,err_ratio,tflops,bw\n")
    row = "gfx950,256,{m},{n},{k},{bias},torch.bfloat16,{out},False,False,asm,1,0,{us},k,0,1,1\n"
    first, second, fp32 = (tmp_path / f"{n}.csv" for n in ("a", "b", "c"))
    first.write_text(head + row.format(m=1, n=256, k=7168, bias="False", out="torch.bfloat16",
                                       us=5.2) + row.format(m=2, n=256, k=7168, bias="True",
                                                            out="torch.bfloat16", us=5.3))
    second.write_text(head + row.format(m=1, n=256, k=7168, bias="False",
                                        out="torch.bfloat16", us=9.9)
                      + row.format(m=4, n=512, k=1024, bias="False", out="torch.bfloat16",
                                   us=3.0))
    fp32.write_text(head + row.format(m=8, n=8, k=8, bias="False", out="torch.float32", us=1))
    out = tmp_path / "joined.csv"
    assert conv.main([str(first), str(second), "--gfx", "gfx950", "--cu-num", "256",
                      "-o", str(out)]) == 0
    got = list(csv.DictReader(ln for ln in out.read_text().splitlines()
                              if not ln.startswith("#")))
    assert [(r["m"], r["k"], r["n"], r["time_s"]) for r in got] == [
        ("1", "7168", "256", "5.200000e-06"), ("4", "1024", "512", "3.000000e-06")]
    assert "output_dtype" not in out.read_text()
    with pytest.raises(SystemExit):
        conv.main([str(first), str(fp32), "--gfx", "gfx950", "--cu-num", "256"])
    with pytest.raises(SystemExit):
        conv.main([str(first), "--gfx", "gfx942", "--cu-num", "304"])


def test_deepgemm_converter_reads_the_readme_tables(tmp_path):
    """deepgemm_table.py reads the three tables of DeepGEMM's README (rows copied from
    deepseek-ai/DeepGEMM@2e7e580 README.md) and no other: a normal GEMM as b = 1, a grouped
    one as b = its groups, time = 2·b·M·N·K / TFLOPS; a README without the tables is refused."""
    conv = _benchmark("deepgemm_table")
    readme = "\n".join([
        "### Normal GEMMs for dense models", "",
        "|  M   |   N   |   K   | Computation | Memory bandwidth | Speedup |",
        "|:----:|:-----:|:-----:|:-----------:|:----------------:|:-------:|",
        "|  64  | 2112  | 7168  | 206 TFLOPS  |    1688 GB/s     |  2.7x   |", "",
        "### Grouped GEMMs for MoE models (contiguous layout)", "",
        "|    4    |    8192     | 4096 | 7168 | 1346 TFLOPS |     434 GB/s     |  1.3x   |",
        "", "### Something else", "",
        "|  1  | 2  | 3  | 4 TFLOPS  |    5 GB/s     |  1.0x   |"])
    rows = conv.rows(readme)
    assert [(r["b"], r["m"], r["k"], r["n"]) for r in rows] == [(1, 64, 7168, 2112),
                                                                 (4, 8192, 7168, 4096)]
    assert float(rows[0]["time_s"]) == pytest.approx(2 * 64 * 2112 * 7168 / 206e12, rel=1e-6)
    assert float(rows[1]["flops_per_s"]) == pytest.approx(1346e12, rel=1e-6)
    committed = _rows("deepgemm_h800_fp8.csv")
    assert {r["b"] for r in committed} == {"1", "2", "4", "8"} and len(committed) == 28
    empty = tmp_path / "README.md"
    empty.write_text("# DeepGEMM\n")
    with pytest.raises(SystemExit):
        conv.main([str(empty)])


def test_accuracy_chart_draws_every_table(scores, tmp_path):
    """`bench_accuracy.py --chart`: one point per table in five legend groups (31 NVIDIA
    tables, 11 vLLM and SGLang fp8 tables, 8 AMD, 1 Intel, 9 not counted), written as a
    PNG; docs/measuring.md shows the one it drew."""
    pytest.importorskip("matplotlib")
    bench = _bench()
    listed = [scores[t["name"]] for t in TABLES]
    groups: dict[str, int] = {}
    for s in listed:
        groups[bench.chart_group(s.table)] = groups.get(bench.chart_group(s.table), 0) + 1
    assert sorted(groups.values()) == [1, 8, 9, 11, 31] and set(groups) == set(
        bench.CHART_STYLE)
    out = tmp_path / "accuracy.png"
    bench.accuracy_chart(listed, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
    assert "](accuracy.png)" in (ROOT / "docs" / "measuring.md").read_text("utf-8")
    assert (ROOT / "docs" / "accuracy.png").stat().st_size > 20_000


#: TensorRT-LLM's bf16 tables (aiconfigurator): each GPU's dense bf16 peak (FLOP/s) and HBM
#: bandwidth (B/s), its preset's, and per decade of FLOPs from 1e9 (the A100's from 1e8) the
#: compute-bound rows (the pure roofline's compute time at least its memory time) and the
#: median share of the peak they reached; then the median time of the 1e13 decade's rows
SHARE_BY_SIZE = {
    "aic_a100_sxm_bf16.csv": (312e12, 2.039e12, ((13, 0.1985), (107, 0.4103), (109, 0.6857),
                                                 (80, 0.8311), (38, 0.8351), (2, 0.832)), 67.8e-3),
    "aic_h100_sxm_bf16.csv": (989.4e12, 3.35e12, ((31, 0.5048), (88, 0.694), (100, 0.77),
                                                  (70, 0.7658), (7, 0.7448)), 23.9e-3),
    "aic_h200_sxm_bf16.csv": (989.4e12, 4.8e12, ((67, 0.4636), (126, 0.6858), (119, 0.7673),
                                                 (70, 0.7546), (7, 0.6994)), 25.7e-3),
    "aic_b200_sxm_bf16.csv": (2.25e15, 8e12, ((37, 0.3396), (88, 0.5856), (100, 0.6535),
                                              (70, 0.6875), (7, 0.6165)), 13.1e-3),
    "aic_gb200_bf16.csv": (2.5e15, 8e12, ((31, 0.364), (88, 0.557), (100, 0.608), (70, 0.6419),
                                          (7, 0.5779)), 12.2e-3),
    "aic_b300_sxm_bf16.csv": (2.25e15, 7.75e12, ((37, 0.3746), (88, 0.6326), (100, 0.6951),
                                                 (70, 0.724), (7, 0.6467)), 12.1e-3),
    "aic_gb300_bf16.csv": (2.5e15, 8e12, ((31, 0.3733), (88, 0.6195), (100, 0.7113),
                                          (70, 0.7541), (7, 0.722)), 9.8e-3),
}


def share_by_size(name: str, peak: float, bandwidth: float
                  ) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """Per decade of FLOPs, the shares of the peak and the times of the table's
    compute-bound bf16 rows (2 bytes an element; rows faster than the roofline by more
    than 2 %, calibrate's flag, left out), from the CSV alone."""
    shares: dict[int, list[float]] = {}
    times: dict[int, list[float]] = {}
    for r in _rows(name):
        m, k, n, b, t = int(r["m"]), int(r["k"]), int(r["n"]), int(r["b"]), float(r["time_s"])
        flops, moved = 2 * m * k * n * b, 2 * (m * k + k * n + m * n) * b
        if flops / peak < moved / bandwidth or flops / (peak * t) > 1 / 0.98:
            continue
        decade = int(math.log10(flops))
        shares.setdefault(decade, []).append(flops / (peak * t))
        times.setdefault(decade, []).append(t)
    return shares, times


@pytest.mark.parametrize(("name", "figures"), SHARE_BY_SIZE.items(), ids=list(SHARE_BY_SIZE))
def test_the_longest_gemms_reach_less_of_the_peak_on_hopper_and_blackwell(name, figures):
    """docs/measuring.md's table, from the CSV alone: the share of the peak climbs with size
    (the compute ramp), and GEMMs of 1e13 FLOPs or more (10 to 26 ms each) then reach 2.1 to
    7.7 points less of it than those of 1e12 on the H100, H200, B200, GB200, B300 and
    GB300, where the A100's (68 ms each) reach the same: a ramp that only rises cannot
    follow that."""
    peak, bandwidth, expect, long_time = figures
    gpu = load_presets().get(next(t["gpu"] for t in TABLES if t["file"] == name))
    assert (gpu.peak("bf16"), gpu.hbm_bandwidth) == (peak, bandwidth)  # the spec figures
    shares, times = share_by_size(name, peak, bandwidth)
    assert max(shares) == 13 and min(shares) == 13 - len(expect) + 1
    got = [(len(shares[d]), float(np.median(shares[d]))) for d in sorted(shares)]
    assert [c for c, _ in got] == [c for c, _ in expect]
    assert [v for _, v in got] == pytest.approx([v for _, v in expect], abs=5e-5)
    assert float(np.median(times[13])) == pytest.approx(long_time, abs=0.05e-3)
    drop = float(np.median(shares[12]) - np.median(shares[13]))
    if name == "aic_a100_sxm_bf16.csv":
        assert abs(drop) < 0.005
    else:
        assert 0.02 < drop < 0.08
    # calibrate's report prints the same medians (--no-fit: no fit needed for the measured)
    cal = calibrate_file(DATA / name, gpu=gpu.name, dtype="bf16", no_fit=True)
    sizes = cal.share_by_size()
    assert [b["rows"] for b in sizes] == [c for c, _ in got]
    assert [b["measured_median_share"] for b in sizes] == pytest.approx([v for _, v in got],
                                                                        rel=1e-12)
    assert [b["flops_from"] for b in sizes] == [10.0 ** d for d in sorted(shares)]


def test_share_chart_draws_the_table_above(tmp_path):
    """`bench_accuracy.py --share-chart`: one line per GPU from the shares calibrate reports
    (the table's figures), written as a PNG; docs/measuring.md shows the one it drew."""
    pytest.importorskip("matplotlib")
    bench = _bench()
    shares = bench.shares_by_size()
    files = {next(t["gpu"] for t in TABLES if t["name"] == n): next(
        t["file"] for t in TABLES if t["name"] == n) for n in bench.SHARE_TABLES}
    assert set(shares) == set(files) and set(files.values()) == set(SHARE_BY_SIZE)
    for gpu, sizes in shares.items():
        expect = SHARE_BY_SIZE[files[gpu]][2]
        assert [b["measured_median_share"] for b in sizes] == pytest.approx(
            [v for _, v in expect], abs=5e-5)
    out = tmp_path / "share.png"
    bench.share_chart(out, shares)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
    assert "](share_by_size.png)" in (ROOT / "docs" / "measuring.md").read_text("utf-8")
    assert (ROOT / "docs" / "share_by_size.png").stat().st_size > 20_000
