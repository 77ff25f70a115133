"""The tensor-parallel all-reduces of each phase: ring (the Parallelism sheet's factory), one-shot
and two-shot, the one used, and their total per step.
"""

from __future__ import annotations

from typing import Any

from sheetgen.model import transformer as ref
from sheetgen.model.vocabulary import Quantity
from sheetgen.sheets.parallel import inputs as pin
from sheetgen.sheets.transformer.common import (
    OB,
    STEP_TOKENS,
    STEPS,
    q,
)

#: The direct (peer-access) all-reduces: (bandwidth steps: the multiple of bytes / (bw · eff),
#: as a formula of G; latency terms; why). vLLM's custom all-reduce
#: (csrc/custom_all_reduce.cuh, cross_device_reduce_1stage / _2stage) and TensorRT-LLM's
#: (ONESHOT / TWOSHOT) use them for small messages; ref.allreduce_times holds the same costs.
DIRECT = {
    # one-shot: every GPU reads all G−1 peers' buffers and reduces, one step
    ref.ONE_SHOT: ("({xf_tp}-1)", 1, "(G−1) · bytes / (bw · eff) + latency (vLLM, "
                   "TensorRT-LLM custom all-reduce)."),
    # two-shot: reduce-scatter then all-gather by direct peer access, two steps
    ref.TWO_SHOT: ("2*({xf_tp}-1)/{xf_tp}", 2, "2(G−1)/G · bytes / (bw · eff) + 2 · latency."),
}


def direct_allreduce(algorithm: str, name: str, nbytes: str, eff: str, label: str) -> Quantity:
    """One one-shot or two-shot all-reduce of `nbytes` over the TP group (0 on one GPU), at
    link efficiency `eff`."""
    steps, latencies, doc = DIRECT[algorithm]
    latency = "{link_latency}" if latencies == 1 else f"{latencies}*{{link_latency}}"

    def fn(a: dict[str, Any]) -> float:
        return ref.allreduce_times(a[nbytes], a["xf_tp"], a["link_bw"] * a[eff],
                                   a["link_latency"])[algorithm]

    return q(name, label, "s",
             f"IF({{xf_tp}}>1,{steps}*{{{nbytes}}}/({{link_bw}}*{{{eff}}})+{latency},0)", fn,
             fmt="time", doc=doc)



def comm(ph: str) -> list[Quantity]:
    """The two all-reduces per layer of one phase: each algorithm, the one used, the total."""
    p = f"xf_{ph}_"
    nbytes = p + "ar_bytes"
    tok, step = STEP_TOKENS[ph], STEPS[ph]
    out = [q(nbytes, "bytes per all-reduce", "B", f"{{{tok}}}*{{xf_hidden}}*{{out_elem_bytes}}",
             lambda a: a[tok] * a["xf_hidden"] * a[OB], doc="One step's tokens."),
           pin.ring_allreduce(p + "ring", nbytes, "ring", gpus="xf_tp", bw="link_bw",
                              latency="link_latency", eff="link_eff"),
           direct_allreduce(ref.ONE_SHOT, p + "one", nbytes, "link_eff", "one-shot"),
           direct_allreduce(ref.TWO_SHOT, p + "two", nbytes, "link_eff", "two-shot")]
    ring, one, two = p + "ring", p + "one", p + "two"

    def used(a: dict[str, Any]) -> str:
        return ref.allreduce_used({ref.RING: a[ring], ref.ONE_SHOT: a[one],
                                   ref.TWO_SHOT: a[two]}, a["xf_allreduce"])

    out.append(q(p + "ar_used", "all-reduce used", "",
                 f'IF({{xf_allreduce}}="{ref.AUTO}",IF(AND({{{ring}}}<={{{one}}},{{{ring}}}<='
                 f'{{{two}}}),"{ref.RING}",IF({{{one}}}<={{{two}}},"{ref.ONE_SHOT}",'
                 f'"{ref.TWO_SHOT}")),{{xf_allreduce}})', used, fmt="text",
                 doc="auto: the fastest of the three at the bound's link efficiency."))

    def pick(names: tuple[str, str, str], label: str, name: str) -> Quantity:
        r, o, t = names

        def fn(a: dict[str, Any]) -> float:
            chosen = {ref.RING: a[r], ref.ONE_SHOT: a[o], ref.TWO_SHOT: a[t]}[a[p + "ar_used"]]
            return 2 * a["xf_layers"] * (a[step] if step else 1) * chosen

        steps = f"*{{{step}}}" if step else ""
        return q(name, label, "s",
                 f'2*{{xf_layers}}{steps}*IF({{{p}ar_used}}="{ref.RING}",{{{r}}},'
                 f'IF({{{p}ar_used}}="{ref.ONE_SHOT}",{{{o}}},{{{t}}}))', fn, fmt="time",
                 doc="Two all-reduces per layer (after attention, after the MLP)"
                     + (", per step." if step else "."))

    out.append(pick((ring, one, two), "all-reduces per step (bound)", p + "comm_bound"))
    out += [pin.ring_allreduce(p + "ring_real", nbytes, "ring (measured link eff)",
                               gpus="xf_tp", bw="link_bw", latency="link_latency",
                               eff="suggest_link_eff"),
            direct_allreduce(ref.ONE_SHOT, p + "one_real", nbytes, "suggest_link_eff",
                             "one-shot (measured)"),
            direct_allreduce(ref.TWO_SHOT, p + "two_real", nbytes, "suggest_link_eff",
                             "two-shot (measured)")]
    out.append(pick((p + "ring_real", p + "one_real", p + "two_real"),
                    "all-reduces per step (realistic)", p + "comm"))
    return out
