"""Planning: which value goes in which cell, with which formula. Pure: no I/O.

The plan is what every writer consumes (xlsx, Google Sheets) and what the checker compares
against, so cell placement and formula text are decided here and nowhere else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xlsxwriter.utility import quote_sheetname, xl_col_to_name, xl_rowcol_to_cell

from sheetgen.core import time_cells
from sheetgen.layout import text_fit
from sheetgen.layout.charts import ChartPlan, plan_chart
from sheetgen.layout.rules import (
    ConditionalPlan,
    DimRulePlan,
    FormatRulePlan,
    ValidationPlan,
    block_slots,
    block_width,
    has_suggestions,
    plan_conditionals,
    plan_dimmed,
    plan_switch,
    plan_validations,
)
from sheetgen.layout.styles import (
    BOOLEAN_FORMATS,
    display_format,
    shows_unit,
)
from sheetgen.model.reference import ModelResult, Registry, evaluate
from sheetgen.model.vocabulary import (
    BLANK_ROW,
    GAP_WRAP,
    GUARD_WRAP,
    NA_ROW,
    PLACEHOLDER,
    Block,
    Input,
    Quantity,
    SheetSpec,
    Table,
)

ROW = "\x00"  # stands for the row number inside a column's formula template
_SHIFTED = re.compile("\x00|\x02(-?\\d+)\x03")  # ROW, or ROW shifted to another table's row


def _shifted_row(delta: int) -> str:
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


def item_format(item: Input | Quantity, values: Any = None, time_unit: str | None = None
                ) -> str:
    """The number format an item is shown with: from its unit where that is readable (a time
    by the unit its cell holds), and "bool" (TRUE/FALSE, FALSE highlighted) for a quantity
    whose reference values are booleans however it was declared, so a yes/no never shows as
    1/0."""
    if item.fmt not in BOOLEAN_FORMATS and values is not None and _is_boolean(values):
        return "bool"
    return display_format(item.unit, item.fmt, time_unit)


def _is_boolean(values: Any) -> bool:
    if isinstance(values, bool | np.bool_):
        return True
    if isinstance(values, np.ndarray) and values.ndim == 1 and len(values):
        if values.dtype == bool:
            return True
        kinds = {type(v) for v in values.tolist() if v != ""}
        return bool(kinds) and kinds <= {bool}
    return False


def header_text(item: Input | Quantity, time_unit: str | None = None) -> str:
    """A column header: the label, and the unit its cells hold unless every cell shows it."""
    if item.unit and not shows_unit(item_format(item, time_unit=time_unit)):
        return f"{item.label} ({time_unit or item.unit})"
    return item.label


def _abs_range(sheet: str, col1: int, row1: int, col2: int, row2: int) -> str:
    a = xl_rowcol_to_cell(row1, col1, row_abs=True, col_abs=True)
    b = xl_rowcol_to_cell(row2, col2, row_abs=True, col_abs=True)
    return f"{quote_sheetname(sheet)}!{a}:{b}"


@dataclass(frozen=True)
class _Where:
    sheet: str
    row: int  # scalars: the row; columns: the first data row
    col: int
    last_row: int = -1  # columns only
    last_col: int = -1  # spans only
    table: str | None = None
    defined_name: str | None = None


class _Layout:
    """Addresses of every name, and the resolution of templates into formula text."""

    def __init__(self, registry: Registry, rows: Mapping[str, int]) -> None:
        self.registry = registry
        self.gaps = registry.gaps()
        self.where: dict[str, _Where] = {}
        self.where_table: dict[str, tuple[int, int]] = {  # table -> (first row, rows)
            t.name: (t.first_row, rows[t.name]) for t in registry.tables.values()}
        for sheet in registry.sheets:
            for block in sheet.blocks:
                for r, item, c in block_slots(block):
                    self.where[item.name] = _Where(sheet.name, r, c,
                                                   defined_name=item.defined_name)
            for table in sheet.tables:
                first, n = table.first_row, rows[table.name]
                cols = {c.name: table.col + i for i, c in enumerate(table.all_columns())}
                for name, c in cols.items():
                    self.where[name] = _Where(sheet.name, first, c, first + n - 1,
                                              table=table.name,
                                              defined_name=table.range_names.get(name))
                for span in table.spans:
                    self.where[span.name] = _Where(sheet.name, first, cols[span.first],
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

    def absolute(self, w: _Where) -> str:
        if w.table is None:
            cell = xl_rowcol_to_cell(w.row, w.col, row_abs=True, col_abs=True)
            return f"{quote_sheetname(w.sheet)}!{cell}"
        last_col = w.last_col if w.last_col >= 0 else w.col
        return _abs_range(w.sheet, w.col, w.row, last_col, w.last_row)

    def _unit_ref(self, name: str, kind: str) -> time_cells.Ref:
        item = self.registry.items.get(name)  # None: a span of (unitless) input columns
        exponent = time_cells.time_exponent(item.unit) if item is not None else 0
        return time_cells.Ref(exponent, self.registry.factor(name) if item else 1.0,
                              kind != "cell")

    def _ref(self, name: str, kind: str, sheet: str, table: str | None) -> str:
        w = self.where[name]
        prefix = "" if w.sheet == sheet else f"{quote_sheetname(w.sheet)}!"
        if kind == "cell" and w.table is not None:
            if w.table == table:
                return f"{xl_col_to_name(w.col)}{ROW}"
            # the same row of another table with as many rows (e.g. per-layer tables)
            mine = self.where_table[table] if table else None
            if mine is None or mine[1] != w.last_row - w.row + 1:
                raise ValueError(f"{name!r} is a column of table {w.table!r}: use {{{name}[]}}")
            return f"{prefix}{xl_col_to_name(w.col)}{_shifted_row(w.row - mine[0])}"
        if kind == "running":
            if w.table != table:
                raise ValueError(f"running reference to {name!r} outside its table")
            col = xl_col_to_name(w.col)
            return f"${col}${w.row + 1}:{col}{ROW}"
        if kind == "range" and w.table is None:
            raise ValueError(f"{name!r} is a single cell: use {{{name}}}")
        if w.defined_name:
            return w.defined_name
        if w.table is None:
            return prefix + xl_rowcol_to_cell(w.row, w.col, row_abs=True, col_abs=True)
        a = xl_rowcol_to_cell(w.row, w.col, row_abs=True, col_abs=True)
        last_col = w.last_col if w.last_col >= 0 else w.col
        b = xl_rowcol_to_cell(w.last_row, last_col, row_abs=True, col_abs=True)
        return f"{prefix}{a}:{b}"

    def formula(self, q: Quantity, sheet: str, table: Table | None) -> str:
        """The formula text ('=...') of q placed on sheet (in table, if a column), with the
        time conversions its cells' units need (cell_units)."""
        tname = table.name if table else None
        kinds = {None: "cell", "[]": "range", "[:]": "running"}
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


def input_addresses(sheets: Sequence[SheetSpec], rows: Mapping[str, int]
                    ) -> dict[str, tuple[str, int, int, int]]:
    """Where each input lives: name -> (sheet, first row, column, rows; 0 for a single cell).

    The checker reads a workbook's own inputs from these cells and re-runs the model on them.
    """
    registry = Registry(sheets)
    layout = _Layout(registry, rows)
    out = {}
    for name, item in registry.items.items():
        if isinstance(item, Input):
            w = layout.where[name]
            n = 0 if w.table is None else w.last_row - w.row + 1
            out[name] = (w.sheet, w.row, w.col, n)
    return out


#: Where a linked input row reads from: (sheet, zero-based row, zero-based column).
Source = tuple[str, int, int]


def source_address(source: Source) -> str:
    """An absolute, sheet-qualified address such as 'My shapes'!$B$7."""
    sheet, row, col = source
    return f"{quote_sheetname(sheet)}!{xl_rowcol_to_cell(row, col, row_abs=True, col_abs=True)}"


def plan_workbook(sheets: Sequence[SheetSpec], values: Mapping[str, Any],
                  metadata: Mapping[str, str] | None = None,
                  links: Mapping[str, Sequence[Source]] | None = None,
                  *, from_cells: bool = False) -> WorkbookPlan:
    """Place every declared item, resolve every formula and attach the reference values.

    `values` are SI (what the model takes), or, with `from_cells`, what the input cells
    hold (a workbook read back: times in their sheets' units). The plan's cells and columns
    hold cell values (times scaled, see cell_units); `WorkbookPlan.model` stays SI.

    `links` turns table input columns into live references to the user's own cells: column
    name -> the source cell of each of its first rows (the rest stay typed-in inputs). Each
    linked cell's formula is the input's `link` template; its cached value is `values`'.
    """
    links = dict(links or {})
    registry = Registry(sheets)
    model = evaluate(registry, registry.from_cells(values) if from_cells else values)
    shown = _cell_values(registry, model)
    rows = {name: len(model.ok[name]) for name in registry.tables}
    layout = _Layout(registry, rows)
    plans = []
    for spec in sheets:
        sp = SheetPlan(name=spec.name, widths=dict(spec.column_widths), freeze=spec.freeze)
        for text in spec.texts:
            sp.cells.append(Cell(text.row, text.col, text.style, text.text, fmt="text",
                                 span=max(1, text.span), wrap=text.span > 0))
        for block in spec.blocks:
            _plan_block(sp, block, spec, layout, shown)
        for table in spec.tables:
            _plan_table(sp, table, spec, layout, shown, rows[table.name], links)
        text_fit.fit_columns(sp)
        text_fit.fit_row_notes(sp)
        plan_validations(sp, spec, layout)
        plan_conditionals(sp, spec, layout)
        plan_dimmed(sp, spec, layout)
        for chart in spec.charts:
            title = None
            if chart.title_from is not None:
                w = layout.where[chart.title_from]
                title = (str(shown.scalars[chart.title_from]), (w.sheet, w.row, w.col))
            sp.charts.append(plan_chart(chart, layout.columns,
                                        lambda n: list(shown.columns[n]), title))
        sp.hidden = sorted({layout.where[name].col for name in spec.hidden_columns}
                           | {c for first, last in spec.hidden_spans
                              for c in range(first, last + 1)})
        plans.append(sp)
    for switch in (s for spec in sheets for s in spec.format_switches):
        plan_switch(plans, switch, registry, layout, model)
    unknown = set(links) - {i.name for t in registry.tables.values() for i in t.inputs}
    if unknown:
        raise ValueError(f"links name no table input column: {sorted(unknown)}")
    meta = dict(metadata or {})
    meta.update({f"sheetgen.rows.{name}": str(n) for name, n in rows.items()})
    return WorkbookPlan(plans, layout.defined_names(), model, registry, meta)


def _cell_values(registry: Registry, model: ModelResult) -> ModelResult:
    """The model's values as their cells hold them (times in their sheet's unit)."""
    return ModelResult(
        scalars={k: time_cells.scaled(v, registry.factor(k)) for k, v in model.scalars.items()},
        columns={k: time_cells.scaled(v, registry.factor(k)) for k, v in model.columns.items()},
        ok=model.ok)


def _plan_block(sp: SheetPlan, block: Block, spec: SheetSpec, layout: _Layout,
                model: ModelResult) -> None:
    first = len(sp.cells)
    _plan_block_cells(sp, block, spec, layout, model)
    text_fit.span_long_texts(sp, first, block, spec.column_widths)


def _plan_block_cells(sp: SheetPlan, block: Block, spec: SheetSpec, layout: _Layout,
                      model: ModelResult) -> None:
    for j, text in enumerate(block.header):
        sp.cells.append(Cell(block.row, block.col + j, "header", text, fmt="text"))
    n_values = block_width(block)
    unit_col = block.col + 1 + n_values
    note_col = unit_col + (2 if has_suggestions(block) else 1)
    for i, row in enumerate(block.rows):
        r = block.row + 1 + i
        if isinstance(row, str):
            sp.cells.append(Cell(r, block.col, "subtitle", row, fmt="text"))
            continue
        sp.cells.append(Cell(r, block.col, "label", row.label, fmt="text"))
        tu = layout.registry.time_units
        shown = [c for c in row.cells
                 if c is not None and item_format(c, time_unit=tu.get(c.name))
                 not in ("text", *BOOLEAN_FORMATS)]
        if row.unit and not (shown and all(shows_unit(item_format(c, time_unit=tu.get(c.name)))
                                           for c in shown)):
            times = {tu[c.name] for c in shown if c.name in tu}
            unit = times.pop() if row.unit == time_cells.TIME and len(times) == 1 else row.unit
            sp.cells.append(Cell(r, unit_col, "unit", unit, fmt="text"))
        if row.note:
            sp.cells.append(Cell(r, note_col, "row_note", row.note, fmt="text"))
    for r, item, c in block_slots(block):
        fmt = item_format(item, model.scalars[item.name], layout.registry.time_units.get(
            item.name))
        if isinstance(item, Input):
            sp.cells.append(Cell(r, c, "input", model.scalars[item.name], fmt=fmt,
                                 name=item.name))
        else:
            sp.cells.append(Cell(r, c, "formula", model.scalars[item.name],
                                 layout.formula(item, spec.name, None), fmt, item.name))


def _plan_table(sp: SheetPlan, table: Table, spec: SheetSpec, layout: _Layout,
                model: ModelResult, n_rows: int, links: Mapping[str, Sequence[Source]]) -> None:
    columns = []
    for i, item in enumerate(table.all_columns()):
        c = table.col + i
        tu = layout.registry.time_units.get(item.name)
        header = header_text(item, tu)
        fmt = item_format(item, model.columns[item.name], tu)
        sp.cells.append(Cell(table.header_row, c, "header", header, fmt="text"))
        if isinstance(item, Input):
            sources = links.get(item.name)
            if sources is not None and len(sources) > n_rows:
                raise ValueError(f"{len(sources)} links for {n_rows} rows of {item.name!r}")
            linked = ([item.link_formula(source_address(s)) for s in sources]
                      if sources is not None else None)
            columns.append(ColumnPlan(c, item.name, header, fmt, True, None,
                                      model.columns[item.name], links=linked,
                                      helper=item.helper))
        else:
            text = layout.formula(item, spec.name, table)
            offsets = None
            if "\x02" in text:
                offsets = [int(m.group(1) or 0) for m in _SHIFTED.finditer(text)]
            columns.append(ColumnPlan(c, item.name, header, fmt, False,
                                      _SHIFTED.split(text)[::2], model.columns[item.name],
                                      offsets))
    sp.tables.append(TablePlan(table.name, table.header_row, table.first_row, n_rows, columns))
