"""Convert NVIDIA aiconfigurator's measured GEMM tables to the CSV `sheetgen calibrate` reads.

aiconfigurator (github.com/ai-dynamo/aiconfigurator, Apache-2.0, NVIDIA) ships per-GPU GEMM
latencies collected through three serving frameworks' own linear layers:
`aic-core/src/aiconfigurator_core/systems/data/<system>/gemm/<framework>/<version>/gemm_perf.parquet`,
one row per (gemm_dtype, m, n, k) with `latency` in milliseconds per GEMM (several weight
copies run in turn, CUDA-graph replay where the collector uses it). Its `framework` column
says which collector ran: TensorRT-LLM's Linear (collector/trtllm/collect_gemm.py), vLLM's
RowParallelLinear (collector/vllm/collect_gemm.py; collect_gemm_xpu.py on Intel GPUs) or
SGLang's F.linear and sgl_kernel fp8_scaled_mm (collector/sglang/collect_gemm.py). Their
"fp8" rows quantize the bf16 activation on the fly, each in its own way (QUANTIZE), so they
include that kernel.

A table holds ~35,000 shapes per dtype (m from 1 to 32,768, n and k from 32 to 65,536); the
CSV keeps a deterministic sample: m, n and k powers of two (every such shape in the table).

    git --git-dir=<aiconfigurator>/.git show <commit>:<path> > gemm_perf.parquet
    python benchmarks/aiconfigurator_gemm_table.py gemm_perf.parquet --dtype bf16 \\
        --source "ai-dynamo/aiconfigurator@<commit> <path>" -o aic_h100_sxm_bf16.csv

Reading parquet needs pandas with pyarrow (only this script; the CSVs are committed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import table_csv

from sheetgen.calibrate.data import QUANTIZE_KEY
from sheetgen.model.kernel_terms import (
    DYNAMIC_FP8_QUANTIZE_BYTES,
    PER_TOKEN_FP8_QUANTIZE_BYTES,
)

#: framework (the table's `framework` column) -> (bytes per element of A its fp8 rows'
#: activation-quantize pass moves, why): what QUANTIZE_KEY says for that table's fp8 rows.
QUANTIZE = {
    "TRTLLM": (DYNAMIC_FP8_QUANTIZE_BYTES,
               "quantize: the weights carry no input_scale, so TensorRT-LLM's "
               "FP8QDQLinearMethod.apply runs torch.ops.tensorrt_llm.quantize_e4m3_per_tensor "
               "on the bf16 activation before the fp8 GEMM (collector/trtllm/collect_gemm.py "
               "says so); it reads A twice (amax, scale) and writes it as fp8"),
    "VLLM": (DYNAMIC_FP8_QUANTIZE_BYTES,
             "quantize: Fp8Config(activation_scheme='dynamic') (collector/vllm/"
             "collect_gemm.py), so vLLM's dynamic_scaled_fp8_quant runs on the bf16 "
             "activation before cutlass_scaled_mm: segmented_max_reduction (one thread block "
             "per row of A, each ending in an atomicMaxFloat on the one scale) reads A, "
             "scaled_fp8_quant reads it again and writes it as fp8 "
             "(vllm-project/vllm csrc/quantization/fp8/common.cu)"),
    "SGLang": (PER_TOKEN_FP8_QUANTIZE_BYTES,
               "quantize: collector/sglang/collect_gemm.py calls "
               "sgl_per_token_quant_fp8(a_bf16, ...) before fp8_scaled_mm: one pass per row "
               "that reads the bf16 row for its maximum, reads it again from cache and writes "
               "it as fp8"),
}
#: framework -> how its collector timed a GEMM
METHOD = {
    "TRTLLM": "TensorRT-LLM Linear layer, CUDA-graph replay, latency per GEMM",
    "VLLM": "vLLM RowParallelLinear, CUDA-graph replay on NVIDIA (none on Intel XPU), "
            "latency per GEMM",
    "SGLang": "SGLang F.linear (bf16) and sgl_kernel fp8_scaled_mm (fp8), latency per GEMM",
}
#: sheetgen dtype -> aiconfigurator's gemm_dtype
DTYPES = {"bf16": "bfloat16", "fp8": "fp8"}


def _power_of_two(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def device_kind(names: list[str]) -> str:
    """calibrate's `device` column: "xpu" for an Intel GPU, else "cuda"."""
    return "xpu" if any(name.startswith("Intel") for name in names) else "cuda"


def rows(frame: Any, dtype: str) -> list[dict[str, object]]:
    """The sampled rows of one dtype, in (m, n, k) order."""
    sel = frame[frame["gemm_dtype"] == DTYPES[dtype]]
    kind = device_kind(sorted(set(frame["device"])))
    out = []
    for m, n, k, latency_ms in sorted(zip(sel["m"], sel["n"], sel["k"], sel["latency"],
                                          strict=True)):
        if not (_power_of_two(int(m)) and _power_of_two(int(n)) and _power_of_two(int(k))):
            continue
        out.append(table_csv.timed_row(int(m), int(k), int(n), dtype, kind,
                                       float(latency_ms) / 1e3))
    return out


def csv_text(table: list[dict[str, object]], device_name: str, source: str,
             dtype: str = "bf16", framework: str = "TRTLLM") -> str:
    """The CSV: metadata lines, then the rows; an fp8 table says that its timings include
    the activation-quantize pass (sheetgen.model.kernel_terms) and how many bytes it moves."""
    if framework not in METHOD:
        raise ValueError(f"framework {framework!r}: not one of {', '.join(METHOD)}")
    lines = [f"source: NVIDIA aiconfigurator measured GEMM table, {source}",
             "license: Apache-2.0, Copyright NVIDIA CORPORATION & AFFILIATES (see NOTICE)",
             f"device_name: {device_name}",
             f"method: {METHOD[framework]}; "
             "fp8 rows include the dynamic quantization of the bf16 activation"]
    if dtype == "fp8":
        qbytes, why = QUANTIZE[framework]
        lines += [why, f"{QUANTIZE_KEY}: {qbytes:g}"]
    lines += ["sample: the table's shapes with m, n and k all powers of two",
              "time_s: latency_ms / 1000"]
    return table_csv.csv_text(table, lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("table", type=Path, help="gemm_perf.parquet")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--source", default="", help="where the file came from (repo@commit path)")
    p.add_argument("-o", "--output", type=Path, help="CSV to write (default: stdout)")
    args = p.parse_args(argv)
    import pandas as pd

    frame = pd.read_parquet(args.table)
    devices = sorted(set(frame["device"]))
    frameworks = sorted(set(frame["framework"]))
    if len(frameworks) != 1:
        p.error(f"{args.table}: one framework per table, not {frameworks}")
    text = csv_text(rows(frame, args.dtype), ", ".join(devices), args.source, args.dtype,
                    frameworks[0])
    table_csv.write(text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
