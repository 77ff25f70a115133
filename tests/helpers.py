"""Helpers shared by the test files: run the CLI in process or as a real process, what a user
error must look like, and the reference model's scalars."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

import sheetgen
from sheetgen.api import build_workbook
from sheetgen.cli import cli


def run(*args: str, color: bool = False, cwd: Path | None = None) -> Result:
    """`sheetgen ARGS` in process, in folder `cwd` if given (no interpreter start-up: most
    CLI tests need no real process). The result has exit_code, output, stdout and stderr.
    An unexpected exception propagates with its traceback rather than becoming a non-zero
    exit code a test could mistake for a handled error."""
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        return CliRunner().invoke(cli, list(args), catch_exceptions=False, color=color)


def sheetgen_process(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                     timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`sheetgen ARGS` as a real process, through `python -m sheetgen` with this interpreter
    (the one whose sheetgen is under test): for what only a process shows (exit status,
    signals, start-up, separate stdout and stderr of a real run)."""
    return subprocess.run([sys.executable, "-m", "sheetgen", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=timeout, check=False)


def one_line_error(result: Result | subprocess.CompletedProcess[str] | str, *needles: str) -> str:
    """A user error as the CLI must report it: exit status 2, exactly one `Error:` line (naming
    each of `needles`), no traceback. `result` is a CliRunner result, a finished process (its
    stderr is read) or the text alone (then the exit status is the caller's to check).
    Returns the line."""
    if isinstance(result, Result):
        assert result.exit_code == 2, result.output
        text = result.output
    elif isinstance(result, subprocess.CompletedProcess):
        assert result.returncode == 2, (result.stdout, result.stderr)
        text = result.stderr
    else:
        text = result
    assert "Traceback" not in text, text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), text
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def scalars(**options: Any) -> dict[str, Any]:
    """The reference model's single-value quantities (Pipeline, Parallelism, What-if ...) for
    one 1×1×1 shape and the given build options."""
    return sheetgen.plan(shapes=[(1, 1, 1)], spare_rows=0, **options).model.scalars


_BUILT: dict[str, tuple[Path, int]] = {}


def built_workbook(out: str | Path, **options: Any) -> tuple[Path, int]:
    """`sheetgen.api.build_workbook(out, **options)` for tests that only read the workbook:
    each set of options is built once per test process and then copied, since a dozen test
    files read the same default workbook and a build takes seconds."""
    out = Path(out)
    key = repr(sorted(options.items()))
    if out.exists() or "progress_factory" in options:  # what build_workbook itself must do
        return build_workbook(out, **options)
    if key not in _BUILT:
        folder = Path(tempfile.mkdtemp(prefix="sheetgen-built-"))
        _BUILT[key] = build_workbook(folder / "built.xlsx", **options)
    source, rows = _BUILT[key]
    shutil.copyfile(source, out)
    return out, rows
