"""Planning a chart: its series as cell ranges, and tight log-axis bounds. Pure: no I/O.

A definitions.Chart names columns; its ChartPlan holds where they are, which every writer
(xlsx, fill, Google Sheets) draws the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sheetgen.core.excel import is_number
from sheetgen.model.vocabulary import Axis, Chart

#: A series gets custom point labels (a label column) only up to this many points: beyond,
#: they bloat the chart XML and clutter the chart (the xlsx and Google writers both use it).
LABELLED_POINTS_MAX = 500

#: (col, first_row, last_row) of a column on the chart's sheet
Columns = tuple[int, int, int]


@dataclass(frozen=True)
class SeriesPlan:
    name: str
    x: Columns
    y: Columns
    labels: Columns | None = None
    line: bool = False
    color: str | None = None  # palette hex; None: the writer's default for a line/points
    marker: str = "circle"  # "none": no markers (a line series draws markers unless "none")
    marker_size: int = 6


@dataclass(frozen=True)
class ChartPlan:
    title: str
    row: int
    col: int
    series: tuple[SeriesPlan, ...]
    x_title: str
    y_title: str
    x_range: tuple[float, float] | None = None  # axis bounds (whole decades); None: auto
    y_range: tuple[float, float] | None = None
    width_cols: int = 12
    height_rows: int = 22
    x_log: bool = True  # base-10 log axes (linear where the data are log10 already)
    y_log: bool = True
    #: (sheet, row, col) of a cell holding the live title; `title` is its value at build time
    title_cell: tuple[str, int, int] | None = None


def decades(values: list[float]) -> tuple[float, float] | None:
    """The whole decades around the positive finite values (None when there are none)."""
    v = [float(x) for x in values if is_number(x) and x > 0]
    if not v:
        return None
    lo, hi = math.floor(math.log10(min(v)) + 1e-9), math.ceil(math.log10(max(v)) - 1e-9)
    return 10.0 ** lo, 10.0 ** max(hi, lo + 1)


def _points(chart: Chart, values: Callable[[str], list[Any]]) -> list[tuple[float, float]]:
    """The points the axes must show: where both x and y are numbers, in the series that
    fit the axes (log10 data given back as values)."""
    out = []
    for s in chart.series:
        if not s.fits_axes:
            continue
        xs, ys = values(s.x), values(s.y)
        rows = range(len(xs)) if s.row is None else (s.row,)
        for r in rows:
            x, y = xs[r], ys[r]
            if is_number(x) and is_number(y):
                out.append((10.0 ** x, 10.0 ** y) if chart.log10_data else (x, y))
    return out


def _bounds(axis: Axis, values: list[float], log10: bool) -> tuple[float, float] | None:
    if not (axis.tight and axis.log):
        return None
    r = decades(values)
    if r is None or not log10:
        return r
    return round(math.log10(r[0])), round(math.log10(r[1]))


def plan_chart(chart: Chart, where: Callable[[str], Columns],
               values: Callable[[str], list[Any]],
               title: tuple[str, tuple[str, int, int]] | None = None) -> ChartPlan:
    """`where(name)`: a column's cells; `values(name)`: its build-time values, as the cells
    hold them (for tight bounds); `title`: the live title's build-time text and its cell
    (a chart of log10 data says so after it)."""
    series = []
    for s in chart.series:
        x, y = where(s.x), where(s.y)
        if s.row is not None:
            x, y = ((c, r + s.row, r + s.row) for c, r, _ in (x, y))
        series.append(SeriesPlan(s.name, x, y, where(s.labels) if s.labels else None,
                                 line=s.line, color=s.color, marker=s.marker,
                                 marker_size=s.marker_size))
    points = _points(chart, values)
    text, cell = (chart.title, None) if title is None else title
    if title is not None and chart.log10_data:
        text += " (log10 axes)"
    return ChartPlan(
        title=text, title_cell=cell, row=chart.row, col=chart.col, series=tuple(series),
        x_title=chart.x.title, y_title=chart.y.title,
        x_range=_bounds(chart.x, [p[0] for p in points], chart.log10_data),
        y_range=_bounds(chart.y, [p[1] for p in points], chart.log10_data),
        width_cols=chart.width_cols, height_rows=chart.height_rows,
        x_log=chart.x.log and not chart.log10_data, y_log=chart.y.log and not chart.log10_data,
    )
