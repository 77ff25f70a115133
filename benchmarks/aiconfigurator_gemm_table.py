"""Convert NVIDIA aiconfigurator's measured GEMM tables to the CSV `sheetgen calibrate` reads.

aiconfigurator (github.com/ai-dynamo/aiconfigurator, Apache-2.0, NVIDIA) ships per-GPU GEMM
latencies collected with TensorRT-LLM's Linear layer (collector/trtllm/collect_gemm.py):
`aic-core/src/aiconfigurator_core/systems/data/<system>/gemm/trtllm/<version>/gemm_perf.parquet`,
one row per (gemm_dtype, m, n, k) with `latency` in milliseconds per GEMM (CUDA-graph replay,
weights cycled through copies larger than L2). The "fp8" rows quantize the bf16 activation
on the fly (TRT-LLM's dynamic FP8 path), so they include that small kernel.

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
from sheetgen.model.kernel_terms import DYNAMIC_FP8_QUANTIZE_BYTES

#: Why an fp8 table carries QUANTIZE_KEY: the collector loads no input scale, so TensorRT-LLM
#: quantizes the activation dynamically in a kernel of its own before each fp8 GEMM.
QUANTIZE_NOTE = (
    "quantize: the weights carry no input_scale, so TensorRT-LLM's FP8QDQLinearMethod.apply "
    "runs torch.ops.tensorrt_llm.quantize_e4m3_per_tensor on the bf16 activation before the "
    "fp8 GEMM (collector/trtllm/collect_gemm.py says so); it reads A twice (amax, scale) and "
    "writes it as fp8")
#: sheetgen dtype -> aiconfigurator's gemm_dtype
DTYPES = {"bf16": "bfloat16", "fp8": "fp8"}


def _power_of_two(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def rows(frame: Any, dtype: str) -> list[dict[str, object]]:
    """The sampled rows of one dtype, in (m, n, k) order."""
    sel = frame[frame["gemm_dtype"] == DTYPES[dtype]]
    out = []
    for m, n, k, latency_ms in sorted(zip(sel["m"], sel["n"], sel["k"], sel["latency"],
                                          strict=True)):
        if not (_power_of_two(int(m)) and _power_of_two(int(n)) and _power_of_two(int(k))):
            continue
        t = float(latency_ms) / 1e3
        out.append({"b": 1, "m": int(m), "k": int(k), "n": int(n), "dtype": dtype,
                    "device": "cuda", "time_s": f"{t:.6e}",
                    "flops_per_s": f"{2.0 * m * n * k / t:.0f}"})
    return out


def csv_text(table: list[dict[str, object]], device_name: str, source: str,
             dtype: str = "bf16") -> str:
    """The CSV: metadata lines, then the rows; an fp8 table says that its timings include
    the activation-quantize pass (sheetgen.model.kernel_terms) and how many bytes it moves."""
    lines = [f"source: NVIDIA aiconfigurator measured GEMM table, {source}",
             "license: Apache-2.0, Copyright NVIDIA CORPORATION & AFFILIATES (see NOTICE)",
             f"device_name: {device_name}",
             "method: TensorRT-LLM Linear layer, CUDA-graph replay, latency per GEMM; "
             "fp8 rows include the dynamic quantization of the bf16 activation"]
    if dtype == "fp8":
        lines += [QUANTIZE_NOTE, f"{QUANTIZE_KEY}: {DYNAMIC_FP8_QUANTIZE_BYTES:g}"]
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
    text = csv_text(rows(frame, args.dtype), ", ".join(devices), args.source, args.dtype)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
