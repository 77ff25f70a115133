"""int8 peaks count integer operations: rates read TOP/s, never TFLOP/s, for int8.

Hand figures for the A100 40GB SXM (NVIDIA A100 datasheet: 624 dense int8 TOPS, 312 dense
bf16 TFLOPS, 1,555 GB/s). 1×4096×4096 in int8 moves 4096 + 4096² + 4096 = 16,785,408 B for
2·4096² = 33,554,432 operations: intensity 1.999 OP/B, memory-bound, so it attains
1.999 × 1.555e12 = 3.108e12 OP/s = "3.1 TOP/s".
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET

import openpyxl
from fill_helpers import filled_workbook
from helpers import built_workbook
from lo_helpers import libreoffice_job, needs_libreoffice, printed_pages
from openpyxl.worksheet.cell_range import MultiCellRange
from xlsx_edit import cell_of, defined_names, edit_cells, sheet_xml

from sheetgen.api import plan
from sheetgen.layout.styles import NUMBER_FORMATS
from sheetgen.writers.google.requests import requests_for

RATE, OPS = NUMBER_FORMATS["rate"], NUMBER_FORMATS["rate_ops"]
MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


@libreoffice_job("rate-units", to="pdf")
def _workbooks(tmp: Path) -> dict[str, Path]:
    """The bf16 default and the same file with int8 picked in the dropdown; an int8 build;
    a filled workbook switched to int8."""
    built, _ = built_workbook(tmp / "bf16.xlsx", spare_rows=0)
    int8, _ = built_workbook(tmp / "int8.xlsx", dtype="int8", spare_rows=0)
    filled = filled_workbook(tmp)
    return {"bf16": built, "bf16 picked int8": _set_dtype(built, "int8", tmp / "picked.xlsx"),
            "int8": int8, "filled picked int8": _set_dtype(filled, "int8",
                                                           tmp / "filled_int8.xlsx")}


def _pages(pdf: Path) -> dict[str, str]:
    """Sheet name -> the text LibreOffice printed for it (pages joined)."""
    out: dict[str, str] = {}
    for text in printed_pages(pdf):
        footer = re.match(r"(.+?) \d+ / \d+", text)  # the printed footer comes first
        if footer is None:  # a user's own sheet (fill), printed without sheetgen's footer
            continue
        out[footer.group(1)] = out.get(footer.group(1), "") + text
    return out


def _set_dtype(path: Path, dtype: str, out: Path) -> Path:
    """The workbook with the Inputs dtype dropdown set to `dtype`, as a user would (typed
    into its XML; LibreOffice recalculates before it prints)."""
    sheet, cell = cell_of(defined_names(path)["DTYPE"])
    assert openpyxl.load_workbook(path, read_only=True)[sheet][cell].value == "bf16"
    return edit_cells(path, out, {(sheet, cell): dtype})


def _rule_formats(path: Path, sheet: str) -> dict[str, tuple[str, str]]:
    """Cell range -> the formula and number format of its formula rule (from the xlsx
    itself): the sheet's <conditionalFormatting> rules and the styles' <dxfs>, as openpyxl
    binds them on a load (the last rule of a range wins), read without loading the cells
    (a whole load takes 2 s)."""
    xml = sheet_xml(path, sheet)
    with zipfile.ZipFile(path) as z:
        styles = ET.fromstring(z.read("xl/styles.xml"))
    formats = [None if (fmt := dxf.find(f"{MAIN}numFmt")) is None else fmt.get("formatCode")
               for dxf in styles.iterfind(f"{MAIN}dxfs/{MAIN}dxf")]
    out = {}
    # top-level ones only: an <x14:conditionalFormatting> in extLst is not openpyxl's
    for block in re.findall(r"<conditionalFormatting\b.*?</conditionalFormatting>", xml, re.S):
        cf = ET.fromstring(block)
        for rule in cf.iterfind("cfRule"):
            dxf = rule.get("dxfId")
            code = None if dxf is None else formats[int(dxf)]
            if rule.get("type") == "expression" and code:
                out[str(MultiCellRange(cf.get("sqref")))] = (rule.findtext("formula"), code)
    return out


@needs_libreoffice
def test_picking_int8_in_the_dropdown_shows_top_s(libreoffice):
    pdfs = libreoffice.outputs("rate-units")
    pages = _pages(pdfs["bf16 picked int8"])
    assert "624.0 TOP/s" in pages["Inputs"]  # the A100's dense int8 peak
    assert "TFLOP/s" not in pages["Inputs"].replace("312.0 TFLOP/s", "")  # (no bf16 rate)
    matmul = pages["Matmul"]
    assert "3.1 TOP/s" in matmul  # 1×4096×4096, hand figure above
    assert "624.0 TOP/s" in matmul  # a compute-bound shape at the int8 peak
    assert not re.search(r"\d TFLOP/s", matmul), matmul[:400]
    # and back to bf16 in the same file: TFLOP/s again
    pages = _pages(pdfs["bf16"])
    assert "312.0 TFLOP/s" in pages["Matmul"] and "TOP/s" not in pages["Inputs"]


@needs_libreoffice
def test_an_int8_build_shows_top_s_everywhere(libreoffice):
    path = libreoffice.sources("rate-units")["int8"]
    wb = openpyxl.load_workbook(path, read_only=True)  # cells' values and formats only
    # the label and value columns' rows, the last row left out as before (range(1, max_row))
    rows = list(wb["Inputs"].iter_rows(max_col=2))[:-1]
    formats = {label.value: value.number_format for label, value in rows}
    assert formats["Peak FLOP/s (dense)"] == formats["Attainable FLOP/s"] == OPS
    # the other way round, live: TFLOP/s while a float dtype is picked
    rules = _rule_formats(path, "Inputs")
    assert ('NOT(DTYPE="int8")', RATE) in rules.values()
    pages = _pages(libreoffice.outputs("rate-units")["int8"])
    assert "624.0 TOP/s" in pages["Inputs"] and "3.1 TOP/s" in pages["Matmul"]
    assert not re.search(r"\d TFLOP/s", pages["Matmul"])
    # GPU Specs' int8 column is int8 whatever the build's dtype
    specs = list(wb["GPU Specs"].iter_rows())
    header = next(c for row in specs for c in row if c.value == "int8 dense peak")
    assert specs[header.row][header.column - 1].number_format == OPS  # the row below
    wb.close()
    assert "624.0 TOP/s" in pages["GPU Specs"]  # A100 40GB SXM's row


def test_bf16_build_rules_cover_every_rate_from_the_peak(tmp_path: Path):
    path, _ = built_workbook(tmp_path / "bf16.xlsx", spare_rows=0)  # as the PDF job's
    p = plan(spare_rows=0)
    for sheet in ("Inputs", "Matmul", "What-if", "Pipeline", "Parallelism"):
        rules = _rule_formats(path, sheet)
        planned = p.sheet(sheet).format_rules
        assert len(rules) == len(planned), sheet
        assert all(v == ('DTYPE="int8"', OPS) for v in rules.values()), sheet
    matmul = p.sheet("Matmul").table("matmul")
    ruled = {r.col for r in p.sheet("Matmul").format_rules}
    assert matmul.column("attained_flops").col in ruled
    assert matmul.column("flops").col not in ruled  # a count, not a rate of the peak


def test_filled_workbook_gets_the_same_rules(tmp_path: Path):
    path = filled_workbook(tmp_path)
    rules = _rule_formats(path, "Inputs")
    assert rules and all(v == ('DTYPE="int8"', OPS) for v in rules.values())
    with zipfile.ZipFile(path) as z:  # the format code is in the styles part
        assert "TOP/s" in z.read("xl/styles.xml").decode()


@needs_libreoffice
def test_filled_workbook_switched_to_int8_renders_top_s(libreoffice):
    pages = _pages(libreoffice.outputs("rate-units")["filled picked int8"])
    assert "624.0 TOP/s" in pages["Inputs"] and "3.1 TOP/s" in pages["Matmul"]


def test_google_sheets_shows_the_pushed_dtypes_unit():
    """The Sheets API's conditional formats set colours and text style, not number formats:
    a pushed sheet's rates carry the unit of the dtype it was pushed with."""
    from sheetgen.writers.google.requests import cell_format

    for dtype, unit in (("int8", "TOP/s"), ("bf16", "TFLOP/s")):
        p = plan(dtype=dtype, spare_rows=0, chart_helpers=True)
        peak = next(c for c in p.sheet("Inputs").cells if c.name == "peak_flops")
        assert unit in cell_format("derived", peak.fmt)["numberFormat"]["pattern"]
        body = [r for batch in requests_for(p) for r in batch]
        rules = [r for r in body if "addConditionalFormatRule" in r]
        assert rules and not any("numberFormat" in str(r) for r in rules)


def test_a_duration_below_a_femtosecond_reads_zero():
    """A fitted floor or latency that ends at its lower bound is a few e-27 s above it:
    calibrate's summary says '0 s' for it, as for 0, and still '6.41 fs' and '53 ps' for
    durations a matmul can have (was 'launch floor 4.33e-27 s' on aiter's MI300X table)."""
    from sheetgen.core.units import seconds

    assert [seconds(v) for v in (0.0, 4.33e-27, -4e-27, 4e-16)] == ["0 s"] * 4
    assert [seconds(v) for v in (6e-16, 6.41e-15, 5.3e-11, 999.96e-6)] == [
        "1 fs", "6.41 fs", "53 ps", "1 ms"]
