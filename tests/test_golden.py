"""The default workbook, part by part, against golden files (as XlsxWriter's own tests compare
against files Excel made): a changed cell, style, chart or name fails here at once, with no
LibreOffice. After an intended change: `python tests/golden/regen.py` (tests/golden/README.md).
"""

from __future__ import annotations

import difflib

import pytest
from golden.regen import GOLDEN, default_parts, golden_files, normalise

REGEN = "python tests/golden/regen.py"


@pytest.fixture(scope="module")
def built() -> dict[str, str]:
    return default_parts()


def test_the_workbook_has_exactly_the_golden_parts(built: dict[str, str]):
    assert sorted(built) == sorted(golden_files()), f"parts added or removed: run {REGEN}"
    assert len(built) >= 20 and "xl/worksheets/sheet1.xml" in built


@pytest.mark.parametrize("name", sorted(golden_files()))
def test_part_matches_its_golden_file(built: dict[str, str], name: str):
    want = (GOLDEN / name).read_text("utf-8")
    got = built.get(name)
    assert got is not None, f"the workbook has no part {name}: run {REGEN} if intended"
    if got != want:
        diff = list(difflib.unified_diff(want.splitlines(), got.splitlines(), f"golden/{name}",
                                         "built", n=1, lineterm=""))
        pytest.fail(f"{name} differs from its golden file ({len(diff)} diff lines; if the "
                    f"change is intended, run {REGEN}):\n" + "\n".join(diff[:40]))


def test_normalise_fixes_volatile_bits_and_keeps_a_cell_on_one_line():
    core = ('<cp:coreProperties><dcterms:created xsi:type="dcterms:W3CDTF">2026-12-01T21:02:44Z'
            '</dcterms:created></cp:coreProperties>')
    assert "DATE" in normalise("docProps/core.xml", core) and "2026" not in normalise(
        "docProps/core.xml", core)
    sheet = '<row r="6"><c r="A6" s="5"><f>2*B6</f><v>0.30000000000000004</v></c></row>'
    assert normalise("xl/worksheets/sheet1.xml", sheet).splitlines() == [
        '<row r="6">', '<c r="A6" s="5"><f>2*B6</f><v>0.3</v></c>', "</row>"]
    # a changed cell is one changed line
    changed = sheet.replace("2*B6", "3*B6")
    assert sum(a != b for a, b in zip(normalise("x", sheet).splitlines(),
                                      normalise("x", changed).splitlines(), strict=True)) == 1
