"""The reference model: evaluates every quantity's Python reference over the same inputs the
workbook holds. It never looks at a formula, so agreeing with a spreadsheet engine is evidence.
"""

from __future__ import annotations

import graphlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sheetgen.core import time_cells
from sheetgen.core.excel import ExcelError, is_number
from sheetgen.model.vocabulary import NA_CODE, Input, Quantity, SheetSpec, Table


@dataclass
class Registry:
    """Where every name lives: which table or block of which sheet."""

    sheets: Sequence[SheetSpec]
    table_of: dict[str, Table] = field(default_factory=dict)
    sheet_of: dict[str, str] = field(default_factory=dict)
    items: dict[str, Input | Quantity] = field(default_factory=dict)
    spans: dict[str, tuple[Table, list[str]]] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    #: time item -> the unit its cell holds ("s", "ms", "µs"); see cell_units
    time_units: dict[str, str] = field(default_factory=dict)
    #: order() and gaps(), worked out once (the items are fixed when the registry is made)
    _order: list[Quantity] | None = field(default=None, init=False, repr=False, compare=False)
    _gap_sources: dict[str, tuple[str, str]] | None = field(default=None, init=False,
                                                            repr=False, compare=False)

    def __post_init__(self) -> None:
        spec_of = {s.name: s for s in self.sheets}
        for sheet in self.sheets:
            for table in sheet.tables:
                self.tables[table.name] = table
                for item in table.all_columns():
                    self._add(item, sheet.name, table)
                names = [c.name for c in table.all_columns()]
                for span in table.spans:
                    cols = names[names.index(span.first): names.index(span.last) + 1]
                    self.spans[span.name] = (table, cols)
                    self.sheet_of[span.name] = sheet.name
            for block in sheet.blocks:
                for item in block.items():
                    self._add(item, sheet.name, None)
        for name, item in self.items.items():
            if item.unit == time_cells.TIME:
                self.time_units[name] = time_cells.check_time_unit(
                    item.time_unit or spec_of[self.sheet_of[name]].time_unit)

    def factor(self, name: str) -> float:
        """What the cell of `name` holds per SI unit (1E+06 for a time shown in µs)."""
        unit = self.time_units.get(name)
        return time_cells.TIME_FACTORS[unit] if unit else 1.0

    def shown_unit(self, name: str) -> str:
        """The unit the cell of `name` holds: its declared unit, or its time unit."""
        return self.time_units.get(name) or self.items[name].unit

    def to_cells(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """SI values (inputs as the model takes them) -> what their cells hold."""
        return {k: time_cells.scaled(v, self.factor(k)) if k in self.items else v
                for k, v in values.items()}

    def from_cells(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Cell values -> SI (what the model takes, what read and the API give)."""
        return {k: time_cells.scaled(v, 1.0 / self.factor(k)) if k in self.items else v
                for k, v in values.items()}

    def _add(self, item: Input | Quantity, sheet: str, table: Table | None) -> None:
        if item.name in self.items:
            raise ValueError(f"{item.name!r} is declared twice")
        self.items[item.name] = item
        self.sheet_of[item.name] = sheet
        if table is not None:
            self.table_of[item.name] = table

    def quantities(self) -> list[Quantity]:
        return [q for q in self.items.values() if isinstance(q, Quantity)]

    def order(self) -> list[Quantity]:
        """Quantities in dependency order; a guarded table's columns wait on its guard.
        Sorted once per registry (its items are fixed when it is made): a plan asks 5 times."""
        if self._order is None:
            self._order = self._sorted()
        return list(self._order)

    def _sorted(self) -> list[Quantity]:
        graph: dict[str, set[str]] = {}
        for q in self.quantities():
            deps = set()
            for name in q.dependencies():
                if name in self.spans:
                    continue
                if name not in self.items:
                    raise ValueError(f"{q.name!r} refers to unknown {name!r}")
                table = self.table_of.get(name)
                if table is not None and table.guard and name != table.guard \
                        and q.name != table.guard:
                    deps.add(table.guard)
                if isinstance(self.items[name], Quantity):
                    deps.add(name)
            own = self.table_of.get(q.name)
            if own is not None and own.guard and q.name != own.guard:
                deps.add(own.guard)
            graph[q.name] = deps
        return [self.items[n] for n in graphlib.TopologicalSorter(graph).static_order()
                if isinstance(self.items[n], Quantity)]  # type: ignore[misc]

    def dependents(self, source: str) -> set[str]:
        """`source` and every quantity computed from it, directly or through others."""
        out = {source}
        for q in self.order():
            if q.dependencies() & out:
                out.add(q.name)
        return out

    def gaps(self) -> dict[str, tuple[str, str]]:
        """Quantity -> (gap source, marker) for every quantity computed, directly or through
        others, from a quantity that can be a gap (Quantity.gap_marker)."""
        if self._gap_sources is None:
            self._gap_sources = self._gaps()
        return dict(self._gap_sources)

    def _gaps(self) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for q in self.order():
            if q.handles_gaps:
                continue
            for name in q.dependencies():
                item = self.items.get(name)
                if isinstance(item, Quantity) and item.gap_marker:
                    out[q.name] = (name, item.gap_marker)
                    break
                if name in out:
                    out[q.name] = out[name]
                    break
        return out


def _as_numbers(values: np.ndarray) -> np.ndarray:
    """A float array when every value is numeric (blanks become NaN), else the object array."""
    try:
        return np.asarray([np.nan if v is None else v for v in values], dtype=float)
    except (TypeError, ValueError):
        return values


def _scalar(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclass
class ModelResult:
    """Reference values: scalars by name, and each table column over all of its rows.

    A column's rows whose guard is not "ok" hold "" (what the sheet shows there).
    """

    scalars: dict[str, Any]
    columns: dict[str, np.ndarray]
    ok: dict[str, np.ndarray]  # table name -> rows whose guard says ok (all True if unguarded)

    def value(self, name: str, row: int | None = None) -> Any:
        if row is None:
            return self.scalars[name]
        return self.columns[name][row]


def evaluate(registry: Registry, values: Mapping[str, Any]) -> ModelResult:
    """Run every reference function in dependency order over the given input values."""
    env: dict[str, Any] = {}
    columns: dict[str, np.ndarray] = {}
    ok: dict[str, np.ndarray] = {}
    raw: dict[str, np.ndarray] = {}
    for name, item in registry.items.items():
        if not isinstance(item, Input):
            continue
        if name not in values:
            raise ValueError(f"no value given for input {name!r}")
        if name in registry.table_of:
            arr = np.empty(len(values[name]), dtype=object)
            arr[:] = list(values[name])
            raw[name] = arr
            columns[name] = arr
        else:
            env[name] = values[name]
    for table in registry.tables.values():
        source = registry.tables[table.rows_of] if table.rows_of else table
        n = len(raw[source.inputs[0].name]) if source.inputs else 0
        ok[table.name] = np.ones(n, dtype=bool)
        if not table.guard:
            _release_inputs(table, raw, ok[table.name], env)
    for span, (_table, cols) in registry.spans.items():
        env[span] = np.column_stack([raw[c] for c in cols]) if cols else np.empty((0, 0))
    gaps = registry.gaps()

    for q in registry.order():
        table = registry.table_of.get(q.name)
        if table is not None and q.name == table.guard:
            status = np.asarray(q.reference(**{d: raw[d] for d in q.dependencies()}), dtype=object)
            columns[q.name] = status
            ok[table.name] = status == "ok"
            _release_inputs(table, raw, ok[table.name], env)
            continue
        gap = gaps.get(q.name)
        if gap is not None and not is_number(env.get(gap[0])):
            result = np.nan  # a gap upstream: the sheet shows its marker (_mark_gaps)
        else:
            result = q.reference(**{d: env[d] for d in q.dependencies()})
        if table is None:
            env[q.name] = _scalar(result)
            continue
        mask = ok[table.rows_of or table.name]
        res = np.asarray(result)
        if res.ndim == 0:
            res = np.full(int(mask.sum()), res[()])
        env[q.name] = res
        full = np.full(len(mask), ExcelError(NA_CODE) if table.na_rows else "", dtype=object)
        full[mask] = res
        columns[q.name] = full
    for table in registry.tables.values():
        if table.rows_of:
            ok[table.name] = ok[table.rows_of]
    scalars = {k: v for k, v in env.items() if k not in registry.table_of}
    _mark_gaps(registry, scalars, columns, ok)
    return ModelResult(scalars=scalars, columns=columns, ok=ok)


def _mark_gaps(registry: Registry, scalars: dict[str, Any], columns: dict[str, np.ndarray],
               ok: dict[str, np.ndarray]) -> None:
    """What the sheet shows where a gap source is no number: each dependent's marker text.

    The references ran on NaN there (so nothing downstream raised); the values a reader or
    the checker sees are replaced afterwards, as IF(ISNUMBER(source),body,marker) does."""
    gaps = registry.gaps()
    for q in registry.quantities():  # the sources themselves show their marker too
        if q.gap_marker and q.name not in registry.table_of:
            gaps[q.name] = (q.name, q.gap_marker)
    for name, (source, marker) in gaps.items():
        if is_number(scalars.get(source)):
            continue
        text = scalars[marker]
        if name in registry.table_of:
            column = columns[name].copy()
            column[ok[registry.table_of[name].name]] = text
            columns[name] = column
        else:
            scalars[name] = text


def _release_inputs(table: Table, raw: dict[str, np.ndarray], mask: np.ndarray,
                    env: dict[str, Any]) -> None:
    """Expose a table's inputs to references, restricted to the rows its guard accepts."""
    for item in table.inputs:
        env[item.name] = _as_numbers(raw[item.name][mask])
