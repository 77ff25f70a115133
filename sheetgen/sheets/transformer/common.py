"""What every part of the Transformer sheet shares: the sheet's name, the operand-byte names, the
phases, the dict-argument quantity factory and the op row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sheetgen.model import factories as rf
from sheetgen.model import transformer as ref
from sheetgen.model.vocabulary import Quantity

SHEET = "Transformer"
GEMM_RATE = "xf_real_flops"  # the GEMM rows' realistic FLOP/s
ATTN_RATE = "xf_attn_real_flops"  # the attention rows' realistic FLOP/s
ON_CHIP = "xf_on_chip"  # bytes per element of an operand that never leaves the chip
#: the Inputs sheet's per-operand bytes (A, B, C), which every sheet's matmuls use
AB, WB, OB = rf.ACT_BYTES, rf.WEIGHT_BYTES, rf.OUT_BYTES
YES, NO = "yes", "no"
PHASES = (("pf", ref.PREFILL), ("dc", ref.DECODE))
#: per phase: the tokens of one forward step (m of its weight matmuls) and, for chunked
#: prefill, the number of steps (None: one step)
STEP_TOKENS = {"pf": "xf_pf_step", "dc": "xf_dc_tokens"}
STEPS = {"pf": "xf_pf_steps", "dc": None}


def q(name: str, label: str, unit: str, template: str, fn: Callable[[dict[str, Any]], Any],
      fmt: str = "sci", doc: str = "") -> Quantity:
    """A quantity whose reference takes its arguments as one dict."""
    return Quantity(name, label, unit, template, lambda **a: fn(a), fmt=fmt, doc=doc)


@dataclass(frozen=True)
class OpRow:
    """One operation of one phase: its cells, left to right."""

    label: str
    cells: tuple[Quantity | None, ...]
    bound: str  # the bound time's name
    real: str
    plotted: tuple[str, str] | None  # (intensity, flops) names for the chart
