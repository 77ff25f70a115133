"""The batch-size sweep's chart: one batch's latency against m, one GPU vs PP vs TP.

Log-log, since m spans four decades and latency three: the shape of each curve reads at
once (flat while the weights dominate, then linear in m once compute does), and so does
where tensor and pipeline parallel cross (over the host link TP wins small batches and PP
large ones; over NVLink TP wins small batches and the two tie at large ones). The chart
sits right of the sweep table, its
data right of the chart in hidden columns (plotted all the same, as the Matmul chart's):
m and the three latencies (ms, the sheet's time unit), #N/A where a sweep row is blank or
bad, never "" (Excel's XY chart would number a text x 1, 2, 3; charts skip #N/A).

Points are joined in row order, so rows typed in increasing m draw as curves (the default
rows are). Google Sheets has no log axis: its variant (`google`) plots LOG10 helpers of the
same columns on linear axes, as the Matmul chart's (sheets/chart_helpers.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from sheetgen.core import time_cells
from sheetgen.core.excel import ExcelError, is_number
from sheetgen.layout import palette
from sheetgen.model.vocabulary import NA_CODE, Axis, Chart, Quantity, Series, SheetSpec, Table, Text
from sheetgen.sheets import matmul
from sheetgen.sheets.chart_helpers import HELPER, log10_of
from sheetgen.sheets.parallel.inputs import TIME_UNIT

#: seconds -> the sheet's time unit, as a factor and as the formula text that applies it
_FACTOR = time_cells.TIME_FACTORS[TIME_UNIT]
_TO_UNIT = "".join(time_cells.power_of_ten(_FACTOR))

CHART_COLS, CHART_ROWS = 12, 28
SINGLE, PIPELINE, TENSOR = "one GPU", "pipeline parallel, its best M", "tensor parallel"

PLOT_M = matmul.plot_value("plot_sw_m", "chart x: m (rows)", "", "sw_m", fmt="int")
PLOT_SINGLE = matmul.plot_value("plot_sw_single", "chart y: one GPU latency", "s",
                                "sw_s_latency", fmt="time")
PLOT_PP = matmul.plot_value("plot_sw_pp", "chart y: PP latency", "s", "sw_p_latency",
                            fmt="time")
PLOT_TP = matmul.plot_value("plot_sw_tp", "chart y: TP latency", "s", "sw_t_latency",
                            fmt="time")
#: (legend name, y column, colour, marker), in legend order
LINES = ((SINGLE, PLOT_SINGLE, palette.SINGLE_GPU, "circle"),
         (PIPELINE, PLOT_PP, palette.PIPELINE, "square"),
         (TENSOR, PLOT_TP, palette.TENSOR, "triangle"))


def _log10_ms(label: str, name: str, of: str) -> Quantity:
    """log10 of a latency in ms (the sheet's time unit), #N/A where it is no number. Its
    references come in seconds (si_refs), whatever unit their cells hold."""
    def reference(**a: Any) -> np.ndarray:
        v = np.atleast_1d(np.asarray(a[of], dtype=object))
        return np.asarray([np.log10(float(x) * _FACTOR) if is_number(x)
                           else ExcelError(NA_CODE) for x in v], dtype=object)

    return Quantity(name, f"{HELPER}: log10 {label} ({TIME_UNIT})", "",
                    f"IF(ISNUMBER({{{of}}}),LOG10({{{of}}}{_TO_UNIT}),{matmul.NA_FORMULA})",
                    reference, fmt="ratio", handles_gaps=True, si_refs=True,
                    doc=f"log10 of {of} in {TIME_UNIT}: the Sheets API has no log axis.")


LOG_M = log10_of("m (rows)", "log_sw_m", PLOT_M.name)
LOGS = tuple(_log10_ms(label, f"log_{q.name}", q.name)
             for label, q in (("one GPU latency", PLOT_SINGLE), ("PP latency", PLOT_PP),
                              ("TP latency", PLOT_TP)))


def _data(sweep: Table, col: int, columns: tuple[Quantity, ...], name: str) -> Table:
    return Table(name=name, header_row=sweep.header_row, col=col, inputs=(), columns=columns,
                 guard=sweep.guard, rows_of=sweep.name, na_rows=True)


def _chart(sweep: Table, col: int, x: str, ys: tuple[str, ...], log10: bool) -> Chart:
    pre = "log10 " if log10 else ""
    return Chart(
        title="Latency of one batch vs batch size" + (" (log10 axes)" if log10 else ""),
        row=sweep.header_row - 2, col=col,
        series=tuple(Series(name, x, y, line=True, color=color, marker=marker)
                     for (name, _, color, marker), y in zip(LINES, ys, strict=True)),
        x=Axis(f"{pre}m (rows per batch)", tight=True),
        y=Axis(f"{pre}latency, one batch (ms)", tight=True),
        log10_data=log10, width_cols=CHART_COLS, height_rows=CHART_ROWS)


def chart_col(tables: tuple[Table, ...]) -> int:
    """One blank column right of the widest of `tables` (the sweep and the per-layer table,
    which the chart's rows reach down into)."""
    return max(t.col + len(t.all_columns()) for t in tables) + 1


def right_edge(tables: tuple[Table, ...]) -> int:
    """The last column the chart's data uses, in either variant (with its LOG10 helpers)."""
    data_col = chart_col(tables) + CHART_COLS + 1
    return data_col + len(LINES) + 1 + len(LOGS)


def with_chart(spec: SheetSpec, sweep: Table, google: bool = False,
               clear_of: tuple[Table, ...] = ()) -> SheetSpec:
    """`spec` with the sweep's chart right of the sweep table (and of `clear_of`) and its
    data right of the chart, hidden; `google`: plus the LOG10 helpers the Google chart plots
    instead."""
    col = chart_col((sweep, *clear_of))
    data_col = col + CHART_COLS + 1
    data = _data(sweep, data_col, (PLOT_M, *(q for _, q, _, _ in LINES)), "sweep_chart")
    tables: tuple[Table, ...] = (data,)
    chart = _chart(sweep, col, PLOT_M.name, tuple(q.name for _, q, _, _ in LINES), False)
    last = data_col + len(data.columns) - 1
    if google:  # one domain (log m) then one column per series: the API's contiguous rule
        logs = _data(sweep, last + 1, (LOG_M, *LOGS), "sweep_chart_log")
        tables += (logs,)
        chart = _chart(sweep, col, LOG_M.name, tuple(q.name for q in LOGS), True)
        last += len(logs.columns)
    widths = {c: 14.0 for c in range(data_col, last + 1)}
    return replace(
        spec, tables=(*spec.tables, *tables), charts=(*spec.charts, chart),
        texts=(*spec.texts, Text(sweep.header_row - 1, data_col,
                                 "Sweep chart data (#N/A where no point)", "subtitle")),
        column_widths=dict(spec.column_widths) | widths,
        hidden_spans=(*spec.hidden_spans, (data_col, last)))
