"""Planning the rules laid over cells: data validation, conditional colours (regimes, a
FALSE check, a status that is not "ok") and conditional number formats (int8 rates in
TOP/s). Pure: no I/O. Split from plan.py, which places the cells these rules cover.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from sheetgen.layout.cells import (
    ConditionalPlan,
    DimRulePlan,
    FormatRulePlan,
    Layout,
    SheetPlan,
    ValidationPlan,
    block_slots,
)
from sheetgen.layout.styles import (
    COMPUTE_BOUND,
    COMPUTE_FILL,
    FALSE_FILL,
    FALSE_FONT,
    MEMORY_BOUND,
    MEMORY_FILL,
)
from sheetgen.model.reference import ModelResult, Registry
from sheetgen.model.vocabulary import FormatSwitch, Input, Validation

if TYPE_CHECKING:
    from sheetgen.model.vocabulary import SheetSpec

PLACEHOLDER_NAMES = re.compile(r"\{([A-Za-z_]\w*)\}")


def plan_validations(sp: SheetPlan, spec: SheetSpec, layout: Layout) -> None:
    def source(rule: Validation) -> tuple[str | None, str | None]:
        if rule.source is None:
            return None, None
        w = layout.where[rule.source]
        return layout.absolute(w), w.defined_name

    def rule_of(item: Input) -> Validation:
        """The rule in the unit the cell holds (bounds are declared in SI)."""
        rule, f = item.validation, layout.registry.factor(item.name)
        assert rule is not None
        if f != 1.0 and rule.kind == "decimal_range":
            rule = replace(rule, minimum=None if rule.minimum is None else rule.minimum * f,
                           maximum=None if rule.maximum is None else rule.maximum * f)
        return rule

    for block in spec.blocks:
        for r, item, c in block_slots(block):
            if isinstance(item, Input) and item.validation:
                src, name = source(item.validation)
                sp.validations.append(ValidationPlan(r, c, r, c, rule_of(item), src, name))
    for table in spec.tables:
        for item in table.inputs:
            if item.validation:
                w = layout.where[item.name]
                if w.last_row < w.row:
                    continue
                src, name = source(item.validation)
                sp.validations.append(ValidationPlan(w.row, w.col, w.last_row, w.col,
                                                     rule_of(item), src, name))


def plan_conditionals(sp: SheetPlan, spec: SheetSpec, layout: Layout) -> None:
    for name in spec.regime_columns:
        w = layout.where[name]
        if w.last_row < w.row:
            continue
        sp.conditionals.append(ConditionalPlan(w.row, w.col, w.last_row, COMPUTE_BOUND,
                                               COMPUTE_FILL))
        sp.conditionals.append(ConditionalPlan(w.row, w.col, w.last_row, MEMORY_BOUND,
                                               MEMORY_FILL))
    # every pass/fail boolean, on every sheet: FALSE (does not fit, does not hide) stands out,
    # and so does a status cell that is not "ok"
    for cell in sp.cells:
        if cell.fmt == "bool" and cell.role in ("formula", "input"):
            sp.conditionals.append(ConditionalPlan(cell.row, cell.col, cell.row, False,
                                                   FALSE_FILL, FALSE_FONT))
        elif cell.fmt == "status" and cell.role == "formula":
            sp.conditionals.append(ConditionalPlan(cell.row, cell.col, cell.row, "ok",
                                                   FALSE_FILL, FALSE_FONT, negate=True))
    for table in sp.tables:
        for column in table.columns:
            if column.fmt == "bool" and table.n_rows:
                sp.conditionals.append(ConditionalPlan(table.first_row, column.col,
                                                       table.last_row, False, FALSE_FILL,
                                                       FALSE_FONT))


def plan_dimmed(sp: SheetPlan, spec: SheetSpec, layout: Layout) -> None:
    for dim in spec.dimmed:
        condition = layout.condition(dim.condition, spec.name)
        for name in dim.columns:
            w = layout.where[name]
            if w.last_row >= w.row:
                sp.dim_rules.append(DimRulePlan(w.row, w.col, w.last_row, condition))


def plan_switch(plans: list[SheetPlan], switch: FormatSwitch, registry: Registry,
                 layout: Layout, model: ModelResult) -> None:
    """The build's own format for every cell the switch covers (what engines without
    conditional number formats show), and a rule for the other case."""
    names = registry.dependents(switch.source)
    args = {n: model.scalars[n] for n in PLACEHOLDER_NAMES.findall(switch.condition)}
    holds = bool(switch.holds(**args))
    back = {alt: base for base, alt in switch.formats.items()}
    for sp in plans:
        condition = layout.condition(switch.condition, sp.name)
        if holds:
            condition = f"NOT({condition})"
        swaps = back if holds else switch.formats

        def shown(fmt: str) -> str:
            return switch.formats.get(fmt, fmt) if holds else fmt

        for i, cell in enumerate(sp.cells):
            if cell.name in names and cell.fmt in switch.formats:
                sp.cells[i] = replace(cell, fmt=shown(cell.fmt))
                sp.format_rules.append(FormatRulePlan(cell.row, cell.col, cell.row, condition,
                                                      swaps[sp.cells[i].fmt]))
        for table in sp.tables:
            for column in table.columns:
                if column.name in names and column.fmt in switch.formats and table.n_rows:
                    column.fmt = shown(column.fmt)
                    sp.format_rules.append(FormatRulePlan(table.first_row, column.col,
                                                          table.last_row, condition,
                                                          swaps[column.fmt]))
