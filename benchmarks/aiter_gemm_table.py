"""Convert AMD aiter's tuned-GEMM tables to the CSV `sheetgen calibrate` reads.

aiter (github.com/ROCm/aiter, MIT, AMD) tunes its GEMM kernels per shape and commits the
winner of each with its measured time: `aiter/configs/<kind>_tuned_gemm.csv`, one row per
(gfx, cu_num, M, N, K) with `us`, the best kernel's microseconds, and `kernelName`. Its M, N
and K are those of y = x·Wᵀ with x of M×K and W of N×K, so m = M, k = K and n = N here. The
a8w8 tables time the int8 (or fp8) GEMM alone, on operands already quantized, with the bf16
output the kernel names (e.g. I8gemm_bf16_perTokenI8_BpreShuffle_112x256): no quantize pass.
bf16_tuned_gemm.csv's GEMMs write the `outdtype` they name (fp32 on gfx950), which the CSV
states: calibrate it with --output-dtype fp32. Several files make one table (aiter's
model_configs/*_bf16_tuned_gemm.csv: every shape of a dozen models), each shape once.

    git --git-dir=<aiter>/.git show <commit>:aiter/configs/a8w8_bpreshuffle_tuned_gemm.csv \\
        > tuned.csv
    python benchmarks/aiter_gemm_table.py tuned.csv --gfx gfx942 --cu-num 304 \\
        --source "ROCm/aiter@<commit> aiter/configs/a8w8_bpreshuffle_tuned_gemm.csv" \\
        -o aiter_mi300x_int8.csv
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import table_csv

#: aiter's weight dtype (q_dtype_w; `dtype` in bf16_tuned_gemm.csv) -> sheetgen's
DTYPES = {"torch.int8": "int8", "torch.float8_e4m3fnuz": "fp8", "torch.float8_e4m3fn": "fp8",
          "torch.bfloat16": "bf16"}
#: aiter's output dtype (`outdtype`, bf16_tuned_gemm.csv only: the a8w8 kernels write bf16)
#: -> sheetgen's storage
OUTPUTS = {"torch.bfloat16": "bf16", "torch.float32": "fp32"}
#: the devices an aiter row's (gfx, cu_num) names, as far as it does: gfx942 with 304 CUs is
#: an MI300X or an MI325X, the same compute dies (one peak) with 5.3 or 6 TB/s of HBM; gfx950
#: with 256 CUs an MI350X or an MI355X, the same silicon at 2.2 or 2.4 GHz, whose peaks differ
#: by a constant factor that the fitted compute efficiency takes up (scored against the
#: MI355X preset); gfx942 with 80 CUs (a partitioned part) and gfx1250 name no one device
DEVICES = {("gfx942", "304"): "AMD Instinct MI300X or MI325X (gfx942, 304 CUs)",
           ("gfx950", "256"): "AMD Instinct MI350X or MI355X (gfx950, 256 CUs)"}


def rows(text: str, gfx: str, cu_num: str) -> list[dict[str, object]]:
    """The rows of one device, in the file's order; a GEMM with a bias (bf16 files'
    `bias` column) is left out: its epilogue reads a vector the model does not count."""
    out = []
    for r in csv.DictReader(text.splitlines()):
        if (r["gfx"], r["cu_num"]) != (gfx, cu_num) or r.get("bias", "False") != "False":
            continue
        out.append(table_csv.timed_row(int(r["M"]), int(r["K"]), int(r["N"]),
                                       DTYPES[r.get("q_dtype_w") or r["dtype"]], "rocm",
                                       float(r["us"]) / 1e6))
    return out


def output_storage(text: str, gfx: str, cu_num: str) -> str:
    """The storage of C the device's rows write: their `outdtype` (one for all), or bf16
    where the file has no such column (the a8w8 kernels' epilogue writes bf16)."""
    found = {OUTPUTS[r["outdtype"]] for r in csv.DictReader(text.splitlines())
             if (r["gfx"], r["cu_num"]) == (gfx, cu_num) and r.get("outdtype")}
    if len(found) > 1:
        raise ValueError(f"{gfx} with {cu_num} CUs writes several output dtypes: {found}")
    return found.pop() if found else "bf16"


def csv_text(table: list[dict[str, object]], device_name: str, source: str,
             output: str = "bf16") -> str:
    """The CSV: metadata lines, then the rows; `output`, C's storage, is stated where it is
    not what the rows' dtype implies (calibrate then needs --output-dtype)."""
    quantized = any(r["dtype"] in ("int8", "fp8") for r in table)
    lines = [f"source: AMD aiter tuned GEMM table, {source}",
             "license: MIT, Copyright Advanced Micro Devices, Inc. (see NOTICE)",
             f"device_name: {device_name}",
             "method: aiter's GEMM tuner, the fastest kernel's time per shape (us), "
             + ("operands already quantized: " if quantized else "") + "no quantize pass",
             "time_s: us / 1e6"]
    if output != "bf16":
        lines.append(f"output_dtype: {output} (C's storage: calibrate with --output-dtype "
                     f"{output})")
    return table_csv.csv_text(table, lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("table", type=Path, nargs="+",
                   help="aiter *_tuned_gemm.csv files (several: one table, a shape kept once, "
                        "from the first file that has it)")
    p.add_argument("--gfx", default="gfx942")
    p.add_argument("--cu-num", default="304")
    p.add_argument("--source", default="", help="where the file came from (repo@commit path)")
    p.add_argument("-o", "--output", type=Path, help="CSV to write (default: stdout)")
    args = p.parse_args(argv)
    device = DEVICES.get((args.gfx, args.cu_num))
    if device is None:
        p.error(f"{args.gfx} with {args.cu_num} CUs names no one device "
                f"(known: {', '.join(f'{g}/{c}' for g, c in DEVICES)})")
    texts = [path.read_text("utf-8") for path in args.table]
    table: list[dict[str, object]] = []
    seen: set[tuple[object, ...]] = set()
    for text in texts:
        for row in rows(text, args.gfx, args.cu_num):
            shape = (row["m"], row["k"], row["n"], row["dtype"])
            if shape not in seen:
                seen.add(shape)
                table.append(row)
    if not table:
        p.error(f"{', '.join(map(str, args.table))}: no rows for {args.gfx} with "
                f"{args.cu_num} CUs")
    outputs = {output_storage(text, args.gfx, args.cu_num) for text in texts}
    if len(outputs) > 1:
        p.error(f"the files write several output dtypes: {', '.join(sorted(outputs))}")
    text = csv_text(table, device, args.source, outputs.pop())
    table_csv.write(text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
