"""Fitting text to the grid: column widths for what a column shows, and merged, wrapped
cells for text longer than its column. Pure passes over a planned sheet, run by the
planner, so the xlsx, fill and Google Sheets writers all get the same layout.

Widths are in Excel's column-width units (one "0" of the default font). LibreOffice renders
without Calibri, in DejaVu Sans, which is wider: the per-character figures below were
measured on its PDFs, so a text that fits there fits in Excel too.
"""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from sheetgen.layout.styles import NUMBER_FORMATS

if TYPE_CHECKING:
    from sheetgen.layout.cells import SheetPlan
    from sheetgen.model.vocabulary import Block

DEFAULT_WIDTH = 8.43  # Excel's default column width, in characters
#: bold header text per character, in width units (DejaVu Sans Bold)
BOLD_WIDTH = 1.0
#: plain and italic text per character when wrapping: about 0.8 measured
TEXT_WIDTH = 0.82
TEXT_CHAR = 0.85  # plain text per character when fitting a column to its texts
NUMBER_CHAR = 0.95  # digits are wider than the average letter
INDENT_WIDTH = 2.5  # one indent step (LibreOffice: 10 pt) and a margin, in width units
MAX_TEXT_WIDTH = 48.0  # a text column grows to fit its values up to this width
MAX_HEADER_LINES = 3  # a table column grows until its header wraps in this many lines
MAX_HEADER_WIDTH = 20.0  # ...up to this width


@lru_cache(maxsize=1 << 16)  # the same labels are fitted in every plan
def wrapped_lines(text: str, width: float, factor: float = BOLD_WIDTH) -> int:
    """Lines `text` takes when wrapped in a column `width` characters wide (bold unless told:
    `factor` is the text's width per character in column-width units)."""
    chars = max(1, int(width / factor))
    return sum(max(1, len(textwrap.wrap(part, chars, break_long_words=True)))
               for part in str(text).split("\n"))


def span_long_texts(sp: SheetPlan, first: int, block: Block, widths: dict[int, float]) -> None:
    """A block's text values too long for their column (a live sentence, "why" the pairing
    is what it is) are merged across the empty cells right of them in the block and wrapped,
    so they neither spill over their neighbours nor run off the page."""
    last_col = block.col + len(block.header) - 1
    taken = {(c.row, c.col) for c in sp.cells[first:]}
    for i in range(first, len(sp.cells)):
        cell = sp.cells[i]
        if block.value_span and cell.role == "header" and cell.col == last_col:
            sp.cells[i] = replace(cell, span=block.value_span)  # as wide as the values
            continue
        if cell.role != "formula" or cell.fmt != "text":
            continue
        span = block.value_span
        if not span:
            if len(str(cell.value)) <= widths.get(cell.col, DEFAULT_WIDTH):
                continue
            span = 1
            while cell.col + span <= last_col and (cell.row, cell.col + span) not in taken:
                span += 1
        sp.cells[i] = replace(cell, span=span, wrap=True)


TEXT_CHAR = 0.85  # width units per character of plain text (LibreOffice's DejaVu Sans)
NUMBER_CHAR = 0.95  # digits are wider than the average letter
MAX_TEXT_WIDTH = 48.0  # a text column grows to fit its values up to this width


#: the widest text each readable-unit format shows (1,978.9 TFLOP/s; 110.13E-6 s...)
FORMAT_CHARS = {"rate": 15, "rate_ops": 13, "time": 11, "time_ms": 10, "time_us": 10,
                "flop": 14, "bytes": 11, "bandwidth": 10}


def fit_columns(sp: SheetPlan) -> None:
    """Table columns as wide as what they show: texts (shape labels, regimes, GPU names) as
    their longest plus an indent step, readable-unit numbers as their format's widest, so
    nothing spills into or touches the next column (up to MAX_TEXT_WIDTH); and wide
    enough for the header to wrap in MAX_HEADER_LINES lines."""
    for table in sp.tables:
        for column in table.columns:
            if column.fmt in ("text", "status") and len(column.values):
                longest = max(len(str(v)) for v in column.values.tolist())
                # the indent step and a character to spare: a label such as
                # 4096x8192x28672 ran past its column in the filled workbook
                need = min(MAX_TEXT_WIDTH, longest * TEXT_CHAR + INDENT_WIDTH + 1.0)
            elif column.fmt in FORMAT_CHARS:
                need = FORMAT_CHARS[column.fmt] * NUMBER_CHAR + 1.5
            else:
                need = 0.0
            width = max(need, sp.widths.get(column.col, DEFAULT_WIDTH))
            while width < MAX_HEADER_WIDTH and wrapped_lines(
                    column.header, width - INDENT_WIDTH) > MAX_HEADER_LINES:
                width += 1.0  # a header in at most three lines
            if width > sp.widths.get(column.col, DEFAULT_WIDTH):
                sp.widths[column.col] = round(width, 1)


#: a plain-number format code: optional thousands, then the decimals it always shows (0)
#: and may show (#): "#,##0.0##", "0.00"
_PLAIN_CODE = re.compile(r"(#,##)?0(?:\.(0*)(#*))?")


def shown_chars(fmt: str, value: object) -> int:
    """The characters a number shows in `fmt`: its unit format's widest (FORMAT_CHARS), or
    the value as its plain-number code (styles.NUMBER_FORMATS) writes it, a percent with its
    sign; 0 for a text, a boolean or any other format."""
    if fmt in FORMAT_CHARS:
        return FORMAT_CHARS[fmt]
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        return 0
    if fmt == "pct":
        return len(f"{value * 100:,.1f}%")
    code = _PLAIN_CODE.fullmatch(NUMBER_FORMATS.get(fmt, ""))
    if code is None:
        return 0
    thousands, zeros, hashes = code.group(1), code.group(2) or "", code.group(3) or ""
    least, most = len(zeros), len(zeros) + len(hashes)
    text = f"{value:{',' if thousands else ''}.{most}f}"
    if most > least:  # the optional decimals (#) drop their trailing zeros
        whole, _, decimals = text.partition(".")
        text = f"{whole}.{decimals.rstrip('0').ljust(least, '0')}"
    return len(text)


def fit_block_values(sp: SheetPlan) -> None:
    """A column as wide as the numbers its block cells show, and a digit to spare for an
    edited input: a value wider than its column prints as ### in every application (the
    Transformer sheet's 8,030,261,248 parameters in a 12.7-wide column did)."""
    for cell in sp.cells:
        if cell.role not in ("input", "formula") or cell.span != 1:
            continue
        chars = shown_chars(cell.fmt, cell.value)
        if not chars:
            continue
        need = min(MAX_TEXT_WIDTH, (chars + 1) * NUMBER_CHAR + 1.5)
        if need > sp.widths.get(cell.col, DEFAULT_WIDTH):
            sp.widths[cell.col] = round(need, 1)


def fit_row_notes(sp: SheetPlan) -> None:
    """A block row's note longer than its column takes the empty cells right of it (up to
    the sheet's last used column, never over another block or table) and wraps inside
    them: no note runs off the page or hides under a neighbouring table."""
    last_col = max([c.col for c in sp.cells] + [c.col for t in sp.tables for c in t.columns])
    taken = {(c.row, c.col + j) for c in sp.cells for j in range(c.span)}
    for i, cell in enumerate(sp.cells):
        if cell.role != "row_note":
            continue
        need = len(str(cell.value)) * TEXT_CHAR + 1.5
        span, width = 1, sp.widths.get(cell.col, DEFAULT_WIDTH)
        while width < need and cell.col + span <= last_col and not _occupied(
                sp, taken, cell.row, cell.col + span):
            width += sp.widths.get(cell.col + span, DEFAULT_WIDTH)
            span += 1
        if span > 1 or width < need:
            sp.cells[i] = replace(cell, span=span, wrap=width < need)


def _occupied(sp: SheetPlan, taken: set[tuple[int, int]], row: int, col: int) -> bool:
    if (row, col) in taken:
        return True
    return any(t.header_row <= row <= t.last_row and any(c.col == col for c in t.columns)
               for t in sp.tables)


