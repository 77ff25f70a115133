"""Benchmark `sheetgen build` against bare xlsxwriter writing the same cells.

For each size N the script builds a workbook of N random shapes (`--spare-rows 0`) through
`sheetgen.api.build_workbook` (CSV parsing, planning, reference model, writing), and a
baseline: bare xlsxwriter writing the same number of formula cells, with the same formula
strings, cached values and formats, and the same number of constant cells, in the same
constant_memory mode sheetgen uses at that size. Every run is a fresh subprocess, so its
peak RSS (`ru_maxrss`, imports included) belongs to that run alone; sheetgen and the
baseline alternate to spread machine drift over both. Times are the best of `--repeat` and
cover the build only (not interpreter start-up or imports). Wall time is what the goal is
stated in; the CPU-time ratio (process time) is printed beside it because on a shared machine
it is far less disturbed by other processes.

    python benchmarks/bench_build.py                      # 1k, 10k, 100k rows
    python benchmarks/bench_build.py --quick              # 1k, 10k
    python benchmarks/bench_build.py --rows 50000 --repeat 3 --out bench.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = "matmul"
HEADER = ("| rows | formula cells | sheetgen s | baseline s | time ratio | sheetgen peak MB "
          "| baseline peak MB | memory ratio | CPU-time ratio |")


def peak_mb() -> float:
    """This process's peak resident set size in MB (ru_maxrss is KiB on Linux, bytes on macOS)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10


def write_shapes_csv(path: Path, n: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    dims = (1, 8, 64, 128, 512, 1024, 2048, 4096, 8192, 16384, 65536)
    with path.open("w", encoding="utf-8") as f:
        f.write("m,k,n\n")
        for _ in range(n):
            f.write(f"{rng.choice(dims)},{rng.choice(dims)},{rng.choice(dims)}\n")


def baseline_spec() -> dict:
    """What the baseline writes per table row, taken once from a one-row sheetgen plan: each
    column's formula split where the row number goes (or None for a constant), its cached
    value, and where the table starts. Made in the parent, so no run pays for planning."""
    from sheetgen.api import plan
    from sheetgen.verify.compare import expected_cells
    from sheetgen.writers.xlsx import CONSTANT_MEMORY_ROWS, _cached

    p = plan(shapes=[(4096, 4096, 4096)], spare_rows=0)
    t = p.table(TABLE)
    cols = [{"col": c.col, "parts": c.parts, "value": None if c.is_input else _cached(c.values[0])}
            for c in t.columns]
    # The workbook's other formula cells (Inputs, the ceiling, Pipeline, Parallelism, What-if)
    # do not grow with the shapes; the baseline writes them too, so both write the same cells.
    fixed: dict[str, list] = {}
    for e in expected_cells(p):
        if not (e.sheet == "Matmul" and e.row >= t.first_row and e.col < len(t.columns)):
            fixed.setdefault(e.sheet, []).append([e.row, e.col, e.formula, _cached(e.value)])
    for cells in fixed.values():
        cells.sort()
    return {"sheet": "Matmul", "first_row": t.first_row, "columns": cols, "fixed": fixed,
            "constant_memory_rows": CONSTANT_MEMORY_ROWS}


# ---- the two children: each times its own work and reports peak RSS as one JSON line -----

def child_sheetgen(n: int, csv: Path, out: Path) -> dict:
    from sheetgen.api import build_workbook

    t0, c0 = time.perf_counter(), time.process_time()
    build_workbook(out, shapes=csv, spare_rows=0, force=True)
    return {"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0}


def child_baseline(n: int, csv: Path, out: Path, spec: dict) -> dict:
    import xlsxwriter

    rng = random.Random(1)
    cols = spec["columns"]
    n_inputs = sum(1 for c in cols if c["parts"] is None)
    constants = [float(rng.choice((64, 4096, 8192))) for _ in range(n_inputs * 97)]
    t0, c0 = time.perf_counter(), time.process_time()
    wb = xlsxwriter.Workbook(str(out), {"constant_memory": n > spec["constant_memory_rows"],
                                        "strings_to_formulas": False,
                                        "strings_to_numbers": False,
                                        "strings_to_urls": False})
    f_in = wb.add_format({"bg_color": "#FFF2CC", "num_format": "0"})
    f_out = wb.add_format({"bg_color": "#F2F2F2", "num_format": "0.00E+00"})
    sheets = {name: wb.add_worksheet(name) for name in [spec["sheet"], *spec["fixed"]]
              if name not in wb.sheetnames}
    ws = sheets[spec["sheet"]]
    for row, col, formula, value in spec["fixed"].get(spec["sheet"], []):
        if row < spec["first_row"]:
            ws.write_formula(row, col, formula, f_out, value)
    first = spec["first_row"]
    beside: dict[int, list] = {}  # Matmul's fixed cells at table rows (the chart's ceiling)
    for row, col, formula, value in spec["fixed"].get(spec["sheet"], []):
        if row >= first:
            beside.setdefault(row, []).append((col, formula, value))
    k = 0
    for row in range(first, first + n):
        number = str(row + 1)
        for c in cols:
            if c["parts"] is None:
                ws.write_number(row, c["col"], constants[k % len(constants)], f_in)
                k += 1
            else:
                ws.write_formula(row, c["col"], number.join(c["parts"]), f_out, c["value"])
        for col, formula, value in beside.get(row, ()):
            ws.write_formula(row, col, formula, f_out, value)
    for name, cells in spec["fixed"].items():
        if name != spec["sheet"]:
            for row, col, formula, value in cells:
                sheets[name].write_formula(row, col, formula, f_out, value)
    wb.close()
    return {"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0}


def run_child(kind: str, n: int, csv: Path, out: Path, spec_file: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--rows", str(n),
           "--csv", str(csv), "--target", str(out), "--spec", str(spec_file)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} run at {n} rows failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench(sizes: list[int], repeat: int, workdir: Path) -> list[dict]:
    # The spec comes from a child too: on Linux a child's ru_maxrss starts at its parent's
    # (the high-water mark survives fork and exec), so the parent never imports sheetgen.
    spec_file = workdir / "spec.json"
    run_child("spec", 0, workdir, workdir, spec_file)
    spec = json.loads(spec_file.read_text("utf-8"))
    n_formulas = sum(1 for c in spec["columns"] if c["parts"] is not None)
    n_fixed = sum(len(cells) for cells in spec["fixed"].values())
    results = []
    for i, n in enumerate(sizes):
        csv = workdir / f"shapes_{n}.csv"
        write_shapes_csv(csv, n)
        runs: dict[str, list[dict]] = {"sheetgen": [], "baseline": []}
        for r in range(repeat):
            order = ["sheetgen", "baseline"] if (i + r) % 2 == 0 else ["baseline", "sheetgen"]
            for kind in order:
                out = workdir / f"{kind}_{n}.xlsx"
                runs[kind].append(run_child(kind, n, csv, out, spec_file))
                out.unlink(missing_ok=True)
        s = min(x["seconds"] for x in runs["sheetgen"])
        b = min(x["seconds"] for x in runs["baseline"])
        sm = max(x["peak_mb"] for x in runs["sheetgen"])
        bm = max(x["peak_mb"] for x in runs["baseline"])
        cpu = (min(x["cpu"] for x in runs["sheetgen"]) / min(x["cpu"] for x in runs["baseline"]))
        results.append({"rows": n, "formula_cells": n * n_formulas + n_fixed,
                        "sheetgen_s": s,
                        "baseline_s": b, "time_ratio": s / b, "sheetgen_mb": sm,
                        "baseline_mb": bm, "memory_ratio": sm / bm, "cpu_ratio": cpu})
        print(f"  {n} rows: sheetgen {s:.2f} s, baseline {b:.2f} s", file=sys.stderr)
    return results


def table(results: list[dict]) -> str:
    lines = [HEADER, "|" + "---:|" * 9]
    for r in results:
        lines.append(f"| {r['rows']:,} | {r['formula_cells']:,} | {r['sheetgen_s']:.2f} "
                     f"| {r['baseline_s']:.2f} | {r['time_ratio']:.2f} | {r['sheetgen_mb']:.0f} "
                     f"| {r['baseline_mb']:.0f} | {r['memory_ratio']:.2f} | {r['cpu_ratio']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000, 10_000, 100_000],
                    help="table sizes (shape rows) to build; default 1000 10000 100000")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size and kind (best time)")
    ap.add_argument("--quick", action="store_true", help="only 1000 and 10000 rows")
    ap.add_argument("--out", type=Path, help="also write the markdown table to this file")
    ap.add_argument("--child", choices=("spec", "sheetgen", "baseline"), help=argparse.SUPPRESS)
    ap.add_argument("--csv", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--target", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--spec", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        n = args.rows[0]
        if args.child == "spec":
            args.spec.write_text(json.dumps(baseline_spec()), "utf-8")
            result = {}
        elif args.child == "sheetgen":
            result = child_sheetgen(n, args.csv, args.target)
        else:
            spec = json.loads(args.spec.read_text("utf-8"))
            result = child_baseline(n, args.csv, args.target, spec)
        result["peak_mb"] = peak_mb()
        print(json.dumps(result))
        return 0

    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    sizes = [1_000, 10_000] if args.quick else args.rows
    with tempfile.TemporaryDirectory(prefix="sheetgen-bench-") as tmp:
        results = bench(sizes, args.repeat, Path(tmp))
    text = table(results)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
