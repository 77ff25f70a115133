"""Helpers for tests that let LibreOffice recalculate workbooks."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from sheetgen.layout.planner import WorkbookPlan
from sheetgen.verify.compare import expected_cells, values_match
from sheetgen.verify.libreoffice import make_profile, soffice

needs_libreoffice = pytest.mark.skipif(soffice() is None, reason="LibreOffice not installed")


def recalc_many(files: list[Path], outdir: Path) -> dict[Path, Path]:
    """Recalculate several workbooks in one LibreOffice start (it is the slow part)."""
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lo-test-") as prof:
        profile = make_profile(Path(prof))
        subprocess.run(
            [soffice() or "soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless",
             "--norestore", "--convert-to", "xlsx", "--outdir", str(outdir),
             *map(str, files)],
            check=True, capture_output=True, timeout=600,
        )
    out = {f: outdir / f.name for f in files}
    missing = [str(p) for p in out.values() if not p.exists()]
    assert not missing, f"LibreOffice produced no output for {missing}"
    return out


def read_values(path: Path) -> dict[str, Any]:
    """Every sheet's computed values, as openpyxl(data_only=True) reads them."""
    wb = openpyxl.load_workbook(path, data_only=True, read_only=True)
    values = {}
    for ws in wb.worksheets:
        values[ws.title] = {(c.row - 1, c.column - 1): c.value
                            for row in ws.iter_rows() for c in row
                            if getattr(c, "row", None) is not None}
    wb.close()
    return values


def mismatches(plan: WorkbookPlan, values: dict[str, Any], rtol: float = 1e-9) -> list[str]:
    """Formula cells whose recalculated value differs from the reference model."""
    bad = []
    count = 0
    for e in expected_cells(plan):
        count += 1
        got = values[e.sheet].get((e.row, e.col))
        if not values_match(got, e.value, rtol):
            bad.append(f"{e.sheet}!{e.address} {e.name}: got {got!r} expected {e.value!r}")
    assert count > 0
    return bad


def copy_to(src: Path, dst: Path) -> Path:
    shutil.copy(src, dst)
    return dst


def recalc_with_libreoffice(src: Path, workdir: Path, timeout: float = 300) -> Path:
    """One workbook through LibreOffice's forced recalculation; returns the new file."""
    return recalc_many([src], workdir / "lo-out")[src]
