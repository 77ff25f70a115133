"""Run LibreOffice headless as an independent engine that really recalculates on load."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

RECALC_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" \
xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">\
<prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">\
<prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop></item>
</oor:items>
"""

needs_libreoffice = pytest.mark.skipif(shutil.which("soffice") is None, reason="no soffice")


def recalc_with_libreoffice(src: Path, workdir: Path, timeout: float = 300) -> Path:
    """Convert src to xlsx with a profile that forces recalculation; returns the new file."""
    profile = workdir / "lo-profile"
    (profile / "user").mkdir(parents=True, exist_ok=True)
    (profile / "user" / "registrymodifications.xcu").write_text(RECALC_XCU)
    out = workdir / "lo-out"
    out.mkdir(exist_ok=True)
    subprocess.run(
        ["soffice", "--headless", "--norestore", f"-env:UserInstallation={profile.as_uri()}",
         "--convert-to", "xlsx", "--outdir", str(out), str(src)],
        check=True, capture_output=True, timeout=timeout,
    )  # fmt: skip
    result = out / (src.stem + ".xlsx")
    if not result.exists():
        raise RuntimeError(f"LibreOffice wrote no {result.name}")
    return result
