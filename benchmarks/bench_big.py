"""Big workbooks end to end: build, check, read and show at growing sizes (issue 21).

For each size N the script writes N random shapes (bench_build's CSV), then runs, each in a
fresh process so its peak RSS (``ru_maxrss`` of the child, imports included) is its own:
``sheetgen build`` (``--spare-rows 0``), ``sheetgen check``, ``sheetgen read`` (CSV to
/dev/null) and ``sheetgen show --json`` (to /dev/null). Every figure is given with its
baseline from the same run: time and memory against the smallest size (so linear growth
reads as the size ratio, and bounded memory as about 1.0; CPU time beside wall time, as it
is far less disturbed by other processes), and memory against the same
command's process with nothing to do (``sheetgen --version`` style import floor: the
command run on the smallest file of 10 rows).

    python benchmarks/bench_big.py --rows 100000 200000 1000000
    python benchmarks/bench_big.py --rows 5000 20000 --out big.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_build import write_shapes_csv  # noqa: E402

STEPS = ("build", "check", "read", "show --json")
_CHILD = """
import resource, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
dt = time.perf_counter() - t0
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(p.returncode, dt, u.ru_maxrss / 1024, u.ru_utime + u.ru_stime, repr(p.stderr[-300:]))
"""


def measure(cmd: list[str]) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MB, CPU seconds) of one command in its own process."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", _CHILD, *cmd], capture_output=True,
                         text=True, check=True, env=env).stdout.split(maxsplit=4)
    if out[0] != "0":
        raise SystemExit(f"{' '.join(cmd)} failed: {out[4]}")
    return float(out[1]), float(out[2]), float(out[3])


def commands(n: int, work: Path) -> dict[str, list[str]]:
    sg = [sys.executable, "-c", "import sys; from sheetgen.console import main; sys.exit(main())"]
    csv, xlsx = work / f"shapes_{n}.csv", work / f"big_{n}.xlsx"
    return {"build": [*sg, "build", str(xlsx), "--shapes", str(csv), "--spare-rows", "0",
                      "--force"],
            "check": [*sg, "check", str(xlsx)],
            "read": [*sg, "read", str(xlsx), "--format", "csv"],
            "show --json": [*sg, "show", "--json", "--shapes", str(csv)]}


def bench(sizes: list[int], work: Path) -> list[dict]:
    rows = []
    floor: dict[str, float] = {}
    for n in [10, *sizes]:
        write_shapes_csv(work / f"shapes_{n}.csv", n)
        cmds = commands(n, work)
        for step in STEPS:
            seconds, mb, cpu = measure(cmds[step])
            if n == 10:
                floor[step] = mb
                continue
            rows.append({"rows": n, "step": step, "seconds": seconds, "cpu": cpu, "mb": mb,
                         "floor_mb": floor[step]})
            print(f"  {n:,} {step}: {seconds:.1f} s, {mb:.0f} MB", file=sys.stderr)
        (work / f"big_{n}.xlsx").unlink(missing_ok=True)
    first = {r["step"]: r for r in rows if r["rows"] == sizes[0]}
    for r in rows:
        r["time_ratio"] = r["seconds"] / first[r["step"]]["seconds"]
        r["cpu_ratio"] = r["cpu"] / first[r["step"]]["cpu"]
        r["mb_ratio"] = r["mb"] / first[r["step"]]["mb"]
        r["mb_per_row"] = (r["mb"] - r["floor_mb"]) * 1e6 / r["rows"]
    return rows


def table(rows: list[dict], sizes: list[int]) -> str:
    head = (f"| rows | step | s | CPU s | peak MB | time / {sizes[0]:,} rows | CPU time / "
            f"{sizes[0]:,} rows | memory / {sizes[0]:,} rows | size ratio | peak MB above the "
            "10-row run | B per row above it |")
    lines = [head, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['rows']:,} | {r['step']} | {r['seconds']:.1f} | {r['cpu']:.1f} "
                     f"| {r['mb']:.0f} | {r['time_ratio']:.2f} | {r['cpu_ratio']:.2f} "
                     f"| {r['mb_ratio']:.2f} "
                     f"| {r['rows'] / sizes[0]:.1f} | {r['mb'] - r['floor_mb']:.0f} "
                     f"| {r['mb_per_row']:.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000, 200_000])
    ap.add_argument("--out", type=Path, help="also write the markdown table here")
    ap.add_argument("--workdir", type=Path, help="where the files go (default: a temp dir)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        rows = bench(args.rows, args.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="sheetgen-big-") as tmp:
            rows = bench(args.rows, Path(tmp))
    text = table(rows, args.rows)
    print(text)
    print(f"({time.perf_counter() - t0:.0f} s in all)", file=sys.stderr)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
