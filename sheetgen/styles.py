"""Number formats and cell styles, by name, shared by the xlsx and Google Sheets writers.

Definitions refer to a format by key (``"sci"``, ``"time"``...) so a display choice is made once.
"""

from __future__ import annotations

from typing import Any

from sheetgen.palette import (
    COMPUTE,
    COMPUTE_FILL,
    DERIVED_FILL,
    HEADER_FILL,
    INPUT_FILL,
    INPUT_FONT,
    LINK_FONT,
    MEMORY,
    MEMORY_FILL,
    NOTE_FONT,
)

#: Number-format codes understood by Excel, LibreOffice and Google Sheets alike.
NUMBER_FORMATS: dict[str, str] = {
    "general": "General",
    "int": "#,##0",
    "sci": "0.000E+00",
    "time": "0.000E+00",
    "ratio": "0.00",
    "fraction": "0.00",
    "pct": "0.0%",
    "gb": '#,##0.00,,," GB"',  # bytes shown in decimal GB: each trailing comma divides by 1000
    "text": "@",
    "bool": "General",
}


#: Cell roles; writers translate these into their own style objects.
STYLES: dict[str, dict[str, Any]] = {
    "title": {"bold": True, "font_size": 14},
    "subtitle": {"bold": True, "font_size": 11},
    "note": {"italic": True, "font_color": NOTE_FONT},
    "header": {"bold": True, "bg_color": HEADER_FILL, "bottom": 1, "text_wrap": True,
               "valign": "top"},
    "label": {},
    "input": {"bg_color": INPUT_FILL, "font_color": INPUT_FONT, "border": 1,
              "border_color": "#BFBFBF"},
    "derived": {"bg_color": DERIVED_FILL},
    "linked": {"bg_color": DERIVED_FILL, "font_color": LINK_FONT},
    "unit": {"font_color": NOTE_FONT},
}

COMPUTE_BOUND = "compute-bound"
MEMORY_BOUND = "memory-bound"
#: regime -> (strong colour for marks and text, light colour for cell fills)
REGIME_COLORS = {COMPUTE_BOUND: (COMPUTE, COMPUTE_FILL), MEMORY_BOUND: (MEMORY, MEMORY_FILL)}
