"""LOG10 helper columns for the Google Sheets roofline chart.

The Sheets API has no log-scale chart axis, and a roofline on linear axes is unreadable (the
shapes span eight decades), so the pushed workbook plots log10 of the same columns the xlsx
chart plots on log axes. The helpers are ordinary quantities: declared once here, placed by
the planner, checked against their references like every other column. They exist only in
the pushed workbook (`plan_build(..., chart_helpers=True)`): the xlsx chart has real log axes
and needs no helpers, and every xlsx cell keeps its address in the pushed workbook.

Placement: the two point helpers extend the matmul table into the two spare columns before
the ceiling table (which stays where the xlsx build has it); the two ceiling helpers extend
the ceiling table to the right. Rows the table's guard rejects stay blank, so LOG10 only
ever sees positive intensities and FLOP/s.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sheetgen.definitions import Quantity, SheetSpec
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

TABLE = replace(matmul.TABLE, columns=(*matmul.TABLE.columns, LOG_INTENSITY, LOG_ATTAINED))
CEILING = replace(matmul.CEILING, columns=(*matmul.CEILING.columns, LOG_ROOF_X, LOG_ROOF_Y))

if TABLE.col + len(TABLE.all_columns()) > matmul.CEILING_COL:  # pragma: no cover - layout
    raise RuntimeError("chart helper columns would overlap the roofline ceiling table")


def matmul_sheet() -> SheetSpec:
    """The Matmul sheet with the helper columns, and a chart that plots them."""
    base = matmul.sheet()
    (chart,) = base.charts
    last = matmul.CEILING_COL + len(CEILING.all_columns())
    first_helper = len(matmul.TABLE.all_columns())
    widths = dict(base.column_widths) | {first_helper: 14.0, first_helper + 1: 14.0} | {
        c: 14.0 for c in range(matmul.CEILING_COL, last)}
    return replace(
        base,
        tables=(TABLE, CEILING),
        charts=(replace(
            chart, title=f"{chart.title} (log10 axes)",
            ceiling_x=LOG_ROOF_X.name, ceiling_y=LOG_ROOF_Y.name,
            points_x=LOG_INTENSITY.name, points_y=LOG_ATTAINED.name,
            x_title=f"log10 {chart.x_title}", y_title=f"log10 {chart.y_title}",
        ),),
        column_widths=widths,
    )
