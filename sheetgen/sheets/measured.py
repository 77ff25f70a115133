"""The "Measured" sheet (`calibrate -o`, `build --measured FILE`): measured matmul times beside
the workbook's model, with live error formulas.

Two predictions per row: the workbook's roofline (the Inputs sheet's GPU, dtype and
efficiencies) and the refined model with the fitted values, which are input cells of this
sheet (they never change the Inputs sheet silently):

    refined = floor + (c^p + memory time^p)^(1/p)  (p = 0: max(c, memory time))
    compute = F / (PEAK_FLOPS · fitted compute eff · ramp), F = b·2mkn, memory = b·bytes /
    (HBM_BW · fitted memory eff), c = compute / wave efficiency when waves are on
    (sheetgen.model.refined), ramp = 1 / (1 + (F_half / F)^h) (1 when F_half = 0); with
    a ramp end F_end (the largest matmul measured) the efficiency is the one there and
    ramp = min(1, (1 + (F_half / F_end)^h) / (1 + (F_half / F)^h))
    split   = 1 where tiles < SMs and k ≥ K_split (the GEMM runs split-K), else 0
    total   = refined + (1 − split) · k · K-loop latency + split · split-K floor
              + quantize pass
    quantize = max(b·m·k · quantize bytes / (HBM_BW · its efficiency (0: the fitted memory
              efficiency)), b·m · its row latency, k · its element latency)
              (the serial K loop, a second (reduction) kernel's floor and a separate
              activation-quantize kernel with a roofline of its own: sheetgen.model.kernel_terms)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sheetgen.core.excel import ExcelError, is_number
from sheetgen.inputs.presets import (
    MAX_K_LATENCY,
    MAX_OVERLAP_EXPONENT,
    MAX_QUANTIZE_BYTES,
)
from sheetgen.model import factories as rf
from sheetgen.model import kernel_terms
from sheetgen.model import refined as rf_model
from sheetgen.model import refined_columns as rc
from sheetgen.model.vocabulary import (
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
from sheetgen.sheets import inputs as inputs_sheet
from sheetgen.sheets.gpu_specs import OFF, ON

SHEET = "Measured"
OK = "ok"
BAD_ROW = "check row"

_FRACTION = Validation("decimal_range", minimum=0.001, maximum=1,
                       message="A fraction in (0, 1]: 1.0 is the spec figure")
_WHOLE = Validation("whole_min", minimum=1, maximum=100_000, message="A positive whole number")
CAL_CE = Input("cal_compute_eff", "fitted compute efficiency", "fraction", fmt="pct",
               validation=_FRACTION)
CAL_ME = Input("cal_memory_eff", "fitted memory efficiency", "fraction", fmt="pct",
               validation=_FRACTION)
CAL_FLOOR = Input("cal_floor", "fitted launch floor", "s", fmt="time",
                  validation=Validation("decimal_range", minimum=0, maximum=1,
                                        message="Seconds, 0 or more"))
CAL_WAVES = Input("cal_waves", "wave quantization", "on/off", fmt="text",
                  validation=inputs_sheet.SWITCH_RULE)
CAL_OVERLAP = Input("cal_overlap", "overlap exponent p", "exponent", fmt="ratio",
                    validation=Validation("decimal_range", minimum=0,
                                          maximum=MAX_OVERLAP_EXPONENT,
                                          message="0 = the hard max; 1 = the sum; up to "
                                                  f"{MAX_OVERLAP_EXPONENT:g}"))
CAL_TILE_M = Input("cal_tile_m", "tile rows", "rows", fmt="int", validation=_WHOLE)
CAL_TILE_N = Input("cal_tile_n", "tile columns", "cols", fmt="int", validation=_WHOLE)
CAL_SMS = Input("cal_sms", "SMs (CUs, CPU threads)", "SMs", fmt="int", validation=_WHOLE)
CAL_K_LATENCY = Input("cal_k_latency", "K-loop latency per unit of k", "s", fmt="latency",
                      validation=inputs_sheet.K_LATENCY_RULE)
CAL_K_TILE = Input("cal_k_tile", "K loop grows with the tile", "on/off", fmt="text",
                   validation=inputs_sheet.SWITCH_RULE)
CAL_TILE_LATENCY = Input("cal_tile_latency", "latency per tile", "s", fmt="latency",
                         validation=inputs_sheet.TILE_LATENCY_RULE)
CAL_SPLIT_FLOOR = Input("cal_split_floor", "split-K kernel floor", "s", fmt="time",
                        validation=inputs_sheet.SPLIT_FLOOR_RULE)
CAL_SPLIT_MIN_K = Input("cal_split_min_k", "split-K from k", "k", fmt="int",
                        validation=inputs_sheet.SPLIT_MIN_K_RULE)
CAL_QUANT_BYTES = Input("cal_quant_bytes", "activation quantize bytes per element", "B",
                        fmt="ratio",
                        validation=Validation("decimal_range", minimum=0,
                                              maximum=MAX_QUANTIZE_BYTES,
                                              message="0: no quantize pass; 5: dynamic "
                                                      "per-tensor FP8 from bf16"))
CAL_QUANT_EFF = Input("cal_quant_eff", "quantize bandwidth efficiency", "fraction",
                      fmt="pct",
                      validation=Validation("decimal_range", minimum=0, maximum=1,
                                            message="0 to 1: 0 = the fitted memory efficiency"))
CAL_QUANT_ROW = Input("cal_quant_row_latency", "quantize latency per row of A", "s",
                      fmt="latency",
                      validation=Validation("decimal_range", minimum=0, maximum=MAX_K_LATENCY,
                                            message="Seconds per row of A, 0 or more"))
CAL_QUANT_K = Input("cal_quant_k_latency", "quantize latency per element", "s",
                    fmt="latency",
                    validation=Validation("decimal_range", minimum=0, maximum=MAX_K_LATENCY,
                                          message="Seconds per element of a row, 0 or more"))
CAL_RAMP_FLOPS = Input("cal_ramp_flops", "compute ramp F_half", "FLOP", fmt="sci",
                       validation=inputs_sheet.RAMP_FLOPS_RULE)
CAL_RAMP_H = Input("cal_ramp_h", "compute ramp exponent h", "exponent", fmt="ratio",
                   validation=inputs_sheet.RAMP_H_RULE)
CAL_RAMP_END = Input("cal_ramp_end", "compute ramp end", "FLOP", fmt="sci",
                     validation=inputs_sheet.RAMP_END_RULE)

CAL_WRITE = Input("cal_write_cost", "write cost", "reads a byte", fmt="ratio",
                  validation=inputs_sheet.WRITE_COST_RULE)

CAL_FLOPS = Quantity("cal_flops", "fitted attainable FLOP/s", "FLOP/s",
                     "{peak_flops}*{cal_compute_eff}",
                     lambda peak_flops, cal_compute_eff: peak_flops * cal_compute_eff,
                     fmt="sci", doc="The selected GPU's peak times the fitted efficiency.")
CAL_BW = Quantity("cal_bw", "fitted attainable bandwidth", "B/s", "{hbm_bw}*{cal_memory_eff}",
                  lambda hbm_bw, cal_memory_eff: hbm_bw * cal_memory_eff, fmt="sci")

T_M = Input("meas_m", "m", "rows", fmt="int")
T_K = Input("meas_k", "k", "", fmt="int")
T_N = Input("meas_n", "n", "cols", fmt="int")
T_B = Input("meas_b", "b (batch)", "matmuls", fmt="int")
T_TIME = Input("meas_time", "measured time", "s", fmt="time")
_DIMS = ("meas_m", "meas_k", "meas_n", "meas_b", "meas_time")


def _status(**a: Any) -> np.ndarray:
    cols = [np.asarray(a[d], dtype=object) for d in _DIMS]
    out = []
    for row in zip(*cols, strict=True):
        m, k, n, b, t = row
        if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (m, k, n, t)):
            out.append("")
        elif all(is_number(v) for v in row) and min(m, k, n, b) >= 1 and t > 0:
            out.append(OK)
        else:
            out.append(BAD_ROW)
    return np.asarray(out, dtype=object)


def _isblank(*names: str) -> str:
    return ",".join(f"ISBLANK({{{x}}})" for x in names)


CHECK = Quantity(
    "meas_check", "check", "",
    f"IF(OR({_isblank('meas_m', 'meas_k', 'meas_n', 'meas_time')}),\"\","
    f"IF(AND({','.join(f'ISNUMBER({{{x}}})' for x in _DIMS)}),"
    "IF(AND({meas_m}>=1,{meas_k}>=1,{meas_n}>=1,{meas_b}>=1,{meas_time}>0),"
    f"\"{OK}\",\"{BAD_ROW}\"),\"{BAD_ROW}\"))",
    _status, fmt="text", doc="Blank until m, k, n and the time are filled in.")

ONE = rf.matmul_roofline("meas_one_", "meas_m", "meas_k", "meas_n", what="one")
FLOPS = rf.product("meas_flops", "meas_b", ONE.flops.name, "FLOPs (all b)", "FLOP")
BYTES = rf.product("meas_bytes", "meas_b", ONE.bytes.name, "bytes moved (all b)", "B")
ROOF_COMPUTE = rf.compute_time("meas_roof_compute", "meas_flops", "roofline compute time")
ROOF_MEMORY = rf.memory_time("meas_roof_memory", "meas_bytes", "roofline memory time")
ROOF_TIME = rf.predicted_time("meas_roof_time", "meas_roof_compute", "meas_roof_memory",
                              "roofline time (Inputs)")
ROOF_ERROR = rf.relative_error("meas_roof_error", "meas_roof_time", "meas_time",
                               "roofline error")
FITTED = rc.RefinedInputs(tile_m="cal_tile_m", tile_n="cal_tile_n", sm_count="cal_sms",
                          launch_overhead="cal_floor", wave_quant="cal_waves",
                          overlap="cal_overlap", ramp_flops="cal_ramp_flops",
                          ramp_exponent="cal_ramp_h", ramp_end="cal_ramp_end",
                          k_latency="cal_k_latency", k_tile="cal_k_tile",
                          tile_latency="cal_tile_latency", split_floor="cal_split_floor",
                          split_min_k="cal_split_min_k", write_cost="cal_write_cost")
RAMP = rc.compute_ramp("meas_ramp", "meas_flops", inputs=FITTED)
CAL_COMPUTE = Quantity(
    "meas_cal_compute", "fitted compute time", "s", "{meas_flops}/({cal_flops}*{meas_ramp})",
    lambda meas_flops, cal_flops, meas_ramp: np.asarray(meas_flops, dtype=float)
    / (cal_flops * np.asarray(meas_ramp, dtype=float)),
    fmt="time", doc="F / (fitted attainable FLOP/s · ramp).")
CAL_MEMORY = rf.ratio("meas_cal_memory", "meas_bytes", "cal_bw", "fitted memory time", "s",
                      fmt="time")
REFINED = rc.refined_roofline("meas_", "meas_m", "meas_n", "meas_cal_compute",
                              "meas_cal_memory", what="fitted", inputs=FITTED, batch="meas_b",
                              bandwidth="cal_bw")
KERNEL = rc.kernel_terms_of("meas_", REFINED.time, REFINED.tiles.name, "meas_m", "meas_k",
                            "meas_n", inputs=FITTED, batch="meas_b")
_, SPLIT, K_TILE, LIBRARY_WAVES, K_LOOP, SPLIT_K = KERNEL.columns()
QUANT_BYTES = Quantity(
    "meas_quant_bytes", "quantize pass bytes", "B",
    "{meas_b}*{meas_m}*{meas_k}*{cal_quant_bytes}",
    lambda meas_b, meas_m, meas_k, cal_quant_bytes: kernel_terms.quantize_bytes(
        meas_b, meas_m, meas_k, cal_quant_bytes),
    fmt="sci", doc="b·m·k elements of A, each read and written by the quantize kernel.")
QUANT_TIME = Quantity(
    "meas_quant_time", "quantize pass time", "s",
    "IF({meas_quant_bytes}>0,MAX({meas_quant_bytes}/({hbm_bw}*IF({cal_quant_eff}>0,"
    "{cal_quant_eff},{cal_memory_eff})),{meas_b}*{meas_m}*{cal_quant_row_latency},"
    "{meas_k}*{cal_quant_k_latency}),0)",
    lambda meas_quant_bytes, hbm_bw, cal_quant_eff, cal_memory_eff, meas_b, meas_m, meas_k,
    cal_quant_row_latency, cal_quant_k_latency: kernel_terms.quantize_time(
        meas_quant_bytes, hbm_bw, np.where(np.asarray(cal_quant_eff, dtype=float) > 0,
                                           cal_quant_eff, cal_memory_eff),
        np.asarray(meas_b, dtype=float) * np.asarray(meas_m, dtype=float), meas_k,
        cal_quant_row_latency, cal_quant_k_latency),
    fmt="time", doc="The quantize kernel's own roofline: the slowest of its bytes at its "
                    "bandwidth, its rows one after another, and one row; 0 without a pass.")
CAL_TIME = rc.kernel_time("meas_cal_time", REFINED.time.name, K_LOOP.name, SPLIT_K.name,
                          LIBRARY_WAVES.name,
                          "fitted time (refined + K loop + split-K + quantize)", inputs=FITTED,
                          plus=QUANT_TIME.name)
CAL_ERROR = rf.relative_error("meas_cal_error", CAL_TIME.name, "meas_time", "refined error")
ROOF_ABS = rf.absolute("meas_roof_abs", "meas_roof_error", "|roofline error|")
CAL_ABS = rf.absolute("meas_cal_abs", "meas_cal_error", "|refined error|")
LABEL = rf.shape_text("meas_label", "chart label", "meas_m", "meas_k", "meas_n")

TABLE = Table(
    name="measured", header_row=33, col=0,
    inputs=(T_M, T_K, T_N, T_B, T_TIME),
    columns=(CHECK, *ONE.columns()[:2], FLOPS, BYTES, ROOF_COMPUTE, ROOF_MEMORY, ROOF_TIME,
             ROOF_ERROR, RAMP, CAL_COMPUTE, CAL_MEMORY, *REFINED.columns(), SPLIT, K_TILE,
             LIBRARY_WAVES, K_LOOP, SPLIT_K, QUANT_BYTES,
             QUANT_TIME, CAL_TIME, CAL_ERROR,
             ROOF_ABS, CAL_ABS, LABEL),
    guard="meas_check",
)

MEAN_ROOF = rf.mean("meas_mean_roof", "meas_roof_abs", "mean |error|, roofline (Inputs)")
MEAN_CAL = rf.mean("meas_mean_cal", "meas_cal_abs", "mean |error|, refined (fitted)")

BLOCK = Block(row=4, col=0, header=("Fitted model", "Value", "Unit", "Notes"), rows=(
    BlockRow(CAL_CE.label, [CAL_CE], "fraction", "of the selected GPU's peak (Inputs)"),
    BlockRow(CAL_ME.label, [CAL_ME], "fraction", "of the selected GPU's HBM bandwidth"),
    BlockRow(CAL_FLOOR.label, [CAL_FLOOR], "s", "fixed cost per call: launch and latency"),
    BlockRow(CAL_OVERLAP.label, [CAL_OVERLAP], "",
             "(compute^p + memory^p)^(1/p): 0 = hard max, 1 = the sum"),
    BlockRow(CAL_WAVES.label, [CAL_WAVES], "", "used only when it lowered held-out error"),
    BlockRow(CAL_TILE_M.label, [CAL_TILE_M], "rows", "thread-block tile of the wave model"),
    BlockRow(CAL_TILE_N.label, [CAL_TILE_N], "cols", ""),
    BlockRow(CAL_SMS.label, [CAL_SMS], "SMs", "one tile per SM per wave"),
    BlockRow(CAL_K_LATENCY.label, [CAL_K_LATENCY], "s",
             "serial K loop: k · this, after the refined time (0 = off)"),
    BlockRow(CAL_K_TILE.label, [CAL_K_TILE], "",
             "on: K loop × 1, 2, 4 as m ≤ 64, ≤ 128, more; time = max(refined, floor + it)"),
    BlockRow(CAL_TILE_LATENCY.label, [CAL_TILE_LATENCY], "s",
             "with the growth on: floor + waves of tiles · (this + K loop) bounds the time"),
    BlockRow(CAL_SPLIT_FLOOR.label, [CAL_SPLIT_FLOOR], "s",
             "a second kernel's floor where tiles < SMs and k ≥ the next value"),
    BlockRow(CAL_SPLIT_MIN_K.label, [CAL_SPLIT_MIN_K], "k", "0 = off"),
    BlockRow(CAL_QUANT_BYTES.label, [CAL_QUANT_BYTES], "B",
             "separate quantize kernel: b·m·k · this at the bandwidth below (0 = none)"),
    BlockRow(CAL_QUANT_EFF.label, [CAL_QUANT_EFF], "fraction",
             "of the HBM bandwidth; 0 = the fitted memory efficiency"),
    BlockRow(CAL_QUANT_ROW.label, [CAL_QUANT_ROW], "s",
             "serial cost per row of A: b·m · this (one block a row ending in an atomic)"),
    BlockRow(CAL_QUANT_K.label, [CAL_QUANT_K], "s",
             "one row's time: k · this (one warp a row); the pass takes the slowest of three"),
    BlockRow(CAL_RAMP_FLOPS.label, [CAL_RAMP_FLOPS], "FLOP",
             "compute eff · 1/(1 + (this / F)^h), F = b·2mkn (0 = off); see the end below"),
    BlockRow(CAL_RAMP_H.label, [CAL_RAMP_H], "", "how steeply the efficiency ramps with F"),
    BlockRow(CAL_RAMP_END.label, [CAL_RAMP_END], "FLOP",
             "the largest matmul measured: the compute efficiency is the one there, held "
             "beyond (0: it is the asymptote)"),
    BlockRow(CAL_WRITE.label, [CAL_WRITE], "",
             "bytes read one byte of C written costs: memory time + (this − 1) · b·m·n·C "
             "bytes / fitted bandwidth (1 = off)"),
    "Derived",
    BlockRow(CAL_FLOPS.label, [CAL_FLOPS], "FLOP/s", ""),
    BlockRow(CAL_BW.label, [CAL_BW], "B/s", ""),
    "Accuracy over the rows below",
    BlockRow(MEAN_ROOF.label, [MEAN_ROOF], "fraction",
             "the Inputs sheet's roofline (1.0 efficiencies: the pure roofline)"),
    BlockRow(MEAN_CAL.label, [MEAN_CAL], "fraction", "the fitted refined model"),
))

# The diagonal of the chart: measured = predicted, a decade apart across the data.
DIAG_X = Input("meas_diag_x", "measured", "s", fmt="sci")
DIAG_Y = rf.same_as("meas_diag_y", "meas_diag_x", "predicted", "s")
DIAG = Table(name="measured_diagonal", header_row=4, col=18, inputs=(DIAG_X,),
             columns=(DIAG_Y,))


@dataclass(frozen=True)
class MeasuredInputs:
    """What the Measured sheet is filled with: the rows and the fitted values."""

    m: Sequence[int]
    k: Sequence[int]
    n: Sequence[int]
    b: Sequence[int]
    seconds: Sequence[float]
    compute_efficiency: float = 1.0
    memory_efficiency: float = 1.0
    launch_overhead: float = 0.0
    waves: bool = False
    tile_m: int = 128
    tile_n: int = 128
    sm_count: int | None = 1  # None: the preset gives none (the sheet shows n/a, waves off)
    source: str = ""
    overlap: float = 0.0
    k_latency: float = 0.0
    k_tile_growth: bool = False
    tile_latency: float = 0.0
    quantize_bytes: float = 0.0
    split_floor: float = 0.0
    split_min_k: float = 0.0
    ramp_flops: float = 0.0
    ramp_exponent: float = 1.0
    ramp_end: float = 0.0
    write_cost: float = 1.0
    quantize_efficiency: float = 0.0
    quantize_row_latency: float = 0.0
    quantize_k_latency: float = 0.0


def _decades(values: Sequence[float]) -> list[float]:
    pos = [v for v in values if v > 0]
    lo = math.floor(math.log10(min(pos))) if pos else -6
    hi = math.ceil(math.log10(max(pos))) if pos else 0
    return [10.0 ** e for e in range(lo, max(hi, lo + 1) + 1)]


def input_values(data: MeasuredInputs) -> dict[str, Any]:
    return {
        "cal_compute_eff": data.compute_efficiency, "cal_memory_eff": data.memory_efficiency,
        "cal_floor": data.launch_overhead, "cal_waves": ON if data.waves else OFF,
        "cal_overlap": data.overlap,
        "cal_tile_m": data.tile_m, "cal_tile_n": data.tile_n,
        "cal_sms": rf_model.NO_SMS if data.sm_count is None else data.sm_count,
        "cal_k_latency": data.k_latency, "cal_k_tile": ON if data.k_tile_growth else OFF,
        "cal_tile_latency": data.tile_latency,
        "cal_quant_bytes": data.quantize_bytes,
        "cal_split_floor": data.split_floor, "cal_split_min_k": data.split_min_k,
        "cal_ramp_flops": data.ramp_flops, "cal_ramp_h": data.ramp_exponent,
        "cal_ramp_end": data.ramp_end, "cal_write_cost": data.write_cost,
        "cal_quant_eff": data.quantize_efficiency,
        "cal_quant_row_latency": data.quantize_row_latency,
        "cal_quant_k_latency": data.quantize_k_latency,
        "meas_m": list(data.m), "meas_k": list(data.k), "meas_n": list(data.n),
        "meas_b": list(data.b), "meas_time": list(data.seconds),
        "meas_diag_x": _decades([*data.seconds, min(data.seconds) / 10]),
    }


# Google Sheets' charts have no log axis and take each series' y from the column(s) right of
# its x (sheets/chart_helpers.py explains the API's rules): the pushed sheet plots log10 of
# the times in µs from helper columns, two blocks of three (domain, diagonal y, refined y):
#     diagonal block (beside DIAG's rows):  log10 x | log10 y    | (blank)
#     points block (beside TABLE's rows):   log10 x | (blank)    | log10 refined
_MICRO = 1e6  # the sheet's time unit (µs) per second


def _log10_us(name: str, of: str, label: str) -> Quantity:
    """log10 of a time in µs where it is a positive number, else #N/A (chart data)."""
    def reference(**a: Any) -> np.ndarray:
        v = np.atleast_1d(np.asarray(a[of], dtype=object))
        return np.asarray([np.log10(float(x) * _MICRO) if is_number(x) and float(x) > 0
                           else ExcelError(NA_CODE) for x in v], dtype=object)

    return Quantity(name, f"chart helper: log10 {label} (µs)", "",
                    f"IF(ISNUMBER({{{of}}}),LOG10({{{of}}}),NA())", reference, fmt="ratio",
                    handles_gaps=True, doc=f"log10 of {of} in µs: Sheets charts have no log axis.")


LOG_DIAG_X = _log10_us("meas_log_diag_x", "meas_diag_x", "measured")
LOG_DIAG_Y = _log10_us("meas_log_diag_y", "meas_diag_y", "predicted")
DIAG_GOOGLE = replace(DIAG, columns=(*DIAG.columns, LOG_DIAG_X, LOG_DIAG_Y))
DIAG_BLOCK = DIAG.col + len(DIAG.all_columns())
POINTS_BLOCK = TABLE.col + len(TABLE.all_columns()) + 1
LOG_TIME = _log10_us("meas_log_time", "meas_time", "measured")
LOG_REFINED = _log10_us("meas_log_refined", CAL_TIME.name, "refined")
POINTS_X = Table(name="measured_chart_x", header_row=TABLE.header_row, col=POINTS_BLOCK,
                 inputs=(), columns=(LOG_TIME,), guard=TABLE.guard, rows_of=TABLE.name,
                 na_rows=True)
POINTS_Y = Table(name="measured_chart_y", header_row=TABLE.header_row, col=POINTS_BLOCK + 2,
                 inputs=(), columns=(LOG_REFINED,), guard=TABLE.guard, rows_of=TABLE.name,
                 na_rows=True)
GOOGLE_BLANKS = ((DIAG.header_row, DIAG_BLOCK + 2), (TABLE.header_row, POINTS_BLOCK + 1))


def sheet(source: str = "", google: bool = False) -> SheetSpec:
    """The sheet; `google`: with the log10 chart helper columns the pushed sheet plots."""
    spec = _sheet(source)
    if not google:
        return spec
    (chart,) = spec.charts
    diagonal, points = chart.series
    widths = dict(spec.column_widths) | {c: 14.0 for c in range(DIAG_BLOCK, DIAG_BLOCK + 2)}
    widths |= {c: 14.0 for c in (POINTS_BLOCK, POINTS_BLOCK + 2)}
    widths |= {c: 3.0 for _r, c in GOOGLE_BLANKS}
    return replace(
        spec,
        texts=(*spec.texts, *(Text(r, c, "(blank)", "note") for r, c in GOOGLE_BLANKS)),
        tables=(TABLE, DIAG_GOOGLE, POINTS_X, POINTS_Y),
        charts=(replace(
            chart, title=f"{chart.title} (log10 axes)", log10_data=True,
            series=(Series(diagonal.name, LOG_DIAG_X.name, LOG_DIAG_Y.name, line=True,
                           marker="none", fits_axes=False),
                    Series(points.name, LOG_TIME.name, LOG_REFINED.name)),
            x=replace(chart.x, title=f"log10 {chart.x.title}"),
            y=replace(chart.y, title=f"log10 {chart.y.title}")),),
        column_widths=widths,
    )


def _sheet(source: str = "") -> SheetSpec:
    widths = {0: 30.0, 1: 12.0, 2: 10.0, 3: 40.0} | {i: 13.0 for i in range(4, 26)}
    note = f"Measurements: {source}." if source else "Measurements from `sheetgen calibrate`."
    return SheetSpec(
        name=SHEET,
        time_unit="µs",
        texts=(
            Text(0, 0, "Measured matmul times vs the model", "title"),
            Text(1, 0, f"{note} Error = (predicted − measured) / measured. The roofline "
                 "columns follow the Inputs sheet; the refined columns use the fitted values "
                 "below (edit them to try others)."),
            Text(2, 0, "refined time = launch floor + (c^p + memory time^p)^(1/p), c = compute "
                 "time (/ wave efficiency when waves are on), p = 0: max(c, memory time); "
                 "compute time = F / (fitted FLOP/s · ramp), ramp = 1/(1 + (F_half/F)^h), or "
                 "with a ramp end min(1, (1 + (F_half/F_end)^h)/(1 + (F_half/F)^h)); "
                 "tiles = b·⌈m/Tm⌉·⌈n/Tn⌉, waves = ⌈tiles/SMs⌉; split-K where tiles < SMs "
                 "and k ≥ split-K from k; K loop = k·K-loop latency·tile scale (0 where "
                 "split-K; tile scale 1, 2, 4 as m ≤ 64, ≤ 128, more when the K loop grows "
                 "with the tile, else 1); fitted time = refined + K loop (with the growth on: "
                 "max(refined, floor + waves of the library's tiles · (latency per tile + K "
                 "loop))) + split-K floor (where split-K) + quantize "
                 "pass, the slowest of b·m·k·quantize bytes at its bandwidth, b·m·row latency "
                 "and k·element latency (0 without a pass)."),
            Text(TABLE.header_row - 1, 0, "Measurements", "subtitle"),
        ),
        blocks=(BLOCK,),
        tables=(TABLE, DIAG),
        charts=(Chart(title="Measured vs predicted time", row=3, col=5,
                      series=(Series("measured = predicted", "meas_diag_x", "meas_diag_y",
                                     line=True, marker="none"),
                              Series("refined model", "meas_time", CAL_TIME.name,
                                     labels="meas_label")),
                      x=Axis("measured time (µs)"), y=Axis("predicted time, refined (µs)")),),
        regime_columns=(),
        column_widths=widths,
        freeze=(TABLE.first_row, 0),
    )
