"""Sheet-wide presentation rules, applied to every planned sheet (including sheets added
later): frozen panes, header row heights that fit their wrapped text, and print setup.

Pure functions of a SheetPlan, so the xlsx writer, the fill writer and the Google Sheets
request builder all lay a sheet out the same way.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from sheetgen.layout.text_fit import DEFAULT_WIDTH, INDENT_WIDTH, TEXT_WIDTH, wrapped_lines

if TYPE_CHECKING:
    from sheetgen.layout.cells import Cell, ChartPlan, SheetPlan, TablePlan

LINE_POINTS = 15.0  # one line of 11-point text, as Excel and LibreOffice space it
#: page margins in inches (left, right, top, bottom), and the footer: sheet name left,
#: "page / pages" right (Excel's &A, &P, &N codes), so every printed page says what it is
MARGINS = (0.3, 0.3, 0.35, 0.45)
FOOTER_LEFT, FOOTER_RIGHT = "&A", "&P / &N"
FREEZE_MAX_ROWS = 16  # freeze below a table header only when it sits this high on the sheet
INSET = ("formula", "row_note")  # wrapped cells the writers indent one step
SPARE = 0.95  # a wrapped formula text fuller than this share of its lines gets one more
REPEAT_SHARE = 0.15  # the label column repeats on every page when at most this share of one


#: A4 landscape in points, less the margins: what a page holds at 100 %
PAGE_POINTS = (841.89 - 72 * (MARGINS[0] + MARGINS[1]), 595.3 - 72 * (MARGINS[2] + MARGINS[3]))
#: ... and A4 portrait, for a sheet that prints on fewer pages upright
PORTRAIT_POINTS = (595.3 - 72 * (MARGINS[0] + MARGINS[1]),
                   841.89 - 72 * (MARGINS[2] + MARGINS[3]))
#: Below this scale a sheet is split across pages rather than shrunk to one page wide
#: (11-point text prints at 8 points)
MIN_SCALE = 75
#: The scale of a sheet split across pages: its pages hold more of a wide table, and the
#: default workbook prints on at most 30 pages; 11-point text prints 6.75 points high in
#: LibreOffice, the smallest words (chart axes) 6.1 (tests/test_print.py measures both)
SPLIT_SCALE = 47
FILL = 0.98  # of a page's width or height: room for what the estimate below misses
#: Pixels from a chart's anchor cell's top left corner to the chart's: a chart flush with
#: the row (column) a page break falls before also printed on the page above (left of) it,
#: there a clipped frame, on a page otherwise blank but for the footer (LibreOffice 7.4,
#: Parallelism's chart); the xlsx and fill writers both place it so.
CHART_INSET = 4


def column_points(width: float) -> float:
    """A column's printed width in points at 100 %, as LibreOffice 7.4 lays it out (measured
    on its PDFs: 7 per width unit and 5 of padding; Excel's is smaller, so what fits
    LibreOffice's page fits Excel's)."""
    return 7.0 * width + 5.0


@dataclass(frozen=True)
class PrintSetup:
    """xlsx page setup (the Sheets API has none), a function of the plan only, so sheets and
    cells added later print too: A4, landscape unless portrait takes fewer pages; one page
    wide when that keeps MIN_SCALE, or the whole sheet on one page when that keeps
    SPLIT_SCALE, else split at column breaks with the label column repeated; the main
    table's header rows repeat on every page; the print area covers the filled rows (not
    spare input rows) and the chart; a chart starts a page of its own. Rows and columns
    zero-based, inclusive; a break is the first row or column of a new page."""

    last_row: int
    last_col: int
    repeat_rows: tuple[int, int] | None
    repeat_cols: tuple[int, int] | None = None
    fit_width: bool = True  # one page wide (the application picks the scale, >= MIN_SCALE)
    scale: int = 100  # percent, when not fit_width
    row_breaks: tuple[int, ...] = ()
    col_breaks: tuple[int, ...] = ()
    fit_height: bool = False  # with fit_width: the whole sheet on one page
    portrait: bool = False

    def pages(self, sheet: SheetPlan) -> int:
        """Pages this setup prints, by the same estimate it was made with (empty pages are
        not printed: LibreOffice and Excel skip them)."""
        rows = sorted(b for b in self.row_breaks if 0 < b <= self.last_row)
        cols = sorted(b for b in self.col_breaks if 0 < b <= self.last_col)
        # a cell's page is (row band, column band): the count of breaks at or before it.
        # Tables and charts are rectangles of cells, so their pages are the product of the
        # bands their rows and their columns reach (not one lookup per cell: the
        # Parallelism sheet has 20,000 cells and print_setup counts pages four times).
        pages: set[tuple[int, int]] = set()
        for first, last, columns in _used_areas(sheet, self.last_row, self.last_col):
            row_bands = {bisect.bisect_right(rows, first)} | {
                bisect.bisect_right(rows, b) for b in rows if first < b <= last}
            col_bands = {bisect.bisect_right(cols, c) for c in columns}
            pages.update(itertools.product(row_bands, col_bands))
        return len(pages)


def _used_areas(sheet: SheetPlan, last_row: int, last_col: int
                ) -> list[tuple[int, int, list[int]]]:
    """What prints something, as (first row, last row, columns) rectangles: text and
    values, table cells, chart areas; within last_row and last_col, hidden columns left
    out."""
    def shown(columns: Iterable[int]) -> list[int]:
        return [c for c in columns if c <= last_col and c not in sheet.hidden]

    areas = [(c.row, c.row, shown(range(c.col, c.col + c.span))) for c in sheet.cells
             if c.row <= last_row]
    for t in sheet.tables:
        areas.append((t.header_row, min(t.last_row, last_row), shown(c.col for c in t.columns)))
    for ch in sheet.charts:
        r0, r1, c0, c1 = chart_cells(sheet, ch)
        areas.append((r0, min(r1, last_row), shown(range(c0, c1 + 1))))
    return [(first, last, cols) for first, last, cols in areas if first <= last and cols]


def main_table(sheet: SheetPlan) -> TablePlan | None:
    """The table a reader scrolls through: the one with the most cells."""
    tables = [t for t in sheet.tables if t.prints]
    if not tables:
        return None
    return max(tables, key=lambda t: t.n_rows * len(t.columns))


def freeze(sheet: SheetPlan) -> tuple[int, int] | None:
    """The sheet's own freeze if it has one; else, on a table sheet, below the main table's
    header when that sits near the top, or the label column when the table is further down
    (freezing 40 rows would leave nothing to scroll)."""
    if sheet.freeze is not None:
        return sheet.freeze
    table = main_table(sheet)
    if table is None:
        return None
    if table.header_row < FREEZE_MAX_ROWS:
        return (table.first_row, 0)
    return (0, 1)


def span_width(sheet: SheetPlan, cell: Cell) -> float:
    """The width, in characters, of the columns a cell covers."""
    return sum(sheet.widths.get(cell.col + j, DEFAULT_WIDTH) for j in range(cell.span))


def row_heights(sheet: SheetPlan) -> dict[int, float]:
    """Points per row that holds wrapped text: enough lines for its longest header (a unit
    line never spills over the first data row) or wrapped cell (a merged note or live
    sentence, with a line to spare for a formula text that could outgrow its lines). Excel,
    LibreOffice and Sheets all keep an explicit height; left to themselves they do not all
    grow rows for wrapped text (merged cells never)."""
    lines: dict[int, int] = {}
    for cell in sheet.cells:
        if cell.role == "header":  # less the header's indent step
            n = wrapped_lines(str(cell.value), span_width(sheet, cell) - INDENT_WIDTH)
        elif cell.wrap:
            width = span_width(sheet, cell) - (INDENT_WIDTH if cell.role in INSET else 0)
            n = wrapped_lines(str(cell.value), width, TEXT_WIDTH)
            if cell.role == "formula" and len(str(cell.value)) > SPARE * n * width / TEXT_WIDTH:
                n += 1  # a live text near its lines' capacity: room to grow
        else:
            continue
        lines[cell.row] = max(lines.get(cell.row, 1), n)
    return {row: math.ceil(n * LINE_POINTS + 3) for row, n in lines.items() if n > 1}


def filled_rows(table: TablePlan) -> int:
    """How many of a table's rows hold something: all of a table without typed-in inputs,
    else up to the last row with an input (spare input rows are left for the user)."""
    inputs = [c for c in table.columns if c.is_input and not c.helper]
    if not inputs:
        return table.n_rows
    last = -1
    for c in inputs:
        for i, v in enumerate(c.values.tolist()):
            if i > last and (not _blank(v) or c.link_at(i) is not None):
                last = i
    return last + 1


def _blank(v: object) -> bool:
    return v is None or v == "" or (isinstance(v, float) and math.isnan(v))


def _widths(sheet: SheetPlan, last_col: int) -> list[float]:
    return [0.0 if c in sheet.hidden else column_points(sheet.widths.get(c, DEFAULT_WIDTH))
            for c in range(last_col + 1)]


def _heights(sheet: SheetPlan, last_row: int) -> list[float]:
    tall = row_heights(sheet)
    return [tall.get(r, LINE_POINTS) for r in range(last_row + 1)]


def _breaks(sizes: list[float], room: float, keep: list[tuple[int, int]],
            start_new: set[int], repeat: float) -> tuple[int, ...]:
    """Greedy page breaks over rows or columns of `sizes` points: a page takes what fits in
    `room` (less the repeated titles on every page but the first); a span in `keep` (a
    chart) is not split when it fits a page, and a break falls before each of `start_new`."""
    breaks: list[int] = []
    used, first = 0.0, 0
    i = 0
    while i < len(sizes):
        cap = room - (repeat if breaks else 0.0)
        span = next(((a, b) for a, b in keep if a == i), None)
        size = sum(sizes[i:span[1] + 1]) if span else sizes[i]
        if i > first and (i in start_new or (used + size > cap and (
                span is None or size <= room - repeat))):
            breaks.append(i)
            first, used = i, 0.0
            continue
        if span and size <= cap:
            used += size
            i = span[1] + 1
            continue
        used += sizes[i]
        i += 1
    return tuple(breaks)


def chart_cells(sheet: SheetPlan, chart: ChartPlan) -> tuple[int, int, int, int]:
    """(first row, last row, first col, last col) a chart covers: xlsxwriter sizes it in
    pixels (64 per default column, 20 per row) and anchors it over the cells those pixels
    span, which LibreOffice keeps."""
    px, col = 64.0 * chart.width_cols, chart.col
    while px > column_points(sheet.widths.get(col, DEFAULT_WIDTH)):
        px -= column_points(sheet.widths.get(col, DEFAULT_WIDTH))
        col += 1
    return chart.row, chart.row + chart.height_rows - 1, chart.col, col


def keep_texts_on_page(sheet: SheetPlan) -> None:
    """A text that would cross a column page break ends at the break instead, wrapped, so
    it prints whole on one page: a merged, wrapped text (a GPU source as wide as the GPU
    table), and a merged or overflowing one-line text (a note that runs into the empty
    cells to its right; past a break its tail would print alone on a page, as "cy" of
    "latency" once did on Parallelism). Run by the planner before row heights are taken:
    the breaks depend on column widths only.

    Which way up the page is turned is chosen here, on the texts as each orientation cuts
    them: a text cut at a break wraps to more lines, so its rows grow and the page count
    with them (GPU Specs' sources cut at portrait's breaks printed 12 pages where the
    estimate on the uncut texts said portrait was the shorter). `print_setup` keeps it."""
    reach = _text_reach(sheet)
    best: tuple[tuple[int, int, bool], list[Cell], bool] | None = None
    for portrait in (False, True):
        setup = _setup(sheet, portrait)
        cells = _cut_at_breaks(sheet.cells, reach, setup.col_breaks)
        trial = sheet
        if cells is not sheet.cells:  # a text cut: its rows grow, so count the pages again
            trial = replace(sheet, cells=cells)
            setup = _setup(trial, portrait)
        key = (setup.pages(trial), -setup.scale, portrait)
        if best is None or key < best[0]:
            best = (key, cells, portrait)
    assert best is not None
    sheet.cells[:] = best[1]
    sheet.portrait = best[2]


def _text_reach(sheet: SheetPlan) -> dict[int, int]:
    """The columns each text cell a column break may cut reaches, by its index in
    sheet.cells: its span, or for a one-line text that runs on into empty cells as far as
    its line goes."""
    taken = {(c.row, c.col + j) for c in sheet.cells for j in range(c.span)}
    out: dict[int, int] = {}
    for i, cell in enumerate(sheet.cells):
        if not isinstance(cell.value, str) or cell.role in ("input", "header"):
            continue
        reach = cell.span
        if not cell.wrap and cell.role not in ("formula", "label", "unit"):
            need = len(cell.value) * TEXT_WIDTH + INDENT_WIDTH  # where its one line ends
            width = span_width(sheet, cell)
            while width < need and (cell.row, cell.col + reach) not in taken:
                width += sheet.widths.get(cell.col + reach, DEFAULT_WIDTH)
                reach += 1
        out[i] = reach
    return out


def _cut_at_breaks(cells: list[Cell], reach: dict[int, int],
                   breaks: tuple[int, ...]) -> list[Cell]:
    """`cells` with each text that would cross one of the column `breaks` (as far as `reach`
    says it goes) ended at it and wrapped, as a new list; `cells` itself when none does."""
    out = cells
    for i, columns in reach.items() if breaks else ():
        cell = cells[i]
        end = next((b for b in breaks if cell.col < b < cell.col + columns), None)
        if end is not None:
            if out is cells:
                out = list(cells)
            out[i] = replace(cell, span=end - cell.col, wrap=True)
    return out


def print_setup(sheet: SheetPlan) -> PrintSetup:
    """Where the sheet's pages break, from its plan (see PrintSetup): the orientation
    keep_texts_on_page chose, else of the landscape and the portrait layout the one with
    fewer pages (landscape on a tie), and on a tie in pages the larger scale."""
    if sheet.portrait is not None:  # chosen with its texts cut (keep_texts_on_page)
        return _setup(sheet, sheet.portrait)
    options = [_setup(sheet, portrait) for portrait in (False, True)]
    return min(options, key=lambda o: (o.pages(sheet), -o.scale, o.portrait))


def _setup(sheet: SheetPlan, portrait: bool) -> PrintSetup:
    """The best setup on an A4 page turned as `portrait` says."""
    off = set(sheet.hidden) | {c.col for t in sheet.tables if not t.prints for c in t.columns}
    rows = [c.row for c in sheet.cells if c.col not in off]
    cols = [c.col + c.span - 1 for c in sheet.cells if c.col not in off]
    for t in sheet.tables:
        shown = [c.col for c in t.columns if c.col not in off]
        if shown:  # chart data in hidden columns print nothing
            rows.append(t.first_row + max(filled_rows(t), 1) - 1)
            cols += shown
    charts = [chart_cells(sheet, c) for c in sheet.charts]
    rows += [c[1] for c in charts]
    cols += [c[3] for c in charts]
    last_row, last_col = max(rows, default=0), max(cols, default=0)
    while last_col > 0 and last_col in sheet.hidden:
        last_col -= 1
    table = main_table(sheet)
    repeat = (table.header_row, table.header_row) if table is not None else None
    widths = _widths(sheet, last_col)
    page_w, page_h = PORTRAIT_POINTS if portrait else PAGE_POINTS
    room_w, room_h = page_w * FILL, page_h * FILL
    heights = _heights(sheet, last_row)
    chart_cols = [(c[2], c[3]) for c in charts]
    charts = [(c[0], c[1]) for c in charts]
    # the rows no break may fall inside: charts, and the sheet's row groups that meet none
    groups = [(a, b) for a, b in sheet.keep_rows
              if b <= last_row and not any(a <= d and c <= b for c, d in charts)]
    keep_rows = sorted(charts + groups)
    whole = math.floor(100 * min(room_w / max(sum(widths), 1.0),
                                 room_h / max(sum(heights), 1.0)))
    if SPLIT_SCALE <= whole < MIN_SCALE:  # on one page, still readable
        return PrintSetup(last_row, last_col, None, None, True, whole, fit_height=True,
                          portrait=portrait)
    if sum(widths) * MIN_SCALE / 100 <= room_w:
        scale = min(100, math.floor(100 * room_w / max(sum(widths), 1.0)))
        row_breaks = _breaks(heights, room_h * 100 / scale, keep_rows, set(),
                             heights[repeat[0]] if repeat else 0.0)
        return PrintSetup(last_row, last_col, _split(repeat, table, row_breaks), None, True,
                          scale, row_breaks, (), portrait=portrait)
    scale = SPLIT_SCALE
    label = widths[0]
    repeat_cols = (0, 0) if label <= REPEAT_SHARE * room_w * 100 / scale else None
    repeat_w = label if repeat_cols else 0.0
    keep = _keep(chart_cols + _blocks(sheet), widths, room_w * 100 / scale - repeat_w)
    col_breaks = _breaks(widths, room_w * 100 / scale, keep, set(), repeat_w)
    row_breaks = _breaks(heights, room_h * 100 / scale, keep_rows,
                         {r for r, _ in charts} if not col_breaks else set(),
                         heights[repeat[0]] if repeat else 0.0)
    return PrintSetup(last_row, last_col, _split(repeat, table, row_breaks), repeat_cols,
                      False, scale, row_breaks, col_breaks, portrait=portrait)


def _blocks(sheet: SheetPlan) -> list[tuple[int, int]]:
    """The columns of each block of cells under a header row that is no table's (first,
    last; a unit column right of the last header included): the Parallelism sheet's
    "Splits" and "PP per micro-batch" beside its inputs. A column break inside one would
    print its values on a page apart from its labels."""
    table_heads = {(t.header_row, c.col) for t in sheet.tables for c in t.columns}
    at = {(c.row, c.col): c for c in sheet.cells}
    heads = sorted((c.row, c.col) for c in sheet.cells
                   if c.role == "header" and (c.row, c.col) not in table_heads)
    spans: list[tuple[int, int]] = []
    for row, run in itertools.groupby(heads, key=lambda rc: rc[0]):
        cols = [c for _, c in run]
        # runs of adjacent header columns: a column less its place in the row is constant
        for _, group in itertools.groupby(enumerate(cols), key=lambda ic: ic[1] - ic[0]):
            adjacent = [c for _, c in group]
            first, last = adjacent[0], adjacent[-1]
            end, r = last, row + 1
            while any((r, c) in at for c in range(first, last + 1)):
                unit = at.get((r, last + 1))
                if unit is not None and unit.role == "unit":
                    end = last + 1
                r += 1
            spans.append((first, end))
    return spans


def _keep(spans: list[tuple[int, int]], sizes: list[float], room: float
          ) -> list[tuple[int, int]]:
    """The spans no break may fall inside, first ones first (charts, then blocks): a span
    overlapping those kept joins them only where the whole still fits a page (`room`
    points), else it is given up: a block that reaches under a chart's columns, too wide
    to print with it, must not pull the break into the chart."""
    kept: list[tuple[int, int]] = []
    for a, b in spans:
        near = [(c, d) for c, d in kept if c <= b and a <= d]
        first, last = min([a, *(c for c, _ in near)]), max([b, *(d for _, d in near)])
        if near and sum(sizes[first:last + 1]) > room:
            continue
        kept = sorted([s for s in kept if s not in near] + [(first, last)])
    return kept


def _split(repeat: tuple[int, int] | None, table: TablePlan | None,
           breaks: tuple[int, ...]) -> tuple[int, int] | None:
    """The header rows to repeat, only when a page break falls inside the main table: on
    pages below a short table they would head rows whose columns do not match them."""
    if repeat is None or table is None:
        return None
    last = table.first_row + max(filled_rows(table), 1) - 1
    return repeat if any(table.first_row < b <= last for b in breaks) else None
