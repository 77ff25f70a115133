"""Transformer drills graded like the Practice sheet: KV bytes per token, the decode floor, the
critical batch, weights per GPU.
"""

from __future__ import annotations

from sheetgen.model.vocabulary import (
    BlockRow,
    Input,
    Quantity,
    Validation,
)
from sheetgen.sheets import practice

REVEAL = Input("xf_reveal", "reveal the answers (1 = yes)", fmt="int",
               validation=Validation("decimal_range", minimum=0, maximum=1,
                                     message="0 hides the answers, 1 shows them"))
#: (slug, question, the quantity that answers it, unit, format)
DRILLS = (
    ("kv", "KV bytes per token, all layers (2 · layers · KV heads · head dim · bytes)",
     "kv_bytes_per_token", "B", "sci"),
    ("floor", "decode floor: weights read per step + KV, ÷ HBM bandwidth",
     "xf_decode_floor", "s", "time"),
    ("critical", "critical batch: peak · weight bytes / (2 · bandwidth)", "critical_batch", "",
     "ratio"),
    ("weights", "weights per GPU", "weights_bytes", "B", "sci"),
)


def drills() -> list[BlockRow | str]:
    """Questions graded like the Practice sheet: type an estimate, get feedback within
    practice.TOLERANCE; the answers show when the reveal cell is 1."""
    rows: list[BlockRow | str] = [BlockRow(REVEAL.label, [REVEAL], "",
                                           "Set to 1 to show the answers.")]
    for slug, question, truth, unit, fmt in DRILLS:
        guess = Input(f"xf_guess_{slug}", "your estimate", unit, fmt=fmt, doc=question)
        fb = practice.numeric_feedback(f"xf_fb_{slug}", guess.name, truth, "feedback")
        ans = Quantity(f"xf_ans_{slug}", "answer", unit, f'IF({{xf_reveal}}=1,{{{truth}}},"")',
                       lambda truth=truth, **a: a[truth] if a["xf_reveal"] == 1 else "",
                       fmt=fmt)
        rows.append(BlockRow(question, [guess, fb, ans], unit))
    return rows
