"""Pipeline parallelism (GPipe, Huang et al. 2019): G stages of ceil(L/G) consecutive layers.

The batch is cut into M micro-batches of ceil(m/M) rows; each layer's roofline is re-evaluated
at that size (every micro-batch re-reads the weights) and each call pays the launch floor
(inputs.FLOOR), so M micro-batches launch every layer M times. Stages and the hops between
them form a chain of servers in series; M identical micro-batches through servers of times t_i
finish after

    latency = Σ t_i + (M - 1) · max t_i

(a flow shop: the first micro-batch crosses every server, the rest follow at the pace of the
slowest, which may be a hop). A stream of batches leaves one micro-batch per max t_i.

The chain has only two layer types, so that latency is written once, in closed form
(`flow_shop`): each type's per-layer time at ceil(m/M) rows, times how many of each type
stages 1, 2 and the last hold (the per-layer table counts them). The comparison, the helper
table that finds the best M, and every sweep row use it.

Two stage cuts: balanced (ceil(L/G) layers a stage) and narrow (a boundary after a layer
that outputs the wide activation moves one layer earlier, so every hop carries m·min(k, n)).

The best M (`auto`): the M in 1 ... min(m, 512) that minimises one batch's latency L(M) over
both cuts, ties to the smallest M (then to the balanced cut). L(M) = stages(ceil(m/M)) +
hops(ceil(m/M)) + (M - 1) · pace(ceil(m/M)) has no closed-form minimiser (the roofline is
piecewise linear in the rows and ceil steps), so a helper table evaluates both cuts at every
candidate and MIN/MATCH picks the first minimum. The comparison's PP figures (stages, hops,
link bytes and time, memory) are those of the cut used: the per-layer `stage_used` and
`is_boundary_used` columns pick the cheaper cut's stages, and every per-layer sum follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sheetgen.core.excel import excel_round, is_number, number_mask
from sheetgen.model import factories as rf
from sheetgen.model.vocabulary import Input, Quantity, Table, composed
from sheetgen.sheets.parallel.inputs import FLOOR, MAX_MICRO, hop, hop_of_rows

MAX_MICRO = MAX_MICRO

# Per-layer columns (same rows as the Pipeline sheet's; same-row references reach across).
PAR_LAYER = Input("par_layer", "layer", fmt="int", helper=True)
STAGE = rf.ceil_div("stage", "par_layer", "stage_layers", "PP stage, balanced cut")
#: The names pp_cut and its kin give the two cuts.
BALANCED_NAME, NARROW_NAME = "balanced", "narrow"


def _boundary(par_layer: Any, stage_layers: float, n_layers: float) -> Any:
    layer = np.asarray(par_layer, dtype=float)
    return ((np.mod(layer, stage_layers) == 0) & (layer < n_layers)).astype(object)


IS_BOUNDARY = Quantity(
    "is_boundary", "PP stage boundary after this layer, balanced cut", "",
    "AND(MOD({par_layer},{stage_layers})=0,{par_layer}<{n_layers})", _boundary, fmt="flag")
# The narrow cut: each stage boundary whose layer outputs the wide activation moves one
# layer earlier, so every hop carries m·min(k, n); stages become unequal (one layer more or
# less). Layer ℓ = i·S (S = ceil(L/G)) that outputs the wide one then opens stage i + 1.
_WIDE_OUT = "{out_cols}>{in_cols}"
STAGE_N = Quantity(
    "stage_n", "PP stage, narrow cut", "",
    f"{{stage}}+IF(AND(MOD({{par_layer}},{{stage_layers}})=0,{{par_layer}}<{{n_layers}},"
    f"{_WIDE_OUT}),1,0)",
    lambda stage, par_layer, stage_layers, n_layers, out_cols, in_cols:
        np.asarray(stage, float) + ((np.mod(np.asarray(par_layer, float), stage_layers) == 0)
                                    & (np.asarray(par_layer, float) < n_layers)
                                    & (np.asarray(out_cols) > np.asarray(in_cols))) * 1.0,
    fmt="int", doc="A cut after a wide output moves one layer earlier.")


def _boundary_n(par_layer: Any, stage_layers: float, n_layers: float, out_cols: Any,
                in_cols: Any) -> Any:
    layer = np.asarray(par_layer, dtype=float)
    wide, narrow = np.asarray(out_cols) > np.asarray(in_cols), \
        np.asarray(out_cols) < np.asarray(in_cols)
    kept = (np.mod(layer, stage_layers) == 0) & (layer < n_layers) & ~wide
    moved = (np.mod(layer + 1, stage_layers) == 0) & (layer + 1 < n_layers) & narrow
    return (kept | moved).astype(object)


IS_BOUNDARY_N = Quantity(
    "is_boundary_n", "PP stage boundary after this layer, narrow cut", "",
    "OR(AND(MOD({par_layer},{stage_layers})=0,{par_layer}<{n_layers},{out_cols}<={in_cols}),"
    "AND(MOD({par_layer}+1,{stage_layers})=0,{par_layer}+1<{n_layers},{out_cols}<{in_cols}))",
    _boundary_n, fmt="flag")


def _used(name: str, label: str, narrow: str, balanced: str, fmt: str) -> Quantity:
    """The per-layer column of the cut used (pp_cut): every per-layer sum below follows it."""
    return Quantity(name, label, "", f'IF({{pp_cut}}="{NARROW_NAME}",{{{narrow}}},{{{balanced}}})',
                    lambda **a: np.asarray(a[narrow] if a["pp_cut"] == NARROW_NAME
                                           else a[balanced], dtype=object), fmt=fmt,
                    doc="The stage cut used: the cheaper at M used.")


STAGE_USED = _used("stage_used", "PP stage, cut used", "stage_n", "stage", "int")
IS_BOUNDARY_USED = _used("is_boundary_used", "PP stage boundary after this layer, cut used",
                         "is_boundary_n", "is_boundary", "flag")

BOUNDARY_BYTES = Quantity(
    "boundary_bytes", "PP bytes sent at boundary (whole batch), cut used", "B",
    "IF({is_boundary_used},{out_bytes},0)",
    lambda is_boundary_used, out_bytes: np.where(np.asarray(is_boundary_used, dtype=bool),
                                                 out_bytes, 0.0),
    fmt="sci")
HOP_FULL = hop("hop_time_full", "out_bytes", "is_boundary_used",
               "PP hop time (whole batch), cut used")
MB_OUT_BYTES = rf.elements_bytes("mb_out_bytes", "mb_rows", "out_cols",
                                 "micro-batch output bytes", per=rf.OUT_BYTES)
HOP_MB = hop("hop_time_mb", "mb_out_bytes", "is_boundary_used",
             "PP hop time (one micro-batch), cut used")
MB = rf.matmul_roofline("mb_", "mb_rows", "in_cols", "out_cols", what="micro-batch",
                        floor=FLOOR.name)
#: A layer on one GPU, the whole batch: the Pipeline sheet's predicted time + the floor.
LAYER_TIME = rf.plus("par_layer_time", ("layer_time", FLOOR.name),
                     "layer time + launch floor (whole batch)", "s", fmt="time",
                     doc="The Pipeline sheet's layer time + one launch floor.")
STAGE_TIME_MB = rf.sum_where_equal("stage_time_mb", "stage_used", "mb_time",
                                   "this stage's time per micro-batch", "s", fmt="time")
STAGE_TIME_FULL = rf.sum_where_equal("stage_time_full", "stage_used", "par_layer_time",
                                     "this stage's time (whole batch)", "s", fmt="time")
STAGE_WEIGHTS = rf.sum_where_equal("stage_weights", "stage_used", "weight_bytes",
                                   "this stage's weight bytes", "B")
_A, _C = rf.ACT_BYTES, rf.OUT_BYTES
MB_LIVE = Quantity("mb_live", "micro-batch live activations", "B",
                   f"{{mb_rows}}*({{{_A}}}*{{in_cols}}+{{{_C}}}*{{out_cols}})",
                   lambda mb_rows, in_cols, out_cols, **b: mb_rows
                   * (b[rf.ACT_BYTES] * in_cols + b[rf.OUT_BYTES] * out_cols), fmt="sci",
                   doc="Its input in A's storage, its output in C's.")
MB_WS = rf.plus("mb_ws", ("mb_live", "weight_bytes"), "micro-batch working set", "B")
# Memory where it sits: the first stage holds the whole batch's input until its last
# micro-batch has gone in; the last stage collects the whole output (unless batches stream in
# and out). The first stage with layers: the narrow cut can leave stage 1 empty (one layer a
# stage, layer 1 outputs the wide activation).
def _held(stage_used: Any, pp_batch_in: float, pp_batch_out: float,
          stages_used: float) -> Any:
    st = np.asarray(stage_used, float)
    return (np.where(st == np.min(st), pp_batch_in, 0.0)
            + np.where(st == stages_used, pp_batch_out, 0.0))


STAGE_HELD = Quantity(
    "stage_held", "whole batch held on this stage", "B",
    "IF({stage_used}=MIN({stage_used[]}),{pp_batch_in},0)"
    "+IF({stage_used}={stages_used},{pp_batch_out},0)", _held, fmt="sci",
    doc="The first stage: the batch's input; the last stage: its output.")
STAGE_MEM = rf.plus("stage_mem", ("stage_weights", "stage_held"),
                    "this stage's weights + held batch", "B")

COLUMNS = (STAGE, IS_BOUNDARY, STAGE_N, IS_BOUNDARY_N, STAGE_USED, IS_BOUNDARY_USED,
           BOUNDARY_BYTES, HOP_FULL, MB_OUT_BYTES, HOP_MB, LAYER_TIME, *MB.columns(),
           STAGE_TIME_MB,
           STAGE_TIME_FULL, STAGE_WEIGHTS, MB_LIVE, MB_WS, STAGE_HELD, STAGE_MEM)

# Scalars.
WEIGHTS = rf.largest("pp_weights", "stage_weights", "PP weights per GPU", "B")
ACTS = rf.largest("pp_acts", "mb_live", "PP activations per GPU", "B",
                  doc="Every layer's micro-batch in + out: d·rows·(n + k), the same on every "
                      "stage.")
BATCH_IN = rf.first_of("pp_batch_in", "in_bytes", "whole batch input (stage 1 holds it)", "B",
                       fmt="sci")
BATCH_OUT = Quantity("pp_batch_out", "whole batch output (the last stage collects it)", "B",
                     "INDEX({out_bytes[]},{n_layers})",
                     lambda out_bytes, n_layers: float(np.asarray(out_bytes)[int(n_layers) - 1]),
                     fmt="sci")
HELD = Quantity("pp_held", "PP whole batch held per GPU", "B",
                "INDEX({stage_held[]},MATCH(MAX({stage_mem[]}),{stage_mem[]},0))",
                lambda stage_held, stage_mem: float(np.asarray(stage_held)[
                    int(np.argmax(np.asarray(stage_mem, dtype=float)))]), fmt="sci",
                doc="On the GPU with the most weights + held batch.")
MEM = Quantity("pp_mem", "PP memory per GPU", "B", "MAX({stage_mem[]})+{pp_acts}",
               lambda stage_mem, pp_acts: float(np.max(stage_mem)) + pp_acts, fmt="sci",
               doc="The fullest GPU: its weights, the whole batch it holds, live activations.")
MEM_STREAM = rf.plus("pp_mem_stream", ("pp_weights", "pp_acts"),
                     "PP memory per GPU if batches stream in and out", "B",
                     doc="Input fed and output drained one micro-batch at a time.")
FITS = rf.at_most("pp_fits", "pp_mem", "vram_bytes", "PP fits")
LARGEST_WORKING_SET = rf.largest("pp_ws", "mb_ws", "PP largest working set", "B")
WS_FITS = rf.at_most("pp_ws_fits", "pp_ws", "vram_bytes", "PP fits at once")
STAGE_MAX = rf.largest("pp_stage_max", "stage_time_mb", "slowest stage per micro-batch", "s",
                       fmt="time")
HOP_MAX = rf.largest("pp_hop_max", "hop_time_mb", "slowest hop per micro-batch", "s",
                     fmt="time")
PACE_BY = Quantity("pp_pace_by", "what sets PP's pace", "",
                   'IF({pp_hop_max}>{pp_stage_max},"a link hop","a stage")',
                   lambda pp_hop_max, pp_stage_max:
                       "a link hop" if pp_hop_max > pp_stage_max else "a stage", fmt="text")
COMPUTE = Quantity("pp_compute", "PP compute time per GPU", "s",
                   "{pp_m}*{pp_stage_max}",
                   lambda pp_m, pp_stage_max: pp_m * pp_stage_max,
                   fmt="time", doc="The busiest GPU: M micro-batches of its stage.")
VOLUME = rf.total("pp_volume", "boundary_bytes", "PP link bytes per batch", "B")
COMM = Quantity("pp_comm", "PP link time per batch", "s",
                "{pp_m}*SUM({hop_time_mb[]})",
                lambda pp_m, hop_time_mb: pp_m * float(np.sum(hop_time_mb)),
                fmt="time", doc="Every micro-batch crosses every boundary.")
LAT_ONE = Quantity("pp_latency_one", "PP latency, one batch (M = 1)", "s",
                   "SUM({par_layer_time[]})+SUM({hop_time_full[]})",
                   lambda par_layer_time, hop_time_full: float(np.sum(par_layer_time))
                   + float(np.sum(hop_time_full)), fmt="time",
                   doc="Stages run one after another: all layers plus every hop.")
STREAM = Quantity("pp_tput_stream", "PP throughput, stream of batches", "rows/s",
                  "{pipe_m}/({pp_m}*{pp_pace})",
                  lambda pipe_m, pp_m, pp_pace: pipe_m / (pp_m * pp_pace),
                  fmt="sci", doc="A full pipeline finishes a micro-batch every pace time.")


#: the idle share is 1 - busy / (G × latency), two sums that agree exactly on one GPU at
#: M = 1 but round differently in each engine (±2E-16): rounded to this many decimals
IDLE_DECIMALS = 12
FLUSHED = rf.ratio("pp_tput_flushed", "pipe_m", "pp_latency_m",
                   "PP throughput, one batch at a time", "rows/s", fmt="sci")
BUBBLE = Quantity("pp_bubble", "PP bubble fraction (GPipe)", "",
                  "({stages_used}-1)/({pp_m}+{stages_used}-1)",
                  lambda stages_used, pp_m: (stages_used - 1)
                  / (pp_m + stages_used - 1), fmt="pct",
                  doc="(G-1)/(M+G-1): equal stages, hops hidden.")
IDLE = Quantity("pp_idle", "PP idle share of GPU time", "",
                f"ROUND(1-{{pp_m}}*SUM({{mb_time[]}})/({{par_gpus}}*{{pp_latency_m}}),{IDLE_DECIMALS})",
                lambda pp_m, mb_time, par_gpus, pp_latency_m: excel_round(
                    1 - pp_m * float(np.sum(mb_time)) / (par_gpus * pp_latency_m),
                    IDLE_DECIMALS),
                fmt="pct", doc="1 - busy GPU-seconds / (G × latency): bubble, hops, unequal "
                               "stages and unused GPUs; rounded to 1E-12, so one GPU's "
                               "exact 0 reads 0 in every engine.")
LAYER1_INTENSITY = rf.first_of("pp_i1", "mb_intensity", "PP layer-1 intensity", "FLOP/B")
LAYER1_REGIME = rf.first_of("pp_r1", "mb_regime", "PP layer-1 regime", "", fmt="text")


def _count(name: str, label: str, where: str, ref: Any) -> Quantity:
    return Quantity(name, label, "", f"SUMPRODUCT({where})", ref, fmt="int")


def _in(st: Any, lt: Any, stage: float, layer_type: int) -> float:
    return float(np.sum((np.asarray(st, float) == stage) & (np.asarray(lt, float) == layer_type)))


def _stage_count(which: str, t: int, column: str = "stage", prefix: str = "pp_s",
                 what: str = "PP") -> Quantity:
    """Type-t layers in stage 1, 2, 3 or the last stage of `column`'s cut. With the
    pipeline's alternating types, stages 1, 2 and the last hold every composition the
    balanced cut has (odd and even stages differ only when ceil(L/G) is odd; the last may be
    short); the narrow cut's alternate lengths need stage 3 too. So the slowest stage is the
    slowest of these."""
    name, label = f"{prefix}{which}_t{t}", f"{what} stage {which}: type-{t} layers"
    stage = "{stages_used}" if which == "last" else which

    def reference(**a: Any) -> float:
        s = a["stages_used"] if which == "last" else float(which)
        return _in(a[column], a["layer_type"], s, t)

    return _count(name, label, f"({{{column}[]}}={stage})*({{layer_type[]}}={t})", reference)


STAGE_COUNTS = tuple(_stage_count(w, t) for w in ("1", "2", "last") for t in (1, 2))


def _hops_after(t: int, boundary: str = "is_boundary", prefix: str = "pp_hops_t",
                what: str = "PP") -> Quantity:
    return _count(f"{prefix}{t}", f"{what} hops after type-{t} layers",
                  f"{{{boundary}[]}}*({{layer_type[]}}={t})",
                  lambda **a: float(np.sum(np.asarray(a[boundary], dtype=bool)
                                           & (np.asarray(a["layer_type"]) == t))))


HOPS_T1, HOPS_T2 = _hops_after(1), _hops_after(2)
N_T1 = _count("pp_n_t1", "type-1 layers", "({layer_type[]}=1)*1",
              lambda layer_type: float(np.sum(np.asarray(layer_type) == 1)))
N_T2 = Quantity("pp_n_t2", "type-2 layers", "", "{n_layers}-{pp_n_t1}",
                lambda n_layers, pp_n_t1: n_layers - pp_n_t1, fmt="int")


NARROW_COUNTS = tuple(_stage_count(w, t, "stage_n", "pn_s", "PP narrow cut")
                      for w in ("1", "2", "3", "last") for t in (1, 2))
NARROW_HOPS = tuple(_hops_after(t, "is_boundary_n", "pn_hops_t", "PP narrow cut")
                    for t in (1, 2))


def _has_hop(t: int) -> Quantity:
    return Quantity(f"pn_has_h{t}", f"narrow cut: a hop after type {t}", "",
                    f"{{pn_hops_t{t}}}>0", lambda **a: a[f"pn_hops_t{t}"] > 0, fmt="flag")


NARROW_HAS = (_has_hop(1), _has_hop(2))


HAS_H1 = Quantity("sw_has_h1", "a hop after type 1", "", "{pp_hops_t1}>0",
                  lambda pp_hops_t1: pp_hops_t1 > 0, fmt="flag")
HAS_H2 = Quantity("sw_has_h2", "a hop after type 2", "", "{pp_hops_t2}>0",
                  lambda pp_hops_t2: pp_hops_t2 > 0, fmt="flag")


def _numeric(v: Any) -> tuple[Any, Any]:
    """(values as floats with NaN for "", which rows are numbers), for a guarded column."""
    if not np.ndim(v):
        return float(v), True
    arr = np.asarray(v, dtype=object)
    ok = number_mask(arr)
    return np.where(ok, arr, np.nan).astype(float), ok


def _blank_unless(ok: Any, values: Any) -> np.ndarray:
    """`values` where `ok`, "" elsewhere, as an object column (numbers stay numbers)."""
    out = np.broadcast_to(np.asarray(values, dtype=float), np.shape(ok)).astype(object)
    out[~np.asarray(ok, dtype=bool)] = ""
    return out


def _guarded(q: Quantity, rows: str) -> Quantity:
    """`q` blank ("") where `rows` is no number (a candidate M past min(m, 512))."""

    def reference(**a: Any) -> Any:
        ok = _numeric(a[rows])[1]
        nums = {k: _numeric(v)[0] if isinstance(v, np.ndarray) and v.dtype == object else v
                for k, v in a.items()}
        with np.errstate(invalid="ignore"):
            out = q.reference(**nums)
        return _blank_unless(ok, out)

    return Quantity(q.name, q.label, q.unit, f'IF(ISNUMBER({{{rows}}}),{q.template},"")',
                    reference, q.fmt, doc=q.doc)


@dataclass(frozen=True)
class FlowShop:
    """PP's latency in closed form at `rows` per micro-batch and `micro` micro-batches."""

    t1: Quantity
    t2: Quantity
    h1: Quantity
    h2: Quantity
    pace: Quantity
    latency: Quantity
    #: t1, t2, h1, h2 are another cut's (flow_shop's `times`): only pace and latency are new
    reused: bool = False

    def columns(self) -> tuple[Quantity, ...]:
        return (self.t1, self.t2, self.h1, self.h2, self.pace, self.latency)

    def own(self) -> tuple[Quantity, ...]:
        """The cells this flow adds (a reusing flow: its pace and latency)."""
        return self.columns()[4:] if self.reused else self.columns()


@dataclass(frozen=True)
class Cut:
    """Where the stages end: the names of its per-stage type counts and hop counts."""

    counts: str  # f"{counts}{stage}_t{type}"
    stages: tuple[str, ...]  # the stages whose compositions cover every stage
    hops: str  # f"{hops}{type}": hops after type-t layers
    has: str  # f"{has}{type}": a hop after type t at all


BALANCED = Cut("pp_s", ("1", "2", "last"), "pp_hops_t", "sw_has_h")
NARROW_CUT = Cut("pn_s", ("1", "2", "3", "last"), "pn_hops_t", "pn_has_h")


def _stage(cut: Cut, which: str, t1: str, t2: str) -> str:
    return f"{{{cut.counts}{which}_t1}}*{{{t1}}}+{{{cut.counts}{which}_t2}}*{{{t2}}}"


def _sent(cut: Cut, t: int, hop_time: str) -> str:
    """A hop's time where the cut sends one after type-t layers, else 0."""
    return f"IF({{{cut.has}{t}}},{{{hop_time}}},0)"


def flow_shop(prefix: str, rows: str, micro: str, *, pace: str | None = None,
              latency: str | None = None, what: str = "PP", cut: Cut = BALANCED,
              times: str | None = None) -> FlowShop:
    """The one definition of PP's pace and latency: `prefix` names the parts (per-layer
    times t1, t2 of each type and the hops of each type's output), `rows` the rows per
    micro-batch, `micro` the micro-batch count, `cut` where the stages end (which hops it
    sends, and how many). Pace = the slowest stage or sent hop; latency = Σ layers + Σ hops
    of one micro-batch + (M - 1) · pace. `times`: the prefix of t1, t2, h1, h2 already
    computed at the same rows (another cut's), so only pace and latency are new."""
    t1n, t2n, h1n, h2n = ((times or prefix) + x for x in ("t1", "t2", "h1", "h2"))
    pace_n, lat_n = pace or prefix + "pace", latency or prefix + "latency"
    t1 = rf.time_of(t1n, rows, "pipe_n", "pipe_k", f"{what}: type-1 layer per micro-batch",
                    floor=FLOOR.name)
    t2 = rf.time_of(t2n, rows, "pipe_k", "pipe_n", f"{what}: type-2 layer per micro-batch",
                    floor=FLOOR.name)
    h1 = hop_of_rows(h1n, rows, "pipe_k", f"{what}: hop of a type-1 output (m×k)")
    h2 = hop_of_rows(h2n, rows, "pipe_n", f"{what}: hop of a type-2 output (m×n)")

    def pace_ref(**a: Any) -> Any:
        stages = [a[f"{cut.counts}{w}_t1"] * a[t1n] + a[f"{cut.counts}{w}_t2"] * a[t2n]
                  for w in cut.stages]
        hops = [np.where(bool(a[f"{cut.has}{t}"]), a[h], 0.0) for t, h in ((1, h1n), (2, h2n))]
        return np.maximum.reduce([*stages, *hops]) * 1.0

    pace_q = Quantity(pace_n, f"{what}: pace (slowest stage or hop)", "s",
                      "MAX(" + ",".join([*(_stage(cut, w, t1n, t2n) for w in cut.stages),
                                         _sent(cut, 1, h1n), _sent(cut, 2, h2n)]) + ")",
                      pace_ref, fmt="time",
                      doc="A micro-batch leaves every pace; a hop slower than every stage "
                          "sets it.")

    def lat_ref(**a: Any) -> Any:
        return (a["pp_n_t1"] * a[t1n] + a["pp_n_t2"] * a[t2n] + a[f"{cut.hops}1"] * a[h1n]
                + a[f"{cut.hops}2"] * a[h2n]
                + (a[micro] - 1) * a[pace_n])

    lat_q = Quantity(lat_n, f"{what} latency, one batch", "s",
                     f"{{pp_n_t1}}*{{{t1n}}}+{{pp_n_t2}}*{{{t2n}}}+{{{cut.hops}1}}*{{{h1n}}}"
                     f"+{{{cut.hops}2}}*{{{h2n}}}+({{{micro}}}-1)*{{{pace_n}}}", lat_ref,
                     fmt="time", doc="Σ layer and hop times of one micro-batch + (M - 1) × "
                                     "the pace (flow shop).")
    return FlowShop(t1, t2, h1, h2, pace_q, lat_q, reused=times is not None)


# The comparison's PP at M used (typed, or the best).
def cheaper(name: str, balanced: str, narrow: str, label: str, *, pick: str | None = None,
            pick_narrow: str | None = None) -> Quantity:
    """The cheaper cut's figure: MIN of the two latencies, or (`pick`) the figure of the
    cut whose latency is lower (ties: the balanced cut)."""
    if pick is None:
        return Quantity(name, label, "s", f"MIN({{{balanced}}},{{{narrow}}})",
                        lambda **a: np.minimum(a[balanced], a[narrow]) * 1.0, fmt="time",
                        doc="The cheaper of the balanced and the narrow cut.")
    return Quantity(name, label, "s",
                    f"IF({{{narrow}}}<{{{balanced}}},{{{pick_narrow}}},{{{pick}}})",
                    lambda **a: np.where(a[narrow] < a[balanced], a[pick_narrow],
                                         a[pick]) * 1.0, fmt="time",
                    doc="The cut with the lower latency's.")


def cut_used(name: str, balanced: str, narrow: str, label: str = "PP stage cut used"
             ) -> Quantity:
    n, b = NARROW_NAME, BALANCED_NAME
    return Quantity(name, label, "",
                    f'IF({{{narrow}}}<{{{balanced}}},"{n}","{b}")',
                    lambda **a: np.where(a[narrow] < a[balanced], n, b).astype(object)
                    if np.ndim(a[narrow]) else (n if a[narrow] < a[balanced] else b),
                    fmt="text",
                    doc="The cheaper at M used. balanced: ceil(L/G) layers a stage; narrow: "
                        "hops carry m·min(k,n).")


PP_FLOW = flow_shop("pp_", "mb_rows", "pp_m", pace="pp_pace_bal", latency="pp_latency_bal",
                    what="PP, balanced cut")
PP_NARROW = flow_shop("pn_", "mb_rows", "pp_m", pace="pp_pace_narrow",
                      latency="pp_latency_narrow", what="PP, narrow cut", cut=NARROW_CUT,
                      times="pp_")
LAT_M = cheaper("pp_latency_m", "pp_latency_bal", "pp_latency_narrow",
                "PP latency with M micro-batches")
PACE = cheaper("pp_pace", "pp_latency_bal", "pp_latency_narrow", "PP pace: slowest stage or hop",
               pick="pp_pace_bal", pick_narrow="pp_pace_narrow")
CUT = cut_used("pp_cut", "pp_latency_bal", "pp_latency_narrow",
               "PP stage cut used (its figures below follow it)")


# A stream of batches at its best: M = 1 (micro-batches only add re-reads and hop latencies)
# and the cut with the faster pace there (the comparison's and every sweep row's).
def stream_best(name: str, rows: str, balanced: str, narrow: str, label: str) -> Quantity:
    """`rows` / the faster of the two cuts' paces at M = 1."""
    return Quantity(name, label, "rows/s", f"{{{rows}}}/MIN({{{balanced}}},{{{narrow}}})",
                    lambda **a: a[rows] / np.minimum(a[balanced], a[narrow]), fmt="sci",
                    doc="M = 1 and the cut with the faster pace: micro-batching does not raise "
                        "it (it re-reads the weights).")


ONE_FLOW = flow_shop("p1_", "pipe_m", "pp_m", pace="pp_pace_one_bal",
                     what="PP at M = 1, balanced cut")
ONE_NARROW = flow_shop("p1n_", "pipe_m", "pp_m", pace="pp_pace_one_narrow",
                       what="PP at M = 1, narrow cut", cut=NARROW_CUT, times="p1_")
STREAM_ONE = stream_best("pp_tput_stream_one", "pipe_m", "pp_pace_one_bal",
                         "pp_pace_one_narrow", "PP stream throughput at M = 1")

# The best M: a helper table over the candidates, for the comparison's m and each sweep row.
CAND_M = Input("cand_m", "candidate M", fmt="int", helper=True)
#: Each candidate's latency is ranked × (1 + TIE_NUDGE · M): exact ties (G = 1, M dividing
#: m) then go to the smaller M in every engine, whatever its last-digit rounding.
TIE_NUDGE = 1e-12


def _case_rows(name: str, m_expr: str, m_ref: Any, label: str) -> Quantity:
    """ceil(m / M) for candidate M, blank past min(m, MAX_MICRO) or where m is no number."""

    def reference(**a: Any) -> Any:
        m = m_ref(a)
        cand = np.asarray(a["cand_m"], dtype=float)
        if not is_number(m):
            return np.full(len(cand), "", dtype=object)
        return _blank_unless(cand <= min(m, MAX_MICRO), np.ceil(m / cand))

    return Quantity(name, label, "",
                    f'IF(ISNUMBER({m_expr}),IF({{cand_m}}<=MIN({m_expr},{MAX_MICRO}),'
                    f'ROUNDUP({m_expr}/{{cand_m}},0),""),"")', reference, fmt="int")


def _rank(name: str, balanced: str, narrow: str, label: str) -> Quantity:
    """The cheaper cut's latency at each candidate M, nudged so ties go to the smaller M."""
    return Quantity(name, label, "s",
                    f"MIN({{{balanced}}},{{{narrow}}})*(1+{TIE_NUDGE:.0E}*{{cand_m}})",
                    lambda **a: np.minimum(a[balanced], a[narrow])
                    * (1 + TIE_NUDGE * np.asarray(a["cand_m"], dtype=float)), fmt="time",
                    doc="The cheaper cut's latency × (1 + 1E-12 · M): exact ties go to the "
                        "smaller M.")


@dataclass(frozen=True)
class Case:
    """One m whose best M the helper table finds, over both cuts: its columns and names.

    The table is 512 rows a case, so a case takes four cells a row: the rows per
    micro-batch, the two layer types' times, and the ranking, whose formula holds both cuts'
    latencies with their hops and paces written inside (`composed`: each still defined once,
    by flow_shop)."""

    rows: Quantity
    t1: Quantity
    t2: Quantity
    rank: Quantity

    def columns(self) -> tuple[Quantity, ...]:
        return (self.rows, self.t1, self.t2, self.rank)


def case(prefix: str, m_expr: str, m_ref: Any, what: str) -> Case:
    rows = _case_rows(prefix + "rows", m_expr, m_ref, f"{what}: rows per micro-batch")
    flow = flow_shop(prefix, rows.name, "cand_m", what=f"{what}, balanced cut")
    narrow = flow_shop(prefix + "n_", rows.name, "cand_m", what=f"{what}, narrow cut",
                       cut=NARROW_CUT, times=prefix)

    def latency(cut: FlowShop) -> Quantity:  # pace inside, then the hops inside both
        return composed(composed(cut.latency, cut.pace), flow.h1, flow.h2)

    rank = composed(_rank(prefix + "rank", flow.latency.name, narrow.latency.name,
                          f"{what}: ranking"), latency(flow), latency(narrow))
    return Case(rows, _guarded(flow.t1, rows.name), _guarded(flow.t2, rows.name),
                _guarded(rank, rows.name))


def best_of(rank: str) -> str:
    """The template of the first candidate M with the least ranked latency (1 if none)."""
    return f"IF(COUNT({{{rank}[]}})=0,1,MATCH(MIN({{{rank}[]}}),{{{rank}[]}},0))"


def best_value(ranks: Any) -> float:
    vals, ok = _numeric(ranks)
    return float(np.nanargmin(vals) + 1) if ok.any() else 1.0


MAIN_CASE = case("pc_", "{pipe_m}", lambda a: a["pipe_m"], "input m")
BEST_M = Quantity("pp_best_m", "PP's best M (least one-batch latency, either cut)", "",
                  best_of(MAIN_CASE.rank.name),
                  lambda **a: best_value(a[MAIN_CASE.rank.name]), fmt="int",
                  doc=f"M in 1 ... min(m, {MAX_MICRO}) with the least latency over both "
                      "stage cuts; ties: the smaller.")
M_USED = Quantity("pp_m", "micro-batches M used", "",
                  "IF(ISNUMBER({micro_batches}),{micro_batches},{pp_best_m})",
                  lambda micro_batches, pp_best_m: micro_batches if is_number(micro_batches)
                  else pp_best_m, fmt="int", doc="The typed M, or the best M (auto).")
BEST_ROWS = rf.ceil_div("pp_best_rows", "pipe_m", "pp_best_m", "rows per micro-batch at best M")
BEST_FLOW = flow_shop("pb_", "pp_best_rows", "pp_best_m", pace="pp_pace_best",
                      latency="pp_latency_best_bal", what="PP at its best M, balanced cut")
BEST_NARROW = flow_shop("pbn_", "pp_best_rows", "pp_best_m", pace="pp_pace_best_narrow",
                        latency="pp_latency_best_narrow", what="PP at its best M, narrow cut",
                        cut=NARROW_CUT, times="pb_")
LAT_BEST = cheaper("pp_latency_best", "pp_latency_best_bal", "pp_latency_best_narrow",
                   "PP latency at its best M and cut")


def candidates_table(header_row: int, col: int, cases: tuple[Case, ...]) -> Table:
    return Table(name="pp_best_m", header_row=header_row, col=col, inputs=(CAND_M,),
                 columns=tuple(q for c in cases for q in c.columns()))


def candidate_values() -> dict[str, Any]:
    return {"cand_m": list(range(1, MAX_MICRO + 1))}
