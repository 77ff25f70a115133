"""Which matmuls to time, in which order, within the time budget, with a progress bar.

The built-in sweep spans both regimes (GEMV-like skinny shapes far below the ridge, large
squares far above it) and the tile boundaries (a side of 128·q − 1, 128·q and 128·q + 1 adds
a whole row of output tiles), so quantization and the launch floor are both visible. It is
ordered so that a run cut short by the budget still holds both regimes.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

TILE = 128  # the usual GEMM thread-block tile side (NVIDIA's matrix multiplication guide)


def builtin_sweep(device: str) -> list[tuple[int, int, int]]:
    """About 40 (m, k, n) shapes: a scale of 4096 on a GPU, 1024 on a CPU (~100× slower)."""
    big = 4096 if device == "cuda" else 1024
    squares = [big // 16, big // 8, big // 4, big // 2, big, 3 * big // 2, 2 * big]
    skinny = [(m, k, n) for m in (1, 4, 16, 64, 256) for k, n in ((big, big), (2 * big, big),
                                                                   (big, 4 * big))]
    edges = [(s + d, s + d, s + d) for s in (TILE * 3, TILE * 6, TILE * 12) for d in (-1, 1)]
    rect = [(big, big // 4, big), (2 * big, 2 * big, big // 4), (big // 4, 2 * big, big // 4),
            (2 * big, big, 2 * big), (TILE, big, 4 * big), (4 * big, big, TILE),
            (96, big, big), (big, big, 96), (2 * big, big // 8, 2 * big),
            (big // 8, big // 8, 8 * big), (3 * TILE, 2 * big, 5 * TILE), (big, 3 * TILE, big)]
    groups = [[(s, s, s) for s in squares], skinny, edges, rect]
    out: list[tuple[int, int, int]] = []
    while any(groups):  # round-robin: every prefix of the sweep mixes the kinds
        for g in groups:
            if g:
                out.append(g.pop(0))
    return list(dict.fromkeys(out))


def estimated_seconds(m: int, k: int, n: int, dtype_bytes: int, peak: float, bw: float,
                      repeats: int, warmup: int, floor: float = 20e-6) -> float:
    """What timing one shape will take: its roofline time, a floor, per call; plus operand
    set-up (about 10 ns an element)."""
    call = max(2.0 * m * k * n / peak, dtype_bytes * (m * k + k * n + m * n) / bw) + floor
    return (repeats + warmup) * call + 10e-9 * (m * k + k * n + m * n)


@dataclass
class Progress:
    """A one-line progress bar on stderr when it is a terminal; silent when piped."""

    total: int
    label: str = "measuring"
    width: int = 30
    done: int = 0
    enabled: bool = False

    def __post_init__(self) -> None:
        self.enabled = self.enabled or sys.stderr.isatty()
        self.start = time.perf_counter()

    def step(self, note: str = "") -> None:
        self.done += 1
        if not self.enabled:
            return
        filled = int(self.width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (self.width - filled)
        elapsed = time.perf_counter() - self.start
        sys.stderr.write(f"\r{self.label} [{bar}] {self.done}/{self.total} "
                         f"{elapsed:5.1f} s {note:<24.24}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()
