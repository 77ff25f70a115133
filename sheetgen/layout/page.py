"""Sheet-wide presentation rules, applied to every planned sheet (including sheets added
later): frozen panes, header row heights that fit their wrapped text, and print setup.

Pure functions of a SheetPlan, so the xlsx writer, the fill writer and the Google Sheets
request builder all lay a sheet out the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sheetgen.layout.planner import Cell, SheetPlan, TablePlan
from sheetgen.layout.text_fit import DEFAULT_WIDTH, INDENT_WIDTH, TEXT_WIDTH, wrapped_lines

LINE_POINTS = 15.0  # one line of 11-point text, as Excel and LibreOffice space it
#: page margins in inches (left, right, top, bottom), and the footer: sheet name left,
#: "page / pages" right (Excel's &A, &P, &N codes), so every printed page says what it is
MARGINS = (0.4, 0.4, 0.5, 0.5)
FOOTER_LEFT, FOOTER_RIGHT = "&A", "&P / &N"
FREEZE_MAX_ROWS = 16  # freeze below a table header only when it sits this high on the sheet
INSET = ("formula", "row_note")  # wrapped cells the writers indent one step
SPARE = 0.95  # a wrapped formula text fuller than this share of its lines gets one more


@dataclass(frozen=True)
class PrintSetup:
    """xlsx page setup (the Sheets API has none): landscape, one page wide, as tall as it
    needs; the main table's header rows repeat on every page; the print area covers the used
    range (zero-based, inclusive)."""

    last_row: int
    last_col: int
    repeat_rows: tuple[int, int] | None


def main_table(sheet: SheetPlan) -> TablePlan | None:
    """The table a reader scrolls through: the one with the most cells."""
    if not sheet.tables:
        return None
    return max(sheet.tables, key=lambda t: t.n_rows * len(t.columns))


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


def print_setup(sheet: SheetPlan) -> PrintSetup:
    """The used range (cells, tables, and the area a chart covers) and the rows to repeat."""
    rows = [c.row for c in sheet.cells] + [t.last_row for t in sheet.tables]
    cols = [c.col for c in sheet.cells] + [c.col for t in sheet.tables for c in t.columns]
    for chart in sheet.charts:
        rows.append(chart.row + chart.height_rows)
        cols.append(chart.col + chart.width_cols)
    table = main_table(sheet)
    repeat = (table.header_row, table.header_row) if table is not None else None
    return PrintSetup(max(rows, default=0), max(cols, default=0), repeat)
