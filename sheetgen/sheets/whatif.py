"""The "What-if" sheet: how one matmul's time, intensity and regime move when m, k or n is
halved or doubled, and the crossover sizes at which it turns compute-bound.

Compute-bound and memory-bound matmuls respond in opposite ways to scaling: doubling m doubles
a compute-bound matmul's time but barely moves a weight-streaming (memory-bound) one, while
doubling k or n about doubles a memory-bound time (the k×n weights double). A live sentence
reads the table's own ratios, including where a doubling crosses the ridge.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.core.defaults import DEFAULT_WHATIF_SHAPE
from sheetgen.layout.styles import COMPUTE_BOUND, MEMORY_BOUND
from sheetgen.model import factories as rf
from sheetgen.model import refined_columns as rc
from sheetgen.model.vocabulary import (
    Block,
    BlockRow,
    Input,
    Quantity,
    SheetSpec,
    Table,
    Text,
    Validation,
)
from sheetgen.sheets.matmul import MAX_DIM
from sheetgen.sheets.parallel.text import Num, When, sentence

SHEET = "What-if"
DEFAULT_SHAPE = DEFAULT_WHATIF_SHAPE  # memory-bound on an A100 in bf16
NEVER = "never"

_DIM = Validation("whole_min", minimum=1, maximum=MAX_DIM, message="A positive whole number")
W_M = Input("whatif_m", "base m", fmt="int", defined_name="WHATIF_M", validation=_DIM)
W_K = Input("whatif_k", "base k", fmt="int", defined_name="WHATIF_K", validation=_DIM)
W_N = Input("whatif_n", "base n", fmt="int", defined_name="WHATIF_N", validation=_DIM)

SCENARIOS: list[tuple[str, float, float, float]] = [
    ("base", 1, 1, 1),
    ("m halved", 0.5, 1, 1),
    ("m doubled", 2, 1, 1),
    ("k halved", 1, 0.5, 1),
    ("k doubled", 1, 2, 1),
    ("n halved", 1, 1, 0.5),
    ("n doubled", 1, 1, 2),
    ("all halved", 0.5, 0.5, 0.5),
    ("all doubled", 2, 2, 2),
]

SCENARIO = Input("scenario", "scenario", fmt="text")
#: a scenario's factor: positive (the scaled dimension divides the base row's figures)
_FACTOR = Validation("decimal_range", minimum=1e-6, maximum=1e6,
                     message="A positive factor (0.5 halves, 2 doubles)")
M_SCALE = Input("m_scale", "m ×", fmt="ratio", validation=_FACTOR)
K_SCALE = Input("k_scale", "k ×", fmt="ratio", validation=_FACTOR)
N_SCALE = Input("n_scale", "n ×", fmt="ratio", validation=_FACTOR)


def _scaled(name: str, base: str, scale: str) -> Quantity:
    return Quantity(
        name, name[-1], "", f"{{{base}}}*{{{scale}}}", lambda **a: a[base] * a[scale], fmt="int"
    )


S_M = _scaled("wi_m", "whatif_m", "m_scale")
S_K = _scaled("wi_k", "whatif_k", "k_scale")
S_N = _scaled("wi_n", "whatif_n", "n_scale")
WI = rf.matmul_roofline("wi_", "wi_m", "wi_k", "wi_n")


def _vs_base(name: str, column: str, label: str) -> Quantity:
    return Quantity(
        name,
        label,
        "×",
        f"{{{column}}}/INDEX({{{column}[]}},1)",
        lambda **a: a[column] / np.asarray(a[column])[0],
        fmt="ratio",
        doc="relative to the base row",
    )


WI_TIME_RATIO = _vs_base("wi_time_ratio", "wi_time", "time vs base")
WI_FLOPS_RATIO = _vs_base("wi_flops_ratio", "wi_flops", "FLOPs vs base")
WI_INTENSITY_RATIO = _vs_base("wi_intensity_ratio", "wi_intensity", "intensity vs base")
WI_REFINED = rc.refined_roofline("wi_", "wi_m", "wi_n", "wi_compute_time", "wi_memory_time",
                                 flops_="wi_flops", inner="wi_k", bandwidth="attainable_bw")
WI_REFINED_RATIO = _vs_base("wi_refined_ratio", "wi_refined_time", "refined time vs base")

TABLE = Table(
    name="whatif",
    header_row=10,
    col=0,
    inputs=(SCENARIO, M_SCALE, K_SCALE, N_SCALE),
    columns=(
        S_M,
        S_K,
        S_N,
        *WI.columns(),
        WI_TIME_RATIO,
        WI_FLOPS_RATIO,
        WI_INTENSITY_RATIO,
        *WI_REFINED.columns(),
        WI_REFINED_RATIO,
    ),
)


_A, _W, _O = rf.ACT_BYTES, rf.WEIGHT_BYTES, rf.OUT_BYTES  # a, w, o: bytes per element


def _denominator(name: str, x: str, y: str, bx: str, by: str, label: str) -> Quantity:
    """2xy − R(bx·x + by·y): positive when growing the free dimension can reach the ridge.

    intensity = 2mkn / (a·mk + w·kn + o·mn); for m free (x, y = k, n) the terms in m are
    a·k + o·n, for n free (x, y = m, k) they are o·m + w·k."""
    return Quantity(
        name,
        label,
        "",
        f"2*{{{x}}}*{{{y}}}-{{attainable_ridge}}*({{{bx}}}*{{{x}}}+{{{by}}}*{{{y}}})",
        lambda **k: 2 * k[x] * k[y] - k["attainable_ridge"] * (k[bx] * k[x] + k[by] * k[y]),
        fmt="int",  # 30,267,090 for 4096 × 4096 bf16 on an A100, not 3.027E+07
    )


def _crossover(name: str, x: str, y: str, b_fixed: str, den: str, label: str) -> Quantity:
    """R·b·x·y / denominator, or "never": the free dimension where intensity meets the ridge
    (b: bytes per element of the operand that does not grow with it)."""

    def reference(**k: Any) -> Any:
        if k[den] <= 0:
            return NEVER
        return k["attainable_ridge"] * k[b_fixed] * k[x] * k[y] / k[den]

    return Quantity(
        name,
        label,
        "",
        f"IF({{{den}}}>0,{{attainable_ridge}}*{{{b_fixed}}}*{{{x}}}*"
        f'{{{y}}}/{{{den}}},"{NEVER}")',
        reference,
        fmt="ratio",
        doc="intensity(m) = 2mkn / (a·mk + w·kn + o·mn) rises with m towards "
        "2kn/(a·k + o·n); it reaches the ridge R only if that limit exceeds R.",
    )


def _smallest(name: str, crossover: str, label: str) -> Quantity:
    def reference(**k: Any) -> Any:
        x = k[crossover]
        return NEVER if isinstance(x, str) else float(np.ceil(x))

    return Quantity(
        name,
        label,
        "",
        f'IF(ISNUMBER({{{crossover}}}),ROUNDUP({{{crossover}}},0),"{NEVER}")',
        reference,
        fmt="int",
    )


DEN_M = _denominator("cross_m_den", "whatif_k", "whatif_n", _A, _O,
                     "denominator 2kn − R(a·k + o·n)")
CROSS_M = _crossover(
    "cross_m", "whatif_k", "whatif_n", _W, "cross_m_den", "m* (m where intensity = ridge)"
)
SMALLEST_M = _smallest("cross_m_whole", "cross_m", "smallest whole m that is compute-bound")
DEN_N = _denominator("cross_n_den", "whatif_m", "whatif_k", _O, _W,
                     "denominator 2mk − R(o·m + w·k)")
CROSS_N = _crossover(
    "cross_n", "whatif_m", "whatif_k", _A, "cross_n_den", "n* (n where intensity = ridge)"
)
SMALLEST_N = _smallest("cross_n_whole", "cross_n", "smallest whole n that is compute-bound")

INPUTS = Block(
    row=4,
    col=0,
    header=("Base shape", "Value", "Unit", "Notes"),
    rows=(BlockRow(W_M.label, [W_M]), BlockRow(W_K.label, [W_K]), BlockRow(W_N.label, [W_N])),
)
CROSSOVER = Block(
    row=TABLE.header_row + len(SCENARIOS) + 3,
    col=0,
    header=("Crossover to compute-bound", "Value", "Unit", "Notes"),
    rows=(
        BlockRow(DEN_M.label, [DEN_M], "", "for the base k and n"),
        BlockRow(CROSS_M.label, [CROSS_M], "rows", "R·w·k·n / (2kn − R(a·k + o·n)), or never"),
        BlockRow(SMALLEST_M.label, [SMALLEST_M], "rows"),
        BlockRow(DEN_N.label, [DEN_N], "", "for the base m and k"),
        BlockRow(CROSS_N.label, [CROSS_N], "cols", "R·a·m·k / (2mk − R(o·m + w·k)), or never"),
        BlockRow(SMALLEST_N.label, [SMALLEST_N], "cols"),
    ),
)


def _row(name: str) -> int:
    return 1 + [s[0] for s in SCENARIOS].index(name)


def _ratio(name: str) -> Num:
    i = _row(name)
    return Num(f"INDEX({{wi_time_ratio[]}},{i})",
               lambda a: float(np.asarray(a["wi_time_ratio"])[i - 1]))


def _regime(i: int) -> When:
    """Row i's regime, in words."""
    return When(f'INDEX({{wi_regime[]}},{i})="{COMPUTE_BOUND}"',
                lambda a: np.asarray(a["wi_regime"])[i - 1] == COMPUTE_BOUND,
                (COMPUTE_BOUND,), (MEMORY_BOUND,))


def _doubled(name: str) -> tuple[Num | When, ...]:
    """The time ratio, and the regime it lands in when that differs from the base's."""
    i = _row(name)
    flips = When(f"INDEX({{wi_regime[]}},{i})<>INDEX({{wi_regime[]}},1)",
                 lambda a: np.asarray(a["wi_regime"])[i - 1] != np.asarray(a["wi_regime"])[0],
                 (" (now ", _regime(i), ")"), ())
    return (_ratio(name), flips)


SHOWS = sentence("whatif_shows", "what the table shows", (
    "On this shape the base is ", _regime(1),
    When("ISNUMBER({cross_m_whole})", lambda a: not isinstance(a["cross_m_whole"], str),
         ("; with this k and n it is memory-bound below m* and compute-bound from m = ",
          Num("{cross_m_whole}", lambda a: a["cross_m_whole"], 6), " rows"),
         ("; with this k and n no m makes it compute-bound",)),
    ". Time when doubling m: ×", *_doubled("m doubled"), "; k: ×", *_doubled("k doubled"),
    "; n: ×", *_doubled("n doubled"), "; all three: ×", *_doubled("all doubled"), ".",
))
SHOWS_BLOCK = Block(row=CROSSOVER.row + len(CROSSOVER.rows) + 2, col=0,
                    header=("What the table shows (live)", ""), rows=(BlockRow(SHOWS.label,
                                                                              [SHOWS]),),
                    value_span=8)


def sheet() -> SheetSpec:
    return SheetSpec(
        name=SHEET,
        time_unit="µs",
        texts=(
            Text(0, 0, "What-if: scaling one matmul", "title"),
            Text(
                1,
                0,
                "Compute-bound and memory-bound matmuls move in opposite directions. While "
                "memory-bound, raising m is almost free (the k×n weights dominate the bytes) "
                "up to m*, below; once compute-bound, time grows linearly with m. A "
                "memory-bound time about doubles when k or n doubles (the weights double); a "
                "compute-bound one follows the FLOPs. A doubling that crosses the ridge "
                "lands in between: the table's time ratios and the live line below show it.",
                span=9,
            ),
            Text(2, 0, "R is the attainable ridge (Inputs sheet); a, w, o the bytes per element "
                 "of A (m×k), B (k×n) and C (m×n) as stored (Inputs: ACT_BYTES, WEIGHT_BYTES, "
                 "OUT_BYTES)."),
            Text(TABLE.header_row - 1, 0, "Halve and double", "subtitle"),
            Text(CROSSOVER.row - 1, 0, "When does it turn compute-bound?", "subtitle"),
        ),
        blocks=(INPUTS, CROSSOVER, SHOWS_BLOCK),
        tables=(TABLE,),
        column_widths={0: 40.0} | {i: 13.0 for i in range(1, len(TABLE.all_columns()))},
        regime_columns=("wi_regime",),
        dimmed=rc.dimmed_while_off(WI_REFINED),
    )


def input_values(shape: tuple[int, int, int] = DEFAULT_SHAPE) -> dict[str, Any]:
    m, k, n = shape
    return {
        "whatif_m": m,
        "whatif_k": k,
        "whatif_n": n,
        "scenario": [s[0] for s in SCENARIOS],
        "m_scale": [s[1] for s in SCENARIOS],
        "k_scale": [s[2] for s in SCENARIOS],
        "n_scale": [s[3] for s in SCENARIOS],
    }
