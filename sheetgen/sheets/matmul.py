"""The "Matmul" sheet (Part 1): one roofline row per (m, k, n), plus spare rows to fill in.

Column order follows how one reasons: work (FLOPs), traffic (bytes), intensity, the bound
regime, and only then the times the regime explains.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.core.excel import ExcelError, is_blank, number_mask
from sheetgen.inputs.shapes import MAX_DIM
from sheetgen.layout import palette
from sheetgen.model import factories
from sheetgen.model import refined_columns as rc
from sheetgen.model.vocabulary import (
    LINK_NUMBER,
    NA_CODE,
    Axis,
    Block,
    BlockRow,
    Chart,
    Input,
    Quantity,
    Series,
    SheetSpec,
    Table,
    Text,
    Validation,
)

SHEET = "Matmul"
BAD_ROW = "check m,k,n"
OK = "ok"

_DIM_RULE = Validation("whole_min", minimum=1, maximum=MAX_DIM,
                       message="A positive whole number")
M = Input("m", "m", "rows", fmt="int", validation=_DIM_RULE, doc="rows of A and C",
          link=LINK_NUMBER)
K = Input("k", "k", "", fmt="int", validation=_DIM_RULE, doc="inner (reduction) dimension",
          link=LINK_NUMBER)
N = Input("n", "n", "cols", fmt="int", validation=_DIM_RULE, doc="columns of B and C",
          link=LINK_NUMBER)


def dim_ok(value: Any) -> bool:
    """What the sheet's guard accepts: a positive whole number (booleans are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        return False
    return bool(np.isfinite(value)) and value >= 1 and float(value) % 1 == 0


def _int_row_status(m: np.ndarray, k: np.ndarray, n: np.ndarray) -> np.ndarray | None:
    """row_status vectorised for the usual columns of plain ints and blanks (None); None when a
    column holds anything else, or an int beyond int64."""
    blank = np.zeros(len(m), dtype=bool)
    ok = np.ones(len(m), dtype=bool)
    for col in (m, k, n):
        if not set(map(type, col)) <= {int, type(None)}:
            return None
        missing = np.equal(col, None)
        try:
            values = np.where(missing, 0, col).astype(np.int64)
        except OverflowError:
            return None
        blank |= missing
        ok &= values >= 1
    return np.where(blank, "", np.where(ok, OK, BAD_ROW)).astype(object)


def row_status(m: Any, k: Any, n: Any) -> np.ndarray:
    """Per row: "" while any of m, k, n is blank, "ok" when all are valid, else BAD_ROW."""
    cols = [np.asarray(x, dtype=object) for x in (m, k, n)]
    if len({len(c) for c in cols}) == 1 and cols[0].ndim == 1:
        fast = _int_row_status(*cols)
        if fast is not None:
            return fast
    rows = zip(np.asarray(m, dtype=object), np.asarray(k, dtype=object),
               np.asarray(n, dtype=object), strict=True)
    out = [
        "" if any(is_blank(v) for v in row) else OK if all(dim_ok(v) for v in row) else BAD_ROW
        for row in rows
    ]
    return np.asarray(out, dtype=object)


ROW_CHECK = Quantity(
    "row_check", "check", "",
    "IF(OR(ISBLANK({m}),ISBLANK({k}),ISBLANK({n})),\"\","
    "IF(AND(ISNUMBER({m}),ISNUMBER({k}),ISNUMBER({n})),"
    f"IF(AND({{m}}>=1,{{k}}>=1,{{n}}>=1,MOD({{m}},1)=0,MOD({{k}},1)=0,MOD({{n}},1)=0),"
    f"\"{OK}\",\"{BAD_ROW}\"),\"{BAD_ROW}\"))",
    row_status, fmt="text",
    doc="Blank until m, k, n are all filled in; flags values that are not positive integers.",
)
ROOFLINE = factories.matmul_roofline("", "m", "k", "n", bytes_name="bytes_moved",
                                    time_name="predicted_time")
FLOPS, BYTES, INTENSITY, REGIME, COMPUTE_TIME, MEMORY_TIME, PREDICTED = ROOFLINE.columns()
ATTAINED = factories.ratio("attained_flops", "flops", "predicted_time", "attained FLOP/s",
                          "FLOP/s", fmt="sci")
PEAK_FRACTION = factories.ratio("peak_fraction", "attained_flops", "peak_flops",
                               "fraction of peak", "", fmt="pct")
#: The refined time beside the pure roofline: launch floor, compute ramp, tiles, waves
#: (sheetgen.model.refined).
REFINED = rc.refined_roofline("", "m", "n", "compute_time", "memory_time",
                              flops_="flops", inner="k", bandwidth="attainable_bw")


LABEL = factories.shape_text("shape_label", "chart label", "m", "k", "n",
                            doc="m x k x n, used to label the chart's points.")

TABLE = Table(
    name="matmul",
    header_row=4,
    col=0,
    inputs=(M, K, N),
    columns=(ROW_CHECK, FLOPS, BYTES, INTENSITY, REGIME, COMPUTE_TIME, MEMORY_TIME, PREDICTED,
             ATTAINED, PEAK_FRACTION, *REFINED.columns(), LABEL),
    guard="row_check",
)

# The chart's data: helper columns that are a number or NA() (#N/A), never "" or text, since
# Excel's XY chart reads text x as 1, 2, 3 and text y as 0; Excel, LibreOffice and Google
# Sheets skip #N/A. y is in TFLOP/s (TOP/s for int8), the unit people read a roofline in.
TERA = 1e12
NA_FORMULA = "NA()"


def plot_value(name: str, label: str, unit: str, of: str, *, scale: float = 1.0,
               regime: str | None = None, fmt: str = "ratio") -> Quantity:
    """`of` (divided by scale) where it is a number (and the row's regime is `regime`), else
    NA(). Handles gaps itself: a gap's text marker becomes #N/A too, never text in the chart."""
    body = f"{{{of}}}/{scale:.0E}" if scale != 1.0 else f"{{{of}}}"
    cond = f"ISNUMBER({{{of}}})"
    deps = [of]
    if regime is not None:
        cond = f'AND({cond},{{regime}}="{regime}")'
        deps.append("regime")

    def reference(**a: Any) -> np.ndarray:
        v = np.asarray(a[of], dtype=object)
        ok = number_mask(v)
        if regime is not None:
            ok &= np.asarray(a["regime"], dtype=object) == regime
        out = np.full(len(v), ExcelError(NA_CODE), dtype=object)
        out[ok] = [float(x) / scale for x in v[ok]]
        return out

    return Quantity(name, label, unit, f"IF({cond},{body},{NA_FORMULA})", reference,
                    fmt=fmt, handles_gaps=True,
                    doc=f"Chart data: {of} as a number or #N/A, which charts skip.")


PLOT_X = plot_value("plot_intensity", "chart x: intensity", "FLOP/B", "intensity")
PLOT_COMPUTE = plot_value("plot_compute", "chart y: compute-bound", "TFLOP/s",
                           "attained_flops", scale=TERA, regime=factories.COMPUTE_BOUND)
PLOT_MEMORY = plot_value("plot_memory", "chart y: memory-bound", "TFLOP/s",
                          "attained_flops", scale=TERA, regime=factories.MEMORY_BOUND)
#: The chart sits right of the table, below the frozen header, so it is seen with the table
#: and prints whole on its first page; its data follow right of it. It starts on the second
#: data row: LibreOffice prints an object anchored on the row right below the repeated
#: header row again on every page (measured: the legend on both Matmul pages).
CHART_COL = len(TABLE.all_columns()) + 1
CHART_COLS, CHART_ROWS = 12, 22
POINTS_COL = CHART_COL + CHART_COLS + 1
POINTS = Table(name="chart_points", header_row=TABLE.header_row, col=POINTS_COL, inputs=(),
               columns=(PLOT_X, PLOT_COMPUTE, PLOT_MEMORY), guard=TABLE.guard,
               rows_of=TABLE.name, na_rows=True)

# The ceiling of the chart: x spans decades either side of the attainable ridge, so the kink
# sits exactly at a plotted point whatever GPU is selected.
DECADE = Input("roof_decade", "decades from ridge", fmt="int", helper=True)


def _na_unless(*names: str) -> Any:
    """A reference wrapper: #N/A on the rows where any of `names` is no number (a gap)."""
    def wrap(f: Any) -> Any:
        def reference(**a: Any) -> np.ndarray:
            n = max((np.size(a[k]) for k in a), default=1)
            ok = np.ones(n, dtype=bool)
            for k in names:
                ok &= np.broadcast_to(number_mask(a[k]), (n,))
            args = {k: np.broadcast_to(np.asarray(v, dtype=object), (n,))[ok].astype(float)
                    for k, v in a.items()}
            if ok.all():
                return np.asarray(f(**args), dtype=float)
            out = np.full(n, ExcelError(NA_CODE), dtype=object)
            out[ok] = f(**args)
            return out
        return reference
    return wrap


#: Chart data, so a number or NA() under a gap (fp8 on an A100) rather than the marker text,
#: as the points' helpers: Excel would number a text x 1, 2, 3.
ROOF_X = Quantity("roof_x", "intensity", "FLOP/B",
                  f"IF(ISNUMBER({{attainable_ridge}}),{{attainable_ridge}}*10^{{roof_decade}},"
                  f"{NA_FORMULA})",
                  _na_unless("attainable_ridge")(
                      lambda attainable_ridge, roof_decade: attainable_ridge
                      * 10.0 ** roof_decade),
                  fmt="sci", handles_gaps=True)
ROOF_Y = Quantity(
    "roof_y", "attainable FLOP/s", "FLOP/s",
    "IF(AND(ISNUMBER({roof_x}),ISNUMBER({attainable_flops}),ISNUMBER({attainable_bw})),"
    f"MIN({{attainable_flops}},{{roof_x}}*{{attainable_bw}}),{NA_FORMULA})",
    _na_unless("roof_x", "attainable_flops", "attainable_bw")(
        lambda attainable_flops, roof_x, attainable_bw: np.minimum(attainable_flops,
                                                                   roof_x * attainable_bw)),
    fmt="sci", handles_gaps=True,
)
ROOF_PLOT = plot_value("roof_tflops", "attainable TFLOP/s", "TFLOP/s", "roof_y", scale=TERA)
CEILING_COL = POINTS_COL + len(POINTS.columns) + 1
CEILING = Table(name="roofline", header_row=TABLE.header_row, col=CEILING_COL,
                inputs=(DECADE,), columns=(ROOF_X, ROOF_Y, ROOF_PLOT))
ROOF_DECADES = [-3, -2, -1, 0, 1, 2, 3]


def roofline_chart() -> Chart:
    """The log-log roofline: the ceiling a line, one marker series per regime (the legend
    reads without point labels, which LibreOffice does not render), the ridge a diamond; axes
    fixed to the decades around the points and the ridge. The regimes differ in shape as well
    as hue (squares on the flat roof, triangles on the slope), so they stay apart on the red
    ceiling and in grey print."""
    def regime(name: str, y: str, color: str, marker: str) -> Series:
        return Series(name, PLOT_X.name, y, color=color, labels="shape_label", marker=marker,
                      marker_size=8)

    return Chart(
        title="Roofline", row=TABLE.first_row + 1, col=CHART_COL,
        series=(Series("roofline ceiling", "roof_x", ROOF_PLOT.name, line=True, marker="none",
                       fits_axes=False),
                regime(factories.COMPUTE_BOUND, PLOT_COMPUTE.name, palette.COMPUTE, "square"),
                regime(factories.MEMORY_BOUND, PLOT_MEMORY.name, palette.MEMORY, "triangle"),
                Series(RIDGE_NAME, "roof_x", ROOF_PLOT.name, marker="diamond", marker_size=10,
                       color=palette.RIDGE, row=ROOF_DECADES.index(0))),
        x=Axis("arithmetic intensity (FLOP/B)", tight=True),
        y=Axis("attained TFLOP/s (TOP/s for int8)", tight=True),
        width_cols=CHART_COLS, height_rows=CHART_ROWS, title_from=CHART_TITLE.name,
    )


RIDGE_NAME = "ridge point"
#: The refined-time columns greyed while their term is off (waves, ramp, kernel terms).
DIMMED = rc.dimmed_while_off(REFINED)
#: The wave assumption in words above the refined time ("waves off: preset has no SM count"
#: for a user's preset without one): the number beside it is the plain roofline then.
WAVES_NOTE = rc.waves_note("waves_note")
_REFINED_COL = TABLE.col + [c.name for c in TABLE.all_columns()].index(REFINED.time.name)
NOTE_BLOCK = Block(row=TABLE.header_row - 2, col=_REFINED_COL - 1, header=(),
                   rows=(BlockRow("refined time:", [WAVES_NOTE]),), value_span=2)
#: The chart's title, live: it names the GPU and dtype the Inputs sheet has chosen now. In
#: the hidden chart-data columns, above the chart points' subtitle.
CHART_TITLE = Quantity("chart_title", "chart title", "",
                       '"Roofline: "&{gpu_name}&", "&{dtype}',
                       lambda gpu_name, dtype: f"Roofline: {gpu_name}, {dtype}", fmt="text")
TITLE_BLOCK = Block(row=0, col=POINTS_COL, header=("Chart title (live)",),
                    rows=(BlockRow("title", [CHART_TITLE]),))


def sheet() -> SheetSpec:
    widths = {0: 10.0, 1: 10.0, 2: 10.0, 3: 12.0} | {i: 14.0 for i in range(4, CEILING_COL)}
    widths |= {c: 14.0 for c in range(POINTS_COL, POINTS_COL + len(POINTS.columns))}
    widths |= {CEILING_COL + i: 14.0 for i in range(len(CEILING.all_columns()))}
    return SheetSpec(
        name=SHEET,
        time_unit="µs",
        texts=(
            Text(0, 0, "Matmul roofline: C[m×n] = A[m×k] · B[k×n]", "title"),
            Text(1, 0, "Time ≈ max(FLOPs / attainable FLOP/s, bytes / attainable bandwidth): "
                 "a matmul is compute-bound when its intensity (FLOPs per byte moved) is at "
                 "or above the ridge point, memory-bound below it."),
            Text(2, 0, "m, k, n are inputs (yellow; green where they read your own sheet); "
                 "the computed columns fill in once all three are positive whole numbers. The "
                 "refined time adds the launch floor, the compute ramp, (when on) wave "
                 "quantization of tile_m×tile_n tiles over the GPU's SMs, the write cost of "
                 "C's bytes and the kernel terms (K loop, split-K floor) the Inputs sheet "
                 "gives; each column is grey while its term is off."),
            Text(TABLE.header_row - 1, POINTS_COL, "Chart points (#N/A where no point)",
                 "subtitle"),
            Text(TABLE.header_row - 1, CEILING_COL, "Roofline ceiling (chart data)",
                 "subtitle"),
        ),
        blocks=(TITLE_BLOCK, NOTE_BLOCK),
        dimmed=DIMMED,
        tables=(TABLE, POINTS, CEILING),
        charts=(roofline_chart(),),
        column_widths=widths,
        freeze=(TABLE.first_row, 0),
        regime_columns=("regime",),
        # the chart's data out of sight; every writer makes the chart plot hidden cells
        hidden_spans=((POINTS_COL, CEILING_COL + len(CEILING.all_columns()) - 1),),
    )
