"""bench_suite.py's pieces that need no suite run: the README's test command, pytest's
counts and the table (the benchmark itself takes two whole suites: minutes)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent


def _bench() -> ModuleType:
    return load_script(ROOT / "benchmarks" / "bench_suite.py")


bench = _bench()


def test_the_readme_names_the_command_ci_runs(capsys):
    command = bench.test_command((ROOT / "README.md").read_text("utf-8"))
    assert (ROOT / ".ci" / "run").read_text("utf-8").strip().splitlines()[-1] == command
    with pytest.raises(SystemExit) as exit_:
        bench.test_command("# a README without one")
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("Error: the README names no test command")


def test_the_baselines_readme_names_its_own():
    old = subprocess.run(["git", "show", f"{bench.BASELINE}:README.md"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    if old.returncode != 0:
        pytest.skip("the baseline commit is not in this clone")
    assert bench.test_command(old.stdout) == "python3 -m pytest"


def test_counts_come_from_pytests_last_summary_line():
    out = "collected\n... 3 passed in earlier\n1602 passed, 25 skipped in 210.83s (0:03:30)\n"
    assert bench.counts(out) == {"passed": 1602, "skipped": 25}
    assert bench.counts("2 failed, 7 passed, 1 error in 3.0s") == {
        "failed": 2, "passed": 7, "error": 1}
    assert bench.counts("no summary") == {}


def test_each_current_run_is_divided_by_the_baseline_of_its_pair():
    runs = [bench.Run("baseline 1", "c3831da", "python3 -m pytest", {"passed": 10}, 400.0, 390,
                      0),
            bench.Run("current 1", "abc1234", "python3 -m pytest -n auto", {"passed": 12},
                      200.0, 380, 0),
            bench.Run("baseline 2", "c3831da", "python3 -m pytest", {"passed": 10}, 500.0, 480,
                      0),
            bench.Run("current 2", "abc1234", "python3 -m pytest -n auto", {}, 300.0, 500, 1)]
    lines = bench.table(runs).splitlines()
    assert lines[0].startswith("| run | commit |") and len(lines) == 6
    assert lines[3].endswith("| 200.0 | 380 | 0.50 |")
    assert lines[5].endswith("| 300.0 | 500 | 0.60, failed |") and "exit 1" in lines[5]


def test_a_failing_baseline_gives_no_ratio_and_its_failures_are_named():
    """A baseline cut short by failures (or slowed by timeouts) is no yardstick."""
    out = ("....F\n=== short test summary info ===\n"
           "FAILED tests/test_x.py::test_y - AssertionError: no\n"
           "ERROR tests/test_z.py::test_w - OSError\n1 failed, 4 passed, 1 error in 9.0s\n")
    assert bench.failures(out) == ("FAILED tests/test_x.py::test_y - AssertionError: no",
                                   "ERROR tests/test_z.py::test_w - OSError")
    assert bench.failures("5 passed in 1.0s") == ()
    runs = [bench.Run("baseline 1", "c3831da", "python3 -m pytest",
                      bench.counts(out), 550.0, 320, 1, bench.failures(out)),
            bench.Run("current 1", "abc1234", "python3 -m pytest -n auto", {"passed": 12},
                      200.0, 380, 0)]
    lines = bench.table(runs).splitlines()
    assert lines[2].endswith("| 550.0 | 320 | n/a: failed |") and "1 failed" in lines[2]
    assert lines[3].endswith("| 200.0 | 380 | n/a: baseline failed |")


@pytest.mark.parametrize("option", ["--baseline", "--current"])
def test_an_unknown_commit_is_one_error_line(option):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_suite.py"),
                           option, "no-such-commit-xyz"], capture_output=True, text=True,
                          check=False, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"Error: {option} 'no-such-commit-xyz' is no commit of this repository"]


def test_an_inherited_ignored_ctrl_c_is_not_passed_on_to_the_suites():
    """Started from a background job, the benchmark inherits SIGINT ignored; its children
    would too, and both suites' Ctrl-C tests would time out. It installs its own handler
    first (exec gives the children the default), before even checking its options."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(SystemExit):
            bench.main(["--pairs", "0"])
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)
