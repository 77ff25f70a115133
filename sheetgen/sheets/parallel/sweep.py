"""The batch-size sweep: one GPU, PP and TP at several m, to show where the verdict flips.

Each row is the whole model at its m in closed form. The chain has only two layer types, so
a schedule needs only each type's per-layer time and how many of each a stage (or the TP
split) holds: the layer counts come from the per-layer table (e.g. `pp_s1_t1`, the type-1
layers of stage 1), the times from the roofline. Each row runs PP with M' = min(M, m)
micro-batches (M as typed, fewer when the batch has fewer rows). At the input m the row
equals the comparison block above (a test holds them together).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.model import factories as rf
from sheetgen.model.vocabulary import Input, Quantity, Table, Validation
from sheetgen.sheets.parallel.inputs import all_gather, hop, ring_allreduce

_WHOLE = Validation("whole_min", minimum=1, maximum=2**31 - 1, message="A positive whole number")
TYPED_M = Input("sweep_m_typed", "m", "", fmt="int", validation=_WHOLE,
                doc="Rows of this sweep row; blank: × input m instead")
TIMES_M = Input("sweep_times", "or × input m", "", fmt="general",
                validation=Validation("decimal_range", minimum=0.0001, maximum=1e6,
                                      message="A multiple of the Pipeline sheet's m"))
DEFAULT_ROWS: tuple[tuple[int | None, float | None], ...] = (
    (1, None), (8, None), (64, None), (512, None), (1024, None), (2048, None), (None, 1),
    (None, 4))

def _is_number(v: Any) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool) \
        and not np.isnan(v)


def _status(sweep_m_typed: Any, sweep_times: Any) -> Any:
    def one(m: Any, times: Any) -> str:
        if _is_number(m):
            return "ok" if m >= 1 else "m must be 1 or more"
        if _is_number(times):
            return "ok" if times > 0 else "× must be positive"
        return "type m or × input m"

    return np.array([one(m, t) for m, t in zip(sweep_m_typed, sweep_times, strict=True)],
                    dtype=object)


SW_CHECK = Quantity(
    "sw_check", "row", "",
    'IF(ISNUMBER({sweep_m_typed}),IF({sweep_m_typed}>=1,"ok","m must be 1 or more"),'
    'IF(ISNUMBER({sweep_times}),IF({sweep_times}>0,"ok","× must be positive"),'
    '"type m or × input m"))', _status, fmt="text",
    doc="Blank rows and bad entries show a hint instead of spreadsheet errors.")
SW_M = Quantity("sw_m", "m (rows)", "",
                "IF(ISNUMBER({sweep_m_typed}),{sweep_m_typed},ROUNDUP({sweep_times}*{pipe_m},0))",
                lambda sweep_m_typed, sweep_times, pipe_m: np.where(
                    np.isnan(sweep_m_typed), np.ceil(sweep_times * pipe_m), sweep_m_typed),
                fmt="int")
SW_MICRO = Quantity("sw_micro", "PP micro-batches M' = min(M, m)", "",
                    "MIN({micro_batches},{sw_m})",
                    lambda micro_batches, sw_m: np.minimum(micro_batches, sw_m) * 1.0, fmt="int")
SW_ROWS = rf.ceil_div("sw_rows", "sw_m", "sw_micro", "rows per micro-batch")
# One GPU.
S_T1 = rf.time_of("sw_s_t1", "sw_m", "pipe_n", "pipe_k", "one GPU: type-1 layer")
S_T2 = rf.time_of("sw_s_t2", "sw_m", "pipe_k", "pipe_n", "one GPU: type-2 layer")


def _mix(name: str, label: str, pairs: tuple[tuple[str, str], ...], extra: str = "",
         extra_ref: Any = None) -> Quantity:
    """Σ count × time over (count, time) pairs (+ one more term)."""
    body = "+".join(f"{{{c}}}*{{{t}}}" for c, t in pairs) + (f"+{extra}" if extra else "")

    def reference(**a: Any) -> Any:
        out = sum(a[c] * a[t] for c, t in pairs)
        return out + (extra_ref(**a) if extra_ref else 0.0)

    return Quantity(name, label, "s", body, reference, fmt="time")


S_LAT = _mix("sw_s_latency", "one GPU: latency", (("pp_n_t1", "sw_s_t1"),
                                                  ("pp_n_t2", "sw_s_t2")))
# Pipeline parallel at rows ceil(m / M').
P_T1 = rf.time_of("sw_p_t1", "sw_rows", "pipe_n", "pipe_k", "PP: type-1 layer per micro-batch")
P_T2 = rf.time_of("sw_p_t2", "sw_rows", "pipe_k", "pipe_n", "PP: type-2 layer per micro-batch")
P_OUT1 = rf.elements_bytes("sw_p_out1", "sw_rows", "pipe_k", "PP: micro-batch m×k bytes")
P_OUT2 = rf.elements_bytes("sw_p_out2", "sw_rows", "pipe_n", "PP: micro-batch m×n bytes")
HAS_H1 = Quantity("sw_has_h1", "a hop after type 1", "", "{pp_hops_t1}>0",
                  lambda pp_hops_t1: pp_hops_t1 > 0, fmt="flag")
HAS_H2 = Quantity("sw_has_h2", "a hop after type 2", "", "{pp_hops_t2}>0",
                  lambda pp_hops_t2: pp_hops_t2 > 0, fmt="flag")
P_H1 = hop("sw_p_h1", "sw_p_out1", "sw_has_h1", "PP: hop after type 1")
P_H2 = hop("sw_p_h2", "sw_p_out2", "sw_has_h2", "PP: hop after type 2")


def _stage(which: str) -> str:
    return f"{{pp_s{which}_t1}}*{{sw_p_t1}}+{{pp_s{which}_t2}}*{{sw_p_t2}}"


def _pace(**a: Any) -> Any:
    stages = [a[f"pp_s{w}_t1"] * a["sw_p_t1"] + a[f"pp_s{w}_t2"] * a["sw_p_t2"]
              for w in ("1", "2", "last")]
    return np.maximum.reduce([*stages, a["sw_p_h1"] * 1.0, a["sw_p_h2"] * 1.0])


P_PACE = Quantity("sw_p_pace", "PP: pace (slowest stage or hop)", "s",
                  f"MAX({_stage('1')},{_stage('2')},{_stage('last')},{{sw_p_h1}},{{sw_p_h2}})",
                  _pace, fmt="time")
P_LAT = _mix("sw_p_latency", "PP latency", (("pp_n_t1", "sw_p_t1"), ("pp_n_t2", "sw_p_t2"),
                                             ("pp_hops_t1", "sw_p_h1"),
                                             ("pp_hops_t2", "sw_p_h2")),
             "({sw_micro}-1)*{sw_p_pace}", lambda sw_micro, sw_p_pace, **_: (sw_micro - 1)
             * sw_p_pace)
# A stream needs no micro-batches (back-to-back batches keep every stage busy) and M = 1
# is its best rate: M micro-batches take at least as long per row (ceil(m/M) rows, weights
# re-read, M latencies), so the stream column is PP at M = 1.
F_OUT1 = rf.elements_bytes("sw_f_out1", "sw_m", "pipe_k", "PP M=1: m×k bytes")
F_OUT2 = rf.elements_bytes("sw_f_out2", "sw_m", "pipe_n", "PP M=1: m×n bytes")
F_H1 = hop("sw_f_h1", "sw_f_out1", "sw_has_h1", "PP M=1: hop after type 1")
F_H2 = hop("sw_f_h2", "sw_f_out2", "sw_has_h2", "PP M=1: hop after type 2")


def _stage_one(which: str) -> str:
    return f"{{pp_s{which}_t1}}*{{sw_s_t1}}+{{pp_s{which}_t2}}*{{sw_s_t2}}"


def _pace_one(**a: Any) -> Any:
    stages = [a[f"pp_s{w}_t1"] * a["sw_s_t1"] + a[f"pp_s{w}_t2"] * a["sw_s_t2"]
              for w in ("1", "2", "last")]
    return np.maximum.reduce([*stages, a["sw_f_h1"] * 1.0, a["sw_f_h2"] * 1.0])


F_PACE = Quantity("sw_f_pace", "PP M=1: pace", "s",
                  f"MAX({_stage_one('1')},{_stage_one('2')},{_stage_one('last')},{{sw_f_h1}},"
                  "{sw_f_h2})", _pace_one, fmt="time")
P_STREAM = rf.ratio("sw_p_stream", "sw_m", "sw_f_pace", "PP throughput, stream (M = 1)",
                    "rows/s", fmt="sci")
P_FLUSHED = rf.ratio("sw_p_flushed", "sw_m", "sw_p_latency", "PP throughput, one at a time",
                     "rows/s", fmt="sci")
# Tensor parallel at m rows: row-split layers m×shard·shard×w, column-split m×w·w×shard.
T_ROW = rf.time_of("sw_t_row", "sw_m", "tp_shard", "tp_ar_cols", "TP: row-split layer")
T_COL = rf.time_of("sw_t_col", "sw_m", "tp_ar_cols", "tp_shard", "TP: column-split layer")
T_AR_BYTES = rf.elements_bytes("sw_t_ar_bytes", "sw_m", "tp_ar_cols", "TP: all-reduce bytes")
T_AR = ring_allreduce("sw_t_ar", "sw_t_ar_bytes", "TP: one all-reduce")
T_OUT = Quantity("sw_t_out_bytes", "TP: final output bytes", "B",
                 "{tp_gather_bytes}/{pipe_m}*{sw_m}",
                 lambda tp_gather_bytes, pipe_m, sw_m: tp_gather_bytes / pipe_m * sw_m,
                 fmt="sci")
T_GATHER_ALL = all_gather("sw_t_gather_all", "sw_t_out_bytes", "TP: its all-gather")
T_GATHER = Quantity("sw_t_gather", "TP: all-gather counted", "s",
                    "IF({tp_gather_used}>0,{sw_t_gather_all},0)",
                    lambda tp_gather_used, sw_t_gather_all: np.where(
                        tp_gather_used > 0, sw_t_gather_all, 0.0) * 1.0, fmt="time")
T_LAT = _mix("sw_t_latency", "TP latency", (("tp_ar_count", "sw_t_row"),
                                             ("tp_col_count", "sw_t_col"),
                                             ("tp_ar_count", "sw_t_ar")),
             "{sw_t_gather}", lambda sw_t_gather, **_: sw_t_gather)
T_TPUT = rf.ratio("sw_t_tput", "sw_m", "sw_t_latency", "TP throughput (stream = one at a time)",
                  "rows/s", fmt="sci")
LEAD = Quantity("sw_tp_lead", "TP latency lead over PP", "",
                "1-{sw_t_latency}/{sw_p_latency}",
                lambda sw_t_latency, sw_p_latency: 1 - sw_t_latency / sw_p_latency,
                fmt="pct", doc="Negative: PP finishes the batch sooner.")
B_LAT = rf.better("sw_b_latency", "sw_p_latency", "sw_t_latency")
B_STREAM = rf.better("sw_b_stream", "sw_p_stream", "sw_t_tput", lower_is_better=False)
B_FLUSHED = rf.better("sw_b_flushed", "sw_p_flushed", "sw_t_tput", lower_is_better=False)


def _relabel(q: Quantity, label: str) -> Quantity:
    return Quantity(q.name, label, q.unit, q.template, q.reference, q.fmt, q.defined_name, q.doc)


HEADLINE = (SW_CHECK, SW_M, SW_MICRO, S_LAT, P_LAT, T_LAT, _relabel(B_LAT, "latency: better"), LEAD,
            P_STREAM, P_FLUSHED, T_TPUT, _relabel(B_STREAM, "stream: better"),
            _relabel(B_FLUSHED, "one at a time: better"))
HELPERS = (SW_ROWS, S_T1, S_T2, P_T1, P_T2, P_OUT1, P_OUT2, P_H1, P_H2,
           P_PACE, F_OUT1, F_OUT2, F_H1, F_H2, F_PACE, T_ROW, T_COL, T_AR_BYTES, T_AR, T_OUT,
           T_GATHER_ALL, T_GATHER)


def table(header_row: int) -> Table:
    return Table(name="parallel_sweep", header_row=header_row, col=0,
                 inputs=(TYPED_M, TIMES_M), columns=(*HEADLINE, *HELPERS), guard="sw_check")


def input_values(rows: tuple[tuple[int | None, float | None], ...] = DEFAULT_ROWS
                 ) -> dict[str, Any]:
    return {"sweep_m_typed": [m for m, _ in rows], "sweep_times": [t for _, t in rows]}
