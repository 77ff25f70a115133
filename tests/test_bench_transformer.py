"""benchmarks/bench_transformer.py: the estimates of every measurement whose setup is fully known
stay within 25 % but the three TensorRT-LLM H100 TTFT rows docs/transformer.md lists as open,
and docs/transformer.md holds the tables the script prints."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    return load_script(ROOT / "benchmarks" / "bench_transformer.py")


def test_held_rows_within_25_percent_but_the_open_ttft_rows_and_docs_table_current(
        capsys: pytest.CaptureFixture[str]) -> None:
    """--within holds every row whose setup is fully known: it fails, naming exactly the
    three TensorRT-LLM v0.5 H100 TTFT rows docs/transformer.md lists as still open (so a fix
    or a new miss both show here); every decode-time row is within 25 %."""
    bench = _bench()
    assert bench.main(["--within", "0.25"]) == 1
    captured = capsys.readouterr()
    printed = captured.out
    assert captured.err.splitlines() == [
        "off by -26%: LLaMA 7B, 1× H100 SXM, 128 in, ttft",
        "off by -25%: LLaMA 7B, 1× H100 SXM, 2048 in, ttft",
        "off by -25%: LLaMA 70B, 4× H100 SXM, 128 in, ttft"]
    rows = [bench.estimate(m) for m in bench.MEASUREMENTS]
    assert all(abs(r["error"]) <= 0.25 for r in rows if r["metric"] in ("tpot", "e2e"))
    table = [ln for ln in printed.splitlines() if ln.startswith("| ")]
    assert len(table) == 1 + len(bench.MEASUREMENTS)
    docs = (ROOT / "docs" / "transformer.md").read_text("utf-8")
    for row in table:
        assert row in docs, row
    # the whole table as printed, its header rule included, is one block of the page
    assert "\n".join(ln for ln in printed.splitlines() if ln.startswith("|")) in docs
    # the measured figures as published: NIM ITL 18.58 ms; vLLM 70B TP4 2077.53 ms
    assert {m.measured_ms for m in bench.MEASUREMENTS} >= {18.58, 2077.53}


def test_client_side_ttft_is_shown_but_not_held() -> None:
    """NIM's TTFT is measured by AIPerf at the client (tokenization, queuing and network
    included, per NIM's benchmarking guide): both rows stay in the table with their error and
    the reason, and --within does not hold them; NIM's ITL rows are held."""
    bench = _bench()
    nim = [m for m in bench.MEASUREMENTS if m.source == bench.NIM]
    assert {m.metric for m in nim if m.unknown} == {"ttft"}
    assert all("client" in m.unknown for m in nim if m.metric == "ttft")
    assert all(not m.unknown for m in nim if m.metric == "tpot")
    rows = bench.table([bench.estimate(m) for m in nim])
    assert sum("| no: measured at the client (AIPerf)" in r for r in rows) == 2
    # the 500-token row misses by more than 25 % and is still not reported as a held miss
    bad = bench.held_misses([bench.estimate(m) for m in nim], 0.25)
    assert bad == []


def test_one_decode_step_would_overshoot_the_short_prompts() -> None:
    """gptSessionBenchmark's "output length 1" runs the context phase only (maxNewTokens =
    (input + 1) − input = 1, one pass of GptSession::generate's step loop, no generation
    step). Had it timed a decode step too, the realistic TTFT + step would overshoot every
    128-token row by more than 25 %. By hand: one decode step of the LLaMA 7B build reads its
    weights but the input embedding table, 6,738,415,616 − 32,000 · 4,096 = 6,607,343,616 B in
    fp8, plus 129 tokens of fp8 KV (2 · 32 · 32 · 128 B each): 1.9824 ms at 3.35 TB/s."""
    bench = _bench()
    assert bench.ENGINE_STEPS_TIMED == 1
    lines = bench.decode_step_evidence()[2:]
    seven = next(ln for ln in lines if ln.startswith("| LLaMA 7B, 1× H100 SXM, 128 in"))
    step_bound = float(seven.split("|")[4].split("/")[0])
    assert step_bound == pytest.approx((6_607_343_616 + 129 * 2 * 32 * 32 * 128) / 3.35e12 * 1e3,
                                       abs=0.005)
    for ln in lines:
        error = float(ln.split("|")[6].strip().rstrip("%")) / 100
        assert (error > 0.25) if " 128 in " in ln else (error < 0.05), ln


def test_row_gemms_bracket_the_h100_gap_by_the_quantize() -> None:
    """aiconfigurator's measured GEMMs at the rows' own shapes: on the A100 at m = 128 they
    take 1.3× the realistic time; on the H100 in fp8 they include a per-call activation
    quantize. By hand for LLaMA 7B at 128 tokens: 5 calls × (12.12 − 2.54) µs (the tables'
    smallest fp8 and bf16 GEMMs) + 5 B · 128 · (4 · 4096 + 11008) = 17,530,880 B at
    3.35 TB/s · 0.85 = 47.9 + 6.2 = 54.1 µs per layer. With every quantize paid the three held
    H100 rows would be within 25 %; with none, the 128-token ones would not."""
    bench = _bench()
    # the interpolation returns the table's own figure on its grid
    d = bench.read_measurements(bench.DATA / "aic_h100_sxm_fp8.csv", dtype="fp8")
    grid = {(int(m), int(k), int(n)): float(t)
            for m, k, n, t, b in zip(d.m, d.k, d.n, d.measured, d.b, strict=True) if b == 1}
    assert bench.measured_gemm(grid, 128, 4096, 4096) == grid[(128, 4096, 4096)]
    assert bench.layer_gemms(bench.LLAMA2_70B, 4) == [(8192, 2560), (2048, 8192),
                                                      (8192, 7168), (8192, 7168), (7168, 8192)]
    rows = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
            for ln in bench.row_gemm_evidence()[2:]}

    def us(cell: str) -> float:
        return float(cell.split()[0])

    def pct(cell: str) -> float:
        return float(cell.rstrip("%")) / 100

    quant = us(rows["LLaMA 7B, 1× H100 SXM, 128 in"][1])
    assert quant == pytest.approx(5 * (12.12 - 2.54) + 17_530_880 / (3.35e12 * 0.85) * 1e6,
                                  abs=1)
    for name in ("LLaMA 7B, 1× A100 80GB SXM, 128 in", "LLaMA 70B, 4× A100 80GB SXM, 128 in"):
        assert 1.3 <= us(rows[name][0]) / us(rows[name][2]) <= 1.4, name
    for name in ("LLaMA 7B, 1× H100 SXM, 128 in", "LLaMA 7B, 1× H100 SXM, 2048 in",
                 "LLaMA 70B, 4× H100 SXM, 128 in"):
        assert abs(pct(rows[name][3])) <= 0.25, name
    for name in ("LLaMA 7B, 1× H100 SXM, 128 in", "LLaMA 70B, 4× H100 SXM, 128 in"):
        assert pct(rows[name][4]) < -0.25, name
    docs = (ROOT / "docs" / "transformer.md").read_text("utf-8")
    assert all(ln in docs for ln in bench.row_gemm_evidence())


def test_gemm_evidence_waves_worsen_the_realistic_gemm_time() -> None:
    """Against aiconfigurator's measured bf16 GEMMs at prefill shapes (TensorRT-LLM's Linear,
    public tables in benchmarks/data), the realistic GEMM time without wave quantization is
    within 10 % of the median measurement at every m on H100, and turning 128×128-tile waves
    on raises the mean |log error| on every bf16 table (why the Transformer does not use it)."""
    rows = [r.split("|")[1:-1] for r in _bench().gemm_evidence()[2:]]
    by = {(r[0].strip(), r[1].strip()): [float(x) for x in r[2:]] for r in rows}
    h100 = by[("aiconfigurator H100 SXM bf16", "off")]
    assert all(0.9 <= x <= 1.1 for x in h100[:-1]), h100
    for (name, waves), values in by.items():
        if waves == "off" and name.endswith("bf16"):
            assert by[(name, "on")][-1] > values[-1], name


def test_kernel_floor_evidence_brackets_the_preset_floor() -> None:
    """The published tables' shortest GEMMs bracket the preset's 5 µs per-kernel floor:
    aiconfigurator's (CUDA-graph replay) 2.44-2.54 µs on A100, H100 and H200 in bf16, XLA's
    H100 5.20 µs (its 256³ bf16 GEMM); the fp8 tables' ~12 µs include quantizing the
    activation. The TensorRT-LLM v0.5 rows use the unfused build's 15 kernels per layer."""
    bench = _bench()
    small = bench.smallest_gemms()
    for name in ("aiconfigurator A100 SXM bf16", "aiconfigurator H100 SXM bf16",
                 "aiconfigurator H200 bf16"):
        assert 2.4e-6 <= small[name] <= 2.6e-6, name
    assert small["XLA H100 SXM bf16"] == pytest.approx(5.20e-6, abs=0.01e-6)
    assert small["aiconfigurator H100 SXM fp8"] > 4 * small["aiconfigurator H100 SXM bf16"]
    assert small["aiconfigurator H100 SXM bf16"] < 5e-6 < small["XLA H100 SXM bf16"]
    trt = [m for m in bench.MEASUREMENTS if m.source == bench.TRTLLM]
    assert {m.layer_kernels for m in trt} == {15}
    assert {m.layer_kernels for m in bench.MEASUREMENTS if m.source != bench.TRTLLM} == {9}
    lines = bench.floor_evidence()
    assert sum(ln.startswith("| LLaMA") for ln in lines) == len(trt)


def test_fitted_floors_are_the_calibration_docs_figures() -> None:
    """--floors quotes calibrate's fitted floors as docs/measuring.md's accuracy table gives
    them (the model's floor column), so a refit there shows here."""
    bench = _bench()
    docs = (ROOT / "docs" / "measuring.md").read_text("utf-8")
    quoted = {"aiconfigurator H100 SXM bf16": bench.FITTED_FLOORS["aiconfigurator fit"]["H100 SXM"],
              "aiconfigurator A100 SXM bf16":
                  bench.FITTED_FLOORS["aiconfigurator fit"]["A100 80GB SXM"],
              "XLA H100 SXM bf16": bench.FITTED_FLOORS["XLA H100 fit"]["H100 SXM"]}
    for table, floor in quoted.items():
        row = next(ln for ln in docs.splitlines() if ln.startswith(f"| [{table}]"))
        fitted = row.rstrip(" |").split("|")[-1].split(" / ")[2]
        assert fitted == f"{1e6 * floor:.2f} µs", (table, fitted)


def test_fp8_rows_pay_the_attention_output_quantize_by_hand() -> None:
    """TensorRT-LLM v0.5's FP8 engines quantize the attention plugin's 16-bit output with a
    kernel of their own (sheetgen.model.transformer.ATTENTION_QUANTIZE_KERNELS); its A100 fp16
    engines and the other sources' rows do not. By hand for LLaMA 70B TP4 at 128 tokens: 80
    layers × (5 µs + 128 · 16 heads · 128 · (2 + 1) B at 3.35 TB/s · 0.85) = 0.4221 ms more."""
    bench = _bench()
    held = {(m.source, m.dtype) for m in bench.MEASUREMENTS if m.attention_quantize}
    assert held == {(bench.TRTLLM, "fp8")}
    assert all(m.attention_quantize for m in bench.MEASUREMENTS
               if m.source == bench.TRTLLM and m.dtype == "fp8")
    row = next(m for m in bench.MEASUREMENTS if m.source == bench.TRTLLM
               and m.measured_model == "LLaMA 70B" and m.dtype == "fp8" and m.prompt == 128)
    on = bench.estimate(row)["realistic_ms"]
    off = bench.estimate(bench.replace(row, attention_quantize=False))["realistic_ms"]
    assert on - off == pytest.approx(
        80 * (5e-6 + 128 * 16 * 128 * 3 / (3.35e12 * 0.85)) * 1e3, rel=1e-9)
