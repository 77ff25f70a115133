"""Regenerate the golden files: `python tests/golden/regen.py` (from anywhere).

Writes every XML part of the default workbook (what `sheetgen build roofline.xlsx` makes)
into tests/golden/default/, normalised by `normalise`, and deletes golden files of parts the
workbook no longer has. tests/test_golden.py compares a fresh build against these files.
Run it after any intended change to the default workbook and commit the result with it
(tests/golden/README.md).
"""

from __future__ import annotations

import re
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "default"
#: significant digits kept of a cached number: any real change shows, the last bits of a
#: floating-point result (which may differ between numpy or libm builds) do not
DIGITS = 12


def _number(match: re.Match[str]) -> str:
    text = match.group(2)
    try:
        value = float(text)
    except ValueError:
        return match.group(0)
    return f"{match.group(1)}{value:.{DIGITS}g}{match.group(3)}"


def normalise(name: str, xml: str) -> str:
    """One part's XML as a golden file holds it: one element per line (a worksheet cell, with
    its formula and cached value, or a shared string on one line of its own), cached numbers
    to DIGITS significant digits, and the volatile metadata (the creation time, sheetgen's
    version, the layout fingerprint) replaced by fixed words."""
    if name == "docProps/core.xml":
        xml = re.sub(r"(<dcterms:(?:created|modified)[^>]*>)[^<]*", r"\1DATE", xml)
    if name == "docProps/custom.xml":
        xml = re.sub(r'(name="sheetgen.version"><vt:lpwstr>)[^<]*', r"\1VERSION", xml)
        # each sheet's cell map in hex (tests/test_readback_layout.py holds it); the sheets'
        # own parts show any change of layout
        xml = re.sub(r'(name="sheetgen.layout"><vt:lpwstr>)[^<]*', r"\1LAYOUT", xml)
    xml = re.sub(r"(<(?:c:)?v>)([^<]*)(</(?:c:)?v>)", _number, xml)
    xml = xml.replace("><", ">\n<")
    for start, end in (("<c r=", "</c>"), ("<si>", "</si>")):
        xml = re.sub(re.escape(start) + r".*?" + re.escape(end),
                     lambda m: m.group(0).replace("\n", ""), xml, flags=re.S)
    return xml if xml.endswith("\n") else xml + "\n"


def default_parts() -> dict[str, str]:
    """Every XML part of the default workbook, normalised, by its name in the package."""
    from sheetgen.cli import cli

    with tempfile.TemporaryDirectory(prefix="sheetgen-golden-") as tmp:
        out = Path(tmp) / "roofline.xlsx"
        cli.main(args=["build", str(out)], prog_name="sheetgen", standalone_mode=False)
        with zipfile.ZipFile(out) as z:
            return {n: normalise(n, z.read(n).decode("utf-8")) for n in z.namelist()
                    if n.endswith((".xml", ".rels"))}


def golden_files() -> dict[str, Path]:
    """The golden files on disk, by part name."""
    return {p.relative_to(GOLDEN).as_posix(): p for p in sorted(GOLDEN.rglob("*")) if p.is_file()}


def main() -> int:
    parts = default_parts()
    for name, path in golden_files().items():
        if name not in parts:
            path.unlink()
            print(f"removed {path.relative_to(HERE.parent.parent)}")
    changed = 0
    for name, text in parts.items():
        path = GOLDEN / name
        if path.exists() and path.read_text("utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        changed += 1
        print(f"wrote {path.relative_to(HERE.parent.parent)}")
    print(f"{len(parts)} golden files, {changed} changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
