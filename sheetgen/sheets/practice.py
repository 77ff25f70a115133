"""The "Practice" sheet (`--practice N`): N seeded random shapes to estimate by hand.

Performance interviews ask for intensity and regime in one's head; this sheet gives feedback
per answer (within 10 % is correct, else how far off) and shows the model's answers only when
the reveal cell is set to 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.core.defaults import DEFAULT_PRACTICE_SEED
from sheetgen.core.excel import excel_round, is_blank
from sheetgen.model import factories as rf
from sheetgen.model.vocabulary import (
    COMPUTE_BOUND,
    MEMORY_BOUND,
    Block,
    BlockRow,
    Input,
    Quantity,
    SheetSpec,
    Table,
    Text,
    Validation,
)

SHEET = "Practice"
TOLERANCE = 0.10  # an estimate within 10 % counts as correct
DEFAULT_SEED = DEFAULT_PRACTICE_SEED

REVEAL = Input("reveal", "reveal the answers (1 = yes)", fmt="int", defined_name="REVEAL",
               validation=Validation("decimal_range", minimum=0, maximum=1,
                                     message="0 hides the answers, 1 shows them"))
P_M = Input("p_m", "m", fmt="int")
P_K = Input("p_k", "k", fmt="int")
P_N = Input("p_n", "n", fmt="int")
G_INTENSITY = Input("guess_intensity", "your intensity", "FLOP/B", fmt="ratio")
G_REGIME = Input("guess_regime", "your regime", fmt="text",
                 validation=Validation("choices", choices=(COMPUTE_BOUND, MEMORY_BOUND),
                                       message="compute-bound or memory-bound"))
G_TIME = Input("guess_time", "your time", "s", fmt="time")

P = rf.matmul_roofline("p_", "p_m", "p_k", "p_n", what="model")


def numeric_feedback(name: str, guess: str, truth: str, label: str) -> Quantity:
    """"correct" within TOLERANCE, else "too high/low by N%" (a column, or one cell: the
    Transformer sheet's drills)."""
    def one(g: Any, t: float) -> str:
        if is_blank(g):
            return ""
        if isinstance(g, str | bool):
            return "enter a number"
        if abs(g - t) <= TOLERANCE * t:
            return "correct"
        word = "too high by " if g > t else "too low by "
        return f"{word}{int(excel_round(100 * abs(g / t - 1)))}%"

    def reference(**a: Any) -> Any:
        if np.ndim(a[truth]) == 0:
            return one(a[guess], a[truth])
        return np.asarray([one(g, t) for g, t in zip(np.asarray(a[guess], dtype=object),
                                                      a[truth], strict=True)], dtype=object)

    g, t = f"{{{guess}}}", f"{{{truth}}}"
    return Quantity(
        name, label, "",
        f'IF(ISBLANK({g}),"",IF(ISNUMBER({g}),IF(ABS({g}-{t})<={TOLERANCE}*{t},"correct",'
        f'IF({g}>{t},"too high by ","too low by ")&ROUND(100*ABS({g}/{t}-1),0)&"%"),'
        f'"enter a number"))', reference, fmt="text",
        doc=f"within {TOLERANCE:.0%} counts as correct")


def _regime_feedback(name: str) -> Quantity:
    def reference(guess_regime: Any, p_regime: Any) -> np.ndarray:
        return np.asarray(["" if is_blank(g) or g == "" else
                           "correct" if str(g).lower() == str(t).lower() else "wrong"
                           for g, t in zip(np.asarray(guess_regime, dtype=object), p_regime,
                                           strict=True)], dtype=object)

    return Quantity(name, "regime feedback", "",
                    'IF(ISBLANK({guess_regime}),"",IF({guess_regime}={p_regime},"correct",'
                    '"wrong"))', reference, fmt="text")


def _answer(name: str, truth: str, label: str, unit: str, fmt: str) -> Quantity:
    def reference(**a: Any) -> Any:
        values = np.asarray(a[truth], dtype=object)
        return values if a["reveal"] == 1 else np.full(len(values), "", dtype=object)

    return Quantity(name, label, unit, f'IF({{reveal}}=1,{{{truth}}},"")', reference, fmt=fmt)


FB_INTENSITY = numeric_feedback("fb_intensity", "guess_intensity", "p_intensity",
                                 "intensity feedback")
FB_REGIME = _regime_feedback("fb_regime")
FB_TIME = numeric_feedback("fb_time", "guess_time", "p_time", "time feedback")
ANS_INTENSITY = _answer("ans_intensity", "p_intensity", "answer: intensity", "FLOP/B", "ratio")
ANS_REGIME = _answer("ans_regime", "p_regime", "answer: regime", "", "text")
ANS_TIME = _answer("ans_time", "p_time", "answer: time", "s", "time")

TABLE = Table(
    name="practice", header_row=8, col=0,
    inputs=(P_M, P_K, P_N, G_INTENSITY, G_REGIME, G_TIME),
    columns=(FB_INTENSITY, FB_REGIME, FB_TIME, ANS_INTENSITY, ANS_REGIME, ANS_TIME,
             *P.columns()),
)
BLOCK = Block(row=4, col=0, header=("Practice", "Value", "Unit", "Notes"),
              rows=(BlockRow(REVEAL.label, [REVEAL], "",
                             "Set to 1 to show the model's answers."),))


def sheet() -> SheetSpec:
    return SheetSpec(
        name=SHEET,
        time_unit="µs",
        texts=(
            Text(0, 0, "Practice: estimate intensity, regime and time by hand", "title"),
            Text(1, 0, "Intensity = 2mkn / (a·mk + w·kn + o·mn), with a, w, o the bytes per "
                 "element of A, B, C (Inputs: ACT_BYTES, WEIGHT_BYTES, OUT_BYTES); compare "
                 "with the ridge on the Inputs sheet; time = max(FLOPs / peak, bytes / "
                 "bandwidth)."),
            Text(2, 0, f"Type your estimates in the yellow cells; within {TOLERANCE:.0%} counts "
                 "as correct. The model's working columns are hidden."),
        ),
        blocks=(BLOCK,),
        tables=(TABLE,),
        column_widths={0: 28.0} | {i: 16.0 for i in range(1, 19)},
        freeze=(TABLE.first_row, 0),
        regime_columns=("ans_regime",),
        hidden_columns=tuple(q.name for q in P.columns()),
    )


def random_shapes(count: int, seed: int = DEFAULT_SEED) -> list[tuple[int, int, int]]:
    """Seeded shapes from decode GEMVs to large squares: powers of two, some times 3."""
    rng = np.random.default_rng(seed)
    m = 2 ** rng.integers(0, 15, count) * rng.choice([1, 3], count, p=[0.8, 0.2])
    k = 2 ** rng.integers(8, 15, count)
    n = 2 ** rng.integers(8, 15, count)
    return [(int(a), int(b), int(c)) for a, b, c in zip(m, k, n, strict=True)]


def input_values(count: int, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    shapes = random_shapes(count, seed)
    return {"reveal": 0, "p_m": [s[0] for s in shapes], "p_k": [s[1] for s in shapes],
            "p_n": [s[2] for s in shapes], "guess_intensity": [None] * count,
            "guess_regime": [None] * count, "guess_time": [None] * count}
