"""Convert XLA's GPU matmul performance table to the CSV `sheetgen calibrate` reads.

XLA (Apache-2.0, the OpenXLA authors) ships measured matmul throughput per GPU as a text
protobuf: `xla/service/gpu/model/default_matmul_perf_table.txtpb` in openxla/xla, earlier
the `kDefaultMatmulPTable` string of `matmul_interpolator_data.h` (also vendored in
tensorflow/tensorflow under third_party/xla/). Each entry is one (b, m, n, k) with FLOP/s per
dtype combination:

    entries { key: "sm_90" value { entries { b: 1 m: 256 n: 256 k: 256
        flops { key: "bf16xbf16->bf16" value: 6452775384615 } ... } ... } }

Time per row = 2·b·m·n·k / FLOP/s. XLA runs f32 matmuls on Hopper as TF32 by default, so
"f32xf32->f32" rows are written as dtype tf32 (compare them with the tf32 peak).

    python benchmarks/xla_perf_table.py matmul_interpolator_data.h --device sm_90 \\
        --source "tensorflow/tensorflow@372d578b third_party/xla/..." -o sm90.csv
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import table_csv

#: XLA's dtype combination -> sheetgen dtype (only same-typed operands are kept).
DTYPES = {"bf16xbf16->bf16": "bf16", "f32xf32->f32": "tf32",
          "f8e4m3fnxf8e4m3fn->bf16": "fp8", "f16xf16->f16": "fp16"}
#: XLA's device key -> (the CSV's device column, the GPU it names)
ARCHITECTURES = {"sm_90": ("cuda", "H100"), "sm_100_B200": ("cuda", "B200"),
                 "gfx942": ("rocm", "MI300X")}

_DEVICE = re.compile(r'key:\s*"(?P<key>[^"]+)"\s*value\s*\{')
_ENTRY = re.compile(r"entries\s*\{\s*b:\s*(\d+)\s*m:\s*(\d+)\s*n:\s*(\d+)\s*k:\s*(\d+)"
                    r"(?P<flops>(?:\s*flops\s*\{[^}]*\})*)")
_FLOPS = re.compile(r'flops\s*\{\s*key:\s*"([^"]+)"\s*value:\s*([0-9.eE+]+)\s*\}')


def device_sections(text: str) -> dict[str, str]:
    """The text of each device's table (`key: "sm_90" value { ... }`), by key."""
    starts = [(m.group("key"), m.end()) for m in _DEVICE.finditer(text)]
    out = {}
    for i, (key, start) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else len(text)
        out[key] = text[start:end]
    return out


def rows(text: str, device: str, dtypes: Sequence[str] = ()) -> list[dict[str, object]]:
    """One row per (entry, known dtype) of the device's table; only `dtypes` when given."""
    sections = device_sections(text)
    if device not in sections:
        raise SystemExit(f"Error: no table for {device!r} (the file has: "
                         f"{', '.join(sections) or 'none'})")
    platform = ARCHITECTURES.get(device, ("cuda", device))[0]
    out = []
    for entry in _ENTRY.finditer(sections[device]):
        b, m, n, k = (int(entry.group(i)) for i in range(1, 5))
        for key, value in _FLOPS.findall(entry.group("flops")):
            if key not in DTYPES or (dtypes and DTYPES[key] not in dtypes):
                continue
            rate = float(value)
            out.append({"b": b, "m": m, "k": k, "n": n, "dtype": DTYPES[key],
                        "device": platform, "time_s": f"{2.0 * b * m * n * k / rate:.6e}",
                        "flops_per_s": f"{rate:.0f}"})
    return out


def csv_text(table: list[dict[str, object]], device: str, source: str) -> str:
    platform, gpu = ARCHITECTURES.get(device, ("cuda", device))
    return table_csv.csv_text(table, (
        f"source: XLA GPU matmul perf table, device key {device}, {source}",
        "license: Apache-2.0, Copyright The OpenXLA Authors (see NOTICE)",
        f"device: {platform} (XLA's key names the architecture: {device} = {gpu})",
        "dtype: f32 rows ran as TF32 (XLA's default on Hopper): written as tf32",
        "time_s: 2*b*m*n*k / flops_per_s"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("table", type=Path, help="default_matmul_perf_table.txtpb or "
                                            "matmul_interpolator_data.h")
    p.add_argument("--device", default="sm_90", help="the table's device key (sm_90 = H100)")
    p.add_argument("--source", default="", help="where the file came from (repo@commit path)")
    p.add_argument("--dtype", action="append", default=[], choices=sorted(set(DTYPES.values())),
                   help="keep only this dtype (repeat for several; default: all)")
    p.add_argument("-o", "--output", type=Path, help="CSV to write (default: stdout)")
    args = p.parse_args(argv)
    table = rows(args.table.read_text("utf-8"), args.device, args.dtype)
    text = csv_text(table, args.device, args.source)
    table_csv.write(text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
