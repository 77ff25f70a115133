"""Number formats and cell styles, by name, shared by the xlsx and Google Sheets writers.

Definitions refer to a format by key (``"sci"``, ``"time"``...) so a display choice is made once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from sheetgen.layout.palette import (
    COMPUTE,
    COMPUTE_FILL,
    DERIVED_FILL,
    DIM_FONT,
    HEADER_FILL,
    INPUT_FILL,
    INPUT_FONT,
    LINK_FONT,
    MEMORY,
    MEMORY_FILL,
    NOTE_FONT,
)
from sheetgen.layout.palette import FALSE_FILL as FALSE_FILL
from sheetgen.layout.palette import FALSE_FONT as FALSE_FONT
from sheetgen.model.vocabulary import COMPUTE_BOUND, MEMORY_BOUND

#: A yes/no cell's number format: TRUE for 1, FALSE for 0, as General would show them. It must
#: not be General. LibreOffice's xlsx import keeps a cached formula result only when it is a
#: number or text (t="n", t="str"), not a boolean (t="b"; applyCellFormulaValues in
#: https://github.com/LibreOffice/core/blob/libreoffice-7-4/sc/source/filter/oox/formulabuffer.cxx),
#: so it computes such a cell when first needed: opened with a user's default profile (no
#: recalculation on load), while a page is drawn. A formula cell formatted General then gets a
#: BOOLEAN format stamped on it (ScFormulaCell::mbNeedsNumberFormat), which replaces the cell's
#: style while the conditional format being drawn still reads the old one: LibreOffice 7.4
#: crashes ("Unspecified Application Error", no PDF). Excel and Google Sheets show a boolean as
#: TRUE/FALSE whatever its number format.
BOOLEAN_CODE = '"TRUE";"TRUE";"FALSE"'

#: Number-format codes understood by Excel, LibreOffice and Google Sheets alike.
NUMBER_FORMATS: dict[str, str] = {
    "general": "General",
    "int": "#,##0",
    # no E-notation anywhere a person reads: a unitless wide-ranging number in plain digits
    # (0.201, 20,064.309), thousands separated
    "sci": "#,##0.0##",
    "ratio": "0.00",
    "fraction": "0.00",
    "pct": "0.0%",
    "gb": '#,##0.00,,," GB"',  # bytes shown in decimal GB: each trailing comma divides by 1000
    "text": "@",
    "bool": BOOLEAN_CODE,  # a pass/fail check: TRUE/FALSE, FALSE highlighted
    "flag": BOOLEAN_CODE,  # a neutral yes/no (a stage boundary): TRUE/FALSE, not highlighted
    "status": "@",  # a status text: "ok", else highlighted
    # Readable units on exact SI values (what check, read and the API see). A format can only
    # divide by powers of 1000 (each trailing comma) and hold two conditions, so each picks
    # one of three prefixes (T, G, M) and never falls back to E-notation. Times cannot be
    # scaled up to ms or µs by a format, so time cells hold ms or µs themselves
    # (sheetgen.core.time_cells), under a header naming the unit.
    # Conditions are plain numbers (Excel reads no 1E+9 there). Rendered identically by
    # LibreOffice (tests/test_print.py) and passed to Google Sheets as patterns.
    "time": '[>=1]#,##0.000" s";#,##0.000000" s"',  # a time held in seconds (µs visible)
    "time_ms": "#,##0.000",  # 262.147 (ms): three decimals keep 5 µs visible (0.005)
    "time_us": "#,##0.00",  # 21.59 (µs)
    # a latency per unit of something (per k, per row) is ns or ps: 7.1 ns a row shows as
    # 0.007146 (µs), 0.53 ns as 0.00053, where the times' two decimals showed 0.01 and 0.00
    "latency": '#,##0.000000000" s"',  # held in seconds (ns visible)
    "latency_ms": "#,##0.000000###",
    "latency_us": "#,##0.000###",
    "bytes": '[>=1000000000]#,##0.00,,," GB";[>=1000000]#,##0.00,," MB";#,##0" B"',
    "bandwidth": '[>=1000000000000]#,##0.000,,,," TB/s";[>=1000000000]#,##0.0,,," GB/s";'
                 '#,##0" B/s"',
    "rate": '[>=1000000000000]#,##0.0,,,," TFLOP/s";[>=1000000000]#,##0.0,,," GFLOP/s";'
            '#,##0.0,," MFLOP/s"',
    # int8 peaks count integer operations (sheetgen.core.units.rate_unit)
    "rate_ops": '[>=1000000000000]#,##0.0,,,," TOP/s";[>=1000000000]#,##0.0,,," GOP/s";'
                '#,##0.0,," MOP/s"',
    # the smallest shapes' FLOPs in MFLOP with three decimals (64³: 0.524 MFLOP)
    "flop": '[>=1000000000000]#,##0.00,,,," TFLOP";[>=1000000000]#,##0.00,,," GFLOP";'
            '#,##0.000,," MFLOP"',
}

#: unit -> the number format that shows it readably (the format names the unit itself)
UNIT_FORMATS: dict[str, str] = {"s": "time", "B": "bytes", "B/s": "bandwidth",
                                "FLOP/s": "rate", "OP/s": "rate_ops", "FLOP": "flop"}
_GENERIC_NUMERIC = {"general", "sci", "time", "int", "gb"}
#: units whose values read best as plain whole numbers, with the unit beside them (rows/s:
#: 16,143 rather than 1.614E+04)
PLAIN_UNIT_FORMATS: dict[str, str] = {"rows/s": "int"}


#: a time cell holding ms or µs (cell_units): plain digits, the unit in its header
TIME_CELL_FORMATS: dict[str, str] = {"ms": "time_ms", "µs": "time_us"}
#: the same for a latency per unit ("latency"): more decimals, so nanoseconds stay visible
LATENCY_CELL_FORMATS: dict[str, str] = {"ms": "latency_ms", "µs": "latency_us"}


def display_format(unit: str, fmt: str, time_unit: str | None = None) -> str:
    """The number format of a value in `unit` declared with format `fmt`: a plain numeric
    format on a value with a physical unit becomes that unit's readable format, so every
    sheet (and every sheet added later) shows GB, TB/s, TFLOP/s rather than 3.357E+07, and
    a time held in ms or µs shows plain digits (21.59 under "compute time (µs)")."""
    if unit == "s" and fmt == "latency":
        return LATENCY_CELL_FORMATS.get(time_unit or "", "latency")
    if unit == "s" and time_unit in TIME_CELL_FORMATS and fmt in _GENERIC_NUMERIC:
        return TIME_CELL_FORMATS[time_unit]
    if fmt in _GENERIC_NUMERIC and unit in UNIT_FORMATS:
        return UNIT_FORMATS[unit]
    if fmt in _GENERIC_NUMERIC and unit in PLAIN_UNIT_FORMATS:
        return PLAIN_UNIT_FORMATS[unit]
    return fmt


BOOLEAN_FORMATS = ("bool", "flag")
#: computed texts are indented one step, so a word never touches the number left of it
#: (xlsx and fill; Google Sheets pads every cell already)
INDENTED_FORMATS = ("text", "status")


def shows_unit(fmt: str) -> bool:
    """Whether a number format spells out its unit (so no separate unit label is needed)."""
    return fmt in UNIT_FORMATS.values()


#: The workbook's one typeface, named on every cell: a writer that leaves the font unnamed
#: gets its application's default (openpyxl's cells then render in a serif in LibreOffice).
FONT_NAME = "Calibri"
FONT_SIZE = 11.0


@dataclass(frozen=True)
class CellStyle:
    """How one cell looks, decided once here; the xlsx, fill and Google Sheets writers only
    translate it into their own style objects (as pandas' io/excel stylers convert one
    neutral style dict per engine), so the three cannot drift apart.

    Colours are palette hex strings; None means "the application's default"."""

    number_format: str | None = None  # an Excel number-format code; None: leave General
    font_name: str | None = None
    font_size: float | None = None
    bold: bool = False
    italic: bool = False
    font_color: str | None = None
    fill: str | None = None  # solid background
    wrap: bool = False
    align: str | None = None  # "left" | "center" | "right"; None: by the value's type
    valign: str | None = None  # "top"; None: the bottom, every application's default
    indent: int = 0  # steps (an indent needs align="left" in xlsx; set together here)
    border: str | None = None  # "box" (four thin sides) | "bottom" (one thin side)
    border_color: str | None = None  # None: black


_BODY = CellStyle(font_name=FONT_NAME, font_size=FONT_SIZE)
#: Cell roles. Labels, units and notes sit at the top of their row, level with a wrapped
#: value beside them.
ROLE_STYLES: dict[str, CellStyle] = {
    "title": replace(_BODY, bold=True, font_size=14.0),
    "subtitle": replace(_BODY, bold=True),
    "note": replace(_BODY, italic=True, font_color=NOTE_FONT, valign="top"),
    # a block row's note: inset one step from the number left of it
    "row_note": replace(_BODY, italic=True, font_color=NOTE_FONT, valign="top", align="left",
                        indent=1),
    # inset one indent step: LibreOffice fills a column edge to edge with a header that
    # just fits ("fraction of peak" ran into "tiles"); the step wraps it and keeps a gap
    "header": replace(_BODY, bold=True, fill=HEADER_FILL, border="bottom", wrap=True,
                      valign="top", align="left", indent=1),
    "label": replace(_BODY, valign="top"),
    "input": replace(_BODY, fill=INPUT_FILL, font_color=INPUT_FONT, border="box",
                     border_color="#BFBFBF", valign="top"),
    "derived": replace(_BODY, fill=DERIVED_FILL, valign="top"),
    # an input cell that reads the user's own sheet (fill's links): a formula, in green
    "linked": replace(_BODY, fill=DERIVED_FILL, font_color=LINK_FONT, valign="top"),
    "unit": replace(_BODY, font_color=NOTE_FONT, valign="top"),
}
#: cells whose value is a number format's business even when it is "general"
_VALUE_ROLES = ("input", "derived", "linked")


@functools.cache
def cell_style(role: str, fmt: str = "general", wrap: bool = False) -> CellStyle:
    """The one style of a cell with `role` (a Cell's role or a column's style; "formula"
    is "derived"), number format key `fmt` and wrapped text or not."""
    role = "derived" if role == "formula" else role
    style = ROLE_STYLES.get(role, _BODY)
    if fmt not in ("general", "text") or role in _VALUE_ROLES:
        style = replace(style, number_format=NUMBER_FORMATS.get(fmt, "General"))
    if role in _VALUE_ROLES and fmt in INDENTED_FORMATS:
        style = replace(style, align="left", indent=1)  # a word never touches a number
    elif role in _VALUE_ROLES and fmt not in ("general", *BOOLEAN_FORMATS):
        # a number column keeps its words right too ("n/a" under 312.0 TFLOP/s), so they
        # never run into the next column's text ("312.0 TFLOP/sn/a")
        style = replace(style, align="right")
    if wrap:
        style = replace(style, wrap=True, valign="top", align=style.align or "left")
    return style


def number_style(fmt: str) -> CellStyle:
    """A conditional rule's style that sets only a number format (the int8 switch)."""
    return CellStyle(number_format=NUMBER_FORMATS.get(fmt, "General"))


def dim_style() -> CellStyle:
    """A conditional rule's style for a figure that is switched off: grey text."""
    return CellStyle(font_color=DIM_FONT)


def highlight_style(fill: str, font_color: str | None = None) -> CellStyle:
    """A conditional rule's style: a fill and maybe a font colour, nothing else."""
    return CellStyle(fill=fill, font_color=font_color)


#: regime -> (strong colour for marks and text, light colour for cell fills)
REGIME_COLORS = {COMPUTE_BOUND: (COMPUTE, COMPUTE_FILL), MEMORY_BOUND: (MEMORY, MEMORY_FILL)}
