"""Read a built workbook back, wherever it lives: its layout, its input cells, and the
reference model re-run on them. Also the report `check` gives.

One read-back for both homes of a workbook: an xlsx (`check`, `read`: cells evaluated by
sheetgen.evaluate) and a Google spreadsheet (`read`, `check`: cells fetched through the Sheets
API). Each supplies a `CellReader`; where the inputs sit and what they mean is decided here.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

import numpy as np

from sheetgen import __version__
from sheetgen.assemble import SheetLayout, sheet_specs
from sheetgen.core import a1
from sheetgen.core.excel import is_number, number_to_text
from sheetgen.errors import WorkbookError
from sheetgen.files.untrusted import open_package
from sheetgen.inputs.model_config import ModelConfig
from sheetgen.layout.planner import (
    LAYOUT_PROPERTY,
    WorkbookPlan,
    input_addresses,
    layout_fingerprint,
    plan_workbook,
)
from sheetgen.model.reference import Registry
from sheetgen.model.vocabulary import Input, Quantity, SheetSpec, Table, Validation

#: (sheet, zero-based row, zero-based column) -> the cell's value: None (or "") when blank.
CellReader = Callable[[str, int, int], Any]
#: (sheet, zero-based column, zero-based first row, rows) -> the column's values.
ColumnReader = Callable[[str, int, int, int], Sequence[Any]]

ROWS_PREFIX = "sheetgen.rows."
_CUSTOM = "{http://schemas.openxmlformats.org/officeDocument/2006/custom-properties}"


@dataclass(frozen=True)
class Mismatch:
    """One formula cell whose value is not the reference model's (or whose formula changed)."""

    sheet: str
    cell: str
    quantity: str
    got: Any
    expected: Any
    formula: str | None
    note: str = ""  # e.g. "formula changed"

    def line(self) -> str:
        note = f"{self.note}: " if self.note else ""
        return (f"{self.sheet}!{self.cell}  {self.quantity}  {note}got {_show(self.got)}  "
                f"expected {_show(self.expected)}  ({self.formula or 'no formula'})")

    def as_dict(self) -> dict[str, Any]:
        return {"sheet": self.sheet, "cell": self.cell, "quantity": self.quantity,
                "got": _jsonable(self.got), "expected": _jsonable(self.expected),
                "formula": self.formula, "note": self.note}


@dataclass
class CheckReport:
    """The outcome of checking a workbook (xlsx) or a spreadsheet (Google Sheets)."""

    path: str
    checked: dict[str, int] = field(default_factory=dict)  # formula cells per sheet
    mismatches: list[Mismatch] = field(default_factory=list)
    shape_rows: int = 0  # Matmul rows with a valid shape

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def cells(self) -> int:
        return sum(self.checked.values())

    def summary(self) -> list[str]:
        lines = [f"{self.path}: {self.cells} formula cells checked, "
                 f"{self.shape_rows} shape rows"]
        for sheet, n in self.checked.items():
            bad = sum(1 for m in self.mismatches if m.sheet == sheet)
            lines.append(f"  {sheet:<12} {n:>8} cells  {bad} mismatch{'es' if bad != 1 else ''}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.path, "ok": self.ok, "checked": self.checked,
                "mismatches": [m.as_dict() for m in self.mismatches]}


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.10g}"
    return repr(value) if isinstance(value, str) else str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if np.isfinite(value) else str(value)
    return str(value)


# --------------------------------------------------------------------------- layout


def read_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """sheetgen's custom document properties of an xlsx (docProps/custom.xml); {} if none."""
    with open_package(path) as z:  # budget checked before docProps is read
        if "docProps/custom.xml" not in z.namelist():
            return {}
        try:
            root = ElementTree.fromstring(z.read("docProps/custom.xml"))
        except ElementTree.ParseError:
            return {}  # unreadable properties: judged as a workbook sheetgen did not write
    out = {}
    for prop in root.iter(f"{_CUSTOM}property"):
        name = prop.get("name", "")
        if name.startswith("sheetgen."):
            out[name] = "".join(prop.itertext())
    return out


def layout_from_metadata(meta: Mapping[str, str]) -> tuple[SheetLayout, dict[str, int]]:
    """The layout and table row counts an xlsx's sheetgen properties record."""
    rows: dict[str, int] = {}
    for key, value in meta.items():
        if key.startswith(ROWS_PREFIX):
            try:
                rows[key[len(ROWS_PREFIX):]] = int(value)
            except ValueError:
                raise WorkbookError(f"damaged sheetgen property {key}={value!r} (not a row "
                                    "count)") from None
    model = None
    if meta.get("sheetgen.model"):  # the Transformer sheet's structure
        model = ModelConfig.from_json(meta["sheetgen.model"])
    # The Measured sheet's note names its source: text, so the layout needs no source.
    layout = SheetLayout(practice=bool(rows.get("practice")), measured=bool(rows.get("measured")),
                         prefix=meta.get("sheetgen.prefix", ""), model=model)
    return layout, rows


def check_layout(meta: Mapping[str, str], what: str = "this workbook") -> None:
    """Refuse, in one line, a sheetgen workbook whose cells this sheetgen would look for in
    other places: one written by a version with another layout (a table added, a cell moved)
    or whose properties were edited. Reading it on would take values from the wrong cells
    (or fail on a table the workbook never recorded).

    The workbook's recorded layout fingerprint (`layout_fingerprint`, one per sheet) is
    compared with this version's for the same options; a workbook from before fingerprints
    is checked for the tables this version expects. A hand-made sheet (no sheetgen
    properties) is graded instead and never comes here.
    """
    layout, rows = layout_from_metadata(meta)
    specs = sheet_specs(layout)
    by = meta.get("sheetgen.version")
    advice = ("rebuild it with this sheetgen (`sheetgen build` with the same options), or "
              + (f"read it with sheetgen {by}, which wrote it" if by and by != __version__
                 else "read it with the sheetgen that wrote it"))
    recorded = meta.get(LAYOUT_PROPERTY)
    if recorded is not None:
        try:
            theirs = json.loads(recorded)
        except ValueError:
            theirs = None
        if not isinstance(theirs, dict):
            raise WorkbookError(f"{what} has a damaged sheetgen property {LAYOUT_PROPERTY} "
                                f"({recorded[:40]!r}); {advice}")
        ours = layout_fingerprint(specs)
        moved = [s for s in ours if theirs.get(s) != ours[s]]
        moved += [s for s in theirs if s not in ours]
        if moved:
            raise WorkbookError(
                f"{what} was written with a different cell layout: sheet(s) "
                f"{', '.join(moved)} hold their cells elsewhere than this sheetgen looks "
                f"for them; {advice}")
    unrecorded = [(spec.name, t.name) for spec in specs for t in spec.tables
                  if t.name not in rows]
    if unrecorded:
        sheet, table = unrecorded[0]
        raise WorkbookError(
            f"{what} was written with a different cell layout: it records no table "
            f"{table!r} on sheet {sheet}, which this sheetgen expects there; {advice}")


def _cell_inputs(spec: SheetSpec) -> list[Input]:
    items = [i for b in spec.blocks for i in b.items() if isinstance(i, Input)]
    return items + [i for t in spec.tables for i in t.inputs]


def table_rows_present(specs: Sequence[SheetSpec], value_at: CellReader,
                       formula_at: Callable[[str, int, int], str | None],
                       grid_rows: Mapping[str, int]) -> dict[str, int]:
    """Each table's row count where none is recorded (Google): from its first row down, the
    rows that hold a formula (tables with formula columns) or any input value (input-only
    tables), stopping at the next table below in the same columns or the grid's end."""
    out: dict[str, int] = {}
    for spec in specs:
        for table in spec.tables:
            columns = table.all_columns()
            cols = set(range(table.col, table.col + len(columns)))
            below = [t.header_row - 1 for t in spec.tables
                     if t.header_row > table.header_row
                     and cols & set(range(t.col, t.col + len(t.all_columns())))]
            end = min([*below, max(grid_rows.get(spec.name, 0), table.first_row)])
            formula_col = next((table.col + i for i, c in enumerate(columns)
                                if not isinstance(c, Input)), None)
            n = 0
            for r in range(table.first_row, end):
                if formula_col is not None:
                    present = formula_at(spec.name, r, formula_col) is not None
                else:
                    present = any(cell_input(value_at(spec.name, r, c)) is not None
                                  for c in cols)
                if not present:
                    break
                n += 1
            out[table.name] = n
    return out


# --------------------------------------------------------------------------- inputs


def cell_input(value: Any) -> Any:
    """An input cell's value as the reference model takes it: blank (None or "") is None,
    numbers, text and booleans as they are, anything else (an error value) as its text."""
    if value is None or (isinstance(value, str) and value == ""):
        return None
    if isinstance(value, bool | int | float | str):
        return value
    return str(value)


def read_inputs(specs: Sequence[SheetSpec], rows: Mapping[str, int], value_at: CellReader,
                column_at: ColumnReader | None = None) -> dict[str, Any]:
    """Every input's value from the workbook's own cells (a table input: one per row)."""
    values: dict[str, Any] = {}
    for name, (sheet, row, col, n) in input_addresses(specs, rows).items():
        if n == 0:
            values[name] = cell_input(value_at(sheet, row, col))
        elif column_at is not None:
            values[name] = [cell_input(v) for v in column_at(sheet, col, row, n)]
        else:
            values[name] = [cell_input(value_at(sheet, row + i, col)) for i in range(n)]
    return values


_NUMERIC_RULES = ("whole_min", "decimal_range")


def check_inputs(specs: Sequence[SheetSpec], values: Mapping[str, Any]) -> None:
    """Refuse, naming the cell, an input cell holding what its validation refuses (a paste
    gets past it in Excel): the sheet shows #VALUE!, #N/A or nonsense there, and the model
    has nothing to compute with. A cell on its own and each row in use of a table without a
    row guard (What-if's scales, the GPU Specs tables) is checked; a guarded table's rows
    show its guard's marker instead.

    - A numeric cell must hold a number (not text, an error value, a boolean or a blank) in
      the range its validation allows, whole where it asks for a whole number (0
      micro-batches would divide by zero).
    - A dropdown must hold what its list offers, in the list's own spelling: the sheet's =
      ignores case, but it writes the typed text into its sentences ("36 Ring all-reduces"),
      which the model would not.

    An input every formula that reads it tests with ISNUMBER ("auto") may hold anything but a
    number, and one they test with ISBLANK (an override left blank for the preset's figure, a
    Practice answer not given yet) a blank: the sheet handles those, and the model does too;
    text in the latter goes through ISBLANK into the arithmetic, so it is refused. (The
    Pipeline's m, which one sweep row tests but every layer multiplies, is neither.)
    """
    registry = Registry(specs)
    where = input_addresses(specs, {t: 0 for t in registry.tables})
    any_text, blank_ok = _tolerated(registry)
    for name, item in registry.items.items():
        rule = item.validation if isinstance(item, Input) else None
        table = registry.table_of.get(name)
        if rule is None or (table is not None and table.guard is not None):
            continue
        sheet, row, col, _ = where[name]
        cells = [(row, values.get(name))] if table is None else [
            (row + i, v) for i, v in enumerate(values.get(name) or ())
            if i < _filled(values, table)]
        for r, value in cells:
            if (value is None and name in blank_ok) or (name in any_text
                                                        and not is_number(value)):
                continue
            cell = f"{sheet}!{a1.cell(r, col)} ({item.label})"
            if rule.kind in _NUMERIC_RULES:
                _check_number(cell, rule, value, registry.from_cells({name: value})[name]
                              if is_number(value) else None)
            else:
                _check_choice(cell, rule, value, values)


def _tolerated(registry: Registry) -> tuple[set[str], set[str]]:
    """(inputs every formula reading them tests with ISNUMBER: anything but a number reads as
    "not given"; those tested with ISNUMBER or ISBLANK: a blank does, text goes through)."""
    users: dict[str, list[Quantity]] = {}
    for q in registry.quantities():
        for name in q.dependencies():
            users.setdefault(name, []).append(q)
    any_text = {name for name, qs in users.items()
                if all(f"ISNUMBER({{{name}}})" in q.template for q in qs)}
    blank_ok = any_text | {name for name, qs in users.items()
                           if all(f"ISNUMBER({{{name}}})" in q.template
                                  or f"ISBLANK({{{name}}})" in q.template for q in qs)}
    return any_text, blank_ok


def _filled(values: Mapping[str, Any], table: Table) -> int:
    """Rows of a table in use: up to its first column's last non-blank cell (a row a user
    adds below counts; the blank rows past it are free)."""
    first = values.get(table.inputs[0].name) or ()
    return max((i + 1 for i, v in enumerate(first) if v not in (None, "")), default=0)


def _check_number(cell: str, rule: Validation, value: Any, si: float | None) -> None:
    """One numeric input cell against its rule (`si`: its value in SI, None if no number)."""
    if value is None:
        raise WorkbookError(f"{cell} is blank; it needs a number ({rule.message})")
    if si is None:
        raise WorkbookError(f"{cell} holds {value!r}, not a number ({rule.message})")
    low = -math.inf if rule.minimum is None else rule.minimum
    high = math.inf if rule.maximum is None else rule.maximum
    whole = rule.kind != "whole_min" or float(si).is_integer()
    if not (math.isfinite(si) and low <= si <= high and whole):
        raise WorkbookError(f"{cell} holds {number_to_text(value)}, outside what the cell "
                            f"allows ({rule.message})")


def _check_choice(cell: str, rule: Validation, value: Any, values: Mapping[str, Any]) -> None:
    """One dropdown cell against its list (its choices, or the column it lists)."""
    offered = rule.choices if rule.kind == "choices" else tuple(
        v for v in values.get(rule.source or "", ()) if isinstance(v, str) and v)
    if isinstance(value, str) and value in offered:
        return
    held = "is blank" if value is None else (
        f"holds {number_to_text(value)}" if is_number(value) else f"holds {value!r}")
    raise WorkbookError(f"{cell} {held}, which its list does not offer ({rule.message})")


def replan(layout: SheetLayout, rows: Mapping[str, int], value_at: CellReader,
           column_at: ColumnReader | None = None,
           metadata: Mapping[str, str] | None = None) -> WorkbookPlan:
    """The plan of a built workbook with the reference model run on its own input cells (so a
    flipped dropdown, typed shapes or an edited preset are modelled, not reported).

    A user's file can hold anything in an input cell: its validated cells are checked first
    (`check_inputs`), and what the model raises on a value it rejects (ValueError) becomes a
    WorkbookError. Any other exception is a bug
    in sheetgen and propagates.
    """
    specs = sheet_specs(layout)
    values = read_inputs(specs, rows, value_at, column_at)
    check_inputs(specs, values)
    try:
        return plan_workbook(specs, values, metadata, from_cells=True)
    except ValueError as exc:
        raise WorkbookError(f"cannot run the reference model on this workbook's inputs "
                            f"(an input cell holds something unexpected): {exc}") from None
