"""EvaluatedWorkbook: read-only access to every evaluated cell."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from sheetgen.errors import WorkbookError

from .engine import Engine
from .reader import RawSheet, RawWorkbook, read_workbook
from .refs import a1, col_to_index, parse_a1, parse_range
from .shared import RowTemplate
from .store import SheetStore
from .values import NUM, to_python


class EvaluatedWorkbook:
    """Every formula of a workbook evaluated from scratch (cached results are ignored)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.sheet_names: list[str] = list(engine.sheet_names)
        self.defined_names: dict[str, str] = dict(engine.names)

    @property
    def not_evaluated(self) -> dict[tuple[str, str], str]:
        """(sheet, 'A1') -> why, for each formula left unevaluated (lenient evaluation)."""
        return {(sheet, a1(r, c)): why
                for (sheet, r, c), why in sorted(self._engine.skipped.cells.items())}

    def _store(self, sheet: str) -> SheetStore:
        store = self._engine.book.get(sheet)
        if store is None:
            raise WorkbookError(f"no sheet named {sheet!r} (sheets: {', '.join(self.sheet_names)})")
        return store

    def _cell(self, store: SheetStore, row: int, col: int) -> Any:
        column = store.cols.get(col)
        if column is None or not column.holds(row):
            return None
        i = row - column.lo
        obj = None if column.obj is None else column.obj[i]
        return to_python(int(column.kind[i]), float(column.num[i]), obj)

    def value(self, sheet: str, cell: str) -> Any:
        """Evaluated value: float, str, bool, None (empty) or ExcelError."""
        store = self._store(sheet)
        row, col = parse_a1(cell, sheet)
        return self._cell(store, row, col)

    def formula(self, sheet: str, cell: str) -> str | None:
        """The formula text as stored ('=...'), or None for a value cell."""
        store = self._store(sheet)
        row, col = parse_a1(cell, sheet)
        column = store.cols.get(col)
        if column is None or column.texts is None or not column.holds(row):
            return None
        text = column.texts[row - column.lo]
        if isinstance(text, RowTemplate):  # a shared formula's copy (reader.SharedRun)
            return "=" + text.at(row)
        return text  # type: ignore[no-any-return]

    def formula_cells(self, sheet: str | None = None) -> Iterator[tuple[str, str]]:
        """(sheet, 'A1') of every formula cell, row by row within each sheet."""
        names = self.sheet_names if sheet is None else [self._store(sheet).name]
        for name in names:
            cols = self._store(name).cols
            cells = sorted(
                (int(r) + col.lo, c)
                for c, col in cols.items() if col.texts is not None
                for r in np.flatnonzero(col.texts != None)  # noqa: E711
            )
            for r, c in cells:
                yield name, a1(r, c)

    def extent(self, sheet: str) -> tuple[int, int]:
        """(last row, last column), both 1-based, that the sheet stores; (0, 0) when empty."""
        store = self._store(sheet)
        if not store.cols:
            return 0, 0
        return store.cap - 1, max(store.cols)

    def range_values(self, sheet: str, ref: str) -> list[list[Any]]:
        """Evaluated values of a rectangle such as 'A5:C10', row by row."""
        store = self._store(sheet)
        r1, c1, r2, c2 = parse_range(ref, sheet)
        return [[self._cell(store, r, c) for c in range(c1, c2 + 1)] for r in range(r1, r2 + 1)]

    def column(self, sheet: str, col: str, first_row: int, last_row: int) -> np.ndarray:
        """Values of one column: a float array if all numeric, else an object array."""
        store = self._store(sheet)
        c = col_to_index(col) if not col.isdigit() else int(col)
        n = last_row - first_row + 1
        if n <= 0:
            return np.zeros(0)
        column = store.cols.get(c)
        if (column is not None and column.lo <= first_row and last_row < column.hi
                and bool((column.kind[first_row - column.lo : last_row + 1 - column.lo]
                          == NUM).all())):
            return column.num[first_row - column.lo : last_row + 1 - column.lo].copy()
        return np.array([self._cell(store, r, c) for r in range(first_row, last_row + 1)],
                        dtype=object)  # fmt: skip

    def __repr__(self) -> str:
        return f"EvaluatedWorkbook(sheets={self.sheet_names!r})"


def evaluate_workbook(
    source: str | os.PathLike[str],
    *,
    progress: Callable[[int, int], None] | None = None,
    lenient: bool = True,
) -> EvaluatedWorkbook:
    """Read an xlsx file and evaluate every formula; see the package docstring.

    lenient (the default): a formula that cannot be evaluated (one the evaluator cannot
    parse, an unsupported function), and whatever reads it, is left "not evaluated" (its
    value is a NotEvaluated error naming why; see `not_evaluated`) and the rest is evaluated,
    so one odd cell does not cost the workbook. lenient=False raises WorkbookError naming the
    cell instead: `check` and `read` of a sheetgen workbook, whose own cells must all
    evaluate. A file that cannot be read, or a reference outside Excel's grid, raises
    either way."""
    return _evaluate(source, vectorize=True, progress=progress, lenient=lenient)


def _evaluate(
    source: str | os.PathLike[str],
    *,
    vectorize: bool,
    progress: Callable[[int, int], None] | None = None,
    lenient: bool = False,
) -> EvaluatedWorkbook:
    """vectorize=False evaluates every cell on its own (the reference path for tests)."""
    gc_was_on = gc.isenabled()
    gc.disable()  # millions of small acyclic objects: the cyclic GC only costs time here
    try:
        engine = Engine(read_workbook(source), lenient=lenient)
        engine.run(vectorize=vectorize, progress=progress)
    finally:
        if gc_was_on:
            gc.enable()
    return EvaluatedWorkbook(engine)


def evaluate_cells(
    formulas: Mapping[str, Mapping[tuple[int, int], str]],
    values: Mapping[str, Mapping[tuple[int, int], Any]],
    names: Mapping[str, str] | None = None,
) -> EvaluatedWorkbook:
    """Evaluate cells given as data rather than as an xlsx file: a spreadsheet read through an
    API, say. Keys are (row, col), zero-based; formulas start with '='; `values` are typed
    inputs (text stays text even when it starts with '='); `names` map to references such
    as "Inputs!$B$7". Sheets come in the order of `formulas`, then any only in `values`."""
    order = list(dict.fromkeys([*formulas, *values]))
    sheets = []
    for name in order:
        sheet = RawSheet(name)
        for (r, c), text in formulas.get(name, {}).items():
            sheet.f_rows.append(r + 1)  # RawSheet rows and columns are 1-based
            sheet.f_cols.append(c + 1)
            sheet.f_texts.append(text)
        numbers = [(r, c, float(v)) for (r, c), v in values.get(name, {}).items()
                   if isinstance(v, int | float) and not isinstance(v, bool)]
        sheet.n_rows = np.asarray([r + 1 for r, _, _ in numbers], dtype=np.int64)
        sheet.n_cols = np.asarray([c + 1 for _, c, _ in numbers], dtype=np.int64)
        sheet.n_vals = np.asarray([v for _, _, v in numbers], dtype=float)
        for (r, c), v in values.get(name, {}).items():
            if isinstance(v, bool) or not isinstance(v, int | float):
                sheet.v_rows.append(r + 1)
                sheet.v_cols.append(c + 1)
                sheet.v_vals.append(v)
        sheets.append(sheet)
    engine = Engine(RawWorkbook(sheets, dict(names or {}), {}))
    engine.run(vectorize=True)
    return EvaluatedWorkbook(engine)


__all__ = ["EvaluatedWorkbook", "evaluate_cells", "evaluate_workbook"]
