"""Benchmark the test suite: its wall time against a baseline commit's, measured in the same run.

The layout issue's goal is a test suite that takes at most half of what it took when the issue
was filed (commit c3831da). This machine is shared and its speed drifts by ±10 % within the
hour, so the two suites run back to back, each from a fresh checkout of its commit (`git
worktree add`: tracked files only, as a clone has them) with its own virtual environment
(`--system-site-packages`, so both use the same installed libraries; sheetgen itself installed
editable from that checkout) and each with the test command its own README names (the
baseline's `python3 -m pytest`, today's `python3 -m pytest -n auto --dist loadgroup`), as CI
runs them: bytecode caching on, LibreOffice on the PATH. `--pairs 2` alternates them twice.

    python3 benchmarks/bench_suite.py                    # about 11 minutes on 2 cores
    python3 benchmarks/bench_suite.py --pairs 2 --out suite.md
    python3 benchmarks/bench_suite.py --baseline HEAD~5 --pytest-args tests/test_a1.py

The table gives each run's commit, command, test counts, wall and CPU seconds (the children's
user + system time), and its wall time over the baseline's of the same pair. A suite with a
failing test is no baseline: its failures are printed (pytest's FAILED and ERROR lines) and
its pair's ratio reads "n/a", since a run cut short by a failure or slowed by a timeout says
nothing about the other's speed.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent
#: the commit the layout issue measured "today" against
BASELINE = "c3831da"
#: how each README names its test command (the set-up section, since the baseline's README)
TEST_COMMAND = re.compile(r"runs the test command,\s+\*\*`([^`]+)`\*\*")
#: pytest's last line: "1602 passed, 25 skipped in 210.83s (0:03:30)"
SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
HEADER = ("| run | commit | command | tests | wall s | CPU s | wall / baseline |\n"
          "|---|---|---|---|---:|---:|---:|")


@dataclass
class Run:
    """One suite run: what ran and how long it took."""

    label: str
    commit: str
    command: str
    counts: dict[str, int]
    wall: float
    cpu: float
    returncode: int
    failures: tuple[str, ...] = ()


def fail(message: str) -> NoReturn:
    """Bad input: one `Error:` line and exit 2, as sheetgen's own commands do."""
    print(f"Error: {message}", file=sys.stderr)
    raise SystemExit(2)


def test_command(readme: str) -> str:
    """The test command a README's set-up names."""
    found = TEST_COMMAND.search(readme)
    if found is None:
        fail('the README names no test command ("runs the test command, **`...`**")')
    return found.group(1)


def counts(output: str) -> dict[str, int]:
    """pytest's summary counts from the last line that has them ({} if none)."""
    for line in reversed(output.splitlines()):
        found = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
                 for n, kind in SUMMARY.findall(line)}
        if found:
            return found
    return {}


def failures(output: str) -> tuple[str, ...]:
    """pytest's short-summary lines for the tests that failed or erred."""
    return tuple(line for line in output.splitlines()
                 if line.startswith(("FAILED ", "ERROR ")))


def resolve(option: str, commit: str) -> str:
    """The full id of `commit` (given as `option`), or one Error line naming the option."""
    full = subprocess.run(["git", "rev-parse", "--verify", f"{commit}^{{commit}}"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if full.returncode != 0:
        fail(f"{option} {commit!r} is no commit of this repository")
    return full.stdout.strip()


def checkout(commit: str, where: Path) -> tuple[Path, str]:
    """A fresh checkout of the full commit id `commit` with sheetgen installed editable in its
    own venv; returns the venv's bin folder and the short commit id."""
    subprocess.run(["git", "worktree", "add", "--detach", str(where), commit],
                   cwd=ROOT, check=True, capture_output=True)
    venv = where.parent / (where.name + "-venv")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", "--no-deps", "-e", str(where)],
                   check=True, stdout=subprocess.DEVNULL)
    return venv / "bin", commit[:7]


def run_suite(label: str, where: Path, bin_dir: Path, commit: str, extra: list[str]) -> Run:
    command = " ".join([test_command((where / "README.md").read_text("utf-8")), *extra])
    argv = command.split()
    argv[0] = str(bin_dir / "python")  # "python3" of this checkout's venv
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as .ci/run: the suite starts many processes
    env.pop("VIRTUAL_ENV", None)
    print(f"{label}: {commit}: {command} ...", file=sys.stderr, flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True,
                          check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    found = counts(proc.stdout)
    print(f"  {wall:.1f} s wall, {cpu:.0f} s CPU, {found}", file=sys.stderr, flush=True)
    failed = failures(proc.stdout)
    for line in failed:
        print(f"  {line}", file=sys.stderr, flush=True)
    return Run(label, commit, command, found, wall, cpu, proc.returncode, failed)


def table(runs: list[Run]) -> str:
    lines = [HEADER]
    base: Run | None = None
    for r in runs:
        if r.label.startswith("baseline"):
            base = r
        tests = ", ".join(f"{n:,} {k}" for k, n in r.counts.items()) or f"exit {r.returncode}"
        if r is base:
            ratio = "1" if r.returncode == 0 else "n/a: failed"
        elif base is None or base.returncode != 0:
            ratio = "n/a: baseline failed"
        else:
            ratio = f"{r.wall / base.wall:.2f}" + ("" if r.returncode == 0 else ", failed")
        lines.append(f"| {r.label} | {r.commit} | `{r.command}` | {tests} | {r.wall:.1f} | "
                     f"{r.cpu:.0f} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=BASELINE, help=f"Commit to compare with [{BASELINE}].")
    ap.add_argument("--current", default="HEAD", help="Commit measured against it [HEAD].")
    ap.add_argument("--pairs", type=int, default=1, help="Baseline-then-current pairs [1].")
    ap.add_argument("--pytest-args", nargs="*", default=[],
                    help="Extra arguments for both suites (e.g. a test file, for a quick look).")
    ap.add_argument("--out", type=Path, help="Also write the table to this file.")
    args = ap.parse_args(argv)
    # Both suites test Ctrl-C (SIGINT) on real processes. Started from a script's background
    # job (`cmd &`), this process inherits SIGINT ignored, and so would every process the
    # suites start: their Ctrl-C tests would wait out their timeouts (4 x 60 s in the
    # baseline's) and fail. A handler of our own makes the children start with the default.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.pairs < 1:
        fail("--pairs must be 1 or more")
    # both commits are checked before minutes go on a checkout
    commits = resolve("--baseline", args.baseline), resolve("--current", args.current)
    runs: list[Run] = []
    scratch = Path(tempfile.mkdtemp(prefix="sheetgen-bench-suite-"))
    trees = [scratch / "baseline", scratch / "current"]
    try:
        base_bin, base_id = checkout(commits[0], trees[0])
        cur_bin, cur_id = checkout(commits[1], trees[1])
        for i in range(1, args.pairs + 1):
            runs.append(run_suite(f"baseline {i}", trees[0], base_bin, base_id,
                                  args.pytest_args))
            runs.append(run_suite(f"current {i}", trees[1], cur_bin, cur_id, args.pytest_args))
    except subprocess.CalledProcessError as exc:
        fail(f"setting up a checkout failed: {' '.join(map(str, exc.cmd))} exited "
             f"{exc.returncode}")
    finally:
        for tree in trees:
            if tree.exists():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT,
                               capture_output=True, check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    text = table(runs)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0 if all(r.returncode == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
