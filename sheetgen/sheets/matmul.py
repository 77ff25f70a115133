"""The "Matmul" sheet (Part 1): one roofline row per (m, k, n), plus spare rows to fill in.

Column order follows how one reasons: work (FLOPs), traffic (bytes), intensity, the bound
regime, and only then the times the regime explains.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.definitions import (
    LINK_NUMBER,
    Chart,
    Input,
    Quantity,
    SheetSpec,
    Table,
    Text,
    Validation,
)
from sheetgen.sheets import roofline

SHEET = "Matmul"
BAD_ROW = "check m,k,n"
OK = "ok"
MAX_DIM = 2**31 - 1  # cuBLAS takes 32-bit dimensions

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


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


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
        "" if any(_blank(v) for v in row) else OK if all(dim_ok(v) for v in row) else BAD_ROW
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
ROOFLINE = roofline.matmul_roofline("", "m", "k", "n", bytes_name="bytes_moved",
                                    time_name="predicted_time")
FLOPS, BYTES, INTENSITY, REGIME, COMPUTE_TIME, MEMORY_TIME, PREDICTED = ROOFLINE.columns()
ATTAINED = roofline.ratio("attained_flops", "flops", "predicted_time", "attained FLOP/s",
                          "FLOP/s", fmt="sci")
PEAK_FRACTION = roofline.ratio("peak_fraction", "attained_flops", "peak_flops",
                               "fraction of peak", "", fmt="pct")
#: The refined time beside the pure roofline: launch floor, tiles, waves (sheetgen.refined).
REFINED = roofline.refined_roofline("", "m", "n", "compute_time", "memory_time")


def _labels(m: Any, k: Any, n: Any) -> np.ndarray:
    return np.asarray([f"{a:.0f}x{b:.0f}x{c:.0f}" for a, b, c in zip(m, k, n, strict=True)],
                      dtype=object)


LABEL = Quantity("shape_label", "chart label", "", '{m}&"x"&{k}&"x"&{n}', _labels, fmt="text",
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

# The ceiling of the chart: x spans decades either side of the attainable ridge, so the kink
# sits exactly at a plotted point whatever GPU is selected.
DECADE = Input("roof_decade", "decades from ridge", fmt="int", helper=True)
ROOF_X = Quantity("roof_x", "intensity", "FLOP/B", "{attainable_ridge}*10^{roof_decade}",
                  lambda attainable_ridge, roof_decade: attainable_ridge * 10.0 ** roof_decade,
                  fmt="sci")
ROOF_Y = Quantity(
    "roof_y", "attainable FLOP/s", "FLOP/s",
    "MIN({attainable_flops},{roof_x}*{attainable_bw})",
    lambda attainable_flops, roof_x, attainable_bw: np.minimum(attainable_flops,
                                                               roof_x * attainable_bw),
    fmt="sci",
)
CEILING_COL = len(TABLE.all_columns()) + 2
CEILING = Table(name="roofline", header_row=TABLE.header_row, col=CEILING_COL,
                inputs=(DECADE,), columns=(ROOF_X, ROOF_Y))
ROOF_DECADES = [-3, -2, -1, 0, 1, 2, 3]


def sheet() -> SheetSpec:
    widths = {0: 10.0, 1: 10.0, 2: 10.0, 3: 12.0} | {i: 14.0 for i in range(4, CEILING_COL)}
    widths |= {CEILING_COL + i: 14.0 for i in range(3)}
    return SheetSpec(
        name=SHEET,
        texts=(
            Text(0, 0, "Matmul roofline: C[m×n] = A[m×k] · B[k×n]", "title"),
            Text(1, 0, "Time ≈ max(FLOPs / attainable FLOP/s, bytes / attainable bandwidth): "
                 "a matmul is compute-bound when its intensity (FLOPs per byte moved) is at "
                 "or above the ridge point, memory-bound below it."),
            Text(2, 0, "Type shapes into the yellow m, k, n cells of the spare rows; the "
                 "computed columns fill in once all three are positive whole numbers. The "
                 "refined time adds the launch floor and (when on) wave quantization of "
                 "tile_m×tile_n tiles over the GPU's SMs (Inputs sheet)."),
            Text(TABLE.header_row - 1, CEILING_COL, "Roofline ceiling (chart data)",
                 "subtitle"),
        ),
        tables=(TABLE, CEILING),
        charts=(Chart(
            title="Roofline", row=TABLE.header_row + len(ROOF_DECADES) + 3, col=CEILING_COL,
            ceiling_x="roof_x", ceiling_y="roof_y",
            points_x="intensity", points_y="attained_flops",
            points_label="shape_label",
            x_title="arithmetic intensity (FLOP/B)", y_title="attainable FLOP/s",
        ),),
        column_widths=widths,
        freeze=(TABLE.first_row, 0),
        regime_columns=("regime",),
    )
