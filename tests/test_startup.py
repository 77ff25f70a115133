"""The CLI starts without its heavy dependencies (speed itself is benchmarks/bench_startup.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "numpy", "xlsxwriter", "openpyxl", "gspread", "google.auth", "matplotlib")

PROBE = """
import sys
import click
from sheetgen.cli import cli
sys.argv = ["sheetgen", *{args!r}]
try:
    cli.main(args=sys.argv[1:], prog_name="sheetgen", standalone_mode=False)
except (SystemExit, click.UsageError):  # no command given: click's usage
    pass
print("heavy:" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


@pytest.mark.parametrize("args", [[], ["--help"], ["--version"], ["gpus"], ["build", "--help"],
                                  ["check", "--help"], ["push", "--help"]])
def test_light_commands_import_no_heavy_module(args: list[str]):
    """`import sheetgen.cli` and the commands that only print import none of HEAVY."""
    proc = subprocess.run([sys.executable, "-c", PROBE.format(args=args, heavy=HEAVY)],
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "heavy:"


def test_public_names_still_resolve():
    """Lazy imports keep every public name reachable, and `sheetgen.fill` stays the function
    even after the submodule of the same name is imported."""
    import sheetgen
    import sheetgen.fill

    assert callable(sheetgen.fill) and sheetgen.fill.__module__ == "sheetgen.fill"
    for name in sheetgen.__all__:
        assert getattr(sheetgen, name) is not None


def test_bench_startup_prints_ratios(tmp_path: Path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_startup.py"),
                           "--repeat", "1"], capture_output=True, text=True, env=env,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("|") for line in proc.stdout.splitlines()[2:]]
    assert [r[1].strip() for r in rows][:4] == ["python -c pass", "sheetgen --help",
                                               "sheetgen --version", "sheetgen gpus"]
    assert all(float(r[3].strip().rstrip("x")) > 0 for r in rows)
