"""Pipeline parallelism (GPipe, Huang et al. 2019): G stages of ceil(L/G) consecutive layers.

The batch is cut into M micro-batches of ceil(m/M) rows; each layer's roofline is re-evaluated
at that size (every micro-batch re-reads the weights). Stages and the hops between them form a
chain of servers in series; M identical micro-batches through servers of times t_i finish after

    latency = Σ t_i + (M - 1) · max t_i

(a flow shop: the first micro-batch crosses every server, the rest follow at the pace of the
slowest, which may be a hop). A stream of batches leaves one micro-batch per max t_i.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.model import factories as rf
from sheetgen.model.vocabulary import Input, Quantity
from sheetgen.sheets.parallel.inputs import hop

# Per-layer columns (same rows as the Pipeline sheet's; same-row references reach across).
PAR_LAYER = Input("par_layer", "layer", fmt="int", helper=True)
STAGE = rf.ceil_div("stage", "par_layer", "stage_layers", "PP stage")


def _boundary(par_layer: Any, stage_layers: float, n_layers: float) -> Any:
    layer = np.asarray(par_layer, dtype=float)
    return ((np.mod(layer, stage_layers) == 0) & (layer < n_layers)).astype(object)


IS_BOUNDARY = Quantity(
    "is_boundary", "PP stage boundary after this layer", "",
    "AND(MOD({par_layer},{stage_layers})=0,{par_layer}<{n_layers})", _boundary, fmt="flag")
BOUNDARY_BYTES = Quantity(
    "boundary_bytes", "PP bytes sent at boundary (whole batch)", "B",
    "IF({is_boundary},{out_bytes},0)",
    lambda is_boundary, out_bytes: np.where(np.asarray(is_boundary, dtype=bool), out_bytes, 0.0),
    fmt="sci")
HOP_FULL = hop("hop_time_full", "out_bytes", "is_boundary", "PP hop time (whole batch)")
MB_OUT_BYTES = rf.elements_bytes("mb_out_bytes", "mb_rows", "out_cols",
                                 "micro-batch output bytes")
HOP_MB = hop("hop_time_mb", "mb_out_bytes", "is_boundary", "PP hop time (one micro-batch)")
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

COLUMNS = (STAGE, IS_BOUNDARY, BOUNDARY_BYTES, HOP_FULL, MB_OUT_BYTES, HOP_MB, *MB.columns(),
           STAGE_TIME_MB, STAGE_TIME_FULL, STAGE_WEIGHTS, MB_LIVE, MB_WS)

# Scalars.
WEIGHTS = rf.largest("pp_weights", "stage_weights", "PP weights per GPU", "B")
ACTS = rf.largest("pp_acts", "mb_live", "PP activations per GPU", "B")
MEM = rf.plus("pp_mem", ("pp_weights", "pp_acts"), "PP memory per GPU", "B")
FITS = rf.at_most("pp_fits", "pp_mem", "vram_bytes", "PP fits")
WS = rf.largest("pp_ws", "mb_ws", "PP largest working set", "B")
WS_FITS = rf.at_most("pp_ws_fits", "pp_ws", "vram_bytes", "PP fits at once")
STAGE_MAX = rf.largest("pp_stage_max", "stage_time_mb", "slowest stage per micro-batch", "s",
                       fmt="time")
HOP_MAX = rf.largest("pp_hop_max", "hop_time_mb", "slowest hop per micro-batch", "s",
                     fmt="time")
PACE = rf.larger("pp_pace", "pp_stage_max", "pp_hop_max", "PP pace: slowest stage or hop",
                 doc="A hop slower than every stage sets the pace of the pipeline.")
PACE_BY = Quantity("pp_pace_by", "what sets PP's pace", "",
                   'IF({pp_hop_max}>{pp_stage_max},"a link hop","a stage")',
                   lambda pp_hop_max, pp_stage_max:
                       "a link hop" if pp_hop_max > pp_stage_max else "a stage", fmt="text")
COMPUTE = Quantity("pp_compute", "PP compute time per GPU", "s",
                   "{micro_batches}*{pp_stage_max}",
                   lambda micro_batches, pp_stage_max: micro_batches * pp_stage_max,
                   fmt="time", doc="The busiest GPU: M micro-batches of its stage.")
VOLUME = rf.total("pp_volume", "boundary_bytes", "PP link bytes per batch", "B")
COMM = Quantity("pp_comm", "PP link time per batch", "s",
                "{micro_batches}*SUM({hop_time_mb[]})",
                lambda micro_batches, hop_time_mb: micro_batches * float(np.sum(hop_time_mb)),
                fmt="time", doc="Every micro-batch crosses every boundary.")
LAT_ONE = Quantity("pp_latency_one", "PP latency, one batch (M = 1)", "s",
                   "SUM({layer_time[]})+SUM({hop_time_full[]})",
                   lambda layer_time, hop_time_full: float(np.sum(layer_time))
                   + float(np.sum(hop_time_full)), fmt="time",
                   doc="Stages run one after another: all layers plus every hop.")
LAT_M = Quantity(
    "pp_latency_m", "PP latency with M micro-batches", "s",
    "SUM({mb_time[]})+SUM({hop_time_mb[]})+({micro_batches}-1)*{pp_pace}",
    lambda mb_time, hop_time_mb, micro_batches, pp_pace:
        float(np.sum(mb_time)) + float(np.sum(hop_time_mb)) + (micro_batches - 1) * pp_pace,
    fmt="time", doc="Σ stage and hop times of one micro-batch + (M - 1) × the pace.")
STREAM = Quantity("pp_tput_stream", "PP throughput, stream of batches", "rows/s",
                  "{pipe_m}/({micro_batches}*{pp_pace})",
                  lambda pipe_m, micro_batches, pp_pace: pipe_m / (micro_batches * pp_pace),
                  fmt="sci", doc="A full pipeline finishes a micro-batch every pace time.")


def _stream_one(pipe_m: float, stage_time_full: Any, hop_time_full: Any) -> float:
    return pipe_m / max(float(np.max(stage_time_full)), float(np.max(hop_time_full)))


STREAM_ONE = Quantity("pp_tput_stream_one", "PP stream throughput at M = 1", "rows/s",
                      "{pipe_m}/MAX(MAX({stage_time_full[]}),MAX({hop_time_full[]}))",
                      _stream_one, fmt="sci",
                      doc="Micro-batching does not raise it: it re-reads the weights.")
FLUSHED = rf.ratio("pp_tput_flushed", "pipe_m", "pp_latency_m",
                   "PP throughput, one batch at a time", "rows/s", fmt="sci")
BUBBLE = Quantity("pp_bubble", "PP bubble fraction (GPipe)", "",
                  "({stages_used}-1)/({micro_batches}+{stages_used}-1)",
                  lambda stages_used, micro_batches: (stages_used - 1)
                  / (micro_batches + stages_used - 1), fmt="pct",
                  doc="(G-1)/(M+G-1): equal stages, hops hidden.")
IDLE = Quantity("pp_idle", "PP idle share of GPU time", "",
                "1-{micro_batches}*SUM({mb_time[]})/({par_gpus}*{pp_latency_m})",
                lambda micro_batches, mb_time, par_gpus, pp_latency_m:
                    1 - micro_batches * float(np.sum(mb_time)) / (par_gpus * pp_latency_m),
                fmt="pct", doc="1 - busy GPU-seconds / (G × latency): bubble, hops, unequal "
                               "stages and unused GPUs.")
I1 = rf.first_of("pp_i1", "mb_intensity", "PP layer-1 intensity", "FLOP/B")
R1 = rf.first_of("pp_r1", "mb_regime", "PP layer-1 regime", "", fmt="text")


def _count(name: str, label: str, where: str, ref: Any) -> Quantity:
    return Quantity(name, label, "", f"SUMPRODUCT({where})", ref, fmt="int")


def _in(st: Any, lt: Any, stage: float, layer_type: int) -> float:
    return float(np.sum((np.asarray(st, float) == stage) & (np.asarray(lt, float) == layer_type)))


def _stage_count(which: str, t: int) -> Quantity:
    """Type-t layers in stage 1, stage 2 or the last stage: with the pipeline's alternating
    types these three hold every stage composition there is (odd and even stages differ only
    when ceil(L/G) is odd; the last stage may be short), so the sweep's slowest stage is the
    slowest of the three."""
    name, label = f"pp_s{which}_t{t}", f"PP stage {which}: type-{t} layers"
    if which == "last":
        return _count(name, label, f"({{stage[]}}={{stages_used}})*({{layer_type[]}}={t})",
                      lambda stage, layer_type, stages_used: _in(stage, layer_type,
                                                                 stages_used, t))
    s = int(which)
    return _count(name, label, f"({{stage[]}}={s})*({{layer_type[]}}={t})",
                  lambda stage, layer_type: _in(stage, layer_type, s, t))


STAGE_COUNTS = tuple(_stage_count(w, t) for w in ("1", "2", "last") for t in (1, 2))


def _hops_after(t: int) -> Quantity:
    return _count(f"pp_hops_t{t}", f"PP hops after type-{t} layers",
                  f"{{is_boundary[]}}*({{layer_type[]}}={t})",
                  lambda is_boundary, layer_type: float(np.sum(
                      np.asarray(is_boundary, dtype=bool) & (np.asarray(layer_type) == t))))


HOPS_T1, HOPS_T2 = _hops_after(1), _hops_after(2)
N_T1 = _count("pp_n_t1", "type-1 layers", "({layer_type[]}=1)*1",
              lambda layer_type: float(np.sum(np.asarray(layer_type) == 1)))
N_T2 = Quantity("pp_n_t2", "type-2 layers", "", "{n_layers}-{pp_n_t1}",
                lambda n_layers, pp_n_t1: n_layers - pp_n_t1, fmt="int")
