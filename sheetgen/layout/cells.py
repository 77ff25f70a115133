"""The plan's cells and the addresses of every name: the data the planner produces and
every writer, the checker and the rules and text-fitting passes read.

One module so that the planner (layout/planner.py), the rules over cells (layout/rules.py)
and the text fitting (layout/text_fit.py) import it and not each other. Pure: no I/O, no
spreadsheet library (addresses come from core/a1.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sheetgen.core import a1, time_cells
from sheetgen.layout.charts import ChartPlan
from sheetgen.model.reference import ModelResult, Registry
from sheetgen.model.vocabulary import (
    BLANK_ROW,
    GAP_WRAP,
    GUARD_WRAP,
    NA_ROW,
    PLACEHOLDER,
    PLACEHOLDER_KINDS,
    Block,
    BlockRow,
    Input,
    Quantity,
    Table,
    Validation,
)

ROW = "\x00"  # stands for the row number inside a column's formula template
SHIFTED = re.compile("\x00|\x02(-?\\d+)\x03")  # ROW, or ROW shifted to another table's row


def shifted_row(delta: int) -> str:
    return ROW if delta == 0 else f"\x02{delta}\x03"


@dataclass(frozen=True)
class Cell:
    """One cell outside the tables: text, an input constant, or a formula with its cached value."""

    row: int
    col: int
    role: str  # title | subtitle | note | header | label | unit | input | formula
    value: Any = None
    formula: str | None = None
    fmt: str = "general"
    name: str | None = None
    #: columns the cell covers: more than one is a merged range whose text wraps inside it
    span: int = 1
    wrap: bool = False  # wrap the text in the cell (and grow its row to fit)


@dataclass
class ColumnPlan:
    """One table column: constants (inputs) or one formula shifted down the rows."""

    col: int
    name: str
    header: str
    fmt: str
    is_input: bool
    parts: list[str] | None  # formula text split where the row number goes
    values: np.ndarray  # inputs: the values; formulas: the cached (reference) results
    offsets: list[int] | None = None  # row shifts between parts (same-row refs to other tables)
    #: inputs linked to the user's cells: the formula of each of the first len(links) rows
    links: list[str] | None = None
    helper: bool = False  # an input the build sets for formulas: styled like a formula

    @property
    def style(self) -> str:
        """The cell role writers style this column's cells with."""
        return "input" if self.is_input and not self.helper else "derived"

    def link_at(self, i: int) -> str | None:
        """The linking formula of the column's i-th row, or None for a typed-in constant."""
        return self.links[i] if self.links is not None and i < len(self.links) else None

    def formula_at(self, row: int) -> str:
        """The formula of zero-based sheet row `row`."""
        assert self.parts is not None
        if self.offsets is None:
            return str(row + 1).join(self.parts)
        out = [self.parts[0]]
        for delta, part in zip(self.offsets, self.parts[1:], strict=True):
            out += (str(row + 1 + delta), part)
        return "".join(out)


@dataclass
class TablePlan:
    name: str
    header_row: int
    first_row: int
    n_rows: int
    columns: list[ColumnPlan]
    prints: bool = True  # False: kept out of the print area (a table feeding formulas)

    @property
    def last_row(self) -> int:
        return self.first_row + self.n_rows - 1

    def column(self, name: str) -> ColumnPlan:
        return next(c for c in self.columns if c.name == name)


@dataclass
class SheetPlan:
    name: str
    cells: list[Cell] = field(default_factory=list)
    tables: list[TablePlan] = field(default_factory=list)
    validations: list[ValidationPlan] = field(default_factory=list)
    conditionals: list[ConditionalPlan] = field(default_factory=list)
    format_rules: list[FormatRulePlan] = field(default_factory=list)
    dim_rules: list[DimRulePlan] = field(default_factory=list)
    charts: list[ChartPlan] = field(default_factory=list)
    widths: dict[int, float] = field(default_factory=dict)
    freeze: tuple[int, int] | None = None
    hidden: list[int] = field(default_factory=list)  # hidden columns
    #: row ranges (first, last) printed on one page where they fit (SheetSpec.keep_rows)
    keep_rows: list[tuple[int, int]] = field(default_factory=list)
    #: the page turned upright (True) or on its side (False), as layout.page's
    #: keep_texts_on_page chose it with the texts cut at its breaks; None before it runs
    portrait: bool | None = None

    def table(self, name: str) -> TablePlan:
        return next(t for t in self.tables if t.name == name)


@dataclass
class WorkbookPlan:
    sheets: list[SheetPlan]
    defined_names: dict[str, str]  # name -> absolute reference with sheet, no '='
    model: ModelResult
    registry: Registry
    metadata: dict[str, str] = field(default_factory=dict)

    def sheet(self, name: str) -> SheetPlan:
        return next(s for s in self.sheets if s.name == name)

    def table(self, name: str) -> TablePlan:
        return next(t for s in self.sheets for t in s.tables if t.name == name)


@dataclass(frozen=True)
class ValidationPlan:
    first_row: int
    first_col: int
    last_row: int
    last_col: int
    rule: Validation
    source: str | None = None  # absolute range with sheet, for list rules
    source_name: str | None = None  # the defined name of that range, if any


@dataclass(frozen=True)
class ConditionalPlan:
    """Colour the cells of one column range whose value equals `equals` (a text or a bool)."""

    first_row: int
    col: int
    last_row: int
    equals: str | bool
    color: str
    font: str | None = None
    negate: bool = False  # colour the cells that do NOT equal `equals`

    @property
    def literal(self) -> str:
        """`equals` as a formula literal: "memory-bound" or FALSE."""
        if isinstance(self.equals, bool):
            return "TRUE" if self.equals else "FALSE"
        return f'"{self.equals}"'


@dataclass(frozen=True)
class FormatRulePlan:
    """Show one column range with number format `fmt` while `condition` (formula text
    without '=', absolute references) is true: int8 rates in TOP/s."""

    first_row: int
    col: int
    last_row: int
    condition: str
    fmt: str


def block_slots(block: Block) -> list[tuple[int, Input | Quantity, int]]:
    """(row, item, col) for every value cell and suggestion of a block."""
    n_values = block_width(block)
    slots = []
    for i, row in enumerate(block.rows):
        r = block.row + 1 + i
        if isinstance(row, str):
            continue
        for j, item in enumerate(row.cells):
            if item is not None:
                slots.append((r, item, block.col + 1 + j))
        if row.suggestion is not None:
            slots.append((r, row.suggestion, block.col + 2 + n_values))
    return slots


def block_width(block: Block) -> int:
    return max(len(r.cells) for r in block.rows if isinstance(r, BlockRow))


def has_suggestions(block: Block) -> bool:
    return any(isinstance(r, BlockRow) and r.suggestion for r in block.rows)


@dataclass(frozen=True)
class DimRulePlan:
    """Grey out one column range while `condition` (formula text without '=') is true."""

    first_row: int
    col: int
    last_row: int
    condition: str


def abs_range(sheet: str, col1: int, row1: int, col2: int, row2: int) -> str:
    a = a1.absolute_cell(row1, col1)
    b = a1.absolute_cell(row2, col2)
    return f"{a1.quote_sheet(sheet)}!{a}:{b}"


@dataclass(frozen=True)
class Where:
    """Where one name sits: a cell, or a table column (or span of columns) of rows."""

    sheet: str
    row: int  # scalars: the row; columns: the first data row
    col: int
    last_row: int = -1  # columns only
    last_col: int = -1  # spans only
    table: str | None = None
    defined_name: str | None = None


class Layout:
    """Where every name of a workbook sits (`where`: name -> Where), and its formula
    templates resolved into formula text with those addresses."""

    def __init__(self, registry: Registry, rows: Mapping[str, int]) -> None:
        self.registry = registry
        self.gaps = registry.gaps()
        self.where: dict[str, Where] = {}
        self.where_table: dict[str, tuple[int, int]] = {  # table -> (first row, rows)
            t.name: (t.first_row, rows[t.name]) for t in registry.tables.values()}
        for sheet in registry.sheets:
            for block in sheet.blocks:
                for r, item, c in block_slots(block):
                    self.where[item.name] = Where(sheet.name, r, c,
                                                   defined_name=item.defined_name)
            for table in sheet.tables:
                first, n = table.first_row, rows[table.name]
                cols = {c.name: table.col + i for i, c in enumerate(table.all_columns())}
                for name, c in cols.items():
                    self.where[name] = Where(sheet.name, first, c, first + n - 1,
                                              table=table.name,
                                              defined_name=table.range_names.get(name))
                for span in table.spans:
                    self.where[span.name] = Where(sheet.name, first, cols[span.first],
                                                   first + n - 1, cols[span.last],
                                                   table=table.name,
                                                   defined_name=span.defined_name)

    def columns(self, name: str) -> tuple[int, int, int]:
        """A table column's (col, first row, last row): what a chart series reads."""
        w = self.where[name]
        return (w.col, w.row, max(w.row, w.last_row))

    def defined_names(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for w in self.where.values():
            if w.defined_name:
                out[w.defined_name] = self.absolute(w)
        return out

    def absolute(self, w: Where) -> str:
        if w.table is None:
            cell = a1.absolute_cell(w.row, w.col)
            return f"{a1.quote_sheet(w.sheet)}!{cell}"
        last_col = w.last_col if w.last_col >= 0 else w.col
        return abs_range(w.sheet, w.col, w.row, last_col, w.last_row)

    def _unit_ref(self, name: str, kind: str) -> time_cells.Ref:
        item = self.registry.items.get(name)  # None: a span of (unitless) input columns
        exponent = time_cells.time_exponent(item.unit) if item is not None else 0
        return time_cells.Ref(exponent, self.registry.factor(name) if item else 1.0,
                              kind != "cell")

    def _ref(self, name: str, kind: str, sheet: str, table: str | None) -> str:
        w = self.where[name]
        prefix = "" if w.sheet == sheet else f"{a1.quote_sheet(w.sheet)}!"
        if kind == "cell" and w.table is not None:
            if w.table == table:
                return f"{a1.col_name(w.col)}{ROW}"
            # the same row of another table with as many rows (e.g. per-layer tables)
            mine = self.where_table[table] if table else None
            if mine is None or mine[1] != w.last_row - w.row + 1:
                raise ValueError(f"{name!r} is a column of table {w.table!r}: use {{{name}[]}}")
            return f"{prefix}{a1.col_name(w.col)}{shifted_row(w.row - mine[0])}"
        if kind == "running":
            if w.table != table:
                raise ValueError(f"running reference to {name!r} outside its table")
            col = a1.col_name(w.col)
            return f"${col}${w.row + 1}:{col}{ROW}"
        if kind == "range" and w.table is None:
            raise ValueError(f"{name!r} is a single cell: use {{{name}}}")
        if w.defined_name:
            return w.defined_name
        if w.table is None:
            return prefix + a1.absolute_cell(w.row, w.col)
        a = a1.absolute_cell(w.row, w.col)
        last_col = w.last_col if w.last_col >= 0 else w.col
        b = a1.absolute_cell(w.last_row, last_col)
        return f"{prefix}{a}:{b}"

    def formula(self, q: Quantity, sheet: str, table: Table | None) -> str:
        """The formula text ('=...') of q placed on sheet (in table, if a column), with the
        time conversions its cells' units need (cell_units)."""
        tname = table.name if table else None
        kinds = PLACEHOLDER_KINDS
        refs = [self._unit_ref(m.group(1), kinds[m.group(2)])
                for m in PLACEHOLDER.finditer(q.template)]
        try:
            conv = time_cells.plan_conversion(
                time_cells.time_exponent(q.unit), self.registry.factor(q.name), refs,
                may_wrap=not time_cells.may_give_text(q.template), si_refs=q.si_refs)
        except ValueError as exc:
            raise ValueError(f"{q.name!r}: {exc}") from None
        it = iter(refs)
        body = PLACEHOLDER.sub(
            lambda m: time_cells.convert_ref(
                self._ref(m.group(1), kinds[m.group(2)], sheet, tname),
                conv.ref_multiplier(next(it))),
            q.template,
        )
        body = time_cells.convert_result(body, conv.result)
        gap = self.gaps.get(q.name)
        if gap is not None:
            body = GAP_WRAP.format(source=self._ref(gap[0], "cell", sheet, tname),
                                   marker=self._ref(gap[1], "cell", sheet, tname), body=body)
        if table is not None and table.guard and q.name != table.guard:
            guard = self._ref(table.guard, "cell", sheet, tname)
            body = GUARD_WRAP.format(guard=guard, body=body,
                                     otherwise=NA_ROW if table.na_rows else BLANK_ROW)
        return "=" + body

    def condition(self, template: str, sheet: str) -> str:
        """A scalar condition template as formula text (no '='), placed on `sheet`."""
        return PLACEHOLDER.sub(lambda m: self._ref(m.group(1), "cell", sheet, None), template)
