"""Planning: which value goes in which cell, with which formula. Pure: no I/O.

The plan is what every writer consumes (xlsx, Google Sheets) and what the checker compares
against, so cell placement and formula text are decided here and nowhere else.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sheetgen.core import a1, time_cells
from sheetgen.layout import page, text_fit
from sheetgen.layout.cells import (
    ROW,
    SHIFTED,
    Cell,
    ColumnPlan,
    ConditionalPlan,
    DimRulePlan,
    FormatRulePlan,
    Layout,
    SheetPlan,
    TablePlan,
    ValidationPlan,
    Where,
    WorkbookPlan,
    block_slots,
    block_width,
    has_suggestions,
)
from sheetgen.layout.charts import ChartPlan, plan_chart
from sheetgen.layout.rules import (
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
    Block,
    Input,
    Quantity,
    SheetSpec,
    Table,
)

#: The plan's types live in layout/cells.py; the planner's importers may take them from here.
__all__ = ["LAYOUT_PROPERTY", "ROW", "Cell", "ChartPlan", "ColumnPlan", "ConditionalPlan",
           "DimRulePlan", "FormatRulePlan", "Layout", "SheetPlan", "Source", "TablePlan",
           "ValidationPlan", "Where", "WorkbookPlan", "header_text", "input_addresses",
           "item_format", "layout_fingerprint", "plan_workbook", "source_address"]

#: The document property that records a workbook's cell map (see layout_fingerprint).
LAYOUT_PROPERTY = "sheetgen.layout"


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


def input_addresses(sheets: Sequence[SheetSpec], rows: Mapping[str, int]
                    ) -> dict[str, tuple[str, int, int, int]]:
    """Where each input lives: name -> (sheet, first row, column, rows; 0 for a single cell).

    The checker reads a workbook's own inputs from these cells and re-runs the model on them.
    """
    registry = Registry(sheets)
    layout = Layout(registry, rows)
    out = {}
    for name, item in registry.items.items():
        if isinstance(item, Input):
            w = layout.where[name]
            n = 0 if w.table is None else w.last_row - w.row + 1
            out[name] = (w.sheet, w.row, w.col, n)
    return out


def layout_fingerprint(sheets: Sequence[SheetSpec]) -> dict[str, str]:
    """Each sheet's cell map in a few hex digits: where every named input, quantity and table
    column sits (not how many rows a table has, nor any value or formula text).

    Written into the workbook at build time and compared when it is read back, so a workbook
    whose cells this sheetgen would place elsewhere (an older version's, or one whose
    properties were edited) is refused by name instead of being read from the wrong cells."""
    registry = Registry(sheets)
    return _fingerprint(registry, Layout(registry, {name: 0 for name in registry.tables}))


def _fingerprint(registry: Registry, layout: Layout) -> dict[str, str]:
    lines: dict[str, list[str]] = {sheet.name: [] for sheet in registry.sheets}
    for name, w in layout.where.items():
        kind = "input" if isinstance(registry.items.get(name), Input) else "value"
        lines[w.sheet].append(f"{name} {kind} {w.row} {w.col} {w.last_col} {w.table or ''}")
    return {sheet: hashlib.sha256("\n".join(sorted(text)).encode()).hexdigest()[:12]
            for sheet, text in lines.items()}


#: Where a linked input row reads from: (sheet, zero-based row, zero-based column).
Source = tuple[str, int, int]


def source_address(source: Source) -> str:
    """An absolute, sheet-qualified address such as 'My shapes'!$B$7."""
    sheet, row, col = source
    return a1.sheet_cell(sheet, row, col)


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
    layout = Layout(registry, rows)
    plans = []
    for spec in sheets:
        sp = SheetPlan(name=spec.name, widths=dict(spec.column_widths), freeze=spec.freeze,
                       keep_rows=list(spec.keep_rows))
        for text in spec.texts:
            sp.cells.append(Cell(text.row, text.col, text.style, text.text, fmt="text",
                                 span=max(1, text.span), wrap=text.span > 0))
        for block in spec.blocks:
            _plan_block(sp, block, spec, layout, shown)
        for table in spec.tables:
            _plan_table(sp, table, spec, layout, shown, rows[table.name], links)
        text_fit.fit_columns(sp)
        text_fit.fit_block_values(sp)
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
        page.keep_texts_on_page(sp)
        plans.append(sp)
    for switch in (s for spec in sheets for s in spec.format_switches):
        plan_switch(plans, switch, registry, layout, model)
    unknown = set(links) - {i.name for t in registry.tables.values() for i in t.inputs}
    if unknown:
        raise ValueError(f"links name no table input column: {sorted(unknown)}")
    meta = dict(metadata or {})
    meta.update({f"sheetgen.rows.{name}": str(n) for name, n in rows.items()})
    meta[LAYOUT_PROPERTY] = json.dumps(_fingerprint(registry, layout), separators=(",", ":"))
    return WorkbookPlan(plans, layout.defined_names(), model, registry, meta)


def _cell_values(registry: Registry, model: ModelResult) -> ModelResult:
    """The model's values as their cells hold them (times in their sheet's unit)."""
    return ModelResult(
        scalars={k: time_cells.scaled(v, registry.factor(k)) for k, v in model.scalars.items()},
        columns={k: time_cells.scaled(v, registry.factor(k)) for k, v in model.columns.items()},
        ok=model.ok)


def _plan_block(sp: SheetPlan, block: Block, spec: SheetSpec, layout: Layout,
                model: ModelResult) -> None:
    first = len(sp.cells)
    _plan_block_cells(sp, block, spec, layout, model)
    text_fit.span_long_texts(sp, first, block, spec.column_widths)


def _plan_block_cells(sp: SheetPlan, block: Block, spec: SheetSpec, layout: Layout,
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


def _plan_table(sp: SheetPlan, table: Table, spec: SheetSpec, layout: Layout,
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
                offsets = [int(m.group(1) or 0) for m in SHIFTED.finditer(text)]
            columns.append(ColumnPlan(c, item.name, header, fmt, False,
                                      SHIFTED.split(text)[::2], model.columns[item.name],
                                      offsets))
    sp.tables.append(TablePlan(table.name, table.header_row, table.first_row, n_rows, columns,
                               prints=table.prints))
