"""The "Pipeline" sheet (Part 2): a stack of L matmul layers alternating two types.

Type 1 multiplies an m×n activation by an n×k weight giving m×k; type 2 multiplies m×k by
k×n giving m×n, so the chain closes. Per layer: shapes, FLOPs, bytes, intensity, regime, times
and working set; above the table, the totals and whether the model fits in GPU memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.model import factories as rf
from sheetgen.model import refined_columns as rc
from sheetgen.model.vocabulary import (
    Block,
    BlockRow,
    Input,
    Quantity,
    SheetSpec,
    Table,
    Text,
    Validation,
)
from sheetgen.sheets.matmul import MAX_DIM

SHEET = "Pipeline"
from sheetgen.core.defaults import DEFAULT_K as DEFAULT_K  # noqa: E402  (re-exported)
from sheetgen.core.defaults import DEFAULT_LAYERS as DEFAULT_LAYERS  # noqa: E402
from sheetgen.core.defaults import DEFAULT_M as DEFAULT_M  # noqa: E402
from sheetgen.core.defaults import DEFAULT_N as DEFAULT_N  # noqa: E402

# DEFAULT_M, DEFAULT_K, DEFAULT_N (sheetgen.core.defaults): an 8192-wide model with a 4x (32768)
# inner layer, 4096 tokens: 72 layers of 8192×32768
# bf16 weights are 38.65 GB, plus 0.34 GB of live activations = 38.99 GB on a 40 GB A100:
# it fits with 1 GB to spare, so fp32, a 24 GB L4, or a few more layers tip it over.

_DIM = Validation("whole_min", minimum=1, maximum=MAX_DIM, message="A positive whole number")
PIPE_M = Input("pipe_m", "m (rows, e.g. tokens)", "", fmt="int", defined_name="PIPE_M",
               validation=_DIM, doc="Rows of every activation.")
PIPE_K = Input("pipe_k", "k", "", fmt="int", defined_name="PIPE_K", validation=_DIM,
               doc="Type 1 output width = type 2 input width.")
PIPE_N = Input("pipe_n", "n", "", fmt="int", defined_name="PIPE_N", validation=_DIM,
               doc="Type 1 input width = type 2 output width.")
LAYER = Input("layer", "layer", fmt="int", doc="1..L; odd layers are type 1, even type 2",
              helper=True)

N_LAYERS = Quantity("n_layers", "layers (L)", "", "COUNT({layer[]})",
                    lambda layer: float(np.count_nonzero(~np.isnan(np.asarray(layer, float)))),
                    fmt="int", defined_name="N_LAYERS",
                    doc="Set by `sheetgen build --layers`.")


def _type(layer: Any) -> Any:
    return np.where(np.mod(np.asarray(layer, dtype=float), 2) == 1, 1.0, 2.0)


LAYER_TYPE = Quantity("layer_type", "type", "", "IF(MOD({layer},2)=1,1,2)", _type, fmt="int")


def _by_type(name: str, label: str, if_one: str, if_two: str) -> Quantity:
    return Quantity(name, label, "", f"IF({{layer_type}}=1,{{{if_one}}},{{{if_two}}})",
                    lambda **a: np.where(a["layer_type"] == 1, a[if_one], a[if_two]) * 1.0,
                    fmt="int")


IN_COLS = _by_type("in_cols", "input columns", "pipe_n", "pipe_k")
OUT_COLS = _by_type("out_cols", "output columns", "pipe_k", "pipe_n")


IN_SHAPE = rf.shape_text("in_shape", "input", "pipe_m", "in_cols")
WEIGHT_SHAPE = rf.shape_text("weight_shape", "weight", "in_cols", "out_cols")
OUT_SHAPE = rf.shape_text("out_shape", "output", "pipe_m", "out_cols")
LAYER_FLOPS = rf.flops("layer_flops", "pipe_m", "in_cols", "out_cols")
# Each tensor in its operand's storage: input as A (ACT_BYTES), weight as B, output as C.
IN_BYTES = rf.elements_bytes("in_bytes", "pipe_m", "in_cols", "input bytes",
                             per=rf.ACT_BYTES)
WEIGHT_BYTES = rf.elements_bytes("weight_bytes", "in_cols", "out_cols", "weight bytes",
                                 per=rf.WEIGHT_BYTES)
OUT_BYTES = rf.elements_bytes("out_bytes", "pipe_m", "out_cols", "output bytes",
                              per=rf.OUT_BYTES)
LAYER_BYTES = rf.bytes_moved("layer_bytes", "pipe_m", "in_cols", "out_cols")
LAYER_INTENSITY = rf.intensity("layer_intensity", "layer_flops", "layer_bytes")
LAYER_REGIME = rf.regime("layer_regime", "layer_intensity")
LAYER_COMPUTE = rf.compute_time("layer_compute_time", "layer_flops")
LAYER_MEMORY = rf.memory_time("layer_memory_time", "layer_bytes", "memory-traffic time")
LAYER_TIME = rf.predicted_time("layer_time", "layer_compute_time", "layer_memory_time",
                               "predicted layer time")
CUMULATIVE = Quantity("cumulative_time", "cumulative time", "s", "SUM({layer_time[:]})",
                      lambda layer_time: np.cumsum(layer_time), fmt="time")
LIVE_ACT = rf.plus("live_act", ("in_bytes", "out_bytes"), "live activations (in + out)", "B")
WORKING_SET = rf.same_as("working_set", "layer_bytes", "working set (in + out + weight)", "B",
                         doc="Under minimum traffic the bytes moved are the working set.")
WS_FITS = rf.at_most("ws_fits", "working_set", "vram_bytes", "working set fits in VRAM")
#: Each layer's refined time (launch floor, tiles and waves of its m × output-columns result),
#: beside its roofline time; the Inputs sheet's LAUNCH_OVERHEAD, TILE_M/N, WAVE_QUANT, OVERLAP
#: and the compute ramp (COMPUTE_RAMP_*, on the layer's FLOPs) apply.
LAYER_REFINED = rc.refined_roofline("layer_", "pipe_m", "out_cols", "layer_compute_time",
                                    "layer_memory_time", what="layer", flops_="layer_flops",
                                    inner="in_cols", bandwidth="attainable_bw")

TABLE = Table(
    name="layers", col=0, inputs=(LAYER,),
    columns=(LAYER_TYPE, IN_COLS, OUT_COLS, IN_SHAPE, WEIGHT_SHAPE, OUT_SHAPE, LAYER_FLOPS,
             IN_BYTES, WEIGHT_BYTES, OUT_BYTES, LAYER_BYTES, LAYER_INTENSITY, LAYER_REGIME,
             LAYER_COMPUTE, LAYER_MEMORY, LAYER_TIME, CUMULATIVE, LIVE_ACT, WORKING_SET,
             WS_FITS, *LAYER_REFINED.columns()),
    header_row=32,
)

TOTAL_FLOPS = rf.total("total_flops", "layer_flops", "total FLOPs", "FLOP")
TOTAL_COMPUTE = rf.total("total_compute_time", "layer_compute_time", "total compute time",
                         "s", fmt="time")
TOTAL_MEMORY = rf.total("total_memory_time", "layer_memory_time",
                        "total data-transfer time (HBM)", "s", fmt="time")
PIPE_PREDICTED = rf.total("pipe_predicted", "layer_time",
                          "predicted total (per-layer max: full overlap)", "s", fmt="time")
PIPE_NO_OVERLAP = rf.plus("pipe_no_overlap", ("total_compute_time", "total_memory_time"),
                          "no-overlap bound (compute + transfer)", "s", fmt="time")
TOTAL_WEIGHTS = rf.total("total_weight_bytes", "weight_bytes", "total weight bytes", "B")
PEAK_ACT = rf.largest("peak_live_act", "live_act", "peak live activations", "B",
                      doc="Inference keeps only the current layer's input and output.")
MEMORY_NEEDED, PIPE_FITS = rf.memory_fit("memory_needed", "pipe_fits", "total_weight_bytes",
                                         "peak_live_act",
                                         "memory needed (weights + peak activations)",
                                         "fits in VRAM",
                                         doc="Against VRAM_BYTES (Inputs): the card's GiB less "
                                             "MEMORY_RESERVE, or the advertised GB in decimal "
                                             "bytes when CAPACITY_AS is GB.")
HEADROOM = Quantity("headroom", "headroom", "B", "{vram_bytes}-{memory_needed}",
                    lambda vram_bytes, memory_needed: vram_bytes - memory_needed, fmt="gb",
                    doc="Negative when it does not fit.")
LARGEST_WS = rf.largest("largest_ws", "working_set", "largest single-layer working set", "B")
LARGEST_WS_FITS = rf.at_most("largest_ws_fits", "largest_ws", "vram_bytes",
                             "largest working set fits (one input + output + weight)")
STREAM_BYTES = Quantity(
    "stream_bytes", "bytes streamed from host per pass", "B",
    "MAX(0,{memory_needed}-{vram_bytes})",
    lambda memory_needed, vram_bytes: max(0.0, memory_needed - vram_bytes), fmt="sci",
    doc="Weights that do not fit stay in host memory and cross the host link every pass.")
STREAM_TIME = rf.ratio("stream_time", "stream_bytes", "host_bw", "host streaming time", "s",
                       fmt="time")
STREAM_HIDDEN = rf.at_most("stream_hidden", "stream_time", "pipe_predicted",
                           "streaming hides behind the layers' time")
PIPE_REFINED = rf.total("pipe_refined", "layer_refined_time",
                        "refined total (Σ each layer's refined time)", "s", fmt="time",
                        doc="Σ per-layer refined time, beside the roofline's predicted total.")
PIPE_WITH_STREAM = rf.larger("pipe_with_stream", "pipe_predicted", "stream_time",
                             "predicted total incl. host streaming")

INPUT_BLOCK = Block(
    row=4, col=0, header=("Pipeline input", "Value", "Unit", "Notes"),
    rows=(*(BlockRow(i.label, [i], i.unit, i.doc) for i in (PIPE_M, PIPE_K, PIPE_N)),
          BlockRow(N_LAYERS.label, [N_LAYERS], "", N_LAYERS.doc)),
)
TOTALS_BLOCK = Block(
    row=10, col=0, header=("Totals", "Value", "Unit", "Notes"),
    rows=(
        *(BlockRow(q.label, [q], q.unit, q.doc) for q in (
            TOTAL_FLOPS, TOTAL_COMPUTE, TOTAL_MEMORY, PIPE_PREDICTED, PIPE_NO_OVERLAP)),
        "Memory",
        *(BlockRow(q.label, [q], q.unit, q.doc) for q in (
            TOTAL_WEIGHTS, PEAK_ACT, MEMORY_NEEDED, PIPE_FITS, HEADROOM, LARGEST_WS,
            LARGEST_WS_FITS)),
        "When the weights do not fit",
        *(BlockRow(q.label, [q], q.unit, q.doc) for q in (
            STREAM_BYTES, STREAM_TIME, STREAM_HIDDEN, PIPE_WITH_STREAM)),
        "Refined time (beside the roofline)",
        BlockRow(PIPE_REFINED.label, [PIPE_REFINED], PIPE_REFINED.unit, PIPE_REFINED.doc),
    ),
)


def sheet() -> SheetSpec:
    widths = {0: 44.0, 1: 16.0, 2: 12.0, 3: 16.0} | {
        i: 13.0 for i in range(4, len(TABLE.all_columns()))}
    return SheetSpec(
        name=SHEET,
        time_unit="ms",
        texts=(
            Text(0, 0, "Pipeline of L matmul layers (types 1, 2, 1, 2, ...)", "title"),
            Text(1, 0, "Type 1: [m×n]·[n×k] → [m×k]; type 2: [m×k]·[k×n] → [m×n]. Each layer "
                 "is one roofline: time = max(FLOPs / attainable FLOP/s, bytes / attainable "
                 "bandwidth)."),
            Text(2, 0, "Memory: inference keeps all weights plus the current layer's input and "
                 "output; GPU, dtype and efficiencies come from the Inputs sheet."),
            Text(TABLE.header_row - 1, 0, "Per layer", "subtitle"),
        ),
        blocks=(INPUT_BLOCK, TOTALS_BLOCK),
        tables=(TABLE,),
        column_widths=widths,
        freeze=(TABLE.first_row, 1),
        regime_columns=("layer_regime",),
        dimmed=rc.dimmed_while_off(LAYER_REFINED),
    )


def input_values(layers: int, m: int, k: int, n: int) -> dict[str, Any]:
    return {"pipe_m": m, "pipe_k": k, "pipe_n": n, "layer": list(range(1, layers + 1))}
