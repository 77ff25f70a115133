"""The operations on the roofline chart, prefill and decode as two series, and its hidden data
tables.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from sheetgen.layout import palette
from sheetgen.model import factories as rf
from sheetgen.model.vocabulary import (
    Axis,
    Chart,
    Input,
    Quantity,
    Series,
    Table,
)
from sheetgen.sheets.chart_helpers import log10_of
from sheetgen.sheets.transformer.common import (
    PHASES,
    OpRow,
)


def _pick(name: str, label: str, unit: str, values: list[tuple[str, Callable[..., float]]],
          scale: float = 1.0) -> Quantity:
    """Row i of a chart-data table shows the i-th value (a block cell); NA() past the end
    or where the value is no number, which charts skip."""
    body = "NA()"
    for i, (tmpl, _) in reversed(list(enumerate(values, start=1))):
        body = f"IF({{xf_point}}={i},{tmpl},{body})"
    div = f"/{scale:.0E}" if scale != 1.0 else ""

    def fn(a: dict[str, Any]) -> np.ndarray:
        from sheetgen.core.excel import ExcelError

        out = []
        for p in np.asarray(a["xf_point"], dtype=float):
            i = int(p)
            v = values[i - 1][1](a) if 1 <= i <= len(values) else None
            ok = isinstance(v, int | float) and math.isfinite(v)
            out.append(v / scale if ok else ExcelError("#N/A"))
        return np.asarray(out, dtype=object)

    return Quantity(name, label, unit, f"IF(ISNUMBER({body}),{body}{div},NA())",
                    lambda **a: fn(a), fmt="ratio", handles_gaps=True)


def chart_tables(rows: dict[str, list[OpRow]], col: int, header_row: int
                 ) -> tuple[Table, Table]:
    plotted = {ph: [r for r in rows[ph] if r.plotted] for ph, _ in PHASES}
    cols: list[Quantity] = []
    for ph, phase in PHASES:
        xs, ys = [], []
        for r in plotted[ph]:
            assert r.plotted is not None
            i, f = r.plotted
            xs.append((f"{{{i}}}", lambda a, i=i: a[i]))
            ys.append((f"{{{f}}}/{{{r.bound}}}", lambda a, f=f, t=r.bound: a[f] / a[t]))
        cols += [_pick(f"xf_pt_{ph}_x", f"{phase} intensity", "FLOP/B", xs),
                 _pick(f"xf_pt_{ph}_y", f"{phase} attained TFLOP/s", "FLOP/s", ys, 1e12)]
    points = Table(name="xf_points", header_row=header_row, col=col,
                   inputs=(Input("xf_point", "op", fmt="int", helper=True),
                           Input("xf_pt_op", "operation", fmt="text", helper=True)),
                   columns=tuple(cols))
    roof = Table(name="xf_roof", header_row=header_row, col=col + len(points.all_columns()) + 1,
                 inputs=(Input("xf_decade", "decades from ridge", fmt="int", helper=True),),
                 columns=(rf.same_as("xf_roof_x", "roof_x", "roofline x", "FLOP/B"),
                          rf.same_as("xf_roof_y", "roof_tflops", "roofline TFLOP/s",
                                     "TFLOP/s")))
    return points, roof


def chart(row: int, col: int) -> Chart:
    return Chart(
        title="Operations on the roofline (bound times)", row=row, col=col,
        series=(Series("roofline ceiling", "xf_roof_x", "xf_roof_y", line=True, marker="none",
                       fits_axes=False),
                Series("prefill", "xf_pt_pf_x", "xf_pt_pf_y", color=palette.COMPUTE,
                       labels="xf_pt_op"),
                Series("decode", "xf_pt_dc_x", "xf_pt_dc_y", color=palette.MEMORY,
                       labels="xf_pt_op")),
        x=Axis("arithmetic intensity (FLOP/B)", tight=True),
        y=Axis("attained TFLOP/s (TOP/s for int8)", tight=True), width_cols=10,
        height_rows=22)


#: Google's chart: the ceiling, prefill and decode, each with its own x column. The API splits
#: one domain over several source ranges, each range's series "in order and contiguous"
#: (ChartSourceRange): so one block per series, its log10 x then one column per series in
#: legend order, this series' log10 y in its place and the others blank (as the Matmul
#: sheet's chart_helpers lays out its ceiling and regimes).
GOOGLE_SERIES = 3


def google_tables(points: Table, roof: Table) -> tuple[tuple[Table, ...], tuple[int, ...], int]:
    """The LOG10 helper tables of the Google chart right of `roof`, the blank columns
    between them, and the last column used."""
    first = roof.col + len(roof.all_columns()) + 1
    width = 1 + GOOGLE_SERIES
    tables: list[Table] = []
    blanks: list[int] = []
    sources = (("roof", roof, "xf_roof_x", "xf_roof_y", "roofline intensity",
                "roofline TFLOP/s"),
               *((ph, points, f"xf_pt_{ph}_x", f"xf_pt_{ph}_y", f"{phase} intensity",
                  f"{phase} attained TFLOP/s") for ph, phase in PHASES))
    for i, (slug, table, x, y, xl, yl) in enumerate(sources):
        col = first + i * width
        for j, (of, label, kind) in enumerate(((x, xl, "x"), (y, yl, "y"))):
            tables.append(Table(name=f"xf_log_{slug}_{kind}", header_row=table.header_row,
                                col=col if j == 0 else col + 1 + i, inputs=(),
                                columns=(log10_of(label, f"xf_log_{slug}_{kind}", of),),
                                rows_of=table.name))
        blanks += [col + 1 + k for k in range(GOOGLE_SERIES) if k != i]
    return tuple(tables), tuple(blanks), first + len(sources) * width - 1


def google_chart(row: int, col: int) -> Chart:
    """The chart on log10 helper columns (Google Sheets has no log axis); no point labels:
    the API takes a split series' labels from the column right after it."""
    base = chart(row, col)
    ceiling, prefill, decode = base.series
    return replace(
        base, title=f"{base.title} (log10 axes)", log10_data=True,
        series=(replace(ceiling, x="xf_log_roof_x", y="xf_log_roof_y"),
                replace(prefill, x="xf_log_pf_x", y="xf_log_pf_y", labels=None),
                replace(decode, x="xf_log_dc_x", y="xf_log_dc_y", labels=None)),
        x=replace(base.x, title=f"log10 {base.x.title}"),
        y=replace(base.y, title=f"log10 {base.y.title}"))
