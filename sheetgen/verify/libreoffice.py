"""LibreOffice Calc as an independent formula engine: recalculate a workbook headless.

A fresh LibreOffice profile trusts the cached values stored in an xlsx, which would make any
"LibreOffice agrees" claim vacuous; the dedicated profile written here forces a full
recalculation on load (OOXMLRecalcMode = 0, "always"). It also pins the locale to en-US
(text such as "1,000" or "1/15/2024" reads as a number by locale) and converts text to
numbers in arithmetic as Excel does (StringConversion = 3, "convert also locale dependent";
LibreOffice's default converts only unambiguous text).

The other view, a new, empty profile as a user double-clicking the file gets (cached values
shown, only what has none computed), is the tests' `recalc=False` LibreOffice jobs.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from sheetgen.errors import SheetgenError

_PROFILE_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">
 <prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">
 <prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Setup/L10N">
 <prop oor:name="ooSetupSystemLocale" oor:op="fuse"><value>en-US</value></prop></item>
<item oor:path="/org.openoffice.Setup/L10N">
 <prop oor:name="ooLocale" oor:op="fuse"><value>en-US</value></prop></item>
<item oor:path="/org.openoffice.Office.Linguistic/General">
 <prop oor:name="DefaultLocale" oor:op="fuse"><value>en-US</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Syntax">
 <prop oor:name="StringConversion" oor:op="fuse"><value>3</value></prop></item>
</oor:items>
"""


def soffice() -> str | None:
    """Path of the LibreOffice binary, if installed."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def make_profile(directory: Path) -> Path:
    """A LibreOffice user profile that recalculates every formula on load."""
    user = directory / "user"
    user.mkdir(parents=True, exist_ok=True)
    (user / "registrymodifications.xcu").write_text(_PROFILE_XCU, "utf-8")
    return directory


def _convert(files: list[Path], outdir: Path, to: str, timeout: float,
             profile: Path) -> subprocess.CompletedProcess[str]:
    binary = soffice()
    if binary is None:
        raise SheetgenError("LibreOffice (soffice) is not installed")
    cmd = [binary, f"-env:UserInstallation={profile.as_uri()}", "--headless",
           "--norestore", "--nologo", "--convert-to", to, "--outdir", str(outdir),
           *map(str, files)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def recalculate(src: str | Path, outdir: str | Path, *, to: str = "xlsx",
                timeout: float = 600) -> Path:
    """Open src in headless LibreOffice with forced recalculation and save it as `to`."""
    src, outdir = Path(src).resolve(), Path(outdir).resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sheetgen-lo-") as prof:
        proc = _convert([src], outdir, to, timeout, make_profile(Path(prof)))
    out = outdir / f"{src.stem}.{to.split(':')[0]}"
    if proc.returncode != 0 or not out.exists():
        raise SheetgenError(f"LibreOffice failed to convert {src.name}: "
                            f"{(proc.stderr or proc.stdout).strip()[:300]}")
    return out
