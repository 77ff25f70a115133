"""The CLI starts without its heavy dependencies (speed itself is benchmarks/bench_startup.py)."""

from __future__ import annotations

import os
import shutil
import signal
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



def test_a_build_imports_no_pandas(tmp_path: Path):
    """`sheetgen build` makes no DataFrame, so it does not pay pandas' ~0.3 s import (every
    build process, and every test that spawns one, did)."""
    args = ["build", str(tmp_path / "out.xlsx")]
    proc = subprocess.run([sys.executable, "-c", PROBE.format(args=args, heavy=("pandas",))],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "heavy:"
    assert (tmp_path / "out.xlsx").read_bytes()[:2] == b"PK"

def test_public_names_still_resolve():
    """Lazy imports keep every public name reachable, and `sheetgen.fill` stays the function
    even after the submodule of the same name is imported."""
    import sheetgen
    import sheetgen.writers.fill

    assert callable(sheetgen.fill) and sheetgen.fill.__module__ == "sheetgen.writers.fill"
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


# --- Ctrl-C while the CLI is still being imported ------------------------------------------
#: Installed as sitecustomize in the child only (tests, never shipped): the first import of
#: {target!r} announces itself on stdout and then waits, so SIGINT is sent while that import
#: is certainly running, whatever the machine's speed.
BLOCK_IMPORT = """
import sys, time

class _BlockImport:
    def find_spec(self, name, path=None, target=None):
        if name == {target!r}:
            sys.meta_path.remove(self)
            print("importing " + name, flush=True)
            while True:
                time.sleep(60)
        return None

sys.meta_path.insert(0, _BlockImport())
"""


def default_sigint() -> None:
    """In the child: SIGINT interrupts, even when pytest itself was started in the background
    of a shell without job control, which hands its children SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_while_importing(tmp_path: Path, target: str, argv: list[str]
                               ) -> subprocess.CompletedProcess[str]:
    """Run argv with `target`'s import held, send SIGINT once it is held, and wait."""
    (tmp_path / "sitecustomize.py").write_text(BLOCK_IMPORT.format(target=target))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=default_sigint)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # returns once the import is held (or the child ended)
        assert line == f"importing {target}\n", (line, proc.communicate(timeout=60))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@pytest.mark.parametrize("target", ["sheetgen.cli", "click", "sheetgen.cli.checking"])
def test_ctrl_c_during_startup_imports_is_one_error_line(tmp_path: Path, target: str):
    """The installed `sheetgen` script, interrupted while the CLI (or click, or a command
    module) is being imported: `Error: interrupted`, exit 130, no traceback."""
    script = shutil.which("sheetgen")
    assert script is not None, "the sheetgen console script is not on PATH"
    done = _interrupt_while_importing(tmp_path, target, [script, "--help"])
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert done.stderr == "Error: interrupted\n", done.stderr
    assert done.stdout == ""


def test_the_import_hook_really_interrupts_an_import(tmp_path: Path):
    """Control: the same interrupt in a program importing the CLI at its top level (as the
    console script did before sheetgen.console) ends in Python's traceback, so the test above
    exercises the import, not some later moment."""
    code = "from sheetgen.cli import cli; cli()"
    done = _interrupt_while_importing(tmp_path, "sheetgen.cli",
                                      [sys.executable, "-c", code, "--help"])
    assert done.returncode != 0 and "Traceback" in done.stderr, done.stderr
    assert "KeyboardInterrupt" in done.stderr
