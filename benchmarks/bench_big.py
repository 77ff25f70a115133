"""Big workbooks end to end: build, check, read and show at growing sizes (issue 21).

For each size N the script writes N random shapes (bench_build's CSV), then runs, each in a
fresh process so its peak RSS (``ru_maxrss`` of the child, imports included) is its own:
``sheetgen build`` (``--spare-rows 0``), ``sheetgen check``, ``sheetgen read`` (CSV to
/dev/null) and ``sheetgen show --json`` (to /dev/null). Every figure is given with its
baseline from the same run: the same command on a 10-row file (the interpreter, imports and
fixed sheets), so "per row" is what each row adds above that floor (CPU microseconds and
bytes of peak RSS); and the smallest size, so linear growth reads as the size ratio.

Then the verdicts the issue asks for: time that grows linearly with the rows (CPU time above
the floor, from each size to the next, at most `--slack` times the size ratio: 2.3 for twice
the rows at the default 1.15; CPU time because wall time on a shared machine moves with the
other jobs), and a peak under `--max-mb` (4 GB). The exit status is 1 when one fails.

    python benchmarks/bench_big.py --rows 100000 200000 1000000
    python benchmarks/bench_big.py --rows 5000 20000 --steps check read --out big.md
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_build import write_shapes_csv  # noqa: E402

STEPS = ("build", "check", "read", "show --json")
#: time may grow this much faster than the rows before it counts as not linear
SLACK = 1.15
#: the issue's memory bound for check and read of a 1,048,576-row workbook
MAX_MB = 4096.0
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


def bench(sizes: list[int], work: Path, steps: Sequence[str] = STEPS) -> list[dict]:
    """Run each step at 10 rows (the floor) and at each size; one dict per (size, step)."""
    rows = []
    floor: dict[str, tuple[float, float]] = {}
    for n in [10, *sizes]:
        write_shapes_csv(work / f"shapes_{n}.csv", n)
        cmds = commands(n, work)
        if "build" not in steps:  # the other steps read the workbook: build it, unmeasured
            measure(cmds["build"])
        for step in steps:
            seconds, mb, cpu = measure(cmds[step])
            if n == 10:
                floor[step] = (mb, cpu)
                continue
            rows.append({"rows": n, "step": step, "seconds": seconds, "cpu": cpu, "mb": mb,
                         "floor_mb": floor[step][0], "floor_cpu": floor[step][1]})
            print(f"  {n:,} {step}: {seconds:.1f} s ({cpu:.1f} s CPU), {mb:.0f} MB",
                  file=sys.stderr)
        (work / f"big_{n}.xlsx").unlink(missing_ok=True)
    first = {r["step"]: r for r in rows if r["rows"] == sizes[0]}
    for r in rows:
        r["time_ratio"] = r["seconds"] / first[r["step"]]["seconds"]
        r["cpu_ratio"] = r["cpu"] / first[r["step"]]["cpu"]
        r["mb_ratio"] = r["mb"] / first[r["step"]]["mb"]
        r["mb_per_row"] = (r["mb"] - r["floor_mb"]) * 1e6 / r["rows"]
        r["us_per_row"] = max(r["cpu"] - r["floor_cpu"], 0.0) * 1e6 / r["rows"]
    return rows


def table(rows: list[dict], sizes: list[int]) -> str:
    head = (f"| rows | step | s | CPU s | peak MB | CPU us / row | B / row | time / {sizes[0]:,} "
            f"rows | CPU time / {sizes[0]:,} rows | memory / {sizes[0]:,} rows | size ratio |")
    lines = [head, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['rows']:,} | {r['step']} | {r['seconds']:.1f} | {r['cpu']:.1f} "
                     f"| {r['mb']:.0f} | {r['us_per_row']:.0f} | {r['mb_per_row']:.0f} "
                     f"| {r['time_ratio']:.2f} | {r['cpu_ratio']:.2f} | {r['mb_ratio']:.2f} "
                     f"| {r['rows'] / sizes[0]:.1f} |")
    return "\n".join(lines)


def verdicts(rows: list[dict], slack: float = SLACK, max_mb: float = MAX_MB
             ) -> tuple[str, bool]:
    """Linear time (CPU above the floor, each size against the one before, within `slack`
    times the size ratio) and bounded memory, as a markdown table; and whether all hold."""
    lines = ["| step | rows | size ratio | CPU-time ratio (above the floor) | limit | wall-time "
             "ratio | peak MB | verdict |", "|---|---|---:|---:|---:|---:|---:|---|"]
    ok = True
    by_step: dict[str, list[dict]] = {}
    for r in rows:
        by_step.setdefault(r["step"], []).append(r)
    for step, runs in by_step.items():
        for a, b in itertools.pairwise(runs):
            size = b["rows"] / a["rows"]
            cpu = (b["cpu"] - b["floor_cpu"]) / max(a["cpu"] - a["floor_cpu"], 1e-9)
            good = cpu <= slack * size and b["mb"] <= max_mb
            ok &= good
            lines.append(f"| {step} | {a['rows']:,} to {b['rows']:,} | {size:.1f} | {cpu:.2f} "
                         f"| {slack * size:.2f} | {b['seconds'] / a['seconds']:.2f} "
                         f"| {b['mb']:.0f} | {'ok' if good else 'FAILS'} |")
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000, 200_000])
    ap.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS),
                    help="which commands to measure (quote 'show --json')")
    ap.add_argument("--slack", type=float, default=SLACK,
                    help="allowed growth of CPU time over the size ratio (default 1.15)")
    ap.add_argument("--max-mb", type=float, default=MAX_MB)
    ap.add_argument("--out", type=Path, help="also write the markdown tables here")
    ap.add_argument("--workdir", type=Path, help="where the files go (default: a temp dir)")
    args = ap.parse_args(argv)
    sizes = sorted(args.rows)
    t0 = time.perf_counter()
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        rows = bench(sizes, args.workdir, args.steps)
    else:
        with tempfile.TemporaryDirectory(prefix="sheetgen-big-") as tmp:
            rows = bench(sizes, Path(tmp), args.steps)
    verdict, ok = verdicts(rows, args.slack, args.max_mb)
    text = table(rows, sizes) + "\n\n" + verdict
    print(text)
    print(f"({time.perf_counter() - t0:.0f} s in all)", file=sys.stderr)
    if args.out:
        args.out.write_text(text + "\n", "utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
