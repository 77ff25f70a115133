"""The Parallelism sheet's inputs, the link they select, the verdicts' tie margin, and the
collective/hop costs.

Every cost on the sheet that crosses a link is one of three factories here, all built on one
transfer time (`over_link`: bytes / (link bw · eff) + steps · latency), so the ring
all-reduce (Patarasuk & Yuan), the all-gather and the point-to-point hop are each written once:

    ring all-reduce      2(G-1)/G · bytes / (link bw · eff) + 2(G-1) · latency
    one-shot all-reduce  (G-1)    · bytes / (link bw · eff) +        latency
    two-shot all-reduce  2(G-1)/G · bytes / (link bw · eff) +      2 · latency
    all-gather           (G-1)/G  · bytes / (link bw · eff) +  (G-1) · latency
    hop                  bytes / (link bw · eff) + latency

Ring all-reduce: P. Patarasuk and X. Yuan, "Bandwidth optimal all-reduce algorithms for
clusters of workstations", J. Parallel Distrib. Comput. 69(2), 2009: a reduce-scatter and an
all-gather of G-1 steps each, every step moving bytes/G per GPU. One-shot and two-shot: the
direct (peer-access) all-reduces of vLLM's custom all-reduce (csrc/custom_all_reduce.cuh,
cross_device_reduce_1stage / _2stage) and TensorRT-LLM's (ONESHOT / TWOSHOT), which those
libraries use for small messages. The TP all-reduce (Parallelism and Transformer sheets alike)
is the fastest of the three unless an algorithm is typed (`allreduce`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.core import excel as xn
from sheetgen.core.defaults import DEFAULT_GPUS, DEFAULT_TIE_MARGIN
from sheetgen.core.excel import is_blank
from sheetgen.model import factories as rf
from sheetgen.model import transformer as algorithms
from sheetgen.model.vocabulary import Input, Quantity, Validation

DEFAULT_GPUS = DEFAULT_GPUS  # in sheetgen.core.defaults, so the CLI's --help needs no NumPy
#: The micro-batch count's default: the M that minimises one batch's PP latency (pp.BEST_M).
AUTO = "auto"
#: Candidates for the best M: 1 ... min(m, MAX_MICRO) (the helper table's rows).
MAX_MICRO = 512
#: Two sides closer than this (|a - b| / the worse side) tie: the roofline's own error on
#: measured matmuls is around 5 % at best, so a smaller lead is no verdict.
DEFAULT_TIE_MARGIN = DEFAULT_TIE_MARGIN
#: The element size pipeline hops and all-reduces carry: the output's storage (fp8 GEMMs
#: write bf16, and TP's partial sums are all-reduced in it).
LINK_DTYPE_BYTES = rf.OUT_BYTES
DEFAULT_HOST_LATENCY = 10e-6  # PCIe peer-to-peer small-message latency, order of 10 µs
GPU_LINK, HOST_LINK = "GPU link", "host link"
NARROW, WIDE = "narrow", "wide"

_COUNT = Validation("whole_min", minimum=1, maximum=1_000_000, message="A whole number, 1 or more")
#: The unit the Parallelism sheet's time cells hold (its chart and sentences say it too).
TIME_UNIT = "ms"

_POSITIVE = Validation("decimal_range", minimum=0, maximum=1e18,
                       message="Leave blank to use the preset; otherwise a positive number")
#: a bandwidth divides: 0 B/s would make every hop and all-reduce #DIV/0!
_BANDWIDTH = Validation("decimal_range", minimum=1, maximum=1e18,
                        message="Leave blank to use the preset; otherwise at least 1 B/s")
GPUS = Input("par_gpus", "GPUs (G)", "", fmt="int", defined_name="PAR_GPUS", validation=_COUNT,
             doc="Pipeline stages, or tensor-parallel ways.")
MICRO = Input("micro_batches", "micro-batches (M)", "", fmt="int", defined_name="MICRO_BATCHES",
              validation=Validation("whole_min", minimum=1, maximum=1_000_000,
                                    message="A whole number, 1 or more; delete it for auto"),
              doc=f"{AUTO} (or blank): PP's best M, below; a whole number overrides it.")
TIE_IN = Input("tie_margin", "tie margin", "", fmt="pct", defined_name="TIE_MARGIN",
               validation=Validation("decimal_range", minimum=0, maximum=1,
                                     message="A fraction from 0 to 1 (5 % = 0.05)"),
               doc="Closer than this (|a - b| / the worse side), PP and TP tie.")
LINK_CHOICE = Input(
    "par_link", "GPU-to-GPU traffic goes over", "", fmt="text", defined_name="PAR_LINK",
    validation=Validation("choices", choices=(GPU_LINK, HOST_LINK),
                          message=f"{GPU_LINK} (NVLink-class, LINK_BW) or {HOST_LINK} "
                                  "(PCIe, HOST_BW)"),
    doc=f"{GPU_LINK}: the preset's LINK_BW; {HOST_LINK}: its PCIe HOST_BW (no NVLink).")
HOST_LAT_IN = Input("host_link_latency", "host link latency", "s", fmt="sci", time_unit="µs",
                    validation=_POSITIVE,
                    doc="Used when traffic goes over the host link (PCIe peer-to-peer).")
LINK_BW_IN = Input("link_bw_override", "link bandwidth per direction (override)", "B/s",
                   fmt="sci", validation=_BANDWIDTH,
                   doc="Blank: the link chosen above; a number wins over both.")
LINK_LAT_IN = Input("link_latency_override", "link latency (override)", "s", fmt="sci",
                    time_unit="µs",
                    validation=_POSITIVE, doc="Blank: the chosen link's latency.")
PAIRING = Input(
    "tp_pairing", "TP all-reduce carries the", "", fmt="text", defined_name="TP_PAIRING",
    validation=Validation("choices", choices=(NARROW, WIDE),
                          message=f"{NARROW}: Megatron's choice; {WIDE}: the other pairing"),
    doc=f"{NARROW} activation m·min(k,n) (Megatron-LM); {WIDE} forces the other pairing.")
OVERLAP = Input(
    "tp_overlap", "TP all-reduce hidden behind compute", "", fmt="pct",
    validation=Validation("decimal_range", minimum=0, maximum=1,
                          message="A fraction from 0 (none) to 1 (all)"),
    doc="0: none. f: that share of the all-reduce time runs under compute (async TP, e.g. "
        "Megatron-LM's --tp-comm-overlap), at most the compute time; assumes compute keeps "
        "full speed while the collective shares SMs and HBM: an upper bound on the gain.")
ALLREDUCE = Input(
    "tp_allreduce", "TP all-reduce algorithm", "", fmt="text", defined_name="TP_ALLREDUCE",
    validation=Validation("choices", choices=algorithms.ALLREDUCES,
                          message=" or ".join(algorithms.ALLREDUCES)),
    doc="auto: the fastest of ring (NCCL's), one-shot and two-shot (direct, as vLLM's and "
        "TensorRT-LLM's custom all-reduce for small messages), per all-reduce.")
GATHER = Input(
    "tp_gather", "TP gathers a sharded final output", "", fmt="text",
    validation=Validation("choices", choices=("no", "yes"), message="no or yes"),
    doc="no: the next block takes it sharded (a row-split layer); yes: all-gather it.")


def _link_bw(link_bw_override: Any, par_link: str, host_bw: float, link_bw: float) -> float:
    if not is_blank(link_bw_override):
        return link_bw_override
    return host_bw if par_link == HOST_LINK else link_bw


def _link_lat(link_latency_override: Any, par_link: str, host_link_latency: float,
              link_latency: float) -> float:
    if not is_blank(link_latency_override):
        return link_latency_override
    return host_link_latency if par_link == HOST_LINK else link_latency


EFF_LINK_BW = Quantity(
    "par_link_bw", "link bandwidth used", "B/s",
    f'IF(ISBLANK({{link_bw_override}}),IF({{par_link}}="{HOST_LINK}",{{host_bw}},{{link_bw}}),'
    "{link_bw_override})", _link_bw, fmt="sci", defined_name="PAR_LINK_BW")
EFF_LINK_LAT = Quantity(
    "par_link_latency", "link latency used", "s",
    f'IF(ISBLANK({{link_latency_override}}),IF({{par_link}}="{HOST_LINK}",'
    "{host_link_latency},{link_latency}),{link_latency_override})", _link_lat, fmt="sci",
    defined_name="PAR_LINK_LATENCY", time_unit="µs")
STAGE_LAYERS = rf.ceil_div("stage_layers", "n_layers", "par_gpus", "layers per stage",
                           doc="ceil(L/G); the last stage may hold fewer.")
STAGES = rf.ceil_div("stages_used", "n_layers", "stage_layers", "stages used",
                     doc="Fewer than G when G > L.")
MB_ROWS = rf.ceil_div("mb_rows", "pipe_m", "pp_m", "rows per micro-batch", doc="ceil(m/M)")
#: Every matmul call pays the Inputs sheet's launch floor: one per layer on one GPU and per
#: TP shard, one per layer and micro-batch in PP, which is what makes many micro-batches cost
#: something besides weight re-reads (the floor is the refined time's; its waves, soft
#: overlap, ramp, write cost and kernel terms stay on the Pipeline sheet).
FLOOR = Quantity("par_floor", "launch floor per matmul call", "s", "{launch_overhead}",
                 lambda launch_overhead: launch_overhead, fmt="sci", time_unit="µs",
                 defined_name="PAR_FLOOR",
                 doc="The Inputs sheet's launch overhead: each layer pays it once a "
                     "micro-batch (PP), once a shard (TP); the refined time's other terms "
                     "stay on the Pipeline sheet.")


def over_link(nbytes: str, steps: str = "1", *, bw: str = "par_link_bw",
              latency: str = "par_link_latency", eff: str = "link_eff") -> str:
    """The template of one transfer: `nbytes` (a template) over the link used, plus `steps`
    latencies. Every link cost is written with it (the link's names default to this sheet's;
    the Transformer sheet passes its own)."""
    return (f"{nbytes}/({{{bw}}}*{{{eff}}})"
            + (f"+{{{latency}}}" if steps == "1" else f"+{steps}*{{{latency}}}"))


def link_seconds(a: dict[str, Any], nbytes: Any, steps: Any = 1, *, bw: str = "par_link_bw",
                 latency: str = "par_link_latency", eff: str = "link_eff") -> Any:
    """`over_link` in Python."""
    return nbytes / (a[bw] * a[eff]) + steps * a[latency]


def ring_allreduce(name: str, nbytes: str, label: str, *, gpus: str = "par_gpus",
                   bw: str = "par_link_bw", latency: str = "par_link_latency",
                   eff: str = "link_eff") -> Quantity:
    """Ring all-reduce of `nbytes` on G GPUs: 2(G-1) steps, each moving bytes/G per GPU.
    The names of G, the link figures and the efficiency default to this sheet's (the
    Transformer sheet passes its own)."""
    return fixed_allreduce(algorithms.RING, name, nbytes, label, gpus=gpus, bw=bw,
                           latency=latency, eff=eff)


#: Each all-reduce algorithm's (bandwidth steps, latency steps) as templates of G: its time is
#: bandwidth steps · bytes / (bw · eff) + latency steps · latency (algorithms.allreduce_times).
STEPS = {
    algorithms.RING: ("2*({g}-1)/{g}", "2*({g}-1)"),
    algorithms.ONE_SHOT: ("({g}-1)", "1"),
    algorithms.TWO_SHOT: ("2*({g}-1)/{g}", "2"),
}


def allreduce_body(algorithm: str, nbytes: str, *, gpus: str = "par_gpus",
                   bw: str = "par_link_bw", latency: str = "par_link_latency",
                   eff: str = "link_eff") -> str:
    """The template of one all-reduce of `nbytes` (a template) by `algorithm` on G > 1 GPUs."""
    steps, lat = (x.format(g=f"{{{gpus}}}") for x in STEPS[algorithm])
    return over_link(f"{steps}*{nbytes}", lat, bw=bw, latency=latency, eff=eff)


#: What each algorithm's time is, in words (its cell's note).
_ALLREDUCE_DOCS = {
    algorithms.RING: "2(G-1)/G · bytes / (bw · eff) + 2(G-1) · latency (ring, Patarasuk & "
                     "Yuan).",
    algorithms.ONE_SHOT: "(G−1) · bytes / (bw · eff) + latency (vLLM, TensorRT-LLM custom "
                         "all-reduce).",
    algorithms.TWO_SHOT: "2(G−1)/G · bytes / (bw · eff) + 2 · latency.",
}


def fixed_allreduce(algorithm: str, name: str, nbytes: str, label: str, *,
                    gpus: str = "par_gpus", bw: str = "par_link_bw",
                    latency: str = "par_link_latency", eff: str = "link_eff") -> Quantity:
    """One all-reduce of `nbytes` over G GPUs by `algorithm` (0 on one GPU)."""

    def reference(**a: Any) -> Any:
        return _times(a, a[nbytes], gpus, bw, latency, eff)[algorithm]

    body = allreduce_body(algorithm, f"{{{nbytes}}}", gpus=gpus, bw=bw, latency=latency,
                          eff=eff)
    return Quantity(name, label, "s", f"IF({{{gpus}}}>1,{body},0)", reference, fmt="time",
                    doc=_ALLREDUCE_DOCS[algorithm])


def _times(a: dict[str, Any], nbytes: Any, gpus: str, bw: str, latency: str,
           eff: str) -> dict[str, Any]:
    """Each algorithm's time (0 on one GPU), for a column of byte counts or one."""
    g = a[gpus]
    b = np.asarray(nbytes, dtype=float)
    out = algorithms.allreduce_times(b, g, a[bw] * a[eff], a[latency]) if g > 1 else {
        k: np.zeros_like(b) for k in STEPS}
    return {k: v * 1.0 if np.ndim(v) else float(v) for k, v in out.items()}


def _bodies(nbytes: str, gpus: str, bw: str, latency: str, eff: str) -> tuple[str, str, str]:
    """The ring, one-shot and two-shot templates of one all-reduce of `nbytes`, in
    parentheses."""
    r, o, t = (allreduce_body(k, f"{{{nbytes}}}", gpus=gpus, bw=bw, latency=latency, eff=eff)
               for k in (algorithms.RING, algorithms.ONE_SHOT, algorithms.TWO_SHOT))
    return f"({r})", f"({o})", f"({t})"


def allreduce(name: str, nbytes: str, label: str, *, choice: str = ALLREDUCE.name,
              gpus: str = "par_gpus", bw: str = "par_link_bw",
              latency: str = "par_link_latency", eff: str = "link_eff") -> Quantity:
    """One all-reduce of `nbytes` by the algorithm `choice` names: auto is the fastest of
    ring, one-shot and two-shot (each alternative at its best, as the Transformer sheet)."""
    r, o, t = _bodies(nbytes, gpus, bw, latency, eff)

    def reference(**a: Any) -> Any:
        times = _times(a, a[nbytes], gpus, bw, latency, eff)
        if a[choice] == algorithms.AUTO:
            return np.minimum.reduce(list(times.values())) * 1.0 if np.ndim(
                times[algorithms.RING]) else min(times.values())
        return times[a[choice]]

    body = (f'IF({{{choice}}}="{algorithms.RING}",{r},IF({{{choice}}}="{algorithms.ONE_SHOT}",'
            f'{o},IF({{{choice}}}="{algorithms.TWO_SHOT}",{t},MIN({r},{o},{t}))))')
    return Quantity(name, label, "s", f"IF({{{gpus}}}>1,{body},0)", reference, fmt="time",
                    doc="The algorithm chosen above; auto: the fastest of ring, one-shot and "
                        "two-shot.")


def allreduce_used(name: str, nbytes: str, label: str, *, choice: str = ALLREDUCE.name,
                   gpus: str = "par_gpus", bw: str = "par_link_bw",
                   latency: str = "par_link_latency", eff: str = "link_eff") -> Quantity:
    """The algorithm `allreduce` uses for `nbytes`: the typed one, or auto's fastest (ties:
    ring, one-shot, two-shot, as algorithms.allreduce_used)."""
    r, o, t = _bodies(nbytes, gpus, bw, latency, eff)

    def reference(**a: Any) -> str:
        if a[gpus] <= 1:
            return algorithms.RING if a[choice] == algorithms.AUTO else a[choice]
        return algorithms.allreduce_used(_times(a, a[nbytes], gpus, bw, latency, eff),
                                         a[choice])

    auto = (f'IF({{{gpus}}}<=1,"{algorithms.RING}",IF(AND({r}<={o},{r}<={t}),'
            f'"{algorithms.RING}",IF({o}<={t},"{algorithms.ONE_SHOT}","{algorithms.TWO_SHOT}")))')
    return Quantity(name, label, "", f'IF({{{choice}}}="{algorithms.AUTO}",{auto},{{{choice}}})',
                    reference, fmt="text", doc="auto: the fastest of the three for this size.")


def all_gather(name: str, nbytes: str, label: str) -> Quantity:
    """Ring all-gather of a `nbytes` tensor sharded G ways: (G-1) steps of bytes/G."""

    def reference(**a: Any) -> Any:
        g = a["par_gpus"]
        t = link_seconds(a, (g - 1) / g * a[nbytes], g - 1)
        return np.where((g > 1) & (np.asarray(a[nbytes]) > 0), t, 0.0) * 1.0

    body = over_link(f"({{par_gpus}}-1)/{{par_gpus}}*{{{nbytes}}}", "({par_gpus}-1)")
    return Quantity(name, label, "s", f"IF(AND({{par_gpus}}>1,{{{nbytes}}}>0),{body},0)",
                    reference, fmt="time",
                    doc="(G-1)/G · bytes / (bw · eff) + (G-1) · latency; 0 for nothing to "
                        "gather.")


def hop(name: str, nbytes: str, when: str, label: str) -> Quantity:
    """A point-to-point send of `nbytes` where `when` is true (else 0)."""

    def reference(**a: Any) -> Any:
        t = link_seconds(a, a[nbytes])
        return np.where(np.asarray(a[when], dtype=bool), t, 0.0) * 1.0

    return Quantity(name, label, "s", f"IF({{{when}}},{over_link(f'{{{nbytes}}}')},0)",
                    reference, fmt="time", doc="bytes / (link bw · eff) + latency")


def hop_of_rows(name: str, rows: str, width: str, label: str) -> Quantity:
    """A point-to-point send of a rows × width activation (whether a stage cut sends one
    is the cut's business: pp.flow_shop)."""

    def reference(**a: Any) -> Any:
        return link_seconds(a, a[LINK_DTYPE_BYTES] * np.asarray(a[rows], dtype=float)
                            * a[width]) * 1.0

    nbytes = f"{{{LINK_DTYPE_BYTES}}}*{{{rows}}}*{{{width}}}"
    return Quantity(name, label, "s", over_link(nbytes), reference,
                    fmt="time", doc="rows × width × element bytes / (link bw · eff) + latency")


def better(name: str, pp: str, tp: str, *, lower_is_better: bool = True) -> Quantity:
    """Which of pipeline and tensor parallelism wins a row: a side wins when it leads by the
    tie margin or more, measured as |a - b| / the worse side; closer is a tie. (A margin of
    0 still ties values equal to 1e-9, where engines round differently; two zeros, such as
    one GPU's communication, tie.)"""
    margin = f"MAX({{tie_margin}},{rf.TIE_RTOL:.0E})"
    lt, factor = ("<=", f"(1-{margin})") if lower_is_better else (">=", f"(1+{margin})")

    def reference(**k: Any) -> Any:
        a, b = k[pp], k[tp]
        t = max(float(k["tie_margin"]), rf.TIE_RTOL)
        scale = 1 - t if lower_is_better else 1 + t
        cmp = xn.le if lower_is_better else xn.ge
        same = xn.eq(a, b)
        if np.ndim(a) or np.ndim(b):  # a table column (the sweep)
            return np.where(same, "tie", np.where(
                cmp(a, b * scale), "pipeline",
                np.where(cmp(b, a * scale), "tensor", "tie"))).astype(object)
        return "tie" if bool(same) else "pipeline" if bool(cmp(a, b * scale)) else "tensor" \
            if bool(cmp(b, a * scale)) else "tie"

    return Quantity(
        name, "better", "",
        f'IF({{{pp}}}={{{tp}}},"tie",IF({{{pp}}}{lt}{{{tp}}}*{factor},"pipeline",'
        f'IF({{{tp}}}{lt}{{{pp}}}*{factor},"tensor","tie")))',
        reference, fmt="text",
        doc="A lead under the tie margin (|a - b| / the worse side) is a tie.")


def input_values(gpus: int, micro_batches: int | None, link_bw: float | None,
                 link_latency: float | None, *, link: str = GPU_LINK,
                 host_latency: float = DEFAULT_HOST_LATENCY, pairing: str = NARROW,
                 gather: bool = False, tie_margin: float = DEFAULT_TIE_MARGIN,
                 tp_overlap: float = 0.0, allreduce: str = algorithms.AUTO) -> dict[str, Any]:
    """`micro_batches` None: auto (the best M)."""
    return {"par_gpus": gpus, "micro_batches": AUTO if micro_batches is None else micro_batches,
            "link_bw_override": link_bw, "link_latency_override": link_latency,
            "par_link": link, "host_link_latency": host_latency, "tp_pairing": pairing,
            "tp_gather": "yes" if gather else "no", "tie_margin": tie_margin,
            "tp_overlap": tp_overlap, "tp_allreduce": allreduce}
