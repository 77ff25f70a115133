"""writers/openpyxl_compat.py, the one use of openpyxl's private style array: if an openpyxl
upgrade drops it, these fail loudly, and a stamped cell must look exactly as one styled
through the public attributes."""

from __future__ import annotations

from copy import copy

import openpyxl
import pytest
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
