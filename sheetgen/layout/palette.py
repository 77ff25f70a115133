"""The one palette: every colour the workbook, the Google sheet, the terminal and the plot use.

Regimes keep one hue everywhere (orange compute-bound, blue memory-bound): strong for marks
and text (plot points, terminal), light for cell fills, where dark text must stay readable.
"""

from __future__ import annotations

COMPUTE = "#C55A11"  # compute-bound: plot points, terminal text
MEMORY = "#2F5597"  # memory-bound
COMPUTE_FILL = "#F8CBAD"  # the same hues, light, behind cell text
MEMORY_FILL = "#BDD7EE"
CEILING = "#C00000"  # the roofline ceiling
SPEC_ROOF = "#7F7F7F"  # the spec (unadjusted) roof, ridge lines
POINT = "#404040"  # chart points not coloured by regime, annotations
GRID = "#D9D9D9"
RIDGE = "#000000"  # the ridge point marker
SINGLE_GPU = "#7F7F7F"  # the Parallelism sweep chart: one GPU (grey, the baseline)
PIPELINE = "#548235"  # pipeline parallel (green)
TENSOR = "#7030A0"  # tensor parallel (purple): neither regime hue, so no regime is implied

INPUT_FILL = "#FFF2CC"  # pale yellow: a cell you may change
INPUT_FONT = "#1F4E79"  # dark blue text: the spreadsheet-modelling convention for inputs
HEADER_FILL = "#DDEBF7"
DERIVED_FILL = "#F2F2F2"  # grey: a formula
NOTE_FONT = "#595959"
LINK_FONT = "#00803C"  # green text: a value read live from another sheet (modelling convention)
DIM_FONT = "#A6A6A6"  # a figure that is off (waves with wave quantization off): greyed out
FALSE_FILL = "#FFC7CE"  # a check that fails (FALSE, "does not fit", an n/a marker)
FALSE_FONT = "#9C0006"

def rgb(color: str) -> tuple[int, int, int]:
    """'#C55A11' -> (197, 90, 17): for 24-bit terminal colours (click.style fg=...)."""
    h = color.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)
