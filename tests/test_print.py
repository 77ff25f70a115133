"""The built workbook as a person sees it: LibreOffice renders it to PDF, from a fresh
default profile, as a user who double-clicks the file gets it.

A sheet prints one page wide only where that keeps 75 % or more; wider sheets are split
across pages at a fixed scale, with the label column and the main table's header repeated
where a break cuts them. Every page is measured in points (`pdftotext -bbox`): the median
word at least 6 pt high and none under 4.5 pt, on at most 32 pages (it took 8 pages of 2-5 pt
words before; the kernel terms' six columns added a page each to Matmul and Pipeline, 29 to
31). The readable units are asserted on the rendered text, against hand figures for
the A100 40GB SXM in bf16 (312 TFLOP/s dense, 1,555 GB/s): 1×4096×4096 moves
2·(4096 + 4096² + 4096) = 33,570,816 B = 33.57 MB in 33,570,816 / 1.555e12 s = 21.59 µs.
"""

from __future__ import annotations

import functools
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import openpyxl
import pytest
from fill_helpers import filled_workbook
from helpers import built_workbook, load_workbook
from lo_helpers import libreoffice_job, needs_libreoffice, pdf_page_texts, printed_pages

from sheetgen.api import plan as _plan
from sheetgen.layout.page import (
    LINE_POINTS,
    MIN_SCALE,
    SPLIT_SCALE,
    chart_cells,
    print_setup,
    row_heights,
    span_width,
)
from sheetgen.layout.planner import WorkbookPlan
from sheetgen.layout.styles import NUMBER_FORMATS
from sheetgen.layout.text_fit import TEXT_WIDTH, wrapped_lines

MAX_PAGES = 32
MIN_MEDIAN, MIN_WORD = 6.0, 4.5  # points: a printed word's height (yMax - yMin)
A4_SHORT = 595.3  # points: a landscape page's height
#: the build options of the tests that read the built workbook back (`built`, `book`)
SPARE = {"spare_rows": 0}
#: the shape of the filled workbook the tests read (`filled`, `filled_book`): the one
#: fill_helpers fills by default, which other test files read too
FILLED_SHAPE = (1, 4096, 4096)


@functools.cache
def plan(**options: Any) -> WorkbookPlan:
    """sheetgen's plan for these options, made once per module (the tests only read it)."""
    return _plan(**options)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The workbook built with SPARE, which the tests below only read."""
    return built_workbook(tmp_path_factory.mktemp("built") / "built.xlsx", **SPARE)[0]


@pytest.fixture(scope="module")
def book(built: Path) -> openpyxl.Workbook:
    """`built` as openpyxl reads it, loaded once for the module: read it, never change it."""
    return load_workbook(built)


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> Path:
    """A user's one-shape sheet (FILLED_SHAPE) filled by sheetgen, which the tests only read."""
    return filled_workbook(tmp_path_factory.mktemp("filled"), FILLED_SHAPE)


@pytest.fixture(scope="module")
def filled_book(filled: Path) -> openpyxl.Workbook:
    """`filled` as openpyxl reads it, loaded once for the module: read it, never change it."""
    return load_workbook(filled)


def word_heights(pdf: Path) -> list[list[tuple[str, float]]]:
    """Per page, each word and its height in points, from `pdftotext -bbox`."""
    return [[(w, h) for w, h, _ in words] for words in page_words(pdf)]


@functools.cache
def page_words(pdf: Path) -> list[list[tuple[str, float, float]]]:
    """Per page, each word, its height and its top (yMin), in points, from `pdftotext
    -bbox` (which keeps only what lies on the page: a clipped text's hidden part is not
    there)."""
    xml = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True,
                         text=True, check=True).stdout
    root = ElementTree.fromstring(re.sub(r'xmlns="[^"]+"', "", xml, count=1))
    return [[(w.text or "", float(w.get("yMax")) - float(w.get("yMin")), float(w.get("yMin")))
             for w in page.iter("word")] for page in root.iter("page")]


def body_ink(pdf: Path, dpi: int = 20) -> list[float]:
    """Per page, the share of dark pixels above the footer strip (the page's top 90 %), as
    poppler draws it: 0 for a page blank but for its footer, whatever text a clipped frame
    leaves in its text layer."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["pdftoppm", "-r", str(dpi), "-gray", str(pdf), f"{d}/p"], check=True,
                       capture_output=True, timeout=120)
        shares = []
        for f in sorted(Path(d).glob("p-*.pgm"), key=lambda f: int(f.stem.split("-")[-1])):
            _magic, size, _depth, pixels = f.read_bytes().split(b"\n", 3)  # binary PGM
            width, height = map(int, size.split())
            body = pixels[:width * int(height * 0.9)]
            shares.append(sum(1 for b in body if b < 160) / len(body))
    return shares


@libreoffice_job("print-default", to="pdf", recalc=False)
def _default_workbook(tmp: Path) -> dict[str, Path]:
    """The default workbook, printed to PDF from a fresh, default profile: what a user's
    LibreOffice does, no forced recalculation."""
    return {"default": built_workbook(tmp / "roofline.xlsx")[0]}


@pytest.fixture(scope="module")
def rendered(libreoffice) -> tuple[Path, list[str], Path]:
    """The default workbook and the text of each page LibreOffice printed."""
    pdf = libreoffice.outputs("print-default")["default"]
    return libreoffice.sources("print-default")["default"], printed_pages(pdf), pdf


@needs_libreoffice
@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler-utils not installed")
def test_every_printed_page_is_readable_in_points(rendered):
    """On every page the median word is at least 6 pt high and no word is under 4.5 pt
    (11-point text at 47 % prints 6.75 pt high in LibreOffice's DejaVu Sans; the charts'
    axis numbers 6.1 pt), and the default workbook takes at most MAX_PAGES pages."""
    _, _, pdf = rendered
    pages = word_heights(pdf)
    assert 6 <= len(pages) <= MAX_PAGES
    for i, words in enumerate(pages, 1):
        heights = [h for _, h in words]
        assert heights, i
        assert statistics.median(heights) >= MIN_MEDIAN, (i, statistics.median(heights))
        small = [(t, round(h, 2)) for t, h in words if h < MIN_WORD]
        assert not small, (i, small[:5])


@needs_libreoffice
def test_default_workbook_prints_every_sheet_with_its_footer(rendered):
    _, pages, _ = rendered
    assert len(pages) <= MAX_PAGES
    p = plan()
    # the footer names the sheet and numbers the pages: "Matmul 2 / 8" (the page count
    # given, as pypdf may run the footer into a chart's axis numbers on a page: "/ 281 10")
    footers = [re.search(rf"(GPU Specs|[\w-]+) (\d+) / {len(pages)}", text) for text in pages]
    assert all(footers), [t[:40] for t in pages]
    assert {f.group(1) for f in footers} == {s.name for s in p.sheets}
    assert [int(f.group(2)) for f in footers] == list(range(1, len(pages) + 1))
    # each sheet prints the pages its plan counted, so the orientation chosen by that count
    # is the shorter one in print too
    for sheet in p.sheets:
        printed = sum(f.group(1) == sheet.name for f in footers)
        assert printed == print_setup(sheet).pages(sheet), sheet.name
    # Matmul's 200 spare input rows are not printed: its pages hold its 12 shapes and chart
    matmul = [t for t in pages if re.search(r"Matmul \d+ / \d+", t)]
    assert 2 <= len(matmul) <= 4


#: Parallelism's pages, as LibreOffice 7.4.7 prints the default workbook from a fresh
#: profile: 5 column bands (inputs and notes; the side tables whole; the sweep and per-layer
#: tables in three; the chart) over the rows that hold something in each. It took 13, three
#: of them fragments: the side tables' values apart from their labels, the tail "cy" of a
#: note run past a break, and a page blank but for the chart's clipped frame.
PARALLELISM_PAGES = 12


@needs_libreoffice
@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="poppler-utils not installed")
def test_parallelism_prints_on_12_readable_pages_none_a_fragment(rendered):
    """The Parallelism sheet from the PDF a user's LibreOffice prints, in points: 12 pages,
    no word under 6 pt, no page blank but for its footer (nor holding a word's tail alone),
    each side table with its header and labels on the page that holds its values, and the
    chart whole on one page."""
    _, texts, pdf = rendered
    words = page_words(pdf)
    ink = body_ink(pdf)
    assert len(words) == len(texts) == len(ink)
    par = [i for i, t in enumerate(texts) if re.search(r"Parallelism \d+ / \d+", t)]
    assert len(par) == PARALLELISM_PAGES
    assert par == list(range(par[0], par[0] + len(par)))  # one run of pages
    smallest = min((h, w, i + 1) for i in par for w, h, _ in words[i])
    assert smallest[0] >= 6.0, smallest  # the chart's axis numbers: 6.1 pt
    # a page blank but for its footer (a clipped chart frame) or a word's tail: no ink
    assert all(ink[i] > 1e-4 for i in range(len(ink))), [
        (i + 1, round(ink[i], 6)) for i in range(len(ink)) if ink[i] <= 1e-4]

    def pages_with(*needles: str) -> list[int]:
        """Parallelism pages whose words, run together, hold every needle (spaces out)."""
        return [i for i in par if all("".join(n.split()) in "".join(w for w, _, _ in words[i])
                                      for n in needles)]

    # each side table prints whole: its header, its labels and its values on one page
    splits = pages_with("Splits", "TP split width over G", "m split over M", "uneven:")
    per_mb = pages_with("PP per micro-batch", "M = 1 (stream)", "rows per micro-batch",
                        "cut used (the cheaper)", "balanced")
    assert len(splits) == 1 and splits == per_mb, (splits, per_mb)
    assert pages_with("uneven:") == splits and pages_with("(stream)") == splits
    # the chart whole on a page of its own: its title on one page (a frame clipped at a
    # break left it on two), with its axis titles (which also head sweep columns)
    chart = plan().sheet("Parallelism").charts[0]
    on = pages_with(chart.title)
    assert len(on) == 1 and on[0] in pages_with(chart.x_title, chart.y_title), on
    body = [w for w, _, top in words[on[0]] if top < 0.9 * A4_SHORT]
    assert len(body) < 60 and "Parallelism" not in body, body


def test_no_column_break_cuts_a_chart_a_side_table_or_a_text():
    """From the plans (default, practice, a Transformer sheet): no column break falls inside
    a chart's columns, nor inside Parallelism's side tables (header, labels, values, unit:
    columns I..M), and no text runs across a break (it ends there, wrapped). On the
    Transformer sheet a block as wide as a page reaches under the chart: the break stays
    before the chart rather than leaving the chart's last column a page of its own."""
    from sheetgen.inputs.model_config import load_bundled
    from sheetgen.sheets.transformer import TransformerInputs

    plans = [plan(), plan(practice=2),
             plan(transformer=TransformerInputs(load_bundled("llama-3.1-8b")))]
    for p in plans:
        for sheet in p.sheets:
            breaks = print_setup(sheet).col_breaks
            for chart in sheet.charts:
                _, _, c0, c1 = chart_cells(sheet, chart)
                assert not any(c0 < b <= c1 for b in breaks), (sheet.name, breaks, c0, c1)
            for c in sheet.cells:  # texts (an empty header band may run on)
                if isinstance(c.value, str) and c.value and c.role != "header":
                    assert not any(c.col < b < c.col + c.span for b in breaks), (sheet.name, c)
    par = plans[0].sheet("Parallelism")
    side = [c for c in par.cells if c.value in ("Splits", "PP per micro-batch")]
    assert [c.col for c in side] == [8, 8]  # column I, beside the inputs' notes
    units = [c for c in par.cells if c.role == "unit" and 4 <= c.row <= 35 and c.col > 8]
    assert {c.col for c in units} == {12}  # "ms" right of "M = 1 (stream)": column M
    assert 8 in print_setup(par).col_breaks
    assert not any(8 < b <= 12 for b in print_setup(par).col_breaks)


@needs_libreoffice
def test_rendered_cells_show_readable_units(rendered):
    _, pages, _ = rendered
    matmul = "\n".join(t for t in pages if t.startswith("Matmul "))
    # 1×4096×4096: 33,570,816 B / 1.555e12 B/s = 21.589 µs, shown in the µs column
    assert "33.57 MB" in matmul and "21.59" in matmul and "(µs)" in matmul
    assert "E-6" not in matmul and "E-05" not in matmul  # no seconds in scientific notation
    assert "312.0 TFLOP/s" in matmul  # a compute-bound shape at the bf16 peak
    assert "E+07" not in matmul and "E+14" not in matmul  # no raw SI scientific notation
    inputs = "\n".join(t for t in pages if t.startswith("Inputs "))
    # the A100's "40 GB" is 40 GiB = 42,949,672,960 B (templates/gpus.toml); the fit uses it
    # less the 2 GiB reserve = 40,802,189,312 B, shown in decimal GB
    assert "1.555 TB/s" in inputs and "42.95 GB" in inputs and "40.80 GB" in inputs


def test_number_formats_of_time_size_and_rate_cells(built: Path, book):
    ws = book["Matmul"]
    header = {ws.cell(5, c).value: c for c in range(1, ws.max_column + 1)}
    assert ws.cell(6, header["bytes moved"]).number_format == NUMBER_FORMATS["bytes"]
    assert ws.cell(6, header["FLOPs"]).number_format == NUMBER_FORMATS["flop"]
    for name in ("compute time (µs)", "memory time (µs)", "predicted time (µs)"):
        assert ws.cell(6, header[name]).number_format == NUMBER_FORMATS["time_us"]
    # the cell holds µs: the first default shape 1×4096×4096 moves
    # 2·(4096 + 4096² + 4096) B = 33,570,816 B in 33,570,816 / 1.555e12 s = 21.589 µs
    cached = openpyxl.load_workbook(built, data_only=True, read_only=True)
    assert cached["Matmul"].cell(6, header["memory time (µs)"]).value == pytest.approx(
        33_570_816 / 1.555e12 * 1e6, rel=1e-12)
    cached.close()
    assert ws.cell(6, header["attained FLOP/s"]).number_format == NUMBER_FORMATS["rate"]
    inputs = book["Inputs"]
    formats = {inputs.cell(r, 1).value: inputs.cell(r, 2).number_format
               for r in range(1, inputs.max_row + 1)}
    assert formats["HBM bandwidth"] == NUMBER_FORMATS["bandwidth"]
    assert formats["GPU memory the fit uses"] == NUMBER_FORMATS["bytes"]
    assert formats["GPU memory (as the card has it)"] == NUMBER_FORMATS["bytes"]
    assert formats["Peak FLOP/s (dense)"] == NUMBER_FORMATS["rate"]


def test_every_sheet_has_print_setup_freeze_and_tall_enough_headers(book):
    wb = book
    p = plan(**SPARE)
    split = 0
    for sheet in p.sheets:
        ws = wb[sheet.name]
        setup = print_setup(sheet)
        assert ws.page_setup.orientation == ("portrait" if setup.portrait else "landscape")
        assert ws.print_area, sheet.name
        if setup.fit_height:  # the whole sheet on one page, at the split scale or more
            assert ws.sheet_properties.pageSetUpPr.fitToPage and setup.scale >= SPLIT_SCALE
            # 1 x 1 pages: the default, which xlsxwriter leaves unwritten
            assert {ws.page_setup.fitToWidth, ws.page_setup.fitToHeight} <= {None, 1}
            assert setup.pages(sheet) == 1
        elif setup.fit_width:  # one page wide, which the plan says keeps >= 75 %
            assert ws.sheet_properties.pageSetUpPr.fitToPage and setup.scale >= MIN_SCALE
            assert ws.page_setup.fitToHeight == 0
        else:  # split at the planned column breaks, at the split scale, not shrunk
            split += 1
            assert ws.page_setup.scale == SPLIT_SCALE, sheet.name
            assert [b.id for b in ws.col_breaks.brk] == list(setup.col_breaks)
        assert [b.id for b in ws.row_breaks.brk] == list(setup.row_breaks)
        if sheet.tables:
            assert ws.freeze_panes is not None or sheet.name == "Parallelism", sheet.name
        for row, points in row_heights(sheet).items():
            assert ws.row_dimensions[row + 1].height == points >= 30
    assert split >= 3  # Matmul, Pipeline, Parallelism at least
    # Inputs: 1,019 pt wide and, with the write cost's row, about 1,580 pt tall at 100 %
    # takes one portrait page at 48 % (0.98·784.3/1,580 = 0.486; 50 % before that row):
    # its smallest text prints at about 7.0 pt (7.27 pt at 50 %)
    inputs = print_setup(p.sheet("Inputs"))
    assert (inputs.portrait, inputs.fit_height, inputs.scale) == (True, True, 48)
    # a two-line header such as "arithmetic intensity (FLOP/B)" in a 14-wide column
    matmul = p.sheet("Matmul")
    assert row_heights(matmul)[4] >= 2 * 15


def test_the_print_area_covers_the_filled_rows_not_the_spare_ones():
    """200 spare input rows stay on screen for the user, off paper: Matmul's print area ends
    at its chart (rows 7-28) below the 12 shapes; with 40 shapes, at the 40th (row 45)."""
    for shapes, last in ((None, None), ([(1, 64, 64)] * 40, 44)):
        kwargs = {} if shapes is None else {"shapes": tuple(shapes)}
        sheet = plan(spare_rows=200, **kwargs).sheet("Matmul")
        setup = print_setup(sheet)
        chart = sheet.charts[0]
        assert setup.last_row == (last or chart.row + chart.height_rows - 1)
        assert sheet.table("matmul").last_row >= 200 > setup.last_row


def test_a_filled_workbook_gets_the_same_page_setup(filled_book):
    ws = filled_book["Matmul"]
    setup = print_setup(plan(shapes=(FILLED_SHAPE,), spare_rows=0).sheet("Matmul"))
    assert ws.page_setup.orientation == "landscape" and ws.freeze_panes == "A6"
    assert ws.page_setup.scale == SPLIT_SCALE and not setup.fit_width
    assert [b.id for b in ws.col_breaks.brk] == list(setup.col_breaks)
    assert ws.print_title_cols.replace("$", "") == "A:A"
    assert ws.row_dimensions[5].height >= 30


def test_helper_constants_are_styled_as_formulas(book):
    """The Pipeline layer index and the chart's decade steps are set by the build for the
    formulas, not typed by the user: grey like formulas, not yellow like inputs."""
    from sheetgen.layout.palette import DERIVED_FILL, INPUT_FILL

    wb = book
    p = plan(**SPARE)

    def fill(sheet: str, table: str, column: str) -> str:
        t = p.sheet(sheet).table(table)
        c = t.column(column)
        return wb[sheet].cell(t.first_row + 1, c.col + 1).fill.fgColor.rgb[-6:]

    assert fill("Pipeline", "layers", "layer") == DERIVED_FILL.lstrip("#")
    assert fill("Matmul", "roofline", "roof_decade") == DERIVED_FILL.lstrip("#")
    assert fill("Matmul", "matmul", "m") == INPUT_FILL.lstrip("#")  # real inputs stay yellow


@needs_libreoffice
def test_the_chart_prints_whole_on_a_page_of_its_own(rendered):
    """The chart has a place of its own: no page break cuts its columns, and it prints
    beside the table's last columns, on Matmul's last page, not the table's first."""
    _, footed, pdf = rendered
    matmul = [i for i, text in enumerate(footed) if re.search(r"Matmul \d+ / \d+", text)]
    pages = pdf_page_texts(pdf)  # a rotated axis title on one line, a wrapped header not
    assert len(pages) == len(footed)
    sheet = plan().sheet("Matmul")
    chart = sheet.charts[0]
    setup = print_setup(sheet)
    first, _, c0, c1 = chart_cells(sheet, chart)
    assert not any(c0 < b <= c1 for b in setup.col_breaks)
    assert setup.last_row >= first + chart.height_rows - 1
    for text in (chart.series[0].name, chart.x_title, chart.y_title):
        on = [i for i, page in enumerate(pages) if text in page and i in matmul]
        assert on == [matmul[-1]] and len(matmul) > 1, (text, on)


@needs_libreoffice
def test_every_gpu_source_prints_whole(rendered):
    """GPU Specs lists each preset figure's source below the table, wrapped in a merged cell
    that ends at the first page's edge: every source's full text is on the printed pages
    (as wide as the table, it was cut at a page break), the table's header does not repeat
    above the list, and the merged cells are tall enough."""
    from sheetgen.inputs.presets import builtin_presets

    _, pages, _ = rendered
    specs = "".join("".join(t.split()) for t in pages
                    if re.search(r"GPU Specs \d+ / \d+", t))
    assert "Sources" in specs
    sources = [(g.name, s) for g in builtin_presets().gpus for s in g.sources.values()]
    assert len(sources) >= 9 * 10
    # whitespace dropped: a wrapped line breaks where the cell wraps, not in the text
    cut = [(name, s) for name, s in sources if "".join(s.split()) not in specs]
    assert cut == [], cut[:3]
    p = plan().sheet("GPU Specs")
    setup = print_setup(p)
    table = next(t for t in p.tables if t.name == "gpus")
    assert setup.repeat_rows is None  # the 9-GPU table fits on its first page
    edge = setup.col_breaks[0] if setup.col_breaks else table.columns[-1].col + 1
    cells = [c for c in p.cells if c.value in {s for _, s in sources}]
    assert len(cells) == len(sources)
    assert all(c.wrap and c.col + c.span == edge and c.row > table.last_row for c in cells)
    heights = row_heights(p)
    for c in cells:  # a source longer than its merged cell gets the rows' lines to show it
        lines = wrapped_lines(str(c.value), span_width(p, c), TEXT_WIDTH)
        assert lines == 1 or heights[c.row] >= lines * LINE_POINTS, (c.value, lines)


def test_the_orientation_is_chosen_on_the_texts_as_it_cuts_them():
    """A text that crosses a column break is cut there and wraps, so its rows grow. GPU
    Specs' sources (20 presets) cut at portrait's narrower breaks printed 12 pages, though
    on the uncut texts portrait counted fewer than landscape; landscape printed 8: the GPU
    table and its two further column bands, then the sources four or five GPUs a page.
    The writers keep the orientation the planner chose on the cut texts."""
    from sheetgen.inputs.presets import builtin_presets

    specs = plan().sheet("GPU Specs")
    setup = print_setup(specs)
    assert specs.portrait is False and setup.portrait is False
    n = len(builtin_presets().gpus)
    assert setup.pages(specs) == 3 + len(setup.row_breaks) <= 3 + -(-n // 4)
    assert all(print_setup(s).portrait == s.portrait is not None for s in plan().sheets)


@needs_libreoffice
def test_each_sources_page_begins_with_a_gpu(rendered):
    """A GPU's name is on the first of its source rows only, so its rows print on one page:
    every printed page of the list begins with a GPU's name (once, a page began with the
    last GPU's "tile n" and held three rows, nameless), and no planned row break falls
    inside a GPU's rows."""
    from sheetgen.inputs.presets import builtin_presets
    from sheetgen.sheets.gpu_specs import source_groups

    _, pages, _ = rendered
    names = [g.name for g in builtin_presets().gpus]
    listing = [t for t in pages if re.search(r"GPU Specs \d+ / \d+", t)
               and "dense peaks" in t and "GPU presets" not in t]
    assert len(listing) >= 3
    firsts = [next(ln for ln in t.splitlines() if ln.strip()
                   and not re.fullmatch(r"\s*GPU Specs \d+ / \d+\s*", ln)).strip()
              for t in listing]
    assert all(any(f.startswith(n) for n in names) for f in firsts), firsts
    setup = print_setup(plan().sheet("GPU Specs"))
    groups = source_groups(builtin_presets())
    assert len(groups) == len(names)
    assert not [(b, g) for b in setup.row_breaks for g in groups if g[0] < b <= g[1]]


def _look(cell) -> tuple:
    """What a person sees of a cell's style, as openpyxl reads it back from the file."""
    font, fill, al = cell.font, cell.fill, cell.alignment
    colour = (fill.fgColor.rgb or "")[-6:] if fill.fill_type == "solid" else None
    return (font.name, float(font.sz or 11), bool(font.b), bool(font.i),
            (font.color.rgb or "")[-6:] if font.color is not None and font.color.type == "rgb"
            else None, colour, cell.number_format, bool(al.wrap_text), al.horizontal,
            int(al.indent or 0), bool(cell.border.bottom.style))


def test_the_built_and_the_filled_workbook_style_every_cell_alike(book, filled_book):
    """One styling decision (styles.cell_style), translated by each writer: every text,
    block and formula cell of the built workbook looks the same in the filled one, whose
    titles were in the application's default serif when openpyxl left the font unnamed;
    Google gets the same bold, fill and number format."""
    from sheetgen.layout.styles import FONT_NAME
    from sheetgen.writers.google.requests import requests_for

    b, f = book, filled_book
    p = plan(**SPARE)
    google = {}
    for body in requests_for(plan(**SPARE, chart_helpers=True)):
        for r in body:
            if "updateCells" in r and r["updateCells"]["start"]["rowIndex"] == 0:
                sid = r["updateCells"]["start"]["sheetId"]
                for i, row in enumerate(r["updateCells"]["rows"]):
                    for j, v in enumerate(row.get("values", [])):
                        google[(sid, i, j)] = v.get("userEnteredFormat", {})
    sids = sorted({k[0] for k in google})
    compared = 0
    for sheet in ("Inputs", "Matmul", "What-if", "GPU Specs"):
        sid = sids[[s.name for s in p.sheets].index(sheet)]
        for c in p.sheet(sheet).cells:
            if c.col > 0 and c.span > 1:
                continue
            got_b = _look(b[sheet].cell(c.row + 1, c.col + 1))
            assert got_b[0] == FONT_NAME, (sheet, c)
            assert _look(f[sheet].cell(c.row + 1, c.col + 1)) == got_b, (sheet, c)
            g = google.get((sid, c.row, c.col))
            if g is None:  # not on Google's variant of the sheet
                continue
            assert bool(g.get("textFormat", {}).get("bold")) == got_b[2], (sheet, c)
            assert ("backgroundColorStyle" in g) == (got_b[5] is not None), (sheet, c)
            nf = g.get("numberFormat", {}).get("pattern", "General")
            assert nf == got_b[6] or (got_b[6] == "General" and nf == "General"), (sheet, c)
            compared += 1
    assert compared > 150


def _visible_formats(wb: openpyxl.Workbook) -> dict[str, set[str]]:
    """sheet -> the number formats of the cells a person reads (filled, in columns and rows
    not hidden), and of the conditional formats laid over them."""
    from openpyxl.utils import get_column_letter

    out: dict[str, set[str]] = {}
    for ws in wb:
        hidden = {k for k, d in ws.column_dimensions.items() if d.hidden}
        formats = set()
        for row in ws.iter_rows():
            for cell in row:
                if cell.value is None or get_column_letter(cell.column) in hidden:
                    continue
                formats.add(cell.number_format)
        for rules in ws.conditional_formatting:
            for rule in rules.rules:
                if rule.dxf is not None and rule.dxf.numFmt is not None:
                    formats.add(rule.dxf.numFmt.formatCode)
        out[ws.title] = formats
    return out


def _e_notation(code: str) -> bool:
    """Whether a number-format code shows a number in E-notation (quoted text aside)."""
    return bool(re.search(r"E[+-]", re.sub(r'"[^"]*"', "", code), re.IGNORECASE))


def test_no_e_notation_in_any_number_format_a_person_reads(book, tmp_path: Path):
    """FLOPs read 33.554 MFLOP, not 33.55E+6 FLOP: every format of every cell a person
    reads (and of the int8 switch's rules) in the default and the int8 build is free of
    E-notation. The test's own detector is checked on the formats it replaced."""
    assert _e_notation('[>=1000000000]#,##0.00,,," GFLOP";##0.00E+0" FLOP"')
    assert _e_notation("0.000E+00") and not _e_notation('#,##0.0,," MFLOP/s"')
    int8, _ = built_workbook(tmp_path / "i.xlsx", **SPARE, dtype="int8")
    for wb in (book, load_workbook(int8)):
        formats = _visible_formats(wb)
        assert len(formats) >= 6
        bad = {s: sorted(f for f in fs if _e_notation(f)) for s, fs in formats.items()}
        assert not any(bad.values()), bad
    # 1×4096×4096 is 2·4096·4096 = 33,554,432 FLOP: in MFLOP with three decimals
    assert NUMBER_FORMATS["flop"].endswith('#,##0.000,," MFLOP"')


def test_the_roofline_title_is_live_and_names_the_gpu_and_dtype(built: Path, book, filled: Path,
                                                               filled_book):
    """The chart's title reads a cell whose formula joins the Inputs sheet's GPU and dtype
    (xlsx and fill); its cached text is the build's: "Roofline: A100 40GB SXM, bf16"."""
    import zipfile

    from xlsxwriter.utility import xl_cell_to_rowcol

    for path, wb in ((built, book), (filled, filled_book)):
        with zipfile.ZipFile(path) as z:
            xml = next(z.read(n).decode() for n in z.namelist()
                       if n.startswith("xl/charts/chart") and b"Roofline" in z.read(n))
        xml = re.sub(r"<(/?)c:", r"<\1", xml)  # xlsxwriter prefixes the chart namespace
        m = re.search(r"<title><tx><strRef><f>(.+?)</f>.*?<v>(.+?)</v>", xml)
        assert m, path.name
        sheet, _, cell = m.group(1).rpartition("!")
        assert sheet.strip("'") == "Matmul" and m.group(2) == "Roofline: A100 40GB SXM, bf16"
        row, col = xl_cell_to_rowcol(cell.replace("$", ""))
        formula = wb["Matmul"].cell(row + 1, col + 1).value
        assert "GPU_NAME" in formula and "DTYPE" in formula, formula


def test_wave_columns_grey_out_while_wave_quantization_is_off(book, filled_book):
    """With waves off the refined time ignores tiles, waves, wave efficiency and the
    quantized compute time: a conditional format on the live WAVE_QUANT switch greys exactly
    those columns' rows (built and filled), so 3,529.08 µs refined beside 3,530.96 µs
    quantized (8192³) does not read as a contradiction."""
    from sheetgen.layout.palette import DIM_FONT

    p = plan(**SPARE)
    t = p.sheet("Matmul").table("matmul")
    wave_cols = {t.column(n).col for n in ("tiles", "waves", "wave_efficiency",
                                           "quantized_compute_time")}
    for wb in (book, filled_book):
        ws = wb["Matmul"]
        header = {ws.cell(5, c).value: c - 1 for c in range(1, ws.max_column + 1)}
        dimmed = set()
        for rules in ws.conditional_formatting:
            for rule in rules.rules:
                # off, or no SM count to count waves with (a preset from a datasheet)
                if rule.formula == ['OR(WAVE_QUANT="off",NOT(ISNUMBER(SM_COUNT)))']:
                    assert rule.dxf.font.color.rgb[-6:] == DIM_FONT.lstrip("#")
                    (rng,) = str(rules.sqref).split()
                    first = rng.split(":")[0]
                    assert first[-1] == "6"  # the first data row, below the header
                    dimmed.add(openpyxl.utils.column_index_from_string(
                        first.rstrip("0123456789")) - 1)
        assert dimmed == {header[h] for h in ("tiles", "waves", "wave efficiency (fraction)",
                                              "quantized compute time (µs)")}
        assert dimmed == wave_cols


def _pages_cell_by_cell(setup, sheet) -> int:
    """PrintSetup.pages the slow, obvious way: every printing cell looked up on its page."""
    rows = [b for b in setup.row_breaks if 0 < b <= setup.last_row]
    cols = [b for b in setup.col_breaks if 0 < b <= setup.last_col]
    used = {(c.row, c.col + j) for c in sheet.cells for j in range(c.span)}
    for t in sheet.tables:
        used |= {(r, c.col) for c in t.columns for r in range(t.header_row, t.last_row + 1)}
    for ch in sheet.charts:
        r0, r1, c0, c1 = chart_cells(sheet, ch)
        used |= {(r, c) for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)}
    return len({(sum(b <= r for b in rows), sum(b <= c for b in cols)) for r, c in used
                if r <= setup.last_row and c <= setup.last_col and c not in sheet.hidden})


def test_page_count_agrees_with_a_cell_by_cell_count():
    """pages() counts whole tables and charts as rectangles; the same count, cell by cell,
    for every sheet, with the setup's own breaks and with extra (repeated) ones."""
    from dataclasses import replace

    checked = 0
    for p in (plan(), plan(shapes=((8, 4096, 4096),), spare_rows=0)):
        for sheet in p.sheets:
            setup = print_setup(sheet)
            for variant in (setup,
                            replace(setup, row_breaks=(*setup.row_breaks, 3, 3, 17),
                                    col_breaks=(*setup.col_breaks, 2, 5, 5)),
                            replace(setup, last_row=setup.last_row // 2,
                                    last_col=setup.last_col // 2)):
                assert variant.pages(sheet) == _pages_cell_by_cell(variant, sheet), sheet.name
                checked += 1
    assert checked == 36
