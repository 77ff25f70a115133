"""Sheet stores sized to the cells a file holds, within the evaluator's cell budgets.

Each column is allocated from its first to its last present row (store.py), so the budgets
are checked on those spans before any array is filled: a file with stray cells far below
its data is refused with the limit named (docs/checking.md, "Limits on untrusted files") instead
of exhausting memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sheetgen.errors import WorkbookError

from .grouping import split_by
from .limits import MAX_CELLS, MAX_COL, MAX_ROW, MAX_SPAN_CELLS
from .reader import RawSheet, SharedRun
from .refs import index_to_col, quote_sheet
from .store import SheetStore
from .values import BOOL, ERR, NUM, STR, ExcelError


def allocate(sh: RawSheet, f_rows: np.ndarray, f_cols: np.ndarray) -> tuple[SheetStore, int]:
    """A store whose columns span exactly their present rows; refuse cells off the grid."""
    rows = np.concatenate([f_rows, np.asarray(sh.n_rows, dtype=np.int64),
                           np.asarray(sh.v_rows, dtype=np.int64)])
    cols = np.concatenate([f_cols, np.asarray(sh.n_cols, dtype=np.int64),
                           np.asarray(sh.v_cols, dtype=np.int64)])
    if len(rows) == 0:
        return SheetStore(sh.name, 2), 0
    off = ~((rows >= 1) & (rows <= MAX_ROW) & (cols >= 1) & (cols <= MAX_COL))
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise WorkbookError(
            f"cell {quote_sheet(sh.name)}!{index_to_col(int(cols[i]))}{int(rows[i])} is "
            f"outside Excel's grid ({MAX_ROW:,} rows x {MAX_COL:,} columns)")
    keys, inverse = np.unique(cols, return_inverse=True)
    lo = np.full(len(keys), MAX_ROW + 1, dtype=np.int64)
    hi = np.zeros(len(keys), dtype=np.int64)
    np.minimum.at(lo, inverse, rows)
    np.maximum.at(hi, inverse, rows)
    store = SheetStore(sh.name, int(hi.max()) + 1)
    check_budget(len(rows), int((hi - lo + 1).sum()))
    for c, a, b in zip(keys.tolist(), lo.tolist(), hi.tolist(), strict=True):
        store.add_column(c, a, b + 1)
    return store, len(rows)


def check_budget(cells: int, spans: int) -> None:
    """Refuse a workbook over MAX_CELLS present cells or MAX_SPAN_CELLS allocated ones."""
    if cells > MAX_CELLS:
        raise WorkbookError(f"the workbook has more than {MAX_CELLS:,} cells, sheetgen's "
                            "budget for evaluating one workbook; split it")
    if spans > MAX_SPAN_CELLS:
        raise WorkbookError(
            f"the workbook's columns span {spans:,} cells from their first to their last "
            f"used row, more than sheetgen's budget of {MAX_SPAN_CELLS:,}; remove stray "
            "cells far below the data")


def load_values(store: SheetStore, sh: Any) -> None:
    """Fill the store with the sheet's value cells (numbers in bulk, the rest one by one)."""
    for c, idx in split_by(np.asarray(sh.n_cols, dtype=np.int64)):
        column = store.cols[c]
        rows = sh.n_rows[idx] - column.lo
        column.kind[rows] = NUM
        column.num[rows] = sh.n_vals[idx]
    for r0, c, v in zip(sh.v_rows, sh.v_cols, sh.v_vals, strict=True):
        column = store.cols[c]
        r = r0 - column.lo
        if isinstance(v, bool):
            column.kind[r] = BOOL
            column.num[r] = float(v)
        elif isinstance(v, float | int):
            column.kind[r] = NUM
            column.num[r] = v
        elif isinstance(v, ExcelError):
            column.kind[r] = ERR
            column.num[r] = np.nan
            column.ensure_obj()[r] = v
        elif isinstance(v, str):
            column.kind[r] = STR
            column.num[r] = np.nan
            column.ensure_obj()[r] = v


def load_shared(store: SheetStore, runs: list[SharedRun]) -> None:
    """Keep each shared formula's template in its cells: one object for all of them,
    written out only when EvaluatedWorkbook.formula asks for a cell's text."""
    for run in runs:
        column = store.cols[run.col]
        if column.texts is None:
            column.texts = np.full(column.hi - column.lo, None, dtype=object)
        column.texts[run.rows - column.lo] = run.template


def load_texts(store: SheetStore, f_rows: np.ndarray, f_cols: np.ndarray,
               f_texts: list[str]) -> None:  # fmt: skip
    """Keep each formula's text in its column (EvaluatedWorkbook.formula reads it back)."""
    texts = np.empty(len(f_texts), dtype=object)
    texts[:] = f_texts
    for c, idx in split_by(f_cols):
        column = store.cols[c]
        if column.texts is None:
            column.texts = np.full(column.hi - column.lo, None, dtype=object)
        column.texts[f_rows[idx] - column.lo] = texts[idx]
