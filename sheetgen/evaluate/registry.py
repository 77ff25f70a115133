"""The functions the evaluator knows, by Excel name: filled by `register` as the modules of
`functions/` are imported, read by the evaluator. It imports nothing of the evaluator, so
the evaluator and the function modules both import it without a cycle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Excel name -> implementation, called as f(argument nodes, context) -> Vec
FUNCTIONS: dict[str, Callable[..., Any]] = {}
#: Excel name -> (fewest, most) arguments
ARITY: dict[str, tuple[int, int]] = {}

F = Callable[..., Any]


def register(name: str, lo: int, hi: int) -> Callable[[F], F]:
    """Add a function to the dialect under its Excel name, with its argument count bounds."""

    def deco(f: F) -> F:
        FUNCTIONS[name] = f
        ARITY[name] = (lo, hi)
        return f

    return deco


__all__ = ["ARITY", "FUNCTIONS", "register"]
