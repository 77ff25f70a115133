"""The Transformer sheet against published measurements of real serving systems.

Each row is a measurement someone published with its setup (model, GPUs, precision, tensor
parallel degree, batch or concurrency, input and output lengths); sheetgen estimates the same
setup with `sheetgen.transformer` and the table gives the bound (pure roofline), the realistic
estimate (the preset's measured efficiencies plus a launch floor per kernel) and the error of
the realistic estimate: (estimate − measured) / measured. Prints the markdown table that
docs/transformer.md holds.

    python benchmarks/bench_transformer.py              # the table
    python benchmarks/bench_transformer.py --json       # the rows as JSON
    python benchmarks/bench_transformer.py --within 0.25  # exit 1 if a row whose setup is
                                                          # fully known is off by more
    python benchmarks/bench_transformer.py --decode-step  # the TensorRT-LLM rows against TTFT
                                                          # plus one decode step (not what
                                                          # gptSessionBenchmark times)
    python benchmarks/bench_transformer.py --floors     # the per-kernel floor's evidence
    python benchmarks/bench_transformer.py --gemms      # the realistic GEMM time against
                                                        # aiconfigurator's measured GEMMs at
                                                        # prefill shapes, waves off and on
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tomllib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

import sheetgen
from sheetgen.calibrate.data import read_measurements
from sheetgen.inputs.presets import DTYPE_BYTES, load_presets
from sheetgen.model import refined
from sheetgen.model import transformer as xref

NIM = ("https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md "
       "(NVIDIA NIM LLM benchmarking, Llama-3.3-70b-instruct, NIM 1.8.0, 2 x H100 80G, fp8 TP2, "
       "AIPerf, concurrency 1)")
VLLM = ("https://buildkite.com/vllm/performance-benchmark/builds/9515 (vLLM nightly "
        "performance benchmark, latency tests: input 32, output 128, batch 8, mean end-to-end "
        "latency of benchmark_latency.py, H200)")

TRTLLM = ("https://github.com/NVIDIA/TensorRT-LLM/blob/138f96d45f90b9667426f7c47297d8c06bafac73/"
          "docs/source/performance.md (TensorRT-LLM v0.5 data, 'Low Latency': batch 1, first "
          "token latency from gptSessionBenchmark with 1 output token; H100-HBM3-80GB FP8 with "
          "--fp8_kv_cache, A100 FP16)")
#: The Llama 2 shapes of the TensorRT-LLM engine builds in that document (its build.py flags)
LLAMA2_7B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008,
             "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
             "vocab_size": 32000, "tie_word_embeddings": False}
LLAMA2_70B = {**LLAMA2_7B, "hidden_size": 8192, "intermediate_size": 28672,
              "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8}


#: TensorRT-LLM's build.py at that commit: "--use_custom_all_reduce: Activates
#: latency-optimized algorithm for all-reduce instead of NCCL", off unless given, and the
#: documented builds do not give it: the TP4 engines all-reduce with NCCL, whose algorithm
#: within one NVLink node is the ring
#: (examples/llama/build.py at 138f96d45f90b9667426f7c47297d8c06bafac73).
RING = "ring"
#: FlashAttention-2's forward on an A100: "50-73% of the theoretical maximum FLOPs/s"
#: (Dao 2023, arXiv:2307.08691, abstract); the low end, for the causal forward at these
#: lengths. (On H100 the default, 0.35, is FlashAttention-2's utilization there.)
A100_FA2 = 0.50


@dataclass(frozen=True)
class Measurement:
    """One published figure and the setup it was measured on."""

    source: str
    model: Any  # a bundled config's name or a dict of config fields (the measured shapes)
    measured_model: str
    gpu: str
    dtype: str
    tp: int
    batch: int
    prompt: int
    generate: int
    metric: str  # "ttft", "tpot" (ITL) or "e2e"
    measured_ms: float
    note: str = ""
    unknown: str = ""  # what the source leaves unknown; the row is shown, not held to --within
    allreduce: str = "auto"  # the TP all-reduce the measured build used, where stated
    attention_eff: float | None = None  # flash attention's efficiency; None: the default
    layer_kernels: int | None = None  # kernels per layer of the measured build; None: default
    launch: float | None = None  # the per-kernel floor, s; None: the preset's launch_overhead
    attention_quantize: bool = False  # the attention output quantized by a kernel of its own


#: Why a row's setup is not fully known, so that --within does not hold it (it stays in the
#: table with its error). NIM's benchmarking guide, "Metrics" (the page its performance table
#: points to for the method): TTFT is measured by the client (AIPerf) "from submitting the
#: query to receiving the first token", "including both the tokenization and de-tokenization
#: steps for the first output token", and "generally includes request queuing time, prefill
#: time and network latency" (https://docs.nvidia.com/nim/benchmarking/llm/latest/metrics.html);
#: the performance page does not say how much of it is not the GPU's.
CLIENT_TTFT = ("measured at the client (AIPerf): includes tokenization, de-tokenization, "
               "request queuing and network latency, none of them published apart")
#: The perf page says "A100" and its build commands do not name the memory variant.
A100_VARIANT = "A100 memory variant not stated: 80GB SXM assumed"

#: What one timed iteration of gptSessionBenchmark runs for "output length 1" (TensorRT-LLM
#: v0.5, the version the perf page's latency data comes from): the benchmark times
#: `session.generate(...)` and a stream synchronize (benchmarks/cpp/gptSessionBenchmark.cpp,
#: the loop after the warm-up); it calls `session.setup(batch, beam, maxInputLength +
#: maxNewTokens, ...)` and passes no maxNewTokens, so `GenerationConfig::fromInput` takes
#: `maxSequenceLength - maxInputLength` = 1 (cpp/tensorrt_llm/runtime/runtimeBuffers.cpp);
#: `GptSession::generate` loops `for (step = 0; step < maxNewTokens; ++step)` and runs the
#: engine's generation phase only for step > 0, preparing a next step only `if (step <
#: maxNewTokens - 1)` (cpp/tensorrt_llm/runtime/gptSession.cpp). So one iteration is the
#: context phase (one engine execution) plus the sampling decoder's one step on its logits
#: and per-call setup (a host copy of the input lengths, the decoder's newBatch, buffer
#: reshapes, output-id copies): no generation step. Both runtime versions read (the earlier
#: one, whose `GptSession::generate` holds the loop, and commit
#: 027cd518e3b63809a5c5799187991e7f1164fb12, whose `generateSingleBatch` does) run it so.
ENGINE_STEPS_TIMED = 1

#: Kernels per layer of each measured build (each pays the launch floor): TensorRT-LLM v0.5's
#: llama engines were built without --use_rmsnorm_plugin, --use_gemm_plugin and
#: --use_fused_mlp (the page's commands; examples/llama/build.py at 138f96d: off unless
#: given), so each layer runs the unfused graph of tensorrt_llm/models/llama/model.py
#: (sheetgen.model.transformer.LAYER_KERNELS, 15); vLLM's llama and NIM's TensorRT-LLM engines
#: fuse the residual add into RMSNorm and gate with up (FUSED_LAYER_KERNELS, 9).
UNFUSED, FUSED = xref.LAYER_KERNELS, xref.FUSED_LAYER_KERNELS
#: TensorRT-LLM v0.5's FP8 builds (--enable_fp8, H100) quantize the attention plugin's 16-bit
#: output for the output projection with a kernel of its own
#: (sheetgen.model.transformer.ATTENTION_QUANTIZE_KERNELS, which gives the source lines); the
#: A100 builds are fp16 (the page: remove --enable_fp8 on A100), with nothing to quantize.

MEASUREMENTS = [
    Measurement(NIM, "llama-3.1-70b", "Llama-3.3-70B-Instruct", "H100 SXM", "fp8", 2, 1, 5000,
                500, "tpot", 18.58, "ITL at concurrency 1", layer_kernels=FUSED),
    Measurement(NIM, "llama-3.1-70b", "Llama-3.3-70B-Instruct", "H100 SXM", "fp8", 2, 1, 500,
                2000, "tpot", 18.91, "ITL at concurrency 1", layer_kernels=FUSED),
    Measurement(NIM, "llama-3.1-70b", "Llama-3.3-70B-Instruct", "H100 SXM", "fp8", 2, 1, 5000,
                500, "ttft", 406.77, "client-side TTFT: includes request handling",
                CLIENT_TTFT, layer_kernels=FUSED),
    Measurement(NIM, "llama-3.1-70b", "Llama-3.3-70B-Instruct", "H100 SXM", "fp8", 2, 1, 500,
                2000, "ttft", 47.77, "client-side TTFT: includes request handling",
                CLIENT_TTFT, layer_kernels=FUSED),
    Measurement(VLLM, "llama-3.1-70b", "Llama-3-70B", "H200", "bf16", 4, 8, 32, 128, "e2e",
                2077.53, "latency_llama70B_tp4", layer_kernels=FUSED),
    Measurement(VLLM, "llama-3.1-8b", "Llama-3.1-8B", "H200", "bf16", 1, 8, 32, 128, "e2e",
                833.421, "latency_llama8B_tp1", layer_kernels=FUSED),
    Measurement(VLLM, "mixtral-8x7b", "Mixtral-8x7B", "H200", "bf16", 2, 8, 32, 128, "e2e",
                1917.44, "latency_mixtral8x7B_tp2", layer_kernels=FUSED),
    *(Measurement(TRTLLM, cfg, name, gpu, dtype, tp, 1, prompt, 1, "ttft", ms,
                  note + ("; NCCL ring all-reduce" if tp > 1 else ""), unknown, RING,
                  A100_FA2 if gpu.startswith("A100") else None, UNFUSED,
                  attention_quantize=dtype == "fp8")
      for cfg, name, gpu, dtype, tp, prompt, ms, note, unknown in (
          (LLAMA2_7B, "LLaMA 7B", "H100 SXM", "fp8", 1, 128, 7, "engine-level", ""),
          (LLAMA2_7B, "LLaMA 7B", "H100 SXM", "fp8", 1, 2048, 36, "engine-level", ""),
          (LLAMA2_70B, "LLaMA 70B", "H100 SXM", "fp8", 4, 128, 26, "engine-level", ""),
          (LLAMA2_70B, "LLaMA 70B", "H100 SXM", "fp8", 4, 2048, 109, "engine-level", ""),
          (LLAMA2_7B, "LLaMA 7B", "A100 80GB SXM", "fp16", 1, 128, 16, "engine-level",
           A100_VARIANT),
          (LLAMA2_7B, "LLaMA 7B", "A100 80GB SXM", "fp16", 1, 2048, 133, "engine-level",
           A100_VARIANT),
          (LLAMA2_70B, "LLaMA 70B", "A100 80GB SXM", "fp16", 4, 128, 47, "engine-level",
           A100_VARIANT),
          (LLAMA2_70B, "LLaMA 70B", "A100 80GB SXM", "fp16", 4, 2048, 377, "engine-level",
           A100_VARIANT))),
]


def estimate(m: Measurement) -> dict[str, Any]:
    """sheetgen's bound and realistic estimate of one measurement, in ms."""
    frame = sheetgen.transformer(m.model, gpu=m.gpu, dtype=m.dtype, tp=m.tp, batch=m.batch,
                                 prompt_tokens=m.prompt, generate=m.generate,
                                 allreduce=m.allreduce, attention_eff=m.attention_eff,
                                 layer_kernels=m.layer_kernels,
                                 attention_quantize=m.attention_quantize,
                                 **({} if m.launch is None else {"launch_overhead": m.launch}))
    s = frame.attrs["summary"]
    if m.metric == "e2e":
        bound = s["ttft_bound"] + (m.generate - 1) * s["tpot_bound"]
        real = s["ttft"] + (m.generate - 1) * s["tpot"]
    else:
        bound, real = s[f"{m.metric}_bound"], s[m.metric]
    return {**asdict(m), "bound_ms": 1e3 * bound, "realistic_ms": 1e3 * real,
            "error": (1e3 * real - m.measured_ms) / m.measured_ms}


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| setup | metric | measured | bound | realistic | error | held to --within | source |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        config = r["model"] if isinstance(r["model"], str) else "its build's shapes"
        setup = (f"{r['measured_model']} ({config}), {r['tp']}× {r['gpu']}, "
                 f"{r['dtype']}, batch {r['batch']}, {r['prompt']} in / {r['generate']} out")
        metric = {"tpot": "TPOT (ITL)", "ttft": "TTFT", "e2e": "end-to-end"}[r["metric"]]
        src = {NIM: "NVIDIA NIM docs", VLLM: "vLLM nightly benchmark",
               TRTLLM: "TensorRT-LLM v0.5 perf doc"}[r["source"]]
        held = f"no: {r['unknown']}" if r["unknown"] else "yes"
        out.append(f"| {setup} | {metric} | {r['measured_ms']:.4g} ms | {r['bound_ms']:.4g} ms "
                   f"| {r['realistic_ms']:.4g} ms | {r['error']:+.0%} | {held} "
                   f"| {src}: {r['note']} |")
    return out


def held_misses(rows: list[dict[str, Any]], within: float) -> list[dict[str, Any]]:
    """The rows whose setup is fully known and whose realistic estimate is off by more than
    `within` (a fraction of the measured figure)."""
    return [r for r in rows if not r["unknown"] and abs(r["error"]) > within]


def decode_step_evidence() -> list[str]:
    """The TensorRT-LLM rows against TTFT plus one decode step at context prompt + 1 (the bound
    and the realistic step), had gptSessionBenchmark timed one: it does not
    (ENGINE_STEPS_TIMED), and the realistic sum overshoots every 128-token row."""
    out = ["| TensorRT-LLM v0.5 row | measured | TTFT | + one decode step (bound / realistic) "
           "| TTFT + realistic step | error |", "|---|---:|---:|---:|---:|---:|"]
    for m in MEASUREMENTS:
        if m.source != TRTLLM:
            continue
        s = sheetgen.transformer(m.model, gpu=m.gpu, dtype=m.dtype, tp=m.tp, batch=m.batch,
                                 prompt_tokens=m.prompt, generate=2, allreduce=m.allreduce,
                                 attention_eff=m.attention_eff,
                                 layer_kernels=m.layer_kernels,
                                 attention_quantize=m.attention_quantize).attrs["summary"]
        total = 1e3 * (s["ttft"] + s["tpot"])
        out.append(f"| {m.measured_model}, {m.tp}× {m.gpu}, {m.prompt} in | {m.measured_ms:g} ms "
                   f"| {1e3 * s['ttft']:.2f} ms | {1e3 * s['tpot_bound']:.2f} / "
                   f"{1e3 * s['tpot']:.2f} ms | {total:.2f} ms "
                   f"| {(total - m.measured_ms) / m.measured_ms:+.0%} |")
    return out


DATA = Path(__file__).resolve().parent / "data"
#: prefill-shaped GEMMs: the prompt's tokens as m, the weight matrix k × n of a real layer
PREFILL_M = (128, 256, 512, 1024, 2048, 4096, 8192)
MIN_KN = 1024


def gemm_evidence() -> list[str]:
    """The realistic time of one GEMM as the Transformer sheet computes it (launch floor +
    max(FLOPs / (peak · measured compute eff), bytes / (bandwidth · measured memory eff)),
    bf16 output) against NVIDIA aiconfigurator's measured GEMMs (benchmarks/data/NOTICE) at
    prefill shapes, and the same with the refined time's tile/wave quantization
    (sheetgen.model.refined, the preset's tile and SM count): the median estimate / measured
    per m and the mean |log(estimate / measured)| over all of them."""
    out = ["| table | waves | " + " | ".join(f"m={m}" for m in PREFILL_M) + " | mean abs log |",
           "|---|---|" + "---:|" * (len(PREFILL_M) + 1)]
    presets = load_presets()
    for t in tomllib.loads((DATA / "tables.toml").read_text("utf-8"))["table"]:
        if not t["file"].startswith("aic_"):
            continue
        gpu, dtype = presets.get(t["gpu"]), t["dtype"]  # "H200": the H200 SXM preset
        d = read_measurements(DATA / t["file"], dtype=dtype)
        keep = (d.b == 1) & np.isin(d.m, PREFILL_M) & (d.k >= MIN_KN) & (d.n >= MIN_KN)
        m, k, n, measured = d.m[keep], d.k[keep], d.n[keep], d.measured[keep]
        size = DTYPE_BYTES[dtype]
        compute = 2 * m * k * n / (gpu.peak(dtype) * gpu.compute_efficiency(dtype))
        memory = (size * (m * k + k * n) + 2 * m * n) / (
            gpu.hbm_bandwidth * gpu.measured_memory_efficiency)
        tiles = refined.tiles(m, n, gpu.tile_m, gpu.tile_n)
        wave_eff = refined.wave_efficiency(tiles, refined.waves(tiles, gpu.sm_count),
                                           gpu.sm_count)
        for waves in (False, True):
            c = refined.quantized_compute_time(compute, wave_eff) if waves else compute
            ratio = (gpu.launch_overhead + np.maximum(c, memory)) / measured
            medians = [statistics.median(ratio[m == x]) for x in PREFILL_M]
            spread = float(np.mean(np.abs(np.log(ratio))))
            out.append(f"| {t['name']} | {'on' if waves else 'off'} | "
                       + " | ".join(f"{x:.2f}" for x in medians) + f" | {spread:.3f} |")
    return out


#: calibrate's fitted floors (docs/measuring.md, "Accuracy on measured data", the model's
#: floor column): on aiconfigurator's H100 and A100 bf16 tables (CUDA-graph replay: no host
#: launch), and on XLA's H100 bf16 table (no A100 table there: its H100 floor for both)
FITTED_FLOORS = {"aiconfigurator fit": {"H100 SXM": 1.67e-6, "A100 80GB SXM": 2.90e-6},
                 "XLA H100 fit": {"H100 SXM": 4.29e-6, "A100 80GB SXM": 4.29e-6}}


def smallest_gemms() -> dict[str, float]:
    """The shortest measured GEMM of each published table (s): a kernel's floor on that GPU."""
    out = {}
    for t in tomllib.loads((DATA / "tables.toml").read_text("utf-8"))["table"]:
        d = read_measurements(DATA / t["file"], dtype=t["dtype"])
        out[t["name"]] = float(np.min(d.measured))
    return out


def floor_evidence() -> list[str]:
    """The per-kernel floor: each table's smallest measured GEMM, and the TensorRT-LLM rows'
    error with the preset's floor and with calibrate's fitted floors."""
    out = ["| table | smallest measured GEMM |", "|---|---:|"]
    out += [f"| {name} | {1e6 * t:.2f} µs |" for name, t in smallest_gemms().items()]
    floors = {"preset (5 µs)": None, **FITTED_FLOORS}
    out += ["", "| TensorRT-LLM v0.5 row | measured | " + " | ".join(floors) + " |",
            "|---|---:|" + "---:|" * len(floors)]
    for m in MEASUREMENTS:
        if m.source != TRTLLM:
            continue
        errs = [estimate(replace(m, launch=f[m.gpu] if f else None))["error"]
                for f in floors.values()]
        out.append(f"| {m.measured_model}, {m.tp}× {m.gpu}, {m.prompt} in | {m.measured_ms:g} ms "
                   "| " + " | ".join(f"{e:+.0%}" for e in errs) + " |")
    return out


#: aiconfigurator's table for each TensorRT-LLM row's GPU and compute dtype (it has no fp16
#: table: the A100 fp16 rows read the bf16 one, the same tensor-core rate and element size)
ROW_TABLES = {("H100 SXM", "fp8"): ("aic_h100_sxm_fp8.csv", "fp8"),
              ("A100 80GB SXM", "fp16"): ("aic_a100_sxm_bf16.csv", "bf16")}


def layer_gemms(cfg: dict[str, Any], tp: int) -> list[tuple[int, int]]:
    """(k, n) of the five GEMMs one GPU runs per layer in the unfused llama build: QKV,
    output, gate, up, down (tensor parallel splits heads and the MLP)."""
    h, ffn = cfg["hidden_size"], cfg["intermediate_size"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = h // heads
    return [(h, (heads + 2 * kv) * d // tp), (heads * d // tp, h), (h, ffn // tp),
            (h, ffn // tp), (ffn // tp, h)]


def measured_gemm(grid: dict[tuple[int, int, int], float], m: int, k: int, n: int) -> float:
    """A measured GEMM time at (m, k, n), bilinear in k and n between the table's powers of
    two at that m (which the table holds: 128 and 2048 are on its grid)."""
    ks = sorted({kk for mm, kk, _ in grid if mm == m})
    ns = sorted({nn for mm, _, nn in grid if mm == m})

    def bracket(xs: list[int], x: int) -> tuple[int, int, float]:
        lo, hi = max(v for v in xs if v <= x), min(v for v in xs if v >= x)
        return lo, hi, 0.0 if hi == lo else (x - lo) / (hi - lo)

    k0, k1, wk = bracket(ks, k)
    n0, n1, wn = bracket(ns, n)

    def at(kk: int) -> float:
        return (1 - wn) * grid[(m, kk, n0)] + wn * grid[(m, kk, n1)]

    return (1 - wk) * at(k0) + wk * at(k1)


#: the per-call activation quantize of aiconfigurator's fp8 rows reads the bf16 activation
#: twice (amax, then scale) and writes it in fp8: 2 + 2 + 1 bytes per element (the table's
#: own header says so; calibrate's quantize term uses the same 5 B/element)
QUANTIZE_BYTES = 5


def row_gemm_evidence() -> list[str]:
    """The TensorRT-LLM rows' own GEMMs (five per layer, unfused): aiconfigurator's measured
    time (TensorRT-LLM's Linear today, CUDA graphs; its fp8 rows quantize the bf16 activation
    dynamically on every call) against the realistic time the sheet gives the same calls, per
    layer, and the row's error were the difference added. The quantize's share is estimated:
    per call the tables' smallest fp8 GEMM less their smallest bf16 one (its floor) plus
    QUANTIZE_BYTES per activation element at the measured bandwidth; a static-scale engine
    fuses most of it into the kernel before, so the last column leaves it out."""
    presets, small = load_presets(), smallest_gemms()
    out = ["| TensorRT-LLM v0.5 row | measured GEMMs / layer | of which quantize (est.) "
           "| realistic / layer | error with measured | error with measured less quantize |",
           "|---|---:|---:|---:|---:|---:|"]
    for meas in MEASUREMENTS:
        if meas.source != TRTLLM:
            continue
        file, tdtype = ROW_TABLES[(meas.gpu, meas.dtype)]
        d = read_measurements(DATA / file, dtype=tdtype)
        one = d.b == 1
        grid = {(int(m), int(k), int(n)): float(t) for m, k, n, t in
                zip(d.m[one], d.k[one], d.n[one], d.measured[one], strict=True)}
        gpu, size = presets.get(meas.gpu), DTYPE_BYTES[meas.dtype]
        out_size = 2  # fp8 compute writes bf16 (the sheet's auto storage), fp16 writes fp16
        rate = gpu.peak(meas.dtype) * gpu.compute_efficiency(meas.dtype)
        bw = gpu.hbm_bandwidth * gpu.measured_memory_efficiency
        m, calls = meas.prompt * meas.batch, layer_gemms(meas.model, meas.tp)
        measured = sum(measured_gemm(grid, m, k, n) for k, n in calls)
        real = sum(gpu.launch_overhead + max(2 * m * k * n / rate,
                                             (size * (m * k + k * n) + out_size * m * n) / bw)
                   for k, n in calls)
        quant = (sum(small["aiconfigurator H100 SXM fp8"] - small["aiconfigurator H100 SXM bf16"]
                     + QUANTIZE_BYTES * m * k / bw for k, _ in calls)
                 if tdtype == "fp8" else 0.0)
        layers = meas.model["num_hidden_layers"]
        # the estimate without the standalone attention-output quantize: these columns swap
        # in measured GEMM calls with (or without) every per-call quantize
        base = estimate(replace(meas, attention_quantize=False))["realistic_ms"]

        def err(extra: float, meas: Measurement = meas, base: float = base,
                layers: int = layers) -> str:
            return f"{(base + 1e3 * layers * extra - meas.measured_ms) / meas.measured_ms:+.0%}"

        out.append(f"| {meas.measured_model}, {meas.tp}× {meas.gpu}, {meas.prompt} in "
                   f"| {1e6 * measured:.0f} µs | "
                   + (f"{1e6 * quant:.0f} µs" if quant else "none")
                   + f" | {1e6 * real:.0f} µs | {err(measured - real)} "
                   f"| {err(measured - quant - real)} |")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--within", type=float, help="fail when the error of a row whose "
                        "setup is fully known is larger than this fraction")
    parser.add_argument("--decode-step", action="store_true", help="the TensorRT-LLM rows "
                        "against TTFT plus one decode step (gptSessionBenchmark times none)")
    parser.add_argument("--row-gemms", action="store_true", help="the TensorRT-LLM rows' own "
                        "GEMMs: aiconfigurator's measured times against the realistic ones")
    parser.add_argument("--gemms", action="store_true", help="the realistic GEMM time against "
                        "aiconfigurator's measured GEMMs at prefill shapes, waves off and on")
    parser.add_argument("--floors", action="store_true", help="the per-kernel floor: the "
                        "published tables' smallest GEMMs, the TensorRT-LLM rows at each floor")
    args = parser.parse_args(argv)
    evidence = {"floors": floor_evidence, "gemms": gemm_evidence,
                "decode_step": decode_step_evidence, "row_gemms": row_gemm_evidence}
    for option, lines in evidence.items():
        if getattr(args, option):
            print("\n".join(lines()))
            return 0
    rows = [estimate(m) for m in MEASUREMENTS]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print("\n".join(table(rows)))
        print(f"\nSources:\n- {NIM}\n- {VLLM}\n- {TRTLLM}")
    if args.within is not None:
        bad = held_misses(rows, args.within)
        for r in bad:
            print(f"off by {r['error']:+.0%}: {r['measured_model']}, {r['tp']}× {r['gpu']}, "
                  f"{r['prompt']} in, {r['metric']}", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
