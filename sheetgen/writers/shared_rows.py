"""The big tables' rows written as XML directly, with shared formulas (issue 21).

Why: xlsxwriter runs about thirty regular expressions over every formula it writes
(``Worksheet._prepare_formula``), which is most of a big build's time. A sheetgen table
column is one formula shifted down the rows, which is exactly what a shared formula stores:
the first row of a run holds the master (``<f t="shared" ref="E6:E9005" si="0">...</f>``),
every other row only ``<f t="shared" si="0"/>`` and its cached value. The formula is then
prepared once per column, and the file is a third smaller.

Everything else stays xlsxwriter's: styles (each cell's ``s`` is the Format's own xf index),
charts, names, validation, and every row this module does not take. It works only in
xlsxwriter's constant_memory mode, where a worksheet streams finished rows to its scratch
file (``Worksheet.fh``): a run of rows is written there after xlsxwriter has flushed the
row before it, and the worksheet's dimension and row cursor are advanced past the run. This
is the one module that touches xlsxwriter's worksheet internals (``fh``, ``previous_row``,
``_write_single_row``, ``_check_dimensions``, ``_prepare_formula``); the tests hold its
output against openpyxl, LibreOffice's recalculation and sheetgen's evaluator.

A row is written here only when all its cells are the table's own plain cells: rows that
also hold sheet cells or another table's, linked input rows and rows with text or boolean
inputs go through xlsxwriter as before (plain formulas, inside no shared range).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet

from sheetgen.core.excel import ExcelError
from sheetgen.evaluate.shared import RowTemplate
from sheetgen.layout.planner import ColumnPlan, TablePlan

#: Tables with more rows than this take the fast path in constant_memory mode ...
FAST_TABLE_ROWS = 5_000
#: ... and with more than this in memory (small workbooks), where the gain is the reader's:
#: LibreOffice compiles a shared formula once for its whole range. The default workbook's
#: 512-row best-M table took 2.7 of the 3.4 s of CPU LibreOffice 7.4 spent opening the
#: workbook as plain formulas, 1.1 s as shared ones.
SHARED_TABLE_ROWS = 256
#: Rows rendered per block: bounds the strings alive at once (about 2 KB a row).
BLOCK_ROWS = 4_096

_ERRORS = ("#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!")


def _escape(text: str) -> str:
    """XML text escaping as xlsxwriter's _escape_data does it (quotes stay)."""
    if "&" in text or "<" in text or ">" in text:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text


def _cached_xml(value: Any) -> tuple[str, str]:
    """(type attribute, <v> text) of a formula's cached result, as xlsxwriter writes it
    (sheetgen.writers.xlsx._cached, then xlsxwriter's Worksheet._write_cell)."""
    if value is None:
        return "", ""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool):
        return ' t="b"', "1" if value else "0"
    if isinstance(value, ExcelError):
        value = str(value)
    if isinstance(value, float):
        return ("", f"{value}") if math.isfinite(value) else ("", "")
    if isinstance(value, int):
        return "", f"{value}"
    text = str(value)
    if text == "":
        return "", ""
    return (' t="e"', text) if text in _ERRORS else (' t="str"', _escape(text))


def _chart_value(value: Any) -> Any:
    """A cell's value as a chart's cached data takes it (sheetgen.writers.xlsx._cached)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return str(value) if isinstance(value, ExcelError) else value


def _cached_many(values: list[Any]) -> tuple[list[str], list[str]]:
    """_cached_xml over a column's values: finite floats inline, the repeating rest
    (texts such as "ok", error codes) memoised."""
    types: list[str] = []
    texts: list[str] = []
    memo: dict[Any, tuple[str, str]] = {}
    for v in values:
        if isinstance(v, float) and v - v == 0.0:  # finite (numpy's float64 included)
            types.append("")
            texts.append(repr(float(v)))
            continue
        try:
            t, x = memo[v]
        except (KeyError, TypeError):
            t, x = _cached_xml(v)
            if type(v) is str:
                memo[v] = (t, x)
        types.append(t)
        texts.append(x)
    return types, texts


class _Column:
    """One table column's writer for a run of rows."""

    def __init__(self, ws: Worksheet, column: ColumnPlan, first_row: int, fmt: Any) -> None:
        self.plan = column
        self.letters = xl_col_to_name(column.col)
        self.style = f' s="{fmt._get_xf_index()}"' if fmt is not None else ""
        self.values = column.values  # sliced a block at a time: no list of all rows
        self.first_row = first_row
        self.template: RowTemplate | None = None
        if not column.is_input:
            first = column.formula_at(first_row)
            if ws._prepare_formula(first) != first[1:]:
                raise _NotFast(f"{column.name}: xlsxwriter rewrites its formula")
            t = RowTemplate.of(first, first_row + 1)
            last = first_row + len(self.values) - 1
            if t is not None and all(t.at(r + 1) == column.formula_at(r)[1:]
                                     for r in (first_row + 1, last)):
                self.template = t

    def slow_rows(self) -> Iterator[int]:
        """Rows (zero-based sheet rows) this column cannot write here."""
        c = self.plan
        if c.is_input:
            for i in range(len(c.links or ())):
                if c.link_at(i) is not None:
                    yield self.first_row + i
            if self.values.dtype.kind in "iuf":
                return  # numbers (NaN: a blank cell)
            for i, v in enumerate(self.values.tolist()):
                if not (type(v) is float or type(v) is int or v is None):
                    yield self.first_row + i

    def cells(self, start: int, stop: int, si: int, run: tuple[int, int]) -> list[str]:
        """The <c> elements of zero-based rows start..stop-1, a block of the run [run[0],
        run[1]) of fast rows (si: the run's shared-formula index for this column, or -1 for
        plain formulas); the run's first row holds the master."""
        head = f'<c r="{self.letters}'
        style = self.style
        i0 = start - self.first_row
        vals = self.values[i0:i0 + stop - start].tolist()
        numbers = range(start + 1, stop + 1)
        finite = self._all_finite(i0, stop - start)
        if self.plan.is_input:
            if finite:  # the usual column of typed-in numbers: one C-level format a cell
                return list(map(f'{head}{{}}"{style}><v>{{:.16G}}</v></c>'.format,
                                numbers, vals))
            return [f'{head}{n}"{style}/>' if v is None or v != v
                    else f'{head}{n}"{style}><v>{v:.16G}</v></c>'
                    for n, v in zip(numbers, vals, strict=True)]
        if si < 0 or self.template is None:
            texts = [_escape(self.plan.formula_at(n - 1)[1:]) for n in numbers]
            types, results = _cached_many(vals)
            return list(map(f'{head}{{}}"{style}{{}}><f>{{}}</f><v>{{}}</v></c>'.format,
                            numbers, types, texts, results))
        if finite:
            out = list(map(f'{head}{{}}"{style}><f t="shared" si="{si}"/><v>{{!r}}</v></c>'
                           .format, numbers, vals))
        else:
            out = list(map(f'{head}{{}}"{style}{{}}><f t="shared" si="{si}"/><v>{{}}</v></c>'
                           .format, numbers, *_cached_many(vals)))
        if start == run[0]:
            t, v = _cached_xml(vals[0])
            master = _escape(self.template.at(start + 1))
            out[0] = (f'{head}{start + 1}"{style}{t}><f t="shared" ref="{self.letters}'
                      f'{start + 1}:{self.letters}{run[1]}" si="{si}">{master}</f>'
                      f"<v>{v}</v></c>")
        return out

    def _all_finite(self, i0: int, n: int) -> bool:
        """Whether values i0..i0+n-1 are all finite numbers (floats, or ints for inputs)."""
        arr = self.plan.values[i0:i0 + n]
        if arr.dtype.kind == "f":
            return bool(np.isfinite(arr).all())
        if arr.dtype.kind in "iu":
            return self.plan.is_input  # a formula's cached int stays an int: not repr'd
        return False


class _NotFast(Exception):
    """The table cannot take the fast path; xlsxwriter writes it as before."""


class FastTable:
    """Big tables side by side (the same rows) for the fast path: which rows it takes and
    how to write them. A row is fast only where every table of the group has it."""

    def __init__(self, ws: Worksheet, tables: list[TablePlan],
                 fmt_of: Callable[[ColumnPlan], Any], other_rows: set[int]) -> None:
        self.tables = tables
        self.columns = [_Column(ws, c, t.first_row, fmt_of(c)) for t in tables
                        for c in t.columns]
        self.columns.sort(key=lambda c: c.plan.col)
        if len({c.plan.col for c in self.columns}) != len(self.columns):
            raise _NotFast("two tables share a column")
        first = min(t.first_row for t in tables)
        last = max(t.last_row for t in tables)
        slow = set(other_rows)
        for c in self.columns:
            slow.update(c.slow_rows())
        cuts = {b for t in tables for b in (t.first_row, t.last_row + 1)}
        #: runs [start, stop) of fast rows, none crossing a table's first or last row
        self.runs = [r for run in _runs(first, last, slow) for r in _cut(run, cuts)]
        self.next_si = 0

    def covering(self, start: int) -> list[int]:
        """Positions in `tables` of the tables that have row `start` (so the whole run)."""
        return [i for i, t in enumerate(self.tables) if t.first_row <= start <= t.last_row]

    @classmethod
    def make(cls, ws: Worksheet, tables: list[TablePlan], fmt_of: Callable[[ColumnPlan], Any],
             other_rows: set[int]) -> FastTable | None:
        """The fast group, or None where the fast path does not apply."""
        least = FAST_TABLE_ROWS if ws.constant_memory else SHARED_TABLE_ROWS
        if max(t.n_rows for t in tables) <= least:
            return None
        if not ws.constant_memory and not hasattr(ws, "written_cell"):
            return None  # in memory, only a worksheet that writes out stored <c> elements
        if ws.default_row_height != ws.original_row_height or ws.excel_version != 2007:
            return None  # rows would need attributes this module does not write
        try:
            return cls(ws, tables, fmt_of, other_rows)
        except _NotFast:
            return None

    def write_run(self, ws: Worksheet, start: int, stop: int) -> None:
        """Write zero-based rows start..stop-1 (one run of fast rows) to the worksheet."""
        if ws.constant_memory:
            ws._write_single_row(start)  # flush the row xlsxwriter holds, cursor at `start`
        columns = [c for c in self.columns
                   if c.first_row <= start < c.first_row + len(c.values)]
        cols = [c.plan.col for c in columns]
        ws._check_dimensions(start, min(cols))
        ws._check_dimensions(stop - 1, max(cols))
        sis = []
        for c in columns:
            shared = c.template is not None and stop - start > 1
            sis.append(self.next_si if shared else -1)
            self.next_si += shared
        if not ws.constant_memory:  # in memory: the worksheet writes the cells at close
            for c, si in zip(columns, sis, strict=True):
                stop_c = min(stop, c.first_row + len(c.values))
                xml = c.cells(start, stop_c, si, (start, stop))
                values = c.values[start - c.first_row:stop_c - c.first_row].tolist()
                for row, (cell, value) in enumerate(zip(xml, values, strict=True), start):
                    ws.written_cell(row, c.plan.col, cell, _chart_value(value))
            return
        write = ws.fh.write
        for lo in range(start, stop, BLOCK_ROWS):
            hi = min(lo + BLOCK_ROWS, stop)
            blocks = [c.cells(lo, hi, si, (start, stop))
                      for c, si in zip(columns, sis, strict=True)]
            heads = [f'<row r="{n}">' for n in range(lo + 1, hi + 1)]
            tails = ["</row>"] * (hi - lo)
            write("".join(map("".join, zip(heads, *blocks, tails, strict=True))))
        ws.previous_row = stop - 1


def _runs(first: int, last: int, slow: set[int]) -> list[tuple[int, int]]:
    """Maximal runs [start, stop) of rows first..last not in `slow`."""
    runs = []
    start = first
    for r in sorted(x for x in slow if first <= x <= last):
        if r > start:
            runs.append((start, r))
        start = r + 1
    if start <= last:
        runs.append((start, last + 1))
    return runs


def _cut(run: tuple[int, int], cuts: set[int]) -> list[tuple[int, int]]:
    """A run split at the given rows."""
    start, stop = run
    out = []
    for c in sorted(x for x in cuts if start < x < stop):
        out.append((start, c))
        start = c
    out.append((start, stop))
    return out


class Cursor:
    """A column's values one row at a time for the rows xlsxwriter writes, skipping the
    runs written here without making their Python objects."""

    __slots__ = ("i", "values")

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.i = 0

    def __iter__(self) -> Cursor:
        return self

    def __next__(self) -> Any:
        v = self.values[self.i]
        self.i += 1
        return v.item() if hasattr(v, "item") else v

    def skip(self, n: int) -> None:
        self.i += n


def skip(cursors: list[Cursor], n: int) -> None:
    """Advance each cursor by n rows (the rows a run wrote)."""
    for c in cursors:
        c.skip(n)


__all__ = ["BLOCK_ROWS", "FAST_TABLE_ROWS", "SHARED_TABLE_ROWS", "Cursor", "FastTable", "skip"]
