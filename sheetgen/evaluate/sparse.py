"""Reductions over the stored cells of a range too large to materialise.

A fixed range is materialised as one block (evaluator.take_block), clipped to the cells
present and refused over MAX_RANGE_CELLS even then: a sheet of 100,000 rows with one note in
column XFD makes `SUM(1:100000)` a 1.6-billion-cell block. SUM, COUNT, COUNTA, MAX, MIN and
AVERAGE need no block: over a reference they read only its numbers (COUNTA: its non-empty
cells) and its first error in row-major order, Excel's reading order. So for such a range
they are computed column by column over each column's stored window, work that the cell
budgets already bound (MAX_SPAN_CELLS cells in all), with no copy larger than one column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .evaluator import Ctx, clip_block, range_bounds
from .limits import MAX_COL, MAX_RANGE_CELLS, MAX_ROW
from .parser import Node
from .values import EMPTY, ERR, NUM, ExcelError


@dataclass
class Reduction:
    """What the aggregates need from one range: over its numeric cells the sum, count,
    largest and smallest; its non-empty cells; and its first error in row-major order."""

    total: float = 0.0
    numbers: int = 0
    largest: float = -np.inf
    smallest: float = np.inf
    nonempty: int = 0
    error: ExcelError | None = None


def sparse_reduction(node: Node, ctx: Ctx) -> Reduction | None:
    """The reduction of a range argument that take_block would refuse as too large; None for
    anything else (evaluate it as usual). A range whose rows move needs a single row, as in
    evaluator.range_bounds (raises Rowwise otherwise)."""
    if node[0] != "range":
        return None
    r1, c1, r2, c2 = range_bounds(node, ctx)
    store = ctx.book.get(node[1])
    if store is None or r1 < 1 or c1 < 1 or r2 > MAX_ROW or c2 > MAX_COL:
        return None  # take_block gives the #REF! (or the missing sheet's error)
    cr2, cc2 = clip_block(store, r1, c1, r2, c2)
    if (cr2 - r1 + 1) * (cc2 - c1 + 1) <= MAX_RANGE_CELLS:
        return None
    out = Reduction()
    first: tuple[int, int] | None = None  # (row, col) of the first error, row-major
    for col in sorted(c for c in store.cols if c1 <= c <= c2):
        column = store.cols[col]
        a, b = max(r1, column.lo), min(r2, column.hi - 1)
        if a > b:
            continue
        kinds = column.kind[a - column.lo : b + 1 - column.lo]
        nums = column.num[a - column.lo : b + 1 - column.lo]
        numeric = kinds == NUM
        out.numbers += int(np.count_nonzero(numeric))
        out.nonempty += int(np.count_nonzero(kinds != EMPTY))
        if numeric.any():
            out.total += float(np.add.reduce(nums, where=numeric))
            out.largest = max(out.largest, float(np.max(nums, where=numeric, initial=-np.inf)))
            out.smallest = min(out.smallest, float(np.min(nums, where=numeric, initial=np.inf)))
        errors = np.flatnonzero(kinds == ERR)
        if errors.size and (first is None or (a + int(errors[0]), col) < first):
            first = (a + int(errors[0]), col)
            assert column.obj is not None  # an error cell always has its object
            out.error = column.obj[first[0] - column.lo]
    return out
