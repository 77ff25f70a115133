"""int8 peaks count integer operations: rates read TOP/s, never TFLOP/s, for int8.

Hand figures for the A100 40GB SXM (NVIDIA A100 datasheet: 624 dense int8 TOPS, 312 dense
bf16 TFLOPS, 1,555 GB/s). 1×4096×4096 in int8 moves 4096 + 4096² + 4096 = 16,785,408 B for
2·4096² = 33,554,432 operations: intensity 1.999 OP/B, memory-bound, so it attains
1.999 × 1.555e12 = 3.108e12 OP/s = "3.1 TOP/s".
"""

from __future__ import annotations

import functools
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from fill_helpers import filled_workbook
from helpers import built_workbook, load_workbook
from lo_helpers import libreoffice_job, needs_libreoffice
from xlsx_edit import cell_of, defined_names, edit_cells

from sheetgen.api import plan
from sheetgen.layout.styles import NUMBER_FORMATS
from sheetgen.writers.google.requests import requests_for

pypdf = pytest.importorskip("pypdf")
RATE, OPS = NUMBER_FORMATS["rate"], NUMBER_FORMATS["rate_ops"]


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
    for page in pypdf.PdfReader(pdf).pages:
        text = page.extract_text()
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


@functools.cache
def _opened(path: Path) -> openpyxl.Workbook:
    """The workbook at path, loaded once for all its sheets' rules (each test writes its own)."""
    return load_workbook(path)


def _rule_formats(path: Path, sheet: str) -> dict[str, str]:
    """Cell range -> the number format its formula rule applies (from the xlsx itself)."""
    ws = _opened(path)[sheet]
    out = {}
    for rng in ws.conditional_formatting:
        for rule in rng.rules:
            if rule.type == "expression" and rule.dxf is not None and rule.dxf.numFmt:
                out[str(rng.sqref)] = (rule.formula[0], rule.dxf.numFmt.formatCode)
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
    ws = load_workbook(path)["Inputs"]
    formats = {ws.cell(r, 1).value: ws.cell(r, 2).number_format for r in range(1, ws.max_row)}
    assert formats["Peak FLOP/s (dense)"] == formats["Attainable FLOP/s"] == OPS
    # the other way round, live: TFLOP/s while a float dtype is picked
    rules = _rule_formats(path, "Inputs")
    assert ('NOT(DTYPE="int8")', RATE) in rules.values()
    pages = _pages(libreoffice.outputs("rate-units")["int8"])
    assert "624.0 TOP/s" in pages["Inputs"] and "3.1 TOP/s" in pages["Matmul"]
    assert not re.search(r"\d TFLOP/s", pages["Matmul"])
    # GPU Specs' int8 column is int8 whatever the build's dtype
    specs = load_workbook(path)["GPU Specs"]
    header = next(c for row in specs.iter_rows() for c in row if c.value == "int8 dense peak")
    assert specs.cell(header.row + 1, header.column).number_format == OPS
    assert "624.0 TOP/s" in pages["GPU Specs"]  # A100 40GB SXM's row


def test_bf16_build_rules_cover_every_rate_from_the_peak(tmp_path: Path):
    path, _ = built_workbook(tmp_path / "bf16.xlsx", spare_rows=2)
    p = plan(spare_rows=2)
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
