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


def _direct(algorithm: str, name: str, nbytes: str, eff: str, label: str) -> Quantity:
    """One one-shot or two-shot all-reduce over the model's TP group (the Parallelism sheet's
    factory, with this sheet's G and link)."""
    return pin.fixed_allreduce(algorithm, name, nbytes, label, gpus="xf_tp", bw="link_bw",
                               latency="link_latency", eff=eff)


def comm(ph: str) -> list[Quantity]:
    """The two all-reduces per layer of one phase: each algorithm, the one used, the total."""
    p = f"xf_{ph}_"
    nbytes = p + "ar_bytes"
    tok, step = STEP_TOKENS[ph], STEPS[ph]
    out = [q(nbytes, "bytes per all-reduce", "B", f"{{{tok}}}*{{xf_hidden}}*{{out_elem_bytes}}",
             lambda a: a[tok] * a["xf_hidden"] * a[OB], doc="One step's tokens."),
           pin.ring_allreduce(p + "ring", nbytes, "ring", gpus="xf_tp", bw="link_bw",
                              latency="link_latency", eff="link_eff"),
           _direct(ref.ONE_SHOT, p + "one", nbytes, "link_eff", "one-shot"),
           _direct(ref.TWO_SHOT, p + "two", nbytes, "link_eff", "two-shot")]
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
            _direct(ref.ONE_SHOT, p + "one_real", nbytes, "suggest_link_eff",
                    "one-shot (measured)"),
            _direct(ref.TWO_SHOT, p + "two_real", nbytes, "suggest_link_eff",
                    "two-shot (measured)")]
    out.append(pick((p + "ring_real", p + "one_real", p + "two_real"),
                    "all-reduces per step (realistic)", p + "comm"))
    return out
