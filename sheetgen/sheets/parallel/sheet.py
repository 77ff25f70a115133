"""The "Parallelism" sheet (Part 3): the pipeline on G GPUs, pipeline vs tensor parallel.

The maths lives by concern: parallel_inputs (inputs, the link, the collective and hop costs),
parallel_pp (GPipe stages and micro-batches), parallel_tp (the Megatron pairing),
parallel_sweep (the batch-size sweep) and parallel_text (live sentences). This module lays
them out: inputs, the pairing, definitions, the comparison, the verdict, the sweep, and the
per-layer table.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sheetgen.core import excel as xn
from sheetgen.core import time_cells
from sheetgen.model import factories as rf
from sheetgen.model.transformer import ONE_SHOT, RING
from sheetgen.model.vocabulary import Block, BlockRow, Quantity, SheetSpec, Table, Text
from sheetgen.sheets.parallel import chart as parallel_chart
from sheetgen.sheets.parallel import pp, sweep, tp
from sheetgen.sheets.parallel.inputs import (
    ALLREDUCE,
    DEFAULT_GPUS,
    EFF_LINK_BW,
    EFF_LINK_LAT,
    FLOOR,
    GATHER,
    GPUS,
    HOST_LAT_IN,
    LINK_BW_IN,
    LINK_CHOICE,
    LINK_LAT_IN,
    MB_ROWS,
    MICRO,
    OVERLAP,
    PAIRING,
    STAGE_LAYERS,
    STAGES,
    TIE_IN,
    TIME_UNIT,
    better,
)
from sheetgen.sheets.parallel.inputs import input_values as _link_inputs
from sheetgen.sheets.parallel.text import Num, Ref, When, ms, sentence, winner

SHEET = "Parallelism"
__all__ = ["DEFAULT_GPUS", "SHEET", "input_values", "sheet"]


def _flag(name: str, label: str, num: str, den: str, uneven: str) -> Quantity:
    return Quantity(name, label, "", f'IF(MOD({{{num}}},{{{den}}})=0,"even","{uneven}")',
                    lambda **a: "even" if a[num] % a[den] == 0 else uneven, fmt="text")


FLAG_SPLIT = _flag("flag_split", "TP split width over G", "tp_split_cols", "par_gpus",
                   "uneven: shards hold ceil(w/G), the rest idle")
FLAG_L = _flag("flag_l", "layers split over G", "n_layers", "par_gpus",
               "uneven: stages hold ceil(L/G), the last fewer")
FLAG_M = _flag("flag_m", "m split over M", "pipe_m", "pp_m",
               "uneven: micro-batches of ceil(m/M) rows")

# The single-GPU column and the better markers.
S_WEIGHTS = rf.same_as("single_weights", "total_weight_bytes", "weights per GPU", "B")
S_ACTS = rf.same_as("single_acts", "peak_live_act", "activations per GPU", "B")
S_MEM, S_FITS = rf.memory_fit("single_mem", "single_fits", "single_weights", "single_acts",
                              "memory per GPU", "fits")
S_WS = rf.same_as("single_ws", "largest_ws", "largest working set per GPU", "B")
S_WS_FITS = rf.at_most("single_ws_fits", "single_ws", "vram_bytes", "fits at once")
S_LAT1 = rf.total("single_latency", "par_layer_time", "latency, one batch", "s", fmt="time",
                  doc="Every layer's predicted time + its launch floor.")
S_COMPUTE = rf.same_as("single_compute", "single_latency", "compute time per GPU", "s",
                       fmt="time")
S_VOLUME = Quantity("single_volume", "link bytes per batch", "B", "0", lambda: 0.0, fmt="sci")
S_COMM = Quantity("single_comm", "link time per batch", "s", "0", lambda: 0.0, fmt="time")
S_LATM = rf.same_as("single_latency_m", "single_latency", "latency with M micro-batches", "s",
                    fmt="time")
S_TPUT = rf.ratio("single_tput", "pipe_m", "single_latency", "throughput", "rows/s", fmt="sci")
S_TPUT_F = rf.same_as("single_tput_flushed", "single_tput", "throughput, one at a time",
                      "rows/s")
S_TPUT_M = rf.same_as("single_tput_m", "single_tput", "throughput with M micro-batches",
                      "rows/s")
S_IDLE = Quantity("single_idle", "idle share", "", "0", lambda: 0.0, fmt="pct")
T_LATM = rf.same_as("tp_latency_m", "tp_latency", "TP latency with M micro-batches", "s",
                    fmt="time")
T_MEM_S = rf.same_as("tp_mem_stream", "tp_mem", "TP memory per GPU", "B")
S_LATB = rf.same_as("single_latency_b", "single_latency", "latency, PP at its best M", "s",
                     fmt="time")
T_LATB = rf.same_as("tp_latency_b", "tp_latency", "TP latency, PP at its best M", "s",
                    fmt="time")
T_TPUT_F = rf.same_as("tp_tput_flushed", "tp_tput", "TP throughput, one at a time", "rows/s")
T_TPUT_M = rf.same_as("tp_tput_m", "tp_tput", "TP throughput with M micro-batches", "rows/s")
S_I1 = rf.first_of("single_i1", "layer_intensity", "layer-1 intensity", "FLOP/B")
S_R1 = rf.first_of("single_r1", "layer_regime", "layer-1 regime", "", fmt="text")


def _row(label: str, unit: str, s: Quantity | None, p: Quantity, t: Quantity | None,
         better: Quantity | None, note: str = "") -> BlockRow:
    return BlockRow(label, [s, p, t, better], unit, note)


def _lower(name: str, p: Quantity, t: Quantity) -> Quantity:
    return better(name, p.name, t.name)


def _higher(name: str, p: Quantity, t: Quantity) -> Quantity:
    return better(name, p.name, t.name, lower_is_better=False)


B_LATM = _lower("b_latm", pp.LAT_M, tp.LATENCY)
B_LATB = _lower("b_latb", pp.LAT_BEST, tp.LATENCY)
B_MEM = _lower("b_mem", pp.MEM, tp.MEM)
B_STREAM = _higher("b_stream", pp.STREAM_ONE, tp.TPUT)
B_FLUSHED = _higher("b_flushed", pp.FLUSHED, T_TPUT_F)
B_FITS = rf.better_fit("b_fits", "pp_fits", "tp_fits")

_USED = "the stages of the cut used"
COMPARISON_ROWS = (
    _row("PP stage cut used", "", None, pp.CUT, None, None,
         "the cheaper at M used (balanced: ceil(L/G) layers a stage; narrow: every hop "
         "carries m·min(k,n)); every PP figure below is this cut's"),
    "Memory per GPU",
    _row("weights", "B", S_WEIGHTS, pp.WEIGHTS, tp.WEIGHTS,
         _lower("b_weights", pp.WEIGHTS, tp.WEIGHTS), f"PP: the fullest of {_USED}"),
    _row("activations (live)", "B", S_ACTS, pp.ACTS, tp.ACTS, _lower("b_acts", pp.ACTS, tp.ACTS),
         "PP at micro-batch rows; TP holds replicated inputs and full partial sums"),
    _row("whole batch held", "B", None, pp.HELD, None, None,
         "PP: stage 1 keeps the input until its last micro-batch has gone in; the last "
         "stage collects the output"),
    _row("total", "B", S_MEM, pp.MEM, tp.MEM, B_MEM, "PP: its fullest GPU (cut used), data "
         "counted where it sits"),
    _row("...if batches stream in and out", "B", None, pp.MEM_STREAM, T_MEM_S,
         _lower("b_mem_stream", pp.MEM_STREAM, T_MEM_S),
         "PP: input fed and output drained one micro-batch at a time"),
    _row("fits on each GPU", "", S_FITS, pp.FITS, tp.FITS, B_FITS),
    _row("largest input + output + weight", "B", S_WS, pp.LARGEST_WORKING_SET,
         tp.LARGEST_WORKING_SET, _lower("b_ws", pp.LARGEST_WORKING_SET, tp.LARGEST_WORKING_SET),
         "one layer's working set per GPU"),
    _row("...fits at once", "", S_WS_FITS, pp.WS_FITS, tp.WS_FITS,
         rf.better_fit("b_ws_fits", "pp_ws_fits", "tp_ws_fits")),
    "Time and communication",
    _row("slowest stage per micro-batch", "s", None, pp.STAGE_MAX, None, None,
         f"of {_USED}"),
    _row("slowest hop per micro-batch", "s", None, pp.HOP_MAX, None, None,
         "of the cut used; when slower than the slowest stage, the link sets the pace"),
    _row("pace (slowest stage or hop)", "s", None, pp.PACE, None, None,
         "a micro-batch leaves the pipeline every pace"),
    _row("what sets the pace", "", None, pp.PACE_BY, None, None),
    _row("compute time per GPU", "s", S_COMPUTE, pp.COMPUTE, tp.COMPUTE,
         _lower("b_compute", pp.COMPUTE, tp.COMPUTE), "PP: its busiest GPU (cut used)"),
    _row("communication volume", "B", S_VOLUME, pp.VOLUME, tp.VOLUME,
         _lower("b_volume", pp.VOLUME, tp.VOLUME), "bytes over all links; PP: the cut "
         "used's hops"),
    _row("communication time", "s", S_COMM, pp.COMM, tp.COMM,
         _lower("b_comm", pp.COMM, tp.COMM), "link busy time; PP: the cut used's hops"),
    _row("latency, one batch, no micro-batching", "s", S_LAT1, pp.LAT_ONE, tp.LATENCY,
         _lower("b_lat1", pp.LAT_ONE, tp.LATENCY), "PP adds the cut used's hops; it cannot "
         "cut this"),
    _row("latency, one batch, M micro-batches", "s", S_LATM, pp.LAT_M, T_LATM, B_LATM,
         "M as used (typed, or the best); TP and one GPU run the batch whole"),
    _row("latency, one batch, PP at its best M", "s", S_LATB, pp.LAT_BEST, T_LATB,
         B_LATB, "PP at the M and cut with the least latency (the helper table)"),
    _row("throughput, stream of batches", "rows/s", S_TPUT, pp.STREAM_ONE, tp.TPUT, B_STREAM,
         "steady state, PP at its best: M = 1, the cut with the faster pace there; TP "
         "without overlap: m / latency"),
    _row("...stream with M micro-batches", "rows/s", S_TPUT_M, pp.STREAM, T_TPUT_M,
         _higher("b_stream_m", pp.STREAM, T_TPUT_M),
         "micro-batching does not raise PP's stream rate"),
    _row("throughput, one batch at a time", "rows/s", S_TPUT_F, pp.FLUSHED, T_TPUT_F,
         B_FLUSHED, "m / latency (flushed pipeline, M micro-batches)"),
    _row("bubble fraction", "", None, pp.BUBBLE, None, None, "GPipe: (G-1)/(M+G-1)"),
    _row("idle share of GPU time", "", S_IDLE, pp.IDLE, tp.IDLE,
         _lower("b_idle", pp.IDLE, tp.IDLE), "PP: bubble, hops, uneven stages; TP: waits"),
    "Per-GPU matmul",
    _row("layer-1 intensity", "FLOP/B", S_I1, pp.LAYER1_INTENSITY, tp.LAYER1_INTENSITY, None,
         "TP shrinks each GPU's matmul"),
    _row("layer-1 regime", "", S_R1, pp.LAYER1_REGIME, tp.LAYER1_REGIME, None),
)

def _pct_sooner(slow: str, fast: str) -> Num:
    return Num(f"100*(1-{{{fast}}}/{{{slow}}})", lambda a: 100 * (1 - a[fast] / a[slow]), 2)


def _pct_more(high: str, low: str) -> Num:
    return Num(f"100*({{{high}}}/{{{low}}}-1)", lambda a: 100 * (a[high] / a[low] - 1), 2)


def _rate(name: str) -> Num:
    return Num(f"{{{name}}}", lambda a: a[name])


def _gb(name: str) -> Num:
    return Num(f"{{{name}}}/1E+09", lambda a: a[name] / 1e9)


MARGIN = Num("100*{tie_margin}", lambda a: 100 * a["tie_margin"], 2)
ms_factor = time_cells.TIME_FACTORS["ms"]


def ahead(first: str, second: str, *, lower: bool) -> tuple[str, Any]:
    """(condition, its Python test): `first` leads `second` by more than the engines'
    rounding (relative rf.TIE_RTOL), so two sides equal in exact arithmetic (one GPU, where
    PP and TP are the same run) read as equal in every engine, not as whichever the last
    digit favours."""
    if lower:
        return (f"{{{first}}}<{{{second}}}*(1-{rf.TIE_RTOL:.0E})",
                lambda a: bool(xn.lt(a[first], a[second] * (1 - rf.TIE_RTOL))))
    return (f"{{{first}}}>{{{second}}}*(1+{rf.TIE_RTOL:.0E})",
            lambda a: bool(xn.gt(a[first], a[second] * (1 + rf.TIE_RTOL))))


def lead(better_: str, p: str, t: str, *, lower: bool, verb: str, word: str) -> When:
    """Who leads a comparison row and by how much (|a - b| / the worse side, in %); under
    the tie margin, "a tie" and still by how much, so a near-tie reads as one; two equal
    sides (to the engines' rounding), "a tie: the two are equal"."""
    def side(name: str, first: str, second: str) -> tuple[str | Num, ...]:
        pct = _pct_sooner(second, first) if lower else _pct_more(first, second)
        return (f"{name} parallel {verb} ", pct, f" % {word}")

    pp_side, tp_side = side("pipeline", p, t), side("tensor", t, p)
    margin = (", inside the ", MARGIN, " % tie margin")
    near = When(*ahead(p, t, lower=lower), ("a tie: ", *pp_side, *margin),
                (When(*ahead(t, p, lower=lower), ("a tie: ", *tp_side, *margin),
                      ("a tie: the two are equal",)),))
    return winner(better_, pp_side, tp_side, (near,))


def _typed_m_clause() -> When:
    """With a typed M that is not the best: what the best M would give."""
    return When("AND(ISNUMBER({micro_batches}),{pp_m}<>{pp_best_m})",
                lambda a: isinstance(a["micro_batches"], int | float)
                and a["pp_m"] != a["pp_best_m"],
                ("; at its best M = ", _rate("pp_best_m"), " pipeline takes ",
                 ms("pp_latency_best"), " ms, ",
                 lead("b_latb", "pp_latency_best", "tp_latency", lower=True,
                      verb="finishes", word="sooner")))


V_LATENCY = sentence("verdict_latency", "latency", (
    "Latency: ",
    lead("b_latm", "pp_latency_m", "tp_latency", lower=True, verb="finishes one batch",
         word="sooner"),
    " (tensor ", ms("tp_latency"), " ms, pipeline ", ms("pp_latency_m"), " ms with ",
    _rate("pp_m"),
    When("{pp_m}=1", lambda a: a["pp_m"] == 1, (" micro-batch",), (" micro-batches",)),
    When("ISNUMBER({micro_batches})", lambda a: isinstance(a["micro_batches"], int | float),
         (" as typed",), (", its best M",)),
    _typed_m_clause(),
    "; ", ms("pp_latency_one"), " ms without micro-batching, ",
    ms("single_latency"), " ms on one GPU).",
))
V_THROUGHPUT = sentence("verdict_throughput", "throughput", (
    "Throughput: for a stream of batches ",
    lead("b_stream", "pp_tput_stream_one", "tp_tput", lower=False, verb="sustains",
         word="more"),
    " (pipeline ", _rate("pp_tput_stream_one"), " vs tensor ", _rate("tp_tput"),
    " rows/s",
    When(*ahead("pp_tput_stream_one", "tp_tput", lower=False), (
        "; PP's lead is TP's all-reduce time not hidden behind compute, ",
        Num(f"{ms_factor:g}*({{tp_comm}}-{{tp_hidden}})",
            lambda a: ms_factor * (a["tp_comm"] - a["tp_hidden"])),
        " ms per batch: without it TP would sustain ",
        Num("{pipe_m}/{tp_compute}", lambda a: a["pipe_m"] / a["tp_compute"]), " rows/s"),
        ()),
    "); one batch at a time, ",
    lead("b_flushed", "pp_tput_flushed", "tp_tput", lower=False, verb="does", word="more"),
    " (pipeline ", _rate("pp_tput_flushed"), " vs tensor ", _rate("tp_tput"), " rows/s).",
))
_FIT_WORDS = {"both": "both fit", "pipeline": "only pipeline parallel fits",
              "tensor": "only tensor parallel fits", "neither": "neither fits"}
V_MEMORY = sentence("verdict_memory", "memory", (
    "Memory per GPU, counted where it sits: pipeline ", _gb("pp_mem"), " GB (its fullest GPU "
    "holds ", _gb("pp_held"), " GB of the whole batch's input or output besides its weights; ",
    _gb("pp_mem_stream"), " GB if batches stream in and out), tensor ", _gb("tp_mem"),
    " GB of ", _gb("vram_bytes"), " GB (",
    When('{b_fits}="both"', lambda a: a["b_fits"] == "both", (_FIT_WORDS["both"],), (
        When('{b_fits}="pipeline"', lambda a: a["b_fits"] == "pipeline",
             (_FIT_WORDS["pipeline"],), (
                 When('{b_fits}="tensor"', lambda a: a["b_fits"] == "tensor",
                      (_FIT_WORDS["tensor"],), (_FIT_WORDS["neither"],)),)),)),
    "; ", lead("b_mem", "pp_mem", "tp_mem", lower=True, verb="needs", word="less"),
    "): PP holds 1/G of the layers, TP 1/G of every weight but whole activations.",
))
V_COMM = sentence("verdict_comm", "communication", (
    When("{par_gpus}>1", lambda a: a["par_gpus"] > 1, (
        "Communication: tensor parallel runs ", _rate("tp_ar_count"), " ", Ref("tp_ar_used"),
        " all-reduces of ",
        Num("{allreduce_bytes}/1E+06", lambda a: a["allreduce_bytes"] / 1e6), " MB (",
        ms("tp_comm"), " ms per batch, ",
        Num("100*{tp_idle}", lambda a: 100 * a["tp_idle"], 2), " % of its latency; bus "
        "bandwidth ", Num("{allreduce_bytes}/{allreduce_time}*2*({par_gpus}-1)/{par_gpus}"
                          "/1E+09", lambda a: a["allreduce_bytes"] / a["allreduce_time"] * 2
                          * (a["par_gpus"] - 1) / a["par_gpus"] / 1e9),
        " GB/s); pipeline parallel sends each micro-batch's activation across its stage "
        "boundaries (", Num("{stages_used}-1", lambda a: a["stages_used"] - 1), " here; ",
        ms("pp_comm"), " ms per batch, overlapped with compute) and its pace is set by ",
        Ref("pp_pace_by"), ". Its stage cut: balanced (ceil(L/G) layers a stage) ",
        ms("pp_latency_bal"), " ms, narrow (every hop carries m·min(k,n), stages one layer "
        "apart) ", ms("pp_latency_narrow"), " ms; the sheet uses the cheaper, the ",
        Ref("pp_cut"), " cut."),
        ("Communication: none on one GPU.",)),
))
V_MICRO = sentence("verdict_micro", "micro-batching", (
    "Micro-batching: ", _rate("pp_m"),
    " micro-batches cut pipeline parallel's one-batch latency from ", ms("pp_latency_one"),
    " to ", ms("pp_latency_m"), " ms (bubble ",
    Num("100*{pp_bubble}", lambda a: 100 * a["pp_bubble"], 2),
    " %), but not its stream rate (", _rate("pp_tput_stream_one"), " rows/s at M = 1, ",
    _rate("pp_tput_stream"), " at M = ", _rate("pp_m"),
    "): back-to-back batches already keep every stage busy at M = 1, so the pipeline is "
    "full without micro-batches; they only add per-micro-batch costs (hop latencies, a "
    "launch floor per layer, and weight re-reads where a micro-batch is memory-bound).",
))
# TP helps one batch when each pair of layers (one all-reduce) saves more compute than the
# all-reduce costs: 4·m·w_s·w_ar·(1 - 1/G)/P > s·b·m·w_ar/B + n·λ, an all-reduce of s
# bandwidth and n latency steps, that is w_s > σ·b·P/(2B) + ν·G·λ·P/(2·m·w_ar) with
# σ = s·G/(2(G-1)), ν = n/(2(G-1)): 1 and 1 for the ring (s = 2(G-1)/G, n = 2(G-1)), G/2 and
# 1/(2(G-1)) one-shot (G-1, 1), 1 and 1/(G-1) two-shot (2(G-1)/G, 2) (compute-bound layers;
# the all-reduced width cancels out of the bandwidth term).
_USED = "{tp_ar_used}"
_SIGMA = f'IF({_USED}="{ONE_SHOT}",{{par_gpus}}/2,1)'
_NU = (f'IF({_USED}="{RING}",1,IF({_USED}="{ONE_SHOT}",1/(2*MAX(1,{{par_gpus}}-1)),'
       f'1/MAX(1,{{par_gpus}}-1)))')
_BW_TERM = f"{_SIGMA}*{{{rf.OUT_BYTES}}}*{{attainable_flops}}/(2*{{par_link_bw}}*{{link_eff}})"
_LAT_TERM = (f"{_NU}*{{par_gpus}}*{{par_link_latency}}*{{attainable_flops}}"
             "/(2*{pipe_m}*{tp_ar_cols})")


def _sigma(a: dict[str, Any]) -> float:
    return a["par_gpus"] / 2 if a["tp_ar_used"] == ONE_SHOT else 1.0


def _nu(a: dict[str, Any]) -> float:
    steps = max(1.0, a["par_gpus"] - 1)
    return {RING: 1.0, ONE_SHOT: 1 / (2 * steps)}.get(a["tp_ar_used"], 1 / steps)


def _bw_term(a: dict[str, Any]) -> float:
    return (_sigma(a) * a[rf.OUT_BYTES] * a["attainable_flops"]
            / (2 * a["par_link_bw"] * a["link_eff"]))


def _lat_term(a: dict[str, Any]) -> float:
    return (_nu(a) * a["par_gpus"] * a["par_link_latency"] * a["attainable_flops"]
            / (2 * a["pipe_m"] * a["tp_ar_cols"]))


_TP_HELPS = f"{{tp_split_cols}}>{_BW_TERM}+{_LAT_TERM}"
V_TP = sentence("verdict_tp", "when TP helps", (
    When("{par_gpus}>1", lambda a: a["par_gpus"] > 1, (
        "TP cuts one batch's time only where each pair of layers saves more compute than its "
        "all-reduce costs: split width w_s > σ·b·P/(2B) + ν·G·λ·P/(2·m·w_ar), σ = ν = 1 for "
        "a ring all-reduce. Here, with the ", Ref("tp_ar_used"), " all-reduce (σ = ",
        Num(_SIGMA, _sigma), ", ν = ", Num(_NU, _nu), "), ", _rate("tp_split_cols"),
        When(_TP_HELPS, lambda a: a["tp_split_cols"] > _bw_term(a) + _lat_term(a),
             (" > ",), (" ≤ ",)),
        Num(_BW_TERM, _bw_term), " + ", Num(_LAT_TERM, _lat_term),
        When(_TP_HELPS, lambda a: a["tp_split_cols"] > _bw_term(a) + _lat_term(a),
             (", so TP helps (compute-bound layers)",),
             (", so TP does not help (compute-bound layers)",)),
        "; it takes ", ms("tp_latency"), " ms against ", ms("single_latency"),
        " ms on one GPU."),
        ("TP needs 2 GPUs or more.",)),
))
VERDICT = (V_LATENCY, V_THROUGHPUT, V_MEMORY, V_COMM, V_MICRO, V_TP)

LASTING = (
    "PP's link traffic is one activation per stage boundary per micro-batch; TP's is an "
    "all-reduce per pair of layers. TP's grows with the layer count, PP's with G only, so "
    "PP tolerates slower links.",
    "TP cuts one batch's time only where w_s > b·P/(2B) + G·λ·P/(2·m·w_ar) (compute-bound "
    "layers, a ring all-reduce; the verdict above evaluates it for the algorithm used): the "
    "split width w_s must be wide against the "
    "link's bytes per FLOP, and the latency term grows as m or the all-reduced width w_ar "
    "shrinks. Over a slow link or at small m TP can be slower than one GPU.",
    "Micro-batches never raise PP's stream rate above M = 1's (M·pace(m/M) ≥ pace(m): each "
    "micro-batch repeats the weight reads, a launch floor per layer and the hop latency); "
    "they cut one batch's latency only while those costs stay below the bubble they "
    "shrink.",
    "Across nodes practice combines the two: TP inside a node over NVLink, PP across nodes "
    "over the slower network (Megatron-LM).",
)
DEFINITIONS = (
    "Definitions, the same for every column. Latency: one batch of m rows, first input to "
    "last output. With M micro-batches PP takes Σ stage and hop times of one micro-batch + "
    "(M - 1) × the slowest of them; TP and one GPU run the batch whole.",
    "Throughput, stream of batches: rows/s in the steady state of back-to-back batches. PP: "
    "m / its slowest stage or hop at M = 1 with the faster stage cut there, its best "
    "(consecutive batches keep every stage busy; M micro-batches only add re-reads); TP "
    "and one GPU: m / latency (the share of TP's all-reduces not hidden behind compute "
    "stalls every GPU, so its stream runs one batch after another).",
    "Throughput, one batch at a time: m / latency (a flushed pipeline). Bubble fraction: "
    "GPipe's (G-1)/(M+G-1), the idle share with equal stages and hidden hops; the idle-share "
    "row counts hops, unequal stages, unused GPUs and all-reduce waits too.",
)

INPUT_BLOCK = Block(
    row=4, col=0, header=("Parallelism input", "Value", "Unit", "Notes"),
    rows=(
        *(BlockRow(i.label, [i], i.unit, i.doc) for i in (
            GPUS, MICRO, LINK_CHOICE, HOST_LAT_IN, LINK_BW_IN, LINK_LAT_IN, PAIRING, ALLREDUCE,
            GATHER,
            TIE_IN, OVERLAP)),
        "Derived",
        BlockRow(EFF_LINK_BW.label, [EFF_LINK_BW], "B/s", "times LINK_EFF (Inputs sheet)"),
        BlockRow(EFF_LINK_LAT.label, [EFF_LINK_LAT], "s"),
        BlockRow(FLOOR.label, [FLOOR], "s", FLOOR.doc),
        *(BlockRow(q.label, [q], "", q.doc) for q in (pp.BEST_M, pp.M_USED, STAGE_LAYERS,
                                                      STAGES, MB_ROWS)),
    ),
)
#: The side blocks start right of the comparison's note column, so the input block's notes
#: overflow into empty cells instead of being cut off by the Splits table.
SIDE_COL = 8
FLAG_BLOCK = Block(row=4, col=SIDE_COL, header=("Splits", "Value"),
                   rows=tuple(BlockRow(q.label, [q]) for q in (FLAG_SPLIT, FLAG_L, FLAG_M)))
COUNT_BLOCK = Block(
    row=9, col=SIDE_COL, header=("Layer counts", "type 1", "type 2"),
    rows=(BlockRow("all layers", [pp.N_T1, pp.N_T2]),
          *(BlockRow(f"PP stage {w}", [pp.STAGE_COUNTS[2 * i], pp.STAGE_COUNTS[2 * i + 1]])
            for i, w in enumerate(("1", "2", "last"))),
          BlockRow("PP hops after", [pp.HOPS_T1, pp.HOPS_T2]),
          BlockRow("...any", [pp.HAS_H1, pp.HAS_H2]),
          *(BlockRow(f"narrow cut: stage {w}", [pp.NARROW_COUNTS[2 * i],
                                                pp.NARROW_COUNTS[2 * i + 1]])
            for i, w in enumerate(("1", "2", "3", "last"))),
          BlockRow("narrow cut: hops after", list(pp.NARROW_HOPS)),
          BlockRow("...any", list(pp.NARROW_HAS))),
)
_F, _B, _N, _BN = pp.PP_FLOW, pp.BEST_FLOW, pp.PP_NARROW, pp.BEST_NARROW
_O, _ON = pp.ONE_FLOW, pp.ONE_NARROW
CUT_BEST = pp.cut_used("pp_cut_best", "pp_latency_best_bal", "pp_latency_best_narrow",
                       "PP stage cut at its best M")
CUT_SHOWN = rf.same_as("pp_cut_shown", "pp_cut", "PP stage cut used", "", fmt="text")
FLOW_BLOCK = Block(
    row=COUNT_BLOCK.row + len(COUNT_BLOCK.rows) + 2, col=SIDE_COL,
    header=("PP per micro-batch", "M used", "best M", "M = 1 (stream)"),
    rows=(BlockRow("rows per micro-batch", [None, pp.BEST_ROWS, None]),
          BlockRow("type-1 layer", [_F.t1, _B.t1, _O.t1], "s"),
          BlockRow("type-2 layer", [_F.t2, _B.t2, _O.t2], "s"),
          BlockRow("hop of a type-1 output (m×k)", [_F.h1, _B.h1, _O.h1], "s"),
          BlockRow("hop of a type-2 output (m×n)", [_F.h2, _B.h2, _O.h2], "s"),
          "Balanced cut (ceil(L/G) layers a stage)",
          BlockRow("pace", [_F.pace, _B.pace, _O.pace], "s"),
          BlockRow("latency", [_F.latency, _B.latency, None], "s"),
          "Narrow cut (every hop carries m·min(k,n))",
          BlockRow("pace", [_N.pace, _BN.pace, _ON.pace], "s"),
          BlockRow("latency", [_N.latency, _BN.latency, None], "s"),
          BlockRow("cut used (the cheaper)", [CUT_SHOWN, CUT_BEST, None])),
)
_PAIR_ROW = INPUT_BLOCK.row + len(INPUT_BLOCK.rows) + 2
PAIRING_BLOCK = Block(
    row=_PAIR_ROW, col=0, header=("Tensor-parallel pairing (Megatron-LM)", "Value", "Unit",
                                  "Notes"),
    rows=(
        *(BlockRow(q.label, [q], q.unit, q.doc) for q in (
            tp.ROW_TYPE, tp.WHY, tp.AR_NAME, tp.AR_COLS, tp.SPLIT_COLS, tp.SHARD, tp.AR_BYTES,
            tp.AR_COUNT, tp.COL_COUNT, tp.AR_USED, tp.AR_TIME, tp.ALGBW, tp.BUSBW, tp.AR_TOTAL,
            tp.HIDDEN)),
        BlockRow(tp.OUT_STATE.label, [tp.OUT_STATE], "", "layer 1 row-split: its replicated "
                 "input is sliced for free"),
        *(BlockRow(q.label, [q], q.unit, q.doc) for q in (
            tp.LAST_SHARDED, tp.GATHER_BYTES, tp.GATHER_TIME, tp.GATHER_USED)),
        "Pipeline: the whole batch where it sits",
        *(BlockRow(q.label, [q], q.unit, q.doc) for q in (pp.BATCH_IN, pp.BATCH_OUT)),
        "What the other pairing would cost",
        *(BlockRow(q.label, [q], q.unit, q.doc) for q in (
            tp.OTHER_COLS, tp.OTHER_BYTES, tp.OTHER_COUNT, tp.OTHER_TIME, tp.OTHER_TOTAL)),
    ),
)
_DEF_ROW = PAIRING_BLOCK.row + len(PAIRING_BLOCK.rows) + 2
COMPARISON = Block(
    row=_DEF_ROW + len(DEFINITIONS) + 1, col=0,
    header=("Per forward pass", "single GPU", "pipeline parallel", "tensor parallel", "better",
            "unit", "note"),
    rows=COMPARISON_ROWS,
)
#: Prose (the title notes, definitions, verdict, what stays true) wraps inside the
#: comparison's width, so it stays on screen and inside the printed page.
PROSE_COLS = len(COMPARISON.header)
VERDICT_BLOCK = Block(row=COMPARISON.row + len(COMPARISON.rows) + 2, col=0,
                      header=("Verdict (live)", ""),
                      rows=tuple(BlockRow(q.label, [q]) for q in VERDICT),
                      value_span=PROSE_COLS - 1)
_LASTING_ROW = VERDICT_BLOCK.row + len(VERDICT_BLOCK.rows) + 3
SWEEP = sweep.table(_LASTING_ROW + len(LASTING) + 3)
TABLE = Table(name="parallel_layers", header_row=SWEEP.first_row + len(sweep.DEFAULT_ROWS) + 3,
              col=0, inputs=(pp.PAR_LAYER,), columns=(*pp.COLUMNS, *tp.COLUMNS))
#: The best-M helper table: right of the sweep chart's (hidden) data, both variants' widths.
BEST_COL = parallel_chart.right_edge((SWEEP, TABLE)) + 2
#: 512 candidate rows a formula ranks: not for paper
BEST = replace(pp.candidates_table(TABLE.header_row, BEST_COL, (pp.MAIN_CASE, *sweep.CASES)),
               prints=False)


def sheet(google: bool = False) -> SheetSpec:
    """`google`: the sweep chart's Google Sheets variant (LOG10 helpers, parallel_chart)."""
    widths = {0: 40.0, 1: 16.0, 2: 16.0, 3: 16.0, 4: 12.0, 5: 22.0, 6: 40.0, SIDE_COL: 26.0}
    last = max(len(t.all_columns()) for t in (TABLE, SWEEP))
    widths |= {i: 13.0 for i in range(7, last) if i != SIDE_COL}
    widths |= {i: 13.0 for i in range(BEST_COL, BEST_COL + len(BEST.all_columns()))}
    texts = [
        Text(0, 0, "The pipeline on G GPUs: pipeline vs tensor parallelism", "title"),
        Text(1, 0, "PP (GPipe): G stages of ceil(L/G) layers, M micro-batches. TP "
             "(Megatron-LM): column-split then row-split layers, an all-reduce of the "
             "narrower activation after each row-split layer (ring, one-shot or two-shot, "
             "below).", span=PROSE_COLS),
        Text(2, 0, "Layers, shapes, dtype and efficiencies come from the Pipeline and Inputs "
             "sheets; every matmul call pays the launch floor below (PP once per layer and "
             "micro-batch); link bandwidth is per direction; TP's all-reduces overlap compute "
             "only as far as the input above says (none by default).",
             span=PROSE_COLS),
        *(Text(_DEF_ROW + i, 0, t, span=PROSE_COLS) for i, t in enumerate(DEFINITIONS)),
        Text(_LASTING_ROW - 1, 0, "What stays true whatever the numbers", "subtitle"),
        *(Text(_LASTING_ROW + i, 0, t, span=PROSE_COLS) for i, t in enumerate(LASTING)),
        Text(SWEEP.header_row - 2, 0, "Batch-size sweep", "subtitle"),
        Text(SWEEP.header_row - 1, 0, "Each row is the whole model at its m; PP uses the "
             "row's own best M. Type an m, or blank it and give a multiple of the input m. "
             "Switch the link to the host link to see the latency verdict flip.",
             span=PROSE_COLS),
        Text(TABLE.header_row - 1, 0, "Per layer", "subtitle"),
        Text(BEST.header_row - 2, BEST_COL, "PP's best micro-batch count: one batch's latency "
             f"at every candidate M = 1 ... min(m, {pp.MAX_MICRO}), both stage cuts, for the "
             "input m and each sweep row", "subtitle"),
        Text(BEST.header_row - 1, BEST_COL, "MIN/MATCH on the ranking column (the cheaper "
             "cut's latency) picks the first least latency (ties to the smaller M); blank past "
             "min(m, 512). Hidden like the chart data: unhide the columns to read it.")
    ]
    base = SheetSpec(
        name=SHEET,
        time_unit=TIME_UNIT,
        texts=tuple(texts),
        blocks=(INPUT_BLOCK, FLAG_BLOCK, FLOW_BLOCK, PAIRING_BLOCK, COMPARISON, VERDICT_BLOCK),
        tables=(TABLE, SWEEP, BEST),
        column_widths=widths,
        freeze=None,
        regime_columns=("mb_regime", "tp_regime"),
        hidden_spans=((BEST_COL, BEST_COL + len(BEST.all_columns()) - 1),),
    )
    # the same place in the xlsx and the Google variant: right of the wider one
    right = max(_right(parallel_chart.with_chart(base, SWEEP, g, clear_of=(TABLE,)))
                for g in (False, True))
    return _with_helpers(parallel_chart.with_chart(base, SWEEP, google, clear_of=(TABLE,)),
                         right + 2)


def _right(spec: SheetSpec) -> int:
    return max([t.col + len(t.all_columns()) - 1 for t in spec.tables]
               + [last for _, last in spec.hidden_spans])


def _with_helpers(spec: SheetSpec, col: int) -> SheetSpec:
    """The layer counts only feed formulas ("...any FALSE TRUE" read as noise at the top
    right of the printed sheet): right of everything else, in hidden columns, so they
    neither show nor print."""
    counts = replace(COUNT_BLOCK, row=INPUT_BLOCK.row, col=col)
    return replace(spec, blocks=(*spec.blocks, counts),
                   hidden_spans=(*spec.hidden_spans, (col, col + len(counts.header) - 1)))


def input_values(layers: int, gpus: int, micro_batches: int | None, link_bw: float | None,
                 link_latency: float | None, **link: Any) -> dict[str, Any]:
    """`micro_batches` None: auto, the best M."""
    return {**_link_inputs(gpus, micro_batches, link_bw, link_latency, **link),
            "par_layer": list(range(1, layers + 1)), **sweep.input_values(),
            **pp.candidate_values()}
