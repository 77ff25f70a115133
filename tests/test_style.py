"""Project hygiene that should fail loudly: lint, and the public API surface."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import sheetgen

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed")
def test_ruff_clean():
    proc = subprocess.run(["ruff", "check", "--quiet", str(ROOT)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_public_api_is_explicit_and_sorted():
    assert sheetgen.__all__ == sorted(sheetgen.__all__)
    for name in sheetgen.__all__:
        assert hasattr(sheetgen, name), name


def test_no_formula_text_outside_the_definitions():
    """Formulas come from Quantity templates only: writers and planners hold no formula."""
    for module in ("layout/planner.py", "writers/xlsx.py", "model/reference.py", "assemble.py",
                   "api.py", "cli/*.py", "writers/into_workbook.py", "writers/fill.py",
                   "writers/plot.py", "inputs/shapes.py", "writers/google/*.py", "verify/check.py",
                   "verify/grade/*.py"):
        paths = sorted((ROOT / "sheetgen").glob(module))
        assert paths, module
        text = "".join(path.read_text() for path in paths)
        for fn in ("MAX(", "INDEX(", "MATCH(", "ISBLANK(", "SUMPRODUCT("):
            assert fn not in text, f"{module} contains formula text {fn}"
