"""What the emulator stores: spreadsheets, their sheets (typed cell data, charts, rules,
merges, dimension metadata), the snapshot a compute hook sees, and the request log."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .a1 import col_letters, quote_sheet
from .errors import Invalid
from .masks import jcopy

CellKey = tuple[str, str]  # (sheet title, "A1")
ComputeHook = Callable[["Snapshot"], Mapping[CellKey, Any]]


@dataclass
class Sheet:
    """One grid sheet: properties as Google returns them plus typed cell data."""

    properties: dict[str, Any]
    cells: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    charts: list[dict[str, Any]] = field(default_factory=list)
    conditional_formats: list[dict[str, Any]] = field(default_factory=list)
    merges: list[dict[str, Any]] = field(default_factory=list)
    protected_ranges: list[dict[str, Any]] = field(default_factory=list)
    row_meta: dict[int, dict[str, Any]] = field(default_factory=dict)
    col_meta: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def id(self) -> int:
        return int(self.properties["sheetId"])

    @property
    def title(self) -> str:
        return str(self.properties["title"])

    @property
    def rows(self) -> int:
        return int(self.properties["gridProperties"]["rowCount"])

    @property
    def cols(self) -> int:
        return int(self.properties["gridProperties"]["columnCount"])

    def value(self, row: int, col: int) -> dict[str, Any] | None:
        """The typed userEnteredValue at (row, col), or None."""
        return self.cells.get((row, col), {}).get("userEnteredValue")

    def clone(self) -> Sheet:
        return Sheet(jcopy(self.properties), dict(self.cells), jcopy(self.charts),
                     jcopy(self.conditional_formats), jcopy(self.merges),
                     jcopy(self.protected_ranges), jcopy(self.row_meta), jcopy(self.col_meta))


@dataclass
class StoredSpreadsheet:
    """A spreadsheet in the emulator; mutate only through the API or the helpers."""

    id: str
    properties: dict[str, Any]
    sheets: list[Sheet]
    named_ranges: list[dict[str, Any]] = field(default_factory=list)
    shared_with: dict[str, str] = field(default_factory=dict)  # email -> "writer"|"reader"
    revision: int = 0
    _next_id: int = 1000

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def sheet(self, sheet_id: int | None = None, title: str | None = None) -> Sheet:
        for s in self.sheets:
            if (title is not None and s.title == title) or (
                title is None and s.id == (sheet_id or 0)
            ):
                return s
        raise Invalid(f"No grid with id: {sheet_id}" if title is None else
                      f"Unable to parse range: {quote_sheet(title)}")

    def reindex(self) -> None:
        for i, s in enumerate(self.sheets):
            s.properties["index"] = i

    def clone(self) -> StoredSpreadsheet:
        """A working copy for an atomic update. Cell dicts are shared: handlers replace a
        stored cell with a new dict and never mutate one in place."""
        new = copy.copy(self)
        new.properties = jcopy(self.properties)
        new.named_ranges = jcopy(self.named_ranges)
        new.shared_with = dict(self.shared_with)
        new.sheets = [s.clone() for s in self.sheets]
        return new


@dataclass(frozen=True)
class Snapshot:
    """What a compute hook sees: typed input of every non-empty cell, and the named ranges.

    ``sheets[title]["B3"]`` is the cell's ``userEnteredValue`` (``{"formulaValue": "=..."}``,
    ``{"numberValue": 1.5}``, ...); ``named_ranges[name]`` is an absolute A1 reference such as
    ``"'GPU Specs'!$B$3"``; ``grids[title]`` is ``(rowCount, columnCount)``.
    """

    spreadsheet_id: str
    sheets: dict[str, dict[str, dict[str, Any]]]
    named_ranges: dict[str, str]
    grids: dict[str, tuple[int, int]]


@dataclass
class LoggedRequest:
    """One request the emulator saw (the token grant's assertion is not kept)."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    status: int = 0
    fault: str | None = None


def gridrange_a1(ss: StoredSpreadsheet, gr: Mapping[str, Any], absolute: bool = True) -> str:
    sheet = ss.sheet(gr.get("sheetId", 0))
    d = "$" if absolute else ""
    r0, r1 = gr.get("startRowIndex", 0), gr.get("endRowIndex", sheet.rows)
    c0, c1 = gr.get("startColumnIndex", 0), gr.get("endColumnIndex", sheet.cols)
    start = f"{d}{col_letters(c0)}{d}{r0 + 1}"
    end = f"{d}{col_letters(c1 - 1)}{d}{r1}"
    return f"{quote_sheet(sheet.title)}!{start}" + ("" if start == end else f":{end}")
