"""Tensor parallelism with the Megatron-LM pairing (Shoeybi et al., 2019).

A column-split layer takes a replicated input and leaves its output sharded, with no
communication; the row-split layer after it takes that shard and leaves partial sums of its
whole output, which one all-reduce turns into a replicated output. So every all-reduce carries
the output of a row-split layer, and the pairing decides which width that is:

- type 1 ([m×n]·[n×k] → [m×k]) row-split: each all-reduce carries m×k; type 2 is column-split;
- type 2 ([m×k]·[k×n] → [m×n]) row-split: each all-reduce carries m×n; type 1 is column-split.

`narrow` picks the one whose all-reduce carries m·min(k, n) (with k = n, type 2 row-split:
no more all-reduces than the other). When type 1 is row-split, layer 1 has no column-split
layer before it: its input arrives replicated and each GPU takes its slice of it for free.
A column-split last layer leaves the final output sharded; an all-gather makes it whole when
its consumer needs it (the `tp_gather` input; the next block's row-split layer would not).
Either way the split (sharded) dimension is the other, wider one, ceil(w/G) per GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.model import factories as rf
from sheetgen.model.vocabulary import Quantity
from sheetgen.sheets.parallel.inputs import (
    FLOOR,
    NARROW,
    all_gather,
    allreduce,
    allreduce_used,
)


def _row_type(tp_pairing: str, pipe_k: float, pipe_n: float) -> float:
    k_narrower = pipe_k < pipe_n
    return 1.0 if k_narrower == (tp_pairing == NARROW) else 2.0


ROW_TYPE = Quantity(
    "tp_row_type", "TP row-split layer type", "",
    f'IF({{tp_pairing}}="{NARROW}",IF({{pipe_k}}<{{pipe_n}},1,2),IF({{pipe_k}}<{{pipe_n}},2,1))',
    _row_type, fmt="int", defined_name="TP_ROW_TYPE",
    doc="Its output is what each all-reduce carries; the other type is column-split.")
AR_COLS = Quantity("tp_ar_cols", "all-reduced activation width", "",
                   "IF({tp_row_type}=1,{pipe_k},{pipe_n})",
                   lambda tp_row_type, pipe_k, pipe_n: pipe_k if tp_row_type == 1 else pipe_n,
                   fmt="int", doc="k when type 1 is row-split, else n.")
AR_NAME = Quantity("tp_ar_name", "each all-reduce carries", "",
                   'IF({tp_row_type}=1,"m×k","m×n")',
                   lambda tp_row_type: "m×k" if tp_row_type == 1 else "m×n", fmt="text")
SPLIT_COLS = Quantity("tp_split_cols", "split (sharded) width", "",
                      "IF({tp_row_type}=1,{pipe_n},{pipe_k})",
                      lambda tp_row_type, pipe_k, pipe_n: pipe_n if tp_row_type == 1
                      else pipe_k, fmt="int", doc="The other width: n or k.")
SHARD = rf.ceil_div("tp_shard", "tp_split_cols", "par_gpus", "shard per GPU",
                    doc="ceil(w/G): the largest shard sets the time.")


def _why(tp_pairing: str, pipe_k: float, pipe_n: float, tp_ar_name: str) -> str:
    if pipe_k == pipe_n:
        return "k = n: both pairings all-reduce as many bytes; type 2 is row-split"
    lo, hi = ("k", "n") if pipe_k < pipe_n else ("n", "k")
    if tp_pairing == NARROW:
        return f"{lo} < {hi}: {tp_ar_name} is the narrower activation (Megatron-LM)"
    return f"forced: {tp_ar_name} is the wider activation, {hi}/{lo} times the bytes"


WHY = Quantity(
    "tp_why", "why", "",
    'IF({pipe_k}={pipe_n},"k = n: both pairings all-reduce as many bytes; type 2 is '
    'row-split",IF({tp_pairing}="' + NARROW + '",IF({pipe_k}<{pipe_n},"k < n","n < k")'
    '&": "&{tp_ar_name}&" is the narrower activation (Megatron-LM)","forced: "&{tp_ar_name}'
    '&" is the wider activation, "&IF({pipe_k}<{pipe_n},"n/k","k/n")&" times the bytes"))',
    _why, fmt="text")
AR_BYTES = rf.elements_bytes("allreduce_bytes", "pipe_m", "tp_ar_cols", "all-reduce payload",
                             per=rf.OUT_BYTES,
                             doc="The partial sums of one row-split layer's output.")
AR_USED = allreduce_used("tp_ar_used", "allreduce_bytes", "all-reduce algorithm used")
AR_TIME = allreduce("allreduce_time", "allreduce_bytes", "one all-reduce")


# nccl-tests' figures, so the sheet reads like `all_reduce_perf` output: algbw = S / t and, for
# an all-reduce, busbw = algbw · 2(G-1)/G (https://github.com/NVIDIA/nccl-tests/blob/
# a0b82b2260cf5152b9f8c061bbf7eaf0ba096432/doc/PERFORMANCE.md, "Bus bandwidth", "AllReduce").
def _algbw(allreduce_bytes: float, allreduce_time: float) -> Any:
    return allreduce_bytes / allreduce_time if allreduce_time > 0 else ""


ALGBW = Quantity("tp_algbw", "its algorithm bandwidth (algbw)", "B/s",
                 'IF({allreduce_time}>0,{allreduce_bytes}/{allreduce_time},"")', _algbw,
                 fmt="sci", doc="nccl-tests: algbw = bytes / time.")
BUSBW = Quantity(
    "tp_busbw", "its bus bandwidth (busbw)", "B/s",
    'IF({allreduce_time}>0,{tp_algbw}*2*({par_gpus}-1)/{par_gpus},"")',
    lambda allreduce_time, tp_algbw, par_gpus:
        tp_algbw * 2 * (par_gpus - 1) / par_gpus if allreduce_time > 0 else "",
    fmt="sci", doc="nccl-tests: busbw = algbw · 2(G-1)/G; compare with the link's B/s.")

# Per-layer columns.
SPLIT = Quantity("tp_split", "TP split", "", 'IF({layer_type}={tp_row_type},"row","column")',
                 lambda layer_type, tp_row_type: np.where(
                     np.asarray(layer_type) == tp_row_type, "row", "column").astype(object),
                 fmt="text")


def _pick(if_row: str, if_col: str) -> Any:
    def reference(**a: Any) -> Any:
        row = np.asarray(a["tp_split"]) == "row"
        return np.where(row, a[if_row], a[if_col]) * 1.0

    return reference


TP_IN = Quantity("tp_in", "TP input columns", "", 'IF({tp_split}="row",{tp_shard},{in_cols})',
                 _pick("tp_shard", "in_cols"), fmt="int",
                 doc="row-split: a shard of the input; column-split: all of it (replicated)")
TP_OUT = Quantity("tp_out", "TP output columns", "",
                  'IF({tp_split}="row",{out_cols},{tp_shard})', _pick("out_cols", "tp_shard"),
                  fmt="int", doc="row-split: partial sums of the whole width; column: a shard")
TP_IN_HELD = Quantity(
    "tp_in_held", "TP input columns held", "",
    'IF(AND({tp_split}="row",{par_layer}=1),{in_cols},{tp_in})',
    lambda tp_split, par_layer, in_cols, tp_in: np.where(
        (np.asarray(tp_split) == "row") & (np.asarray(par_layer, float) == 1), in_cols,
        tp_in) * 1.0, fmt="int",
    doc="Layer 1 row-split: the input arrives replicated; the slice it reads is free.")
TP = rf.matmul_roofline("tp_", "pipe_m", "tp_in", "tp_out", what="TP per-GPU",
                        floor=FLOOR.name)
TP_WEIGHT = rf.elements_bytes("tp_weight", "tp_in", "tp_out", "TP weight bytes per GPU",
                              per=rf.WEIGHT_BYTES)
_A, _C = rf.ACT_BYTES, rf.OUT_BYTES
TP_LIVE = Quantity("tp_live", "TP live activations per GPU", "B",
                   f"{{pipe_m}}*({{{_A}}}*{{tp_in_held}}+{{{_C}}}*{{tp_out}})",
                   lambda pipe_m, tp_in_held, tp_out, **b: pipe_m
                   * (b[_A] * tp_in_held + b[_C] * tp_out), fmt="sci",
                   doc="Input in A's storage; output (or partial sums) in C's.")
TP_WS = rf.plus("tp_ws", ("tp_live", "tp_weight"), "TP working set per GPU", "B")
AR_AFTER = Quantity("ar_after", "TP all-reduce after this layer", "s",
                    'IF({tp_split}="row",{allreduce_time},0)',
                    lambda tp_split, allreduce_time: np.where(
                        np.asarray(tp_split) == "row", allreduce_time, 0.0), fmt="time")
AR_BUSBW = Quantity("ar_busbw", "its bus bandwidth", "B/s",
                    'IF(AND({tp_split}="row",{par_gpus}>1),{tp_busbw},"")',
                    lambda tp_split, par_gpus, tp_busbw: np.where(
                        (np.asarray(tp_split) == "row") & (par_gpus > 1),
                        np.asarray(tp_busbw, dtype=object), "").astype(object), fmt="sci")

COLUMNS = (SPLIT, TP_IN, TP_OUT, TP_IN_HELD, *TP.columns(), TP_WEIGHT, TP_LIVE, TP_WS,
           AR_AFTER, AR_BUSBW)

# Scalars that read the per-layer table.
AR_COUNT = Quantity("tp_ar_count", "all-reduces per batch", "",
                    'SUMPRODUCT(({tp_split[]}="row")*1)',
                    lambda tp_split: float(np.sum(np.asarray(tp_split) == "row")), fmt="int",
                    doc="One after every row-split layer.")
COL_COUNT = Quantity("tp_col_count", "column-split layers", "", "{n_layers}-{tp_ar_count}",
                     lambda n_layers, tp_ar_count: n_layers - tp_ar_count, fmt="int")
LAST_SHARDED = Quantity(
    "tp_last_sharded", "final output sharded", "",
    'INDEX({tp_split[]},{n_layers})="column"',
    lambda tp_split, n_layers: bool(np.asarray(tp_split)[int(n_layers) - 1] == "column"),
    fmt="flag", doc="A column-split last layer leaves each GPU a shard of the output.")
GATHER_BYTES = Quantity(
    "tp_gather_bytes", "sharded final output bytes", "B",
    "IF({tp_last_sharded},INDEX({out_bytes[]},{n_layers}),0)",
    lambda tp_last_sharded, out_bytes, n_layers:
        float(np.asarray(out_bytes)[int(n_layers) - 1]) if tp_last_sharded else 0.0,
    fmt="sci", doc="0 when the last all-reduce left it replicated.")
GATHER_TIME = all_gather("tp_gather_time", "tp_gather_bytes",
                         "an all-gather of it would take")
GATHER_USED = Quantity(
    "tp_gather_used", "all-gather counted in TP latency", "s",
    'IF(AND({tp_last_sharded},{tp_gather}="yes"),{tp_gather_time},0)',
    lambda tp_last_sharded, tp_gather, tp_gather_time:
        tp_gather_time if tp_last_sharded and tp_gather == "yes" else 0.0, fmt="time")
OUT_STATE = Quantity(
    "tp_out_state", "final output", "",
    'IF({tp_last_sharded},IF({tp_gather}="yes","sharded, then all-gathered",'
    '"left sharded for the next block"),"replicated by its all-reduce")',
    lambda tp_last_sharded, tp_gather: ("sharded, then all-gathered" if tp_gather == "yes"
                                        else "left sharded for the next block")
    if tp_last_sharded else "replicated by its all-reduce", fmt="text")
OTHER_COLS = Quantity("tp_other_cols", "other pairing: all-reduced width", "",
                      "{tp_split_cols}", lambda tp_split_cols: tp_split_cols, fmt="int")
OTHER_BYTES = rf.elements_bytes("tp_other_bytes", "pipe_m", "tp_other_cols",
                                "other pairing: all-reduce payload", per=rf.OUT_BYTES)
OTHER_TIME = allreduce("tp_other_time", "tp_other_bytes", "other pairing: one all-reduce")
OTHER_COUNT = Quantity(
    "tp_other_count", "other pairing: all-reduces per batch", "",
    "IF({tp_row_type}=1,ROUNDDOWN({n_layers}/2,0),ROUNDUP({n_layers}/2,0))",
    lambda tp_row_type, n_layers: float(n_layers // 2 if tp_row_type == 1
                                        else -(-n_layers // 2)), fmt="int",
    doc="Its row-split type: type 2 (even layers) or type 1 (odd layers).")
OTHER_TOTAL = Quantity("tp_other_comm", "other pairing: all-reduce time per batch", "s",
                       "{tp_other_count}*{tp_other_time}",
                       lambda tp_other_count, tp_other_time: tp_other_count * tp_other_time,
                       fmt="time")

WEIGHTS = rf.total("tp_weights", "tp_weight", "TP weights per GPU", "B")
ACTS = rf.largest("tp_acts", "tp_live", "TP activations per GPU", "B")
MEM, FITS = rf.memory_fit("tp_mem", "tp_fits", "tp_weights", "tp_acts", "TP memory per GPU",
                          "TP fits")
LARGEST_WORKING_SET = rf.largest("tp_ws_max", "tp_ws", "TP largest working set", "B")
WS_FITS = rf.at_most("tp_ws_fits", "tp_ws_max", "vram_bytes", "TP fits at once")
COMPUTE = rf.total("tp_compute", "tp_time", "TP compute time per GPU", "s", fmt="time")
VOLUME = Quantity(
    "tp_volume", "TP link bytes per batch", "B",
    "{tp_ar_count}*2*({par_gpus}-1)*{allreduce_bytes}"
    '+IF({tp_gather_used}>0,({par_gpus}-1)*{tp_gather_bytes},0)',
    lambda tp_ar_count, par_gpus, allreduce_bytes, tp_gather_used, tp_gather_bytes:
        tp_ar_count * 2 * (par_gpus - 1) * allreduce_bytes
        + ((par_gpus - 1) * tp_gather_bytes if tp_gather_used > 0 else 0.0),
    fmt="sci", doc="All GPUs together: a ring all-reduce sends 2(G-1) × the payload.")
AR_TOTAL = rf.total("tp_ar_total", "ar_after", "TP all-reduce time per batch", "s", fmt="time")
COMM = rf.plus("tp_comm", ("tp_ar_total", "tp_gather_used"), "TP link time per batch", "s",
               fmt="time")


def hidden(name: str, ar_total: str, compute: str, label: str) -> Quantity:
    """All-reduce time hidden behind compute: the overlap share of it, at most the compute."""
    return Quantity(name, label, "s", f"MIN({{tp_overlap}}*{{{ar_total}}},{{{compute}}})",
                    lambda **a: np.minimum(a["tp_overlap"] * a[ar_total], a[compute]) * 1.0,
                    fmt="time", doc="MIN(overlap × all-reduce time, compute time)")


def latency(name: str, compute: str, comm: str, hidden_: str, label: str) -> Quantity:
    """Shards compute in parallel; communication adds, less what hides behind compute."""
    return Quantity(name, label, "s", f"{{{compute}}}+{{{comm}}}-{{{hidden_}}}",
                    lambda **a: a[compute] + a[comm] - a[hidden_], fmt="time",
                    doc="compute + communication - the hidden share")


HIDDEN = hidden("tp_hidden", "tp_ar_total", "tp_compute", "TP all-reduce hidden behind compute")
LATENCY = latency("tp_latency", "tp_compute", "tp_comm", "tp_hidden", "TP latency, one batch")
TPUT = rf.ratio("tp_tput", "pipe_m", "tp_latency", "TP throughput", "rows/s", fmt="sci",
                doc="m / latency: without overlap a stream runs one batch at a time.")
IDLE = Quantity("tp_idle", "TP idle share of GPU time", "",
                "({tp_comm}-{tp_hidden})/{tp_latency}",
                lambda tp_comm, tp_hidden, tp_latency: (tp_comm - tp_hidden) / tp_latency,
                fmt="pct", doc="GPUs wait for every all-reduce not hidden behind compute.")
LAYER1_INTENSITY = rf.first_of("tp_i1", "tp_intensity", "TP layer-1 intensity", "FLOP/B")
LAYER1_REGIME = rf.first_of("tp_r1", "tp_regime", "TP layer-1 regime", "", fmt="text")
