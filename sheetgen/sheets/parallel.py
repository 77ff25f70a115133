"""The "Parallelism" sheet (Part 3): the pipeline on G GPUs, pipeline vs tensor parallel.

Pipeline parallel (PP): G stages of ceil(L/G) consecutive layers; the batch is cut into M
micro-batches of ceil(m/M) rows, each layer's roofline is re-evaluated at that size (weights
are re-read per micro-batch), and the schedule takes (M + stages - 1) slowest-stage times plus
the boundary hops. Tensor parallel (TP, Megatron pairing): type-1 layers split column-wise
(n × ceil(k/G) per GPU, no communication), type-2 layers row-wise (ceil(k/G) × n) followed by
one ring all-reduce of m·n elements: 2(G-1)/G · bytes / (link bw · eff) + latency.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.definitions import (
    Block,
    BlockRow,
    Input,
    Quantity,
    SheetSpec,
    Table,
    Text,
    Validation,
)
from sheetgen.sheets import roofline as rf

SHEET = "Parallelism"
from sheetgen.defaults import DEFAULT_GPUS as DEFAULT_GPUS  # noqa: E402  (re-exported)
from sheetgen.defaults import DEFAULT_MICRO_BATCHES as DEFAULT_MICRO_BATCHES  # noqa: E402

_COUNT = Validation("whole_min", minimum=1, maximum=1_000_000, message="A whole number, 1 or more")
_POSITIVE = Validation("decimal_range", minimum=0, maximum=1e18,
                       message="Leave blank to use the preset; otherwise a positive number")
GPUS = Input("par_gpus", "GPUs (G)", "", fmt="int", defined_name="PAR_GPUS", validation=_COUNT,
             doc="Pipeline stages, or tensor-parallel ways.")
MICRO = Input("micro_batches", "micro-batches (M)", "", fmt="int", defined_name="MICRO_BATCHES",
              validation=_COUNT, doc="The pipeline splits the m rows into M micro-batches.")
LINK_BW_IN = Input("link_bw_override", "link bandwidth per direction (override)", "B/s",
                   fmt="sci", validation=_POSITIVE,
                   doc="Blank: the selected GPU's preset (Inputs sheet LINK_BW).")
LINK_LAT_IN = Input("link_latency_override", "link latency (override)", "s", fmt="sci",
                    validation=_POSITIVE, doc="Blank: the preset's (LINK_LATENCY).")


def _override(name: str, label: str, unit: str, given: str, default: str,
              defined: str) -> Quantity:
    def reference(**a: Any) -> float:
        v = a[given]
        return a[default] if v is None or (isinstance(v, float) and np.isnan(v)) else v

    return Quantity(name, label, unit, f"IF(ISBLANK({{{given}}}),{{{default}}},{{{given}}})",
                    reference, fmt="sci", defined_name=defined)


EFF_LINK_BW = _override("par_link_bw", "link bandwidth used", "B/s", "link_bw_override",
                        "link_bw", "PAR_LINK_BW")
EFF_LINK_LAT = _override("par_link_latency", "link latency used", "s", "link_latency_override",
                         "link_latency", "PAR_LINK_LATENCY")
STAGE_LAYERS = rf.ceil_div("stage_layers", "n_layers", "par_gpus", "layers per stage",
                           doc="ceil(L/G); the last stage may hold fewer.")
STAGES = rf.ceil_div("stages_used", "n_layers", "stage_layers", "stages used",
                     doc="Fewer than G when G > L.")
MB_ROWS = rf.ceil_div("mb_rows", "pipe_m", "micro_batches", "rows per micro-batch",
                      doc="ceil(m/M)")
K_SHARD = rf.ceil_div("k_shard", "pipe_k", "par_gpus", "k per GPU (tensor parallel)",
                      doc="ceil(k/G)")


def _flag(name: str, label: str, num: str, den: str, uneven: str) -> Quantity:
    return Quantity(name, label, "", f'IF(MOD({{{num}}},{{{den}}})=0,"even","{uneven}")',
                    lambda **a: "even" if a[num] % a[den] == 0 else uneven, fmt="text")


FLAG_K = _flag("flag_k", "k split over G", "pipe_k", "par_gpus",
               "uneven: shards hold ceil(k/G), the rest idle")
FLAG_L = _flag("flag_l", "layers split over G", "n_layers", "par_gpus",
               "uneven: stages hold ceil(L/G), the last fewer")
FLAG_M = _flag("flag_m", "m split over M", "pipe_m", "micro_batches",
               "uneven: micro-batches of ceil(m/M) rows")
AR_BYTES = rf.elements_bytes("allreduce_bytes", "pipe_m", "pipe_n", "all-reduce payload",
                             doc="m×n partial sums after each type-2 layer.")
AR_TIME = Quantity(
    "allreduce_time", "one ring all-reduce", "s",
    "IF({par_gpus}>1,2*({par_gpus}-1)/{par_gpus}*{allreduce_bytes}/({par_link_bw}*{link_eff})"
    "+{par_link_latency},0)",
    lambda par_gpus, allreduce_bytes, par_link_bw, link_eff, par_link_latency:
        2 * (par_gpus - 1) / par_gpus * allreduce_bytes / (par_link_bw * link_eff)
        + par_link_latency if par_gpus > 1 else 0.0,
    fmt="time", doc="2(G-1)/G · bytes / (bw · eff) + latency; the factor is 1 at G = 2.")

# Per-layer table (same rows as the Pipeline sheet's; same-row references reach across).
PAR_LAYER = Input("par_layer", "layer", fmt="int", helper=True)
STAGE = rf.ceil_div("stage", "par_layer", "stage_layers", "PP stage")


def _boundary(par_layer: Any, stage_layers: float, n_layers: float) -> Any:
    layer = np.asarray(par_layer, dtype=float)
    return ((np.mod(layer, stage_layers) == 0) & (layer < n_layers)).astype(object)


IS_BOUNDARY = Quantity(
    "is_boundary", "PP stage boundary after this layer", "",
    "AND(MOD({par_layer},{stage_layers})=0,{par_layer}<{n_layers})", _boundary, fmt="flag")


def _hop(name: str, label: str, nbytes: str) -> Quantity:
    def reference(**a: Any) -> Any:
        t = a[nbytes] / (a["par_link_bw"] * a["link_eff"]) + a["par_link_latency"]
        return np.where(np.asarray(a["is_boundary"], dtype=bool), t, 0.0)

    return Quantity(
        name, label, "s",
        f"IF({{is_boundary}},{{{nbytes}}}/({{par_link_bw}}*{{link_eff}})+{{par_link_latency}},0)",
        reference, fmt="time", doc="bytes / (link bw · eff) + latency at a stage boundary")


BOUNDARY_BYTES = Quantity(
    "boundary_bytes", "PP bytes sent at boundary (whole batch)", "B",
    "IF({is_boundary},{out_bytes},0)",
    lambda is_boundary, out_bytes: np.where(np.asarray(is_boundary, dtype=bool), out_bytes, 0.0),
    fmt="sci")
HOP_FULL = _hop("hop_time_full", "PP hop time (whole batch)", "out_bytes")
MB_OUT_BYTES = rf.elements_bytes("mb_out_bytes", "mb_rows", "out_cols",
                                 "micro-batch output bytes")
HOP_MB = _hop("hop_time_mb", "PP hop time (one micro-batch)", "mb_out_bytes")
MB = rf.matmul_roofline("mb_", "mb_rows", "in_cols", "out_cols", what="micro-batch")
STAGE_TIME_MB = rf.sum_where_equal("stage_time_mb", "stage", "mb_time",
                                   "this stage's time per micro-batch", "s", fmt="time")
STAGE_TIME_FULL = rf.sum_where_equal("stage_time_full", "stage", "layer_time",
                                     "this stage's time (whole batch)", "s", fmt="time")
STAGE_WEIGHTS = rf.sum_where_equal("stage_weights", "stage", "weight_bytes",
                                   "this stage's weight bytes", "B")
MB_LIVE = Quantity("mb_live", "micro-batch live activations", "B",
                   "{dtype_bytes_sel}*{mb_rows}*({in_cols}+{out_cols})",
                   lambda dtype_bytes_sel, mb_rows, in_cols, out_cols:
                       dtype_bytes_sel * mb_rows * (in_cols + out_cols), fmt="sci")
MB_WS = rf.plus("mb_ws", ("mb_live", "weight_bytes"), "micro-batch working set", "B")
TP_IN = Quantity("tp_in", "TP input columns", "", "IF({layer_type}=1,{pipe_n},{k_shard})",
                 lambda layer_type, pipe_n, k_shard: np.where(layer_type == 1, pipe_n, k_shard)
                 * 1.0, fmt="int", doc="type 1: full n (replicated); type 2: a k shard")
TP_OUT = Quantity("tp_out", "TP output columns", "", "IF({layer_type}=1,{k_shard},{pipe_n})",
                  lambda layer_type, pipe_n, k_shard: np.where(layer_type == 1, k_shard, pipe_n)
                  * 1.0, fmt="int", doc="type 1: a k shard; type 2: partial sums of full n")
TP = rf.matmul_roofline("tp_", "pipe_m", "tp_in", "tp_out", what="TP per-GPU")
TP_WEIGHT = rf.elements_bytes("tp_weight", "tp_in", "tp_out", "TP weight bytes per GPU")
TP_LIVE = Quantity("tp_live", "TP live activations per GPU", "B",
                   "{dtype_bytes_sel}*{pipe_m}*({tp_in}+{tp_out})",
                   lambda dtype_bytes_sel, pipe_m, tp_in, tp_out:
                       dtype_bytes_sel * pipe_m * (tp_in + tp_out), fmt="sci")
TP_WS = rf.plus("tp_ws", ("tp_live", "tp_weight"), "TP working set per GPU", "B")
AR_AFTER = Quantity("ar_after", "TP all-reduce after this layer", "s",
                    "IF({layer_type}=2,{allreduce_time},0)",
                    lambda layer_type, allreduce_time: np.where(layer_type == 2,
                                                                allreduce_time, 0.0),
                    fmt="time")

TABLE = Table(
    name="parallel_layers", header_row=44, col=0, inputs=(PAR_LAYER,),
    columns=(STAGE, IS_BOUNDARY, BOUNDARY_BYTES, HOP_FULL, MB_OUT_BYTES, HOP_MB, *MB.columns(),
             STAGE_TIME_MB, STAGE_TIME_FULL, STAGE_WEIGHTS, MB_LIVE, MB_WS, TP_IN, TP_OUT,
             *TP.columns(), TP_WEIGHT, TP_LIVE, TP_WS, AR_AFTER),
)

# The comparison: single GPU | pipeline | tensor | better.
S_WEIGHTS = rf.same_as("single_weights", "total_weight_bytes", "weights per GPU", "B")
P_WEIGHTS = rf.largest("pp_weights", "stage_weights", "PP weights per GPU", "B")
T_WEIGHTS = rf.total("tp_weights", "tp_weight", "TP weights per GPU", "B")
S_ACTS = rf.same_as("single_acts", "peak_live_act", "activations per GPU", "B")
P_ACTS = rf.largest("pp_acts", "mb_live", "PP activations per GPU", "B")
T_ACTS = rf.largest("tp_acts", "tp_live", "TP activations per GPU", "B")
S_MEM = rf.plus("single_mem", ("single_weights", "single_acts"), "memory per GPU", "B")
P_MEM = rf.plus("pp_mem", ("pp_weights", "pp_acts"), "PP memory per GPU", "B")
T_MEM = rf.plus("tp_mem", ("tp_weights", "tp_acts"), "TP memory per GPU", "B")
S_FITS = rf.at_most("single_fits", "single_mem", "vram_bytes", "fits")
P_FITS = rf.at_most("pp_fits", "pp_mem", "vram_bytes", "PP fits")
T_FITS = rf.at_most("tp_fits", "tp_mem", "vram_bytes", "TP fits")
S_WS = rf.same_as("single_ws", "largest_ws", "largest working set per GPU", "B")
P_WS = rf.largest("pp_ws", "mb_ws", "PP largest working set", "B")
T_WS = rf.largest("tp_ws_max", "tp_ws", "TP largest working set", "B")
S_WS_FITS = rf.at_most("single_ws_fits", "single_ws", "vram_bytes", "fits at once")
P_WS_FITS = rf.at_most("pp_ws_fits", "pp_ws", "vram_bytes", "PP fits at once")
T_WS_FITS = rf.at_most("tp_ws_fits", "tp_ws_max", "vram_bytes", "TP fits at once")
P_STAGE = rf.largest("pp_stage_max", "stage_time_mb", "slowest stage per micro-batch", "s",
                     fmt="time")
S_COMPUTE = rf.same_as("single_compute", "pipe_predicted", "compute time per GPU", "s",
                       fmt="time")
P_COMPUTE = Quantity("pp_compute", "PP compute time per GPU", "s",
                     "{micro_batches}*{pp_stage_max}",
                     lambda micro_batches, pp_stage_max: micro_batches * pp_stage_max,
                     fmt="time", doc="The busiest GPU: M micro-batches of its stage.")
T_COMPUTE = rf.total("tp_compute", "tp_time", "TP compute time per GPU", "s", fmt="time")
S_VOLUME = Quantity("single_volume", "link bytes per batch", "B", "0", lambda: 0.0, fmt="sci")
P_VOLUME = rf.total("pp_volume", "boundary_bytes", "PP link bytes per batch", "B")
T_VOLUME = Quantity(
    "tp_volume", "TP link bytes per batch", "B",
    "SUMPRODUCT(({layer_type[]}=2)*1)*2*({par_gpus}-1)*{allreduce_bytes}",
    lambda layer_type, par_gpus, allreduce_bytes:
        float(np.sum(np.asarray(layer_type) == 2)) * 2 * (par_gpus - 1) * allreduce_bytes,
    fmt="sci", doc="Ring all-reduce: each of G GPUs sends 2(G-1)/G of the payload.")
S_COMM = Quantity("single_comm", "link time per batch", "s", "0", lambda: 0.0, fmt="time")
P_COMM = Quantity("pp_comm", "PP link time per batch", "s",
                  "{micro_batches}*SUM({hop_time_mb[]})",
                  lambda micro_batches, hop_time_mb: micro_batches * float(np.sum(hop_time_mb)),
                  fmt="time", doc="Every micro-batch crosses every boundary.")
T_COMM = rf.total("tp_comm", "ar_after", "TP link time per batch", "s", fmt="time")
S_LAT1 = rf.same_as("single_latency", "pipe_predicted", "latency, one batch (M = 1)", "s",
                    fmt="time")
P_LAT1 = Quantity("pp_latency_one", "PP latency, one batch (M = 1)", "s",
                  "SUM({layer_time[]})+SUM({hop_time_full[]})",
                  lambda layer_time, hop_time_full: float(np.sum(layer_time))
                  + float(np.sum(hop_time_full)), fmt="time",
                  doc="Stages run one after another: all layers plus every hop.")
T_LAT = Quantity("tp_latency", "TP latency, one batch", "s", "{tp_compute}+{tp_comm}",
                 lambda tp_compute, tp_comm: tp_compute + tp_comm, fmt="time",
                 doc="Shards compute in parallel; all-reduces do not overlap.")
S_LATM = rf.same_as("single_latency_m", "pipe_predicted", "latency with M micro-batches", "s",
                    fmt="time")
P_LATM = Quantity(
    "pp_latency_m", "PP latency with M micro-batches", "s",
    "({micro_batches}+{stages_used}-1)*{pp_stage_max}+SUM({hop_time_mb[]})",
    lambda micro_batches, stages_used, pp_stage_max, hop_time_mb:
        (micro_batches + stages_used - 1) * pp_stage_max + float(np.sum(hop_time_mb)),
    fmt="time", doc="(M + G - 1) slowest-stage times, plus one micro-batch's hops.")
T_LATM = rf.same_as("tp_latency_m", "tp_latency", "TP latency with M micro-batches", "s",
                    fmt="time")
S_TPUT = rf.ratio("single_tput", "pipe_m", "pipe_predicted", "throughput", "rows/s", fmt="sci")
P_TPUT = Quantity(
    "pp_tput", "PP throughput (steady state)", "rows/s",
    "{mb_rows}/MAX({pp_stage_max},MAX({hop_time_mb[]}))",
    lambda mb_rows, pp_stage_max, hop_time_mb: mb_rows / max(pp_stage_max,
                                                            float(np.max(hop_time_mb))),
    fmt="sci", doc="A full pipeline finishes a micro-batch every slowest-stage (or hop) time.")
T_TPUT = rf.ratio("tp_tput", "pipe_m", "tp_latency", "TP throughput", "rows/s", fmt="sci")
P_BUBBLE = Quantity("pp_bubble", "PP bubble fraction", "",
                    "({stages_used}-1)/({micro_batches}+{stages_used}-1)",
                    lambda stages_used, micro_batches: (stages_used - 1)
                    / (micro_batches + stages_used - 1), fmt="pct",
                    doc="(G-1)/(M+G-1): the share of the schedule a stage sits idle.")
S_I1 = rf.first_of("single_i1", "layer_intensity", "layer-1 intensity", "FLOP/B")
P_I1 = rf.first_of("pp_i1", "mb_intensity", "PP layer-1 intensity", "FLOP/B")
T_I1 = rf.first_of("tp_i1", "tp_intensity", "TP layer-1 intensity", "FLOP/B")
S_R1 = rf.first_of("single_r1", "layer_regime", "layer-1 regime", "", fmt="text")
P_R1 = rf.first_of("pp_r1", "mb_regime", "PP layer-1 regime", "", fmt="text")
T_R1 = rf.first_of("tp_r1", "tp_regime", "TP layer-1 regime", "", fmt="text")


def _row(label: str, unit: str, s: Quantity | None, p: Quantity, t: Quantity | None,
         better: Quantity | None, note: str = "") -> BlockRow:
    return BlockRow(label, [s, p, t, better], unit, note)


def _lower(name: str, p: Quantity, t: Quantity) -> Quantity:
    return rf.better(name, p.name, t.name)


COMPARISON = Block(
    row=17, col=0,
    header=("Per forward pass", "single GPU", "pipeline parallel", "tensor parallel", "better",
            "unit", "note"),
    rows=(
        "Memory per GPU",
        _row("weights", "B", S_WEIGHTS, P_WEIGHTS, T_WEIGHTS, _lower("b_weights", P_WEIGHTS,
                                                                      T_WEIGHTS)),
        _row("activations (live)", "B", S_ACTS, P_ACTS, T_ACTS,
             _lower("b_acts", P_ACTS, T_ACTS), "PP at micro-batch rows; TP input replicated"),
        _row("total", "B", S_MEM, P_MEM, T_MEM, _lower("b_mem", P_MEM, T_MEM)),
        _row("fits on each GPU", "", S_FITS, P_FITS, T_FITS, rf.better_fit("b_fits", "pp_fits",
                                                                          "tp_fits")),
        _row("largest input + output + weight", "B", S_WS, P_WS, T_WS,
             _lower("b_ws", P_WS, T_WS), "one layer's working set per GPU"),
        _row("...fits at once", "", S_WS_FITS, P_WS_FITS, T_WS_FITS,
             rf.better_fit("b_ws_fits", "pp_ws_fits", "tp_ws_fits")),
        "Time",
        _row("slowest stage per micro-batch", "s", None, P_STAGE, None, None),
        _row("compute time per GPU", "s", S_COMPUTE, P_COMPUTE, T_COMPUTE,
             _lower("b_compute", P_COMPUTE, T_COMPUTE)),
        _row("communication volume", "B", S_VOLUME, P_VOLUME, T_VOLUME,
             _lower("b_volume", P_VOLUME, T_VOLUME), "bytes over all links"),
        _row("communication time", "s", S_COMM, P_COMM, T_COMM,
             _lower("b_comm", P_COMM, T_COMM), "link busy time"),
        _row("latency, one batch (no micro-batching)", "s", S_LAT1, P_LAT1, T_LAT,
             _lower("b_lat1", P_LAT1, T_LAT), "PP adds hops; it cannot cut this"),
        _row("latency with M micro-batches", "s", S_LATM, P_LATM, T_LATM,
             _lower("b_latm", P_LATM, T_LATM)),
        _row("throughput", "rows/s", S_TPUT, P_TPUT, T_TPUT,
             rf.better("b_tput", "pp_tput", "tp_tput", lower_is_better=False)),
        _row("bubble fraction", "", None, P_BUBBLE, None, None, "(G-1)/(M+G-1)"),
        "Per-GPU matmul",
        _row("layer-1 intensity", "FLOP/B", S_I1, P_I1, T_I1, None,
             "TP shrinks each GPU's matmul"),
        _row("layer-1 regime", "", S_R1, P_R1, T_R1, None),
    ),
)

INPUT_BLOCK = Block(
    row=4, col=0, header=("Parallelism input", "Value", "Unit", "Notes"),
    rows=(
        BlockRow(GPUS.label, [GPUS], "", GPUS.doc),
        BlockRow(MICRO.label, [MICRO], "", MICRO.doc),
        BlockRow(LINK_BW_IN.label, [LINK_BW_IN], "B/s", LINK_BW_IN.doc),
        BlockRow(LINK_LAT_IN.label, [LINK_LAT_IN], "s", LINK_LAT_IN.doc),
        BlockRow(EFF_LINK_BW.label, [EFF_LINK_BW], "B/s", "times LINK_EFF (Inputs sheet)"),
        BlockRow(EFF_LINK_LAT.label, [EFF_LINK_LAT], "s"),
        BlockRow(STAGE_LAYERS.label, [STAGE_LAYERS], "", STAGE_LAYERS.doc),
        BlockRow(STAGES.label, [STAGES], "", STAGES.doc),
        BlockRow(MB_ROWS.label, [MB_ROWS], "", MB_ROWS.doc),
        BlockRow(K_SHARD.label, [K_SHARD], "", K_SHARD.doc),
        BlockRow(AR_TIME.label, [AR_TIME], "s", AR_TIME.doc),
    ),
)
FLAG_BLOCK = Block(
    row=4, col=5, header=("Splits", "Value"),
    rows=(BlockRow(FLAG_K.label, [FLAG_K]), BlockRow(FLAG_L.label, [FLAG_L]),
          BlockRow(FLAG_M.label, [FLAG_M]), BlockRow(AR_BYTES.label, [AR_BYTES], "B")),
)

TRADE_OFFS = (
    "Trade-offs. Pipeline parallelism does not cut the latency of one un-split batch (the "
    "stages run one after another and each boundary adds a hop), but with M micro-batches "
    "it keeps all G GPUs busy and raises throughput; its bubble is (G-1)/(M+G-1), and it "
    "moves only one activation per stage boundary.",
    "Tensor parallelism cuts each GPU's compute and weight memory on every layer, but pays "
    "a ring all-reduce after every type-2 layer and shrinks each GPU's matmul, lowering its "
    "intensity: a compute-bound layer can turn memory-bound. Micro-batching the pipeline "
    "also shrinks its matmuls, and re-reads every weight per micro-batch.",
)


def sheet() -> SheetSpec:
    widths = {0: 40.0, 1: 16.0, 2: 16.0, 3: 16.0, 4: 12.0, 5: 22.0, 6: 40.0}
    widths |= {i: 13.0 for i in range(7, 32)}
    first_text = COMPARISON.row + len(COMPARISON.rows) + 2
    return SheetSpec(
        name=SHEET,
        texts=(
            Text(0, 0, "The pipeline on G GPUs: pipeline vs tensor parallelism", "title"),
            Text(1, 0, "PP: G stages of ceil(L/G) layers, M micro-batches; time "
                 "(M + G - 1) × slowest stage + hops. TP: type-1 layers split by columns, "
                 "type-2 by rows, then a ring all-reduce of m×n."),
            Text(2, 0, "Layers, shapes, dtype and efficiencies come from the Pipeline and "
                 "Inputs sheets; the link bandwidth is per direction."),
            Text(first_text, 0, TRADE_OFFS[0]),
            Text(first_text + 1, 0, TRADE_OFFS[1]),
            Text(TABLE.header_row - 1, 0, "Per layer", "subtitle"),
        ),
        blocks=(INPUT_BLOCK, FLAG_BLOCK, COMPARISON),
        tables=(TABLE,),
        column_widths=widths,
        freeze=None,
        regime_columns=("mb_regime", "tp_regime"),
    )


def input_values(layers: int, gpus: int, micro_batches: int, link_bw: float | None,
                 link_latency: float | None) -> dict[str, Any]:
    return {"par_gpus": gpus, "micro_batches": micro_batches, "link_bw_override": link_bw,
            "link_latency_override": link_latency, "par_layer": list(range(1, layers + 1))}
