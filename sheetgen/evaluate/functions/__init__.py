"""The function set of the evaluator, one module per family; importing the package registers
every function in FUNCTIONS (name -> implementation) and ARITY (name -> argument bounds)."""

from __future__ import annotations

from . import criteria, logic, lookup, maths, text  # noqa: F401 - they register themselves
from .aggregate import AREA_LIST_FUNCTIONS, PREFIX_AGGREGATES, is_moving_column
from .base import ARITY, FUNCTIONS, Unsupported

__all__ = ["AREA_LIST_FUNCTIONS", "ARITY", "FUNCTIONS", "PREFIX_AGGREGATES", "Unsupported",
           "is_moving_column"]
