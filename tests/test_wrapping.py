"""Long text stays on screen and on the printed page: prose merged and wrapped at a fixed
width, block notes wrapped beside their values, headers inset so they never run together.

Hand figures (A100 40GB SXM, bf16, 312 TFLOP/s dense; the default Pipeline: 72 layers of
2·4096·8192·32768 = 2,199,023,255,552 FLOPs, 7.048 ms each at peak, 7.053 ms with the
preset's 5 µs launch floor): one GPU streams 4096 rows / (72 × 7.053 ms) = 8,066 rows/s; two
pipeline stages of 36 layers stream 4096 / (36 × 7.053 ms) = 16,131 rows/s.
"""

from __future__ import annotations

import re
from pathlib import Path

import openpyxl
import pytest
from fill_helpers import filled_workbook
from helpers import built_workbook, load_workbook
from lo_helpers import libreoffice_job, needs_libreoffice, printed_pages
from openpyxl.utils.cell import range_boundaries
from xlsx_edit import sheet_xml

from sheetgen.api import plan
from sheetgen.layout.page import LINE_POINTS, row_heights
from sheetgen.sheets.parallel import sheet as parallel
from sheetgen.writers.google.requests import requests_for

#: the build options of the workbook read here and printed (the spare rows print nowhere):
#: those of test_print and test_rate_units, so a test process builds and reads it once
SPARE = {"spare_rows": 0}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> openpyxl.Workbook:
    """The built workbook as openpyxl reads it, loaded once for the module: read it, never
    change it."""
    path, _ = built_workbook(tmp_path_factory.mktemp("wrap") / "w.xlsx", **SPARE)
    return load_workbook(path)


def merged_ranges(path: Path, sheet: str) -> list[tuple[int, int, int, int]]:
    """(min_col, min_row, max_col, max_row), 1-based, of each of the sheet's merged ranges,
    from its <mergeCell ref> elements (what openpyxl reads as merged_cells), without
    loading the cells (2 s for a filled workbook)."""
    xml = sheet_xml(path, sheet)
    return [range_boundaries(ref) for ref in re.findall(r'<mergeCell\b[^>]*?\bref="([^"]+)"', xml)]


def _merged(ws) -> dict[str, str]:
    """First cell -> merged range."""
    return {str(r).split(":")[0]: str(r) for r in ws.merged_cells.ranges}


def test_parallelism_prose_is_merged_wrapped_and_tall_enough(built):
    ws = built["Parallelism"]
    merged = _merged(ws)
    last = chr(ord("A") + parallel.PROSE_COLS - 1)  # G: the comparison's width
    texts = (*parallel.DEFINITIONS, *parallel.LASTING)
    rows = [next(c.row for row in ws.iter_rows(max_col=1) for c in row if c.value == t)
            for t in texts]
    for row, text in zip(rows, texts, strict=True):
        assert merged[f"A{row}"] == f"A{row}:{last}{row}", text[:30]
        assert ws.cell(row, 1).alignment.wrap_text
        # 162 width units; LibreOffice's italic DejaVu Sans takes about 0.8 a character
        # (measured on the PDF), so the longest (about 330 characters) needs 2 lines
        lines = -(-int(len(text) * 0.8) // 162)
        assert (ws.row_dimensions[row].height or LINE_POINTS) >= lines * LINE_POINTS, text[:30]
    verdict = next(c.row for row in ws.iter_rows(max_col=1) for c in row
                   if c.value == "Verdict (live)")
    for row in range(verdict + 1, verdict + 1 + len(parallel.VERDICT)):
        assert merged[f"B{row}"] == f"B{row}:{last}{row}"
        assert ws.cell(row, 2).value.startswith("=")  # still a live formula
        assert ws.cell(row, 2).alignment.wrap_text and ws.row_dimensions[row].height >= 30


def test_long_text_values_take_the_empty_cells_beside_them(built):
    ws = built["Parallelism"]
    merged = _merged(ws)
    why = next(c.row for row in ws.iter_rows(max_col=1) for c in row if c.value == "why")
    assert merged[f"B{why}"] == f"B{why}:D{why}"  # value, unit and notes of the block
    pace = next(c.row for row in ws.iter_rows(max_col=1) for c in row
                if c.value == "what sets the pace")
    assert ws.cell(pace, 3).alignment.indent == 1  # "a stage" clear of the numbers


def test_throughput_reads_as_whole_rows_per_second(built):
    ws = built["Parallelism"]
    row = next(c.row for row in ws.iter_rows(max_col=1) for c in row
               if c.value == "throughput, stream of batches")
    assert {ws.cell(row, c).number_format for c in (2, 3, 4)} == {"#,##0"}


@libreoffice_job("wrapping", to="pdf")
def _wrapped(tmp: Path) -> dict[str, Path]:
    return {"w": built_workbook(tmp / "w.xlsx", **SPARE)[0]}


@needs_libreoffice
def test_libreoffice_prints_every_note_and_sentence_whole(libreoffice):
    pdf = libreoffice.outputs("wrapping")["w"]
    pages = printed_pages(pdf)

    def flat(sheet: str) -> str:
        text = " ".join(t for t in pages if re.match(rf"{sheet} \d+ / \d+", t))
        return re.sub(r"\s+", " ", text)

    inputs = flat("Inputs")
    # the ends of the longest notes, cut at the page edge before they wrapped
    assert "the DTYPE_GAP marker when the GPU lacks the dtype)." in inputs
    assert "decides the bound regime." in inputs
    par = flat("Parallelism")
    assert "8,066" in par and "16,131" in par  # rows/s, hand figures above
    assert "E+03" not in par and "E+04" not in par
    for text in (*parallel.LASTING, *parallel.DEFINITIONS):
        tail = " ".join(text.split()[-4:])
        assert tail in par, tail


def test_headers_are_inset_and_rows_fit_the_wrapped_text(built):
    wb = built
    p = plan(**SPARE)
    for sheet in p.sheets:
        ws = wb[sheet.name]
        for cell in sheet.cells:
            if cell.role == "header" and cell.value:
                assert ws.cell(cell.row + 1, cell.col + 1).alignment.indent == 1, sheet.name
        for row, points in row_heights(sheet).items():
            assert ws.row_dimensions[row + 1].height == points
    matmul = p.sheet("Matmul")
    table = matmul.table("matmul")
    # "1,978.9 TFLOP/s" (15 characters) fits its column with room to spare
    assert matmul.widths[table.column("attained_flops").col] >= 15


def test_filled_and_pushed_workbooks_merge_the_same_cells(tmp_path: Path):
    path = filled_workbook(tmp_path)
    p = plan(spare_rows=0)
    planned = {(c.row, c.col, c.span) for c in p.sheet("Parallelism").cells if c.span > 1}
    got = {(min_row - 1, min_col - 1, max_col - min_col + 1)
           for min_col, min_row, max_col, _ in merged_ranges(path, "Parallelism")}
    assert planned and planned <= got
    body = [r for batch in requests_for(plan(spare_rows=0, chart_helpers=True)) for r in batch]
    merges = [r["mergeCells"]["range"] for r in body if "mergeCells" in r]
    spans = {(g["startRowIndex"], g["startColumnIndex"],
              g["endColumnIndex"] - g["startColumnIndex"]) for g in merges}
    assert planned <= spans
