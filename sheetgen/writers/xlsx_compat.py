"""The one place sheetgen reaches into XlsxWriter's private chart methods, kept apart so an
XlsxWriter upgrade that changes them fails here, loudly, and in tests/test_xlsx_compat.py.

Why: a chart whose data sit in hidden columns needs <c:plotVisOnly val="0"/>, and XlsxWriter
has no public way to write it: `show_hidden_data()` omits the element instead (XlsxWriter's
chart.py, `_write_plot_vis_only`), and LibreOffice's importer reads an absent element as
"visible cells only" unless the file says it is from MS Office 2007
(oox/source/drawingml/chart/chartspacemodel.cxx, mbPlotVisOnly(!bMSO2007Doc)): then it
draws nothing from hidden columns.
"""

from __future__ import annotations

from typing import Any

import xlsxwriter
from xlsxwriter.chart import Chart

#: The private names the shim relies on (checked when it is used and by the test).
PRIVATE_METHODS = ("_write_plot_vis_only", "_xml_empty_tag")


def plot_hidden_cells(chart: Any) -> None:
    """Make `chart` write <c:plotVisOnly val="0"/>: plot cells in hidden rows and columns."""
    missing = [m for m in PRIVATE_METHODS if not callable(getattr(Chart, m, None))]
    if missing:
        raise RuntimeError(f"XlsxWriter {xlsxwriter.__version__} has no Chart."
                           f"{', Chart.'.join(missing)}: sheetgen/writers/xlsx_compat.py needs "
                           "updating for this version")

    def write() -> None:
        chart._xml_empty_tag("c:plotVisOnly", [("val", 0)])

    chart._write_plot_vis_only = write
