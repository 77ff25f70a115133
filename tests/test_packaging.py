"""The package as users install it: every subpackage is declared, so `pip install .` (not
editable) ships all the code and the templates."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_subpackage_is_declared():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = set(config["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "sheetgen").rglob("__init__.py")}
    assert found <= declared, f"not in pyproject packages: {sorted(found - declared)}"
    assert "sheetgen.templates" in declared
    data = config["tool"]["setuptools"]["package-data"]["sheetgen.templates"]
    assert "*.toml" in data and "*.csv" in data
