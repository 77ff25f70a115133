"""LOG10 helper columns for the Google Sheets roofline chart.

The Sheets API has no log-scale chart axis, and a roofline on linear axes is unreadable (the
shapes span eight decades), so the pushed workbook plots log10 of the same columns the xlsx
chart plots on log axes: the ceiling, the ridge point and one series per regime, in TFLOP/s
(TOP/s for int8) and FLOP/B. The helpers are ordinary quantities: declared once here, placed
by the planner, checked against their references like every other column. They exist only
in the pushed workbook (`plan_build(..., chart_helpers=True)`): the xlsx chart has real log
axes and needs no helpers, and every xlsx cell keeps its address in the pushed workbook.

Placement follows the API's rules for a chart whose one domain is split over several source
ranges (https://developers.google.com/workspace/sheets/api/reference/rest/v4/spreadsheets/
charts, ChartSourceRange): at each offset the domain and the series ranges are "in order and
contiguous". Series that share an x column share an offset: the ceiling and the ridge (a
column over the ceiling's rows, #N/A but at decade 0) read the ceiling's x; both regimes
read the points' x. So, right of the ceiling table, two blocks of five columns (series in
legend order: ceiling, ridge, compute-bound, memory-bound):

    AP log10 x  | AQ ceiling y | AR ridge y   | AS (blank)     | AT (blank)       ceiling
    AU log10 x  | AV (blank)   | AW (blank)   | AX compute y   | AY memory y      points

(letters for the default layout; all derived from matmul.CEILING_COL). No point labels: the
API takes a split series' labels from the column right after it (DataLabel), which is the
next series' column for every series but the last; the regime series' legend reads without
them, as in the `fill`ed workbook.

Every helper is a number or NA() (#N/A), which Sheets' charts skip, like the xlsx chart data
(sheets/matmul.py): guarded-out rows, the other regime's rows and a gap (fp8 on an A100).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from sheetgen.core.excel import ExcelError, is_number
from sheetgen.model.vocabulary import NA_CODE, Quantity, Series, SheetSpec, Table, Text
from sheetgen.sheets import matmul

HELPER = "chart helper"


def log10_of(label: str, name: str, of: str) -> Quantity:
    """log10 of `of` where it is a number, else #N/A (never text in the chart data)."""
    def reference(**a: Any) -> np.ndarray:
        v = np.atleast_1d(np.asarray(a[of], dtype=object))
        return np.asarray([np.log10(float(x)) if is_number(x) else ExcelError(NA_CODE)
                           for x in v], dtype=object)

    return Quantity(name, f"{HELPER}: log10 {label}", "", f"IF(ISNUMBER({{{of}}}),"
                    f"LOG10({{{of}}}),{matmul.NA_FORMULA})", reference, fmt="ratio",
                    handles_gaps=True,
                    doc=f"log10 of {of}: the Sheets API has no log axis, so the chart plots this.")


def _ridge(of: str) -> Quantity:
    """`of` on the ceiling's decade-0 row (the ridge), #N/A on the others."""
    def reference(roof_decade: Any, **a: Any) -> np.ndarray:
        y, d = np.asarray(a[of], dtype=object), np.asarray(roof_decade, dtype=object)
        return np.asarray([v if is_number(v) and k == 0 else ExcelError(NA_CODE)
                           for v, k in zip(y, d, strict=True)], dtype=object)

    return Quantity("log_ridge_y", f"{HELPER}: log10 ridge TFLOP/s", "",
                    f"IF(AND({{roof_decade}}=0,ISNUMBER({{{of}}})),{{{of}}},"
                    f"{matmul.NA_FORMULA})", reference, fmt="ratio", handles_gaps=True,
                    doc="The ceiling's y at the ridge row only: the ridge marker's series.")


LOG_ROOF_X = log10_of("intensity (FLOP/B)", "log_roof_x", "roof_x")
LOG_ROOF_Y = log10_of("attainable TFLOP/s", "log_roof_y", matmul.ROOF_PLOT.name)
LOG_RIDGE_Y = _ridge(LOG_ROOF_Y.name)
LOG_X = log10_of("intensity (FLOP/B)", "log_intensity", matmul.PLOT_X.name)
LOG_COMPUTE = log10_of("compute-bound TFLOP/s", "log_compute", matmul.PLOT_COMPUTE.name)
LOG_MEMORY = log10_of("memory-bound TFLOP/s", "log_memory", matmul.PLOT_MEMORY.name)

#: series in legend order; each block is one domain column and one column per series
SERIES = 4
CEILING = replace(matmul.CEILING,
                  columns=(*matmul.CEILING.columns, LOG_ROOF_X, LOG_ROOF_Y, LOG_RIDGE_Y))
#: first column of the block of each offset (ceiling and ridge; the regimes)
CEILING_BLOCK = matmul.CEILING_COL + len(matmul.CEILING.all_columns())
POINTS_BLOCK = CEILING_BLOCK + 1 + SERIES
BLANK_COLUMNS = (CEILING_BLOCK + 3, CEILING_BLOCK + 4, POINTS_BLOCK + 1, POINTS_BLOCK + 2)
POINTS_X = Table(name="chart_points_x", header_row=matmul.TABLE.header_row, col=POINTS_BLOCK,
                 inputs=(), columns=(LOG_X,), guard=matmul.TABLE.guard,
                 rows_of=matmul.TABLE.name, na_rows=True)
POINTS_Y = Table(name="chart_points_y", header_row=matmul.TABLE.header_row,
                 col=POINTS_BLOCK + 3, inputs=(), columns=(LOG_COMPUTE, LOG_MEMORY),
                 guard=matmul.TABLE.guard, rows_of=matmul.TABLE.name, na_rows=True)
LAST_COL = POINTS_BLOCK + SERIES


def matmul_sheet() -> SheetSpec:
    """The Matmul sheet with the helper columns, and a chart that plots them."""
    base = matmul.sheet()
    (chart,) = base.charts
    ceiling, compute, memory, ridge = chart.series
    widths = dict(base.column_widths) | {c: 14.0 for c in range(CEILING_BLOCK, LAST_COL + 1)}
    widths |= {c: 3.0 for c in BLANK_COLUMNS}
    return replace(
        base,
        texts=(*base.texts, *(Text(matmul.TABLE.header_row, c, "(blank)", "note")
                              for c in BLANK_COLUMNS)),
        tables=(matmul.TABLE, matmul.POINTS, CEILING, POINTS_X, POINTS_Y),
        charts=(replace(
            chart, title=f"{chart.title} (log10 axes)", log10_data=True,
            series=(  # the ridge next to the ceiling: both read the ceiling's x
                Series(ceiling.name, LOG_ROOF_X.name, LOG_ROOF_Y.name, line=True,
                       marker="none", fits_axes=False),
                Series(ridge.name, LOG_ROOF_X.name, LOG_RIDGE_Y.name, marker=ridge.marker,
                       marker_size=ridge.marker_size, color=ridge.color),
                Series(compute.name, LOG_X.name, LOG_COMPUTE.name, color=compute.color,
                       marker=compute.marker, marker_size=compute.marker_size),
                Series(memory.name, LOG_X.name, LOG_MEMORY.name, color=memory.color,
                       marker=memory.marker, marker_size=memory.marker_size)),
            x=replace(chart.x, title=f"log10 {chart.x.title}"),
            y=replace(chart.y, title=f"log10 {chart.y.title}"),
        ),),
        column_widths=widths,
        hidden_spans=((matmul.POINTS_COL, LAST_COL),),  # the chart data, plotted (SHOW_ALL)
    )
