"""Shared formulas as row templates: one master text, its copies shifted down a column.

Excel stores a filled-down column as one master formula (``<f t="shared" ref="E6:E9" si="0">``)
and, in every other cell of the range, only ``<f t="shared" si="0"/>``: each copy is the
master with its relative references moved by the cell's offset from the master (ECMA-376
Part 1, 18.3.1.40 "f (Formula)", the ``shared`` type). sheetgen writes big tables that way,
and reads them back through the same template, so both sides shift rows one way: the
evaluator's tokenizer says which row numbers are relative.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat

from .tokenizer import FormulaSyntaxError, tokenize


class RowTemplate:
    """A formula split around its relative row numbers, each kept as an offset from the
    master's row, so the copy for any row of the same column is one join."""

    __slots__ = ("offsets", "parts", "same_row")

    def __init__(self, parts: list[str], offsets: list[int]) -> None:
        self.parts = parts
        self.offsets = offsets
        self.same_row = bool(offsets) and all(o == 0 for o in offsets)

    @classmethod
    def of(cls, formula: str, row: int) -> RowTemplate | None:
        """The template of `formula` (with or without '=') written in 1-based `row`; None
        when the tokenizer cannot read it."""
        body = formula[1:] if formula.startswith("=") else formula
        try:
            _, spans = tokenize(body)
        except FormulaSyntaxError:
            return None
        parts: list[str] = []
        offsets: list[int] = []
        pos = 0
        for start, end in sorted(spans):
            parts.append(body[pos:start])
            offsets.append(int(body[start:end]) - row)
            pos = end
        parts.append(body[pos:])
        return cls(parts, offsets)

    def at(self, row: int) -> str:
        """The copy in 1-based `row` (no leading '=')."""
        out = [self.parts[0]]
        for off, part in zip(self.offsets, self.parts[1:], strict=True):
            out += (str(row + off), part)
        return "".join(out)

    def many(self, rows: Iterable[int]) -> list[str]:
        """Copies for many rows; the usual same-row form is one C-level join per row."""
        if not self.offsets:
            return [self.parts[0]] * sum(1 for _ in rows)
        if self.same_row:
            return list(map(str.join, map(str, rows), repeat(self.parts)))
        return [self.at(r) for r in rows]

    def lowest_row(self) -> int:
        """The smallest offset: copies above row 1 - lowest_row() would leave the grid."""
        return min(self.offsets, default=0)


__all__ = ["RowTemplate"]
