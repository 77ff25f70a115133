"""writers/openpyxl_compat.py, the one use of openpyxl's private style array: if an openpyxl
upgrade drops it, these fail loudly, and a stamped cell must look exactly as one styled
through the public attributes. Also the tests' own copies of loaded workbooks
(helpers.load_workbook): each must be the workbook openpyxl itself loads."""

from __future__ import annotations

import re
import zipfile
from copy import copy
from pathlib import Path

import openpyxl
import pytest
from helpers import built_workbook, load_workbook
from openpyxl.styles import Alignment, Border, Font, PatternFill, Side

from sheetgen.writers import openpyxl_compat
from sheetgen.writers.openpyxl_compat import StyleStamp

LOOK = {"font": Font(name="Arial", size=9, bold=True, color="FF1F4E79"),
        "fill": PatternFill("solid", start_color="FFFFF2CC", end_color="FFFFF2CC"),
        "border": Border(bottom=Side("thin", color="FF999999")),
        "alignment": Alignment(horizontal="right", indent=1),
        "number_format": "0.000"}


def test_openpyxl_still_keeps_the_private_style_array():
    cell = openpyxl.Workbook().active["A1"]
    assert hasattr(cell, openpyxl_compat.PRIVATE_ATTRIBUTE), openpyxl.__version__


def test_a_stamped_cell_looks_as_one_styled_in_public(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    stamp = StyleStamp(LOOK)
    for row in range(1, 4):
        stamp.apply(ws.cell(row=row, column=1, value=row))
    for attr, piece in LOOK.items():  # column B: the public way
        for row in range(1, 4):
            setattr(ws.cell(row=row, column=2, value=row), attr, piece)
    wb.save(tmp_path / "s.xlsx")
    back = openpyxl.load_workbook(tmp_path / "s.xlsx").active
    for row in range(1, 4):
        stamped, public = back.cell(row=row, column=1), back.cell(row=row, column=2)
        assert copy(stamped.font) == copy(public.font)
        assert stamped.font.bold and stamped.font.size == 9
        assert copy(stamped.fill) == copy(public.fill) and stamped.fill.fgColor.rgb == "FFFFF2CC"
        assert copy(stamped.border) == copy(public.border) and stamped.border.bottom.style == "thin"
        assert copy(stamped.alignment) == copy(public.alignment) and stamped.alignment.indent == 1
        assert stamped.number_format == public.number_format == "0.000"


def test_a_missing_array_fails_loudly(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(openpyxl_compat, "PRIVATE_ATTRIBUTE", "_no_such_array")
    cell = openpyxl.Workbook().active["A1"]
    with pytest.raises(RuntimeError, match=r"openpyxl_compat\.py needs updating"):
        StyleStamp(LOOK).apply(cell)


def _saved_parts(wb: openpyxl.Workbook, path: Path) -> dict[str, bytes]:
    """The workbook as openpyxl saves it, each cell's style index replaced by the style's own
    XML (a fresh load saves duplicate styles that a copy merges, same looks, other indices)
    and merged ranges in order (openpyxl keeps them in a set)."""
    wb.save(path)
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist() if n != "docProps/core.xml"}
    styles = parts.pop("xl/styles.xml").decode()
    head, rest = styles.split("<cellXfs", 1)
    xfs, tail = rest.split("</cellXfs>", 1)
    looks = re.findall(r"<xf [^>]*?(?:/>|>.*?</xf>)", xfs)
    parts["styles less cellXfs"] = (head + tail).encode()
    for name in [n for n in parts if n.startswith("xl/worksheets/")]:
        xml = re.sub(rb' s="(\d+)"', lambda m: b" s='" + looks[int(m[1])].encode() + b"'",
                     parts[name])
        parts[name] = re.sub(rb"(?:<mergeCell [^>]*/>)+",
                             lambda m: b"".join(sorted(re.findall(rb"<mergeCell [^>]*/>", m[0]))),
                             xml)
    return parts


def test_a_copied_workbook_is_the_one_openpyxl_loads(tmp_path):
    """helpers.load_workbook parses a file once and copies it after (pickle, with three
    openpyxl containers reduced by hand): two copies, saved, hold every cell, style, size,
    merge, rule, print setting and name that openpyxl's own load saves; an edit stays in
    its copy; sizes are still made on demand."""
    path, _ = built_workbook(tmp_path / "d.xlsx", spare_rows=0)
    fresh = _saved_parts(openpyxl.load_workbook(path), tmp_path / "fresh.xlsx")
    assert len(fresh) > 10 and b"<mergeCell " in fresh["xl/worksheets/sheet4.xml"]
    first, second = load_workbook(path), load_workbook(path)
    assert second["Parallelism"].row_dimensions[9999].index == 9999
    del second["Parallelism"].row_dimensions[9999]
    second["Inputs"]["B9"] = 0.5
    assert first["Inputs"]["B9"].value == 1
    assert _saved_parts(first, tmp_path / "first.xlsx") == fresh
    edited = openpyxl.load_workbook(path)
    edited["Inputs"]["B9"] = 0.5
    assert _saved_parts(second, tmp_path / "second.xlsx") == _saved_parts(
        edited, tmp_path / "edited.xlsx") != fresh
