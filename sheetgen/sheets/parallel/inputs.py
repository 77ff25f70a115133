"""The Parallelism sheet's inputs, the link they select, and the two collective/hop costs.

Every cost on the sheet that crosses a link is one of three factories here, so the ring
all-reduce (Patarasuk & Yuan), the all-gather and the point-to-point hop are each written once:

    ring all-reduce  2(G-1)/G · bytes / (link bw · eff) + 2(G-1) · latency
    all-gather       (G-1)/G  · bytes / (link bw · eff) +  (G-1) · latency
    hop              bytes / (link bw · eff) + latency

Ring all-reduce: P. Patarasuk and X. Yuan, "Bandwidth optimal all-reduce algorithms for
clusters of workstations", J. Parallel Distrib. Comput. 69(2), 2009: a reduce-scatter and an
all-gather of G-1 steps each, every step moving bytes/G per GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.core.defaults import DEFAULT_GPUS, DEFAULT_MICRO_BATCHES
from sheetgen.model import factories as rf
from sheetgen.model.vocabulary import Input, Quantity, Validation

DEFAULT_GPUS = DEFAULT_GPUS  # in sheetgen.core.defaults, so the CLI's --help needs no NumPy
DEFAULT_MICRO_BATCHES = DEFAULT_MICRO_BATCHES
DEFAULT_HOST_LATENCY = 10e-6  # PCIe peer-to-peer small-message latency, order of 10 µs
GPU_LINK, HOST_LINK = "GPU link", "host link"
NARROW, WIDE = "narrow", "wide"

_COUNT = Validation("whole_min", minimum=1, maximum=1_000_000, message="A whole number, 1 or more")
#: The unit the Parallelism sheet's time cells hold (its chart and sentences say it too).
TIME_UNIT = "ms"

_POSITIVE = Validation("decimal_range", minimum=0, maximum=1e18,
                       message="Leave blank to use the preset; otherwise a positive number")
GPUS = Input("par_gpus", "GPUs (G)", "", fmt="int", defined_name="PAR_GPUS", validation=_COUNT,
             doc="Pipeline stages, or tensor-parallel ways.")
MICRO = Input("micro_batches", "micro-batches (M)", "", fmt="int", defined_name="MICRO_BATCHES",
              validation=_COUNT, doc="The pipeline splits the m rows into M micro-batches.")
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
                   fmt="sci", validation=_POSITIVE,
                   doc="Blank: the link chosen above; a number wins over both.")
LINK_LAT_IN = Input("link_latency_override", "link latency (override)", "s", fmt="sci",
                    time_unit="µs",
                    validation=_POSITIVE, doc="Blank: the chosen link's latency.")
PAIRING = Input(
    "tp_pairing", "TP all-reduce carries the", "", fmt="text", defined_name="TP_PAIRING",
    validation=Validation("choices", choices=(NARROW, WIDE),
                          message=f"{NARROW}: Megatron's choice; {WIDE}: the other pairing"),
    doc=f"{NARROW} activation m·min(k,n) (Megatron-LM); {WIDE} forces the other pairing.")
GATHER = Input(
    "tp_gather", "TP gathers a sharded final output", "", fmt="text",
    validation=Validation("choices", choices=("no", "yes"), message="no or yes"),
    doc="no: the next block takes it sharded (a row-split layer); yes: all-gather it.")


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def _link_bw(link_bw_override: Any, par_link: str, host_bw: float, link_bw: float) -> float:
    if not _blank(link_bw_override):
        return link_bw_override
    return host_bw if par_link == HOST_LINK else link_bw


def _link_lat(link_latency_override: Any, par_link: str, host_link_latency: float,
              link_latency: float) -> float:
    if not _blank(link_latency_override):
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
MB_ROWS = rf.ceil_div("mb_rows", "pipe_m", "micro_batches", "rows per micro-batch",
                      doc="ceil(m/M)")


def ring_allreduce(name: str, nbytes: str, label: str, *, gpus: str = "par_gpus",
                   bw: str = "par_link_bw", latency: str = "par_link_latency",
                   eff: str = "link_eff") -> Quantity:
    """Ring all-reduce of `nbytes` on G GPUs: 2(G-1) steps, each moving bytes/G per GPU.
    The names of G, the link figures and the efficiency default to this sheet's (the
    Transformer sheet passes its own)."""

    def reference(**a: Any) -> Any:
        g = a[gpus]
        t = (2 * (g - 1) / g * a[nbytes] / (a[bw] * a[eff])
             + 2 * (g - 1) * a[latency])
        return np.where(g > 1, t, 0.0) * 1.0 if np.ndim(t) else (t if g > 1 else 0.0)

    return Quantity(
        name, label, "s",
        f"IF({{{gpus}}}>1,2*({{{gpus}}}-1)/{{{gpus}}}*{{{nbytes}}}/({{{bw}}}"
        f"*{{{eff}}})+2*({{{gpus}}}-1)*{{{latency}}},0)",
        reference, fmt="time",
        doc="2(G-1)/G · bytes / (bw · eff) + 2(G-1) · latency (ring, Patarasuk & Yuan).")


def all_gather(name: str, nbytes: str, label: str) -> Quantity:
    """Ring all-gather of a `nbytes` tensor sharded G ways: (G-1) steps of bytes/G."""

    def reference(**a: Any) -> Any:
        g = a["par_gpus"]
        t = ((g - 1) / g * a[nbytes] / (a["par_link_bw"] * a["link_eff"])
             + (g - 1) * a["par_link_latency"])
        return np.where((g > 1) & (np.asarray(a[nbytes]) > 0), t, 0.0) * 1.0

    return Quantity(
        name, label, "s",
        f"IF(AND({{par_gpus}}>1,{{{nbytes}}}>0),({{par_gpus}}-1)/{{par_gpus}}*{{{nbytes}}}/({{par_link_bw}}"
        f"*{{link_eff}})+({{par_gpus}}-1)*{{par_link_latency}},0)",
        reference, fmt="time",
        doc="(G-1)/G · bytes / (bw · eff) + (G-1) · latency; 0 for nothing to gather.")


def hop(name: str, nbytes: str, when: str, label: str) -> Quantity:
    """A point-to-point send of `nbytes` where `when` is true (else 0)."""

    def reference(**a: Any) -> Any:
        t = a[nbytes] / (a["par_link_bw"] * a["link_eff"]) + a["par_link_latency"]
        return np.where(np.asarray(a[when], dtype=bool), t, 0.0) * 1.0

    return Quantity(
        name, label, "s",
        f"IF({{{when}}},{{{nbytes}}}/({{par_link_bw}}*{{link_eff}})+{{par_link_latency}},0)",
        reference, fmt="time", doc="bytes / (link bw · eff) + latency")


def input_values(gpus: int, micro_batches: int, link_bw: float | None,
                 link_latency: float | None, *, link: str = GPU_LINK,
                 host_latency: float = DEFAULT_HOST_LATENCY, pairing: str = NARROW,
                 gather: bool = False) -> dict[str, Any]:
    return {"par_gpus": gpus, "micro_batches": micro_batches, "link_bw_override": link_bw,
            "link_latency_override": link_latency, "par_link": link,
            "host_link_latency": host_latency, "tp_pairing": pairing,
            "tp_gather": "yes" if gather else "no"}
