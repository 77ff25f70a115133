"""LOG10 helper columns for the Google Sheets roofline chart.

The Sheets API has no log-scale chart axis, and a roofline on linear axes is unreadable (the
shapes span eight decades), so the pushed workbook plots log10 of the same columns the xlsx
chart plots on log axes. The helpers are ordinary quantities: declared once here, placed by
the planner, checked against their references like every other column. They exist only in
the pushed workbook (`plan_build(..., chart_helpers=True)`): the xlsx chart has real log axes
and needs no helpers, and every xlsx cell keeps its address in the pushed workbook.

Placement follows the API's rules for a chart whose one domain is split over two source
ranges (the ceiling's x, then the points' x; https://developers.google.com/workspace/sheets/
api/reference/rest/v4/spreadsheets/charts, ChartSourceRange and DataLabel): at each offset the
domain and the series ranges are "in order and contiguous", and a series' custom labels come
from the column right after it. So, right of the ceiling table (which stays where the xlsx
build has it), two blocks of four columns, one per offset:

    AP log10 ceiling x | AQ log10 ceiling y | AR (points: blank) | AS (labels: blank)
    AT log10 points x  | AU (ceiling: blank) | AV log10 points y | AW point label

(letters for the default layout; all derived from matmul.CEILING_COL). The xlsx chart's
extra series (one per regime, the ridge point) are dropped here: the layout fixes the count.

The ceiling block extends the ceiling table; the points block is two tables with the matmul
table's rows (`Table.rows_of`). Rows the matmul guard rejects stay blank, so LOG10 only ever
sees positive intensities and FLOP/s.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sheetgen.definitions import Quantity, SheetSpec, Table, Text
from sheetgen.sheets import matmul

HELPER = "chart helper"


def _log10(label: str, name: str, of: str) -> Quantity:
    def reference(**a: np.ndarray) -> np.ndarray:
        return np.log10(np.asarray(a[of], dtype=float))

    return Quantity(name, f"{HELPER}: log10 {label}", "", f"LOG10({{{of}}})", reference,
                    fmt="ratio",
                    doc=f"log10 of {of}: the Sheets API has no log axis, so the chart plots this.")


LOG_INTENSITY = _log10("intensity", "log_intensity", "intensity")
LOG_ATTAINED = _log10("attained FLOP/s", "log_attained", "attained_flops")
LOG_ROOF_X = _log10("intensity", "log_roof_x", "roof_x")
LOG_ROOF_Y = _log10("attainable FLOP/s", "log_roof_y", "roof_y")
POINT_LABEL = Quantity("chart_label", f"{HELPER}: point label", "", "{shape_label}",
                       lambda shape_label: shape_label, fmt="text",
                       doc="The shape label again, right of the points' y: the API takes a "
                           "split series' labels from the next column.")

CEILING = replace(matmul.CEILING, columns=(*matmul.CEILING.columns, LOG_ROOF_X, LOG_ROOF_Y))
#: first column of the four-column block of each offset (ceiling, points)
CEILING_BLOCK = matmul.CEILING_COL + len(CEILING.all_columns()) - 2
POINTS_BLOCK = CEILING_BLOCK + 4
BLANK_COLUMNS = (CEILING_BLOCK + 2, CEILING_BLOCK + 3, POINTS_BLOCK + 1)
POINTS_X = Table(name="chart_points_x", header_row=matmul.TABLE.header_row, col=POINTS_BLOCK,
                 inputs=(), columns=(LOG_INTENSITY,), guard=matmul.TABLE.guard,
                 rows_of=matmul.TABLE.name)
POINTS_Y = Table(name="chart_points_y", header_row=matmul.TABLE.header_row,
                 col=POINTS_BLOCK + 2, inputs=(), columns=(LOG_ATTAINED, POINT_LABEL),
                 guard=matmul.TABLE.guard, rows_of=matmul.TABLE.name)
LAST_COL = POINTS_BLOCK + 3


def matmul_sheet() -> SheetSpec:
    """The Matmul sheet with the helper columns, and a chart that plots them."""
    base = matmul.sheet()
    (chart,) = base.charts
    widths = dict(base.column_widths) | {c: 14.0 for c in range(CEILING_BLOCK, LAST_COL + 1)}
    widths |= {c: 3.0 for c in BLANK_COLUMNS}
    return replace(
        base,
        texts=(*base.texts, *(Text(matmul.TABLE.header_row, c, "(blank)", "note")
                              for c in BLANK_COLUMNS)),
        tables=(matmul.TABLE, matmul.POINTS, CEILING, POINTS_X, POINTS_Y),
        charts=(replace(
            chart, title=f"{chart.title} (log10 axes)", point_groups=(), ridge_row=None,
            tight=False,
            ceiling_x=LOG_ROOF_X.name, ceiling_y=LOG_ROOF_Y.name,
            points_x=LOG_INTENSITY.name, points_y=LOG_ATTAINED.name,
            points_label=POINT_LABEL.name,
            x_title=f"log10 {chart.x_title}", y_title="log10 attainable FLOP/s",
        ),),
        column_widths=widths,
    )
