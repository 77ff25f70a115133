"""Whatever a user types into a workbook's input cells, `check` (and the Google check) either
models it or refuses it in one line naming the cell: the reference model never raises.

Random edits recalculated in LibreOffice found four ways it did (each now a case of
test_check): 0 micro-batches (ZeroDivisionError), a blank Pipeline m (TypeError), an
all-reduce algorithm not on the list (KeyError) and a storage dtype not on it (a line that
named no cell). Here hypothesis types at random into the cells `replan` reads, as they sit in
the written workbook (display units, text as typed), on the default workbook with the Practice
sheet, one with the Measured sheet and one with the Transformer sheet; `replan` is the step
`check` runs before its evaluation.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sheetgen.assemble import BuildConfig, plan_build, sheet_specs
from sheetgen.errors import WorkbookError
from sheetgen.inputs.model_config import load_bundled
from sheetgen.layout.planner import WorkbookPlan
from sheetgen.model.reference import Registry
from sheetgen.model.vocabulary import Input
from sheetgen.sheets.measured import MeasuredInputs
from sheetgen.sheets.transformer.values import TransformerInputs
from sheetgen.verify.readback import layout_from_metadata, replan

CONFIGS = {
    "default": {"practice": 4},
    "measured": {"gpu": "H100 SXM", "measured": MeasuredInputs(
        m=[1, 64, 4096], k=[4096, 8192, 4096], n=[4096, 8192, 4096], b=[1, 1, 2],
        seconds=[9e-6, 4e-5, 3e-4], compute_efficiency=0.8, memory_efficiency=0.9,
        launch_overhead=4e-6, sm_count=132, source="typed")},
    "transformer": {"gpu": "H100 SXM", "dtype": "fp8", "gpus": 1,
                    "transformer": TransformerInputs(load_bundled("llama-3.1-8b"), batch=8,
                                                     tp=2)},
}


@functools.cache
def built(key: str) -> tuple[WorkbookPlan, dict[tuple[str, int, int], Any], tuple]:
    """The plan, every input cell's value as the workbook holds it, and the input cells
    (sheet, row, col, Input) hypothesis may type into."""
    plan = plan_build(BuildConfig(**CONFIGS[key]))
    cells: dict[tuple[str, int, int], Any] = {}
    for sheet in plan.sheets:
        for c in sheet.cells:
            if c.role == "input":
                cells[(sheet.name, c.row, c.col)] = c.value
        for t in sheet.tables:
            for col in t.columns:
                if col.is_input:
                    for i, v in enumerate(col.values):
                        cells[(sheet.name, t.first_row + i, col.col)] = v
    items = Registry(plan_specs(plan)).items
    scalars = tuple((s.name, c.row, c.col, items[c.name]) for s in plan.sheets for c in s.cells
                    if c.role == "input" and isinstance(items.get(c.name), Input))
    # and every cell of the input columns (the shapes, the sweep's rows, What-if's scales,
    # the GPU Specs tables, the Practice rows), but the helper columns sheetgen fills for its
    # own formulas (layer numbers, candidate M), which a person has no reason to type into
    column = tuple((s.name, t.first_row + i, col.col, items[col.name]) for s in plan.sheets
                   for t in s.tables for col in t.columns
                   if col.is_input and isinstance(items.get(col.name), Input)
                   and not items[col.name].helper
                   for i in range(t.n_rows))
    return plan, cells, scalars + column


def plan_specs(plan: WorkbookPlan) -> list:
    return sheet_specs(layout_from_metadata(plan.metadata)[0])


def typed(item: Input) -> st.SearchStrategy[Any]:
    """What a user might leave in the cell: its own choices, numbers in and out of range,
    text, a boolean, a blank."""
    rule = item.validation
    anything = st.one_of(st.none(), st.booleans(), st.sampled_from(["", "abc", "auto", "1e3"]),
                         st.sampled_from([0, -1, 0.5, 1, 2, 2.5, 7, 4097, 1e9, 1e308]))
    if rule is None:
        return anything
    if rule.kind == "choices" and rule.choices:
        return st.one_of(st.sampled_from(rule.choices), anything)
    if rule.kind in ("whole_min", "decimal_range"):
        low = rule.minimum if rule.minimum is not None else 0.0
        high = min(rule.maximum if rule.maximum is not None else 1e6, 1e6)
        inside = (st.integers(int(low), int(high)) if rule.kind == "whole_min"
                  else st.floats(low, high, allow_nan=False))
        return st.one_of(inside, inside, anything)
    return anything


@pytest.mark.parametrize("key", CONFIGS)
@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_typed_inputs_are_modelled_or_refused_in_one_line(key, data):
    plan, cells, scalars = built(key)
    edits = data.draw(st.lists(st.sampled_from(range(len(scalars))), min_size=1, max_size=4,
                               unique=True))
    values = dict(cells)
    for i in edits:
        sheet, row, col, item = scalars[i]
        values[(sheet, row, col)] = data.draw(typed(item), label=item.name)
    layout, rows = layout_from_metadata(plan.metadata)
    try:
        replanned = replan(layout, rows, lambda s, r, c: values.get((s, r, c)), None,
                           plan.metadata)
    except WorkbookError as exc:
        message = str(exc)
        assert "\n" not in message and "!" in message, message  # one line naming a cell
        return
    assert replanned.model.scalars  # modelled: every formula cell has its expected value


@pytest.mark.parametrize("key", CONFIGS)
def test_the_workbook_as_built_is_modelled_not_refused(key):
    """Nothing typed: every cell as sheetgen wrote it (blank Practice answers and estimates,
    "auto" dropdowns, blank overrides) is modelled; a check too strict to pass it would make
    the test above pass by refusing everything."""
    plan, cells, _ = built(key)
    layout, rows = layout_from_metadata(plan.metadata)
    replanned = replan(layout, rows, lambda s, r, c: cells.get((s, r, c)), None, plan.metadata)
    assert replanned.model.scalars.keys() == plan.model.scalars.keys()
