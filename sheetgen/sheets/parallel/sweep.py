"""The batch-size sweep: one GPU, PP and TP at several m, to show where the verdict flips.

Each row is the whole model at its m in closed form. The chain has only two layer types, so
a schedule needs only each type's per-layer time and how many of each a stage (or the TP
split) holds: the layer counts come from the per-layer table (e.g. `pp_s1_t1`, the type-1
layers of stage 1), the times from the roofline; PP's pace and latency are pp.flow_shop,
as the comparison's. Each row runs PP at its own best M and cut (found by pp's helper table
over both stage cuts, one case per sweep row), whatever M is typed for the comparison.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from sheetgen.core.excel import is_number, number_mask
from sheetgen.model import factories as rf
from sheetgen.model.vocabulary import Input, Quantity, Table, Validation
from sheetgen.sheets.parallel import pp, tp
from sheetgen.sheets.parallel.inputs import FLOOR, all_gather, allreduce, better

_WHOLE = Validation("whole_min", minimum=1, maximum=2**31 - 1, message="A positive whole number")
TYPED_M = Input("sweep_m_typed", "m", "", fmt="int", validation=_WHOLE,
                doc="Rows of this sweep row; blank: × input m instead")
TIMES_M = Input("sweep_times", "or × input m", "", fmt="general",
                validation=Validation("decimal_range", minimum=0.0001, maximum=1e6,
                                      message="A multiple of the Pipeline sheet's m"))
DEFAULT_ROWS: tuple[tuple[int | None, float | None], ...] = (
    (1, None), (8, None), (64, None), (512, None), (1024, None), (2048, None), (None, 1),
    (None, 4))

def _status(sweep_m_typed: Any, sweep_times: Any) -> Any:
    def one(m: Any, times: Any) -> str:
        if is_number(m):
            return "ok" if m >= 1 else "m must be 1 or more"
        if is_number(times):
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
def _sw_m(sweep_m_typed: Any, sweep_times: Any, pipe_m: float) -> np.ndarray:
    """The typed m where it is a number, else ceil(× · input m) (NaN where neither: text
    typed in a row, which its guard shows as a hint)."""
    typed, times = np.asarray(sweep_m_typed, dtype=object), np.asarray(sweep_times, dtype=object)
    is_m, is_t = number_mask(typed), number_mask(times)
    return np.where(is_m, np.where(is_m, typed, 0.0).astype(float),
                    np.ceil(np.where(is_t, times, np.nan).astype(float) * pipe_m))


SW_M = Quantity("sw_m", "m (rows)", "",
                "IF(ISNUMBER({sweep_m_typed}),{sweep_m_typed},ROUNDUP({sweep_times}*{pipe_m},0))",
                _sw_m, fmt="int")
ROW = Input("sweep_row", "#", "", fmt="int", helper=True)


def _row_m(j: int) -> Any:
    """Row j's m in the reference (whose columns hold only the rows the guard accepts)."""
    def m(a: dict[str, Any]) -> Any:
        rows = [int(r) for r in np.atleast_1d(a["sweep_row"])]
        return np.asarray(a["sw_m"], dtype=object)[rows.index(j)] if j in rows else ""

    return m


def _sweep_case(j: int) -> pp.Case:
    return pp.case(f"ps{j}_", f"INDEX({{sw_m[]}},MATCH({j},{{sweep_row[]}},0))", _row_m(j),
                   f"sweep row {j}")


CASES = tuple(_sweep_case(j) for j in range(1, len(DEFAULT_ROWS) + 1))


def _micro(sweep_row: Any, **a: Any) -> Any:
    best = [pp.best_value(a[c.rank.name]) for c in CASES]
    return np.array([best[int(i) - 1] for i in np.atleast_1d(sweep_row)], dtype=float)


SW_MICRO = Quantity(
    "sw_micro", "PP micro-batches: this row's best M (either cut)", "",
    "CHOOSE({sweep_row}," + ",".join(pp.best_of(c.rank.name) for c in CASES) + ")",
    _micro, fmt="int", doc="Each row's own best M (the helper table), whatever M is typed.")
SW_ROWS = rf.ceil_div("sw_rows", "sw_m", "sw_micro", "rows per micro-batch")
# PP at M = 1 (rows m): one GPU is its layers in series; the stream's pace.
FULL = pp.flow_shop("sw_f_", "sw_m", "sw_micro", what="PP M=1")
S_LAT = Quantity("sw_s_latency", "one GPU: latency", "s",
                 "{pp_n_t1}*{sw_f_t1}+{pp_n_t2}*{sw_f_t2}",
                 lambda pp_n_t1, sw_f_t1, pp_n_t2, sw_f_t2: pp_n_t1 * sw_f_t1
                 + pp_n_t2 * sw_f_t2, fmt="time")
# Pipeline parallel at this row's best M.
FLOW = pp.flow_shop("sw_p_", "sw_rows", "sw_micro", latency="sw_p_latency_bal",
                    what="PP, balanced cut")
NFLOW = pp.flow_shop("sw_n_", "sw_rows", "sw_micro", latency="sw_n_latency",
                     what="PP, narrow cut", cut=pp.NARROW_CUT, times="sw_p_")
P_LAT = pp.cheaper("sw_p_latency", "sw_p_latency_bal", "sw_n_latency", "PP latency")
P_CUT = pp.cut_used("sw_p_cut", "sw_p_latency_bal", "sw_n_latency", "PP stage cut at best M")
# A stream needs no micro-batches (back-to-back batches keep every stage busy) and M = 1
# is its best rate: M micro-batches take at least as long per row (ceil(m/M) rows, weights
# re-read, M latencies), so the stream column is PP at M = 1, with the cut whose pace is
# faster there (as the comparison's stream row).
FULL_N = pp.flow_shop("sw_fn_", "sw_m", "sw_micro", what="PP M=1, narrow cut",
                      cut=pp.NARROW_CUT, times="sw_f_")
P_STREAM = pp.stream_best("sw_p_stream", "sw_m", "sw_f_pace", "sw_fn_pace",
                          "PP throughput, stream (M = 1)")
P_FLUSHED = rf.ratio("sw_p_flushed", "sw_m", "sw_p_latency", "PP throughput, one at a time",
                     "rows/s", fmt="sci")
def _mix(name: str, label: str, pairs: tuple[tuple[str, str], ...], extra: str = "",
         extra_ref: Any = None) -> Quantity:
    """Σ count × time over (count, time) pairs (+ one more term)."""
    body = "+".join(f"{{{c}}}*{{{t}}}" for c, t in pairs) + (f"+{extra}" if extra else "")

    def reference(**a: Any) -> Any:
        out = sum(a[c] * a[t] for c, t in pairs)
        return out + (extra_ref(**a) if extra_ref else 0.0)

    return Quantity(name, label, "s", body, reference, fmt="time")


# Tensor parallel at m rows: row-split layers m×shard·shard×w, column-split m×w·w×shard.
T_ROW = rf.time_of("sw_t_row", "sw_m", "tp_shard", "tp_ar_cols", "TP: row-split layer",
                   floor=FLOOR.name)
T_COL = rf.time_of("sw_t_col", "sw_m", "tp_ar_cols", "tp_shard", "TP: column-split layer",
                   floor=FLOOR.name)
T_AR_BYTES = rf.elements_bytes("sw_t_ar_bytes", "sw_m", "tp_ar_cols", "TP: all-reduce bytes",
                               per=rf.OUT_BYTES)
T_AR = allreduce("sw_t_ar", "sw_t_ar_bytes", "TP: one all-reduce")
T_OUT = Quantity("sw_t_out_bytes", "TP: final output bytes", "B",
                 "{tp_gather_bytes}/{pipe_m}*{sw_m}",
                 lambda tp_gather_bytes, pipe_m, sw_m: tp_gather_bytes / pipe_m * sw_m,
                 fmt="sci")
T_GATHER_ALL = all_gather("sw_t_gather_all", "sw_t_out_bytes", "TP: its all-gather")
T_GATHER = Quantity("sw_t_gather", "TP: all-gather counted", "s",
                    "IF({tp_gather_used}>0,{sw_t_gather_all},0)",
                    lambda tp_gather_used, sw_t_gather_all: np.where(
                        tp_gather_used > 0, sw_t_gather_all, 0.0) * 1.0, fmt="time")
T_COMPUTE = _mix("sw_t_compute", "TP: compute", (("tp_ar_count", "sw_t_row"),
                                                ("tp_col_count", "sw_t_col")))
T_AR_TOTAL = _mix("sw_t_ar_total", "TP: all-reduces", (("tp_ar_count", "sw_t_ar"),))
T_COMM = rf.plus("sw_t_comm", ("sw_t_ar_total", "sw_t_gather"), "TP: link time", "s",
                 fmt="time")
T_HIDDEN = tp.hidden("sw_t_hidden", "sw_t_ar_total", "sw_t_compute", "TP: hidden")
T_LAT = tp.latency("sw_t_latency", "sw_t_compute", "sw_t_comm", "sw_t_hidden", "TP latency")
T_TPUT = rf.ratio("sw_t_tput", "sw_m", "sw_t_latency", "TP throughput (stream = one at a time)",
                  "rows/s", fmt="sci")
LEAD = Quantity("sw_tp_lead", "TP latency lead over PP", "",
                "1-{sw_t_latency}/{sw_p_latency}",
                lambda sw_t_latency, sw_p_latency: 1 - sw_t_latency / sw_p_latency,
                fmt="pct", doc="Negative: PP finishes the batch sooner.")
B_LAT = better("sw_b_latency", "sw_p_latency", "sw_t_latency")
B_STREAM = better("sw_b_stream", "sw_p_stream", "sw_t_tput", lower_is_better=False)
B_FLUSHED = better("sw_b_flushed", "sw_p_flushed", "sw_t_tput", lower_is_better=False)


def _relabel(q: Quantity, label: str) -> Quantity:
    return replace(q, label=label)


HEADLINE = (SW_CHECK, SW_M, SW_MICRO, S_LAT, P_LAT, P_CUT, T_LAT,
            _relabel(B_LAT, "latency: better"), LEAD,
            P_STREAM, P_FLUSHED, T_TPUT, _relabel(B_STREAM, "stream: better"),
            _relabel(B_FLUSHED, "one at a time: better"))
HELPERS = (SW_ROWS, *FLOW.columns(), *NFLOW.own(), *FULL.columns()[:-1], FULL_N.pace, T_ROW, T_COL,
           T_AR_BYTES, T_AR, T_OUT, T_GATHER_ALL, T_GATHER, T_COMPUTE, T_AR_TOTAL, T_COMM, T_HIDDEN)


def table(header_row: int) -> Table:
    return Table(name="parallel_sweep", header_row=header_row, col=0,
                 inputs=(ROW, TYPED_M, TIMES_M), columns=(*HEADLINE, *HELPERS),
                 guard="sw_check")


def input_values(rows: tuple[tuple[int | None, float | None], ...] = DEFAULT_ROWS
                 ) -> dict[str, Any]:
    return {"sweep_row": list(range(1, len(rows) + 1)),
            "sweep_m_typed": [m for m, _ in rows], "sweep_times": [t for _, t in rows]}
