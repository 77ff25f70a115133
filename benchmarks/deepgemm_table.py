"""Convert DeepGEMM's published performance tables to the CSV `sheetgen calibrate` reads.

DeepGEMM (github.com/deepseek-ai/DeepGEMM, MIT, DeepSeek) published in its README, until
commit 37aa127 (2025-04-14), the speed of its FP8 GEMMs on every shape DeepSeek-V3/R1
inference uses, measured on an H800 SXM5 (NVCC 12.8): one row per shape with M, N, K (and
the number of groups for the MoE grouped GEMMs), "Computation" in TFLOPS and "Memory
bandwidth" in GB/s. Its kernels take operands already in fp8 with fine-grained scales (1×128
of the activation, 128×128 of the weight) and write bf16 (`gemm_fp8_fp8_bf16_nt`): no
quantize pass. Time per row = 2·groups·M·N·K / the TFLOPS (three significant figures).
A grouped GEMM is `groups` GEMMs of M per group rows, each with its own weight: b = groups.

    git --git-dir=<DeepGEMM>/.git show <commit>:README.md > README.md
    python benchmarks/deepgemm_table.py README.md \\
        --source "deepseek-ai/DeepGEMM@<commit> README.md" -o deepgemm_h800_fp8.csv
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import table_csv

#: a table row: | M | N | K | Computation | Memory bandwidth | Speedup |, with #Groups
#: first in the grouped tables
_ROW = re.compile(r"^\|\s*(?:(\d+)\s*\|\s*)?(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*"
                  r"(\d+)\s*TFLOPS\s*\|\s*(\d+)\s*GB/s\s*\|")
#: the README's subsections whose tables are read, in its order
SECTIONS = ("Normal GEMMs for dense models", "Grouped GEMMs for MoE models (contiguous layout)",
            "Grouped GEMMs for MoE models (masked layout)")


def rows(readme: str) -> list[dict[str, object]]:
    """Every row of the three performance tables, in the README's order."""
    out: list[dict[str, object]] = []
    section = None
    for line in readme.splitlines():
        if line.startswith("### "):
            section = line[4:].strip()
            continue
        match = _ROW.match(line)
        if match is None or section not in SECTIONS:
            continue
        groups, m, n, k, tflops, _ = (int(g) if g else 1 for g in match.groups())
        seconds = 2.0 * groups * m * n * k / (tflops * 1e12)
        out.append(table_csv.timed_row(m, k, n, "fp8", "cuda", seconds, b=groups))
    return out


def csv_text(table: list[dict[str, object]], source: str) -> str:
    """The CSV: metadata lines, then the rows."""
    lines = [f"source: DeepGEMM's published performance tables, {source}",
             "license: MIT, Copyright (c) 2025 DeepSeek (see NOTICE)",
             "device_name: NVIDIA H800 SXM5 (an H100 SXM's compute and HBM3; NVCC 12.8)",
             "method: DeepGEMM's own benchmark of its FP8 GEMMs (fine-grained scaling, bf16 "
             "output, operands already in fp8: no quantize pass); grouped GEMMs as b = groups",
             "time_s: 2 * b * m * n * k / (TFLOPS * 1e12)"]
    return table_csv.csv_text(table, lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("readme", type=Path, help="DeepGEMM's README.md at a commit with the tables")
    p.add_argument("--source", default="", help="where the file came from (repo@commit path)")
    p.add_argument("-o", "--output", type=Path, help="CSV to write (default: stdout)")
    args = p.parse_args(argv)
    table = rows(args.readme.read_text("utf-8"))
    if not table:
        p.error(f"{args.readme}: no performance table rows (the tables left the README "
                "at commit 37aa127)")
    table_csv.write(csv_text(table, args.source), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
