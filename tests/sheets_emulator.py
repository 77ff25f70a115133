"""A loopback emulator of the Google Sheets API v4 (and Google's OAuth token endpoint).

Why: the writer and client must be tested with the *real* gspread and google-auth code paths
(JWT grant, bearer tokens, URL building, error bodies, retries) without network access. The
emulator stores what it receives, typed (``formulaValue`` stays a formula, ``stringValue`` stays
text), applies ``batchUpdate`` atomically, validates requests strictly enough that mistakes a
real server would reject fail here too, and can inject faults before a request is applied.

Use from pytest through the fixtures at the bottom (re-exported by ``tests/conftest.py``)::

    def test_x(sheets_emulator, gsheets_client):
        sheets_emulator.create_spreadsheet(KEY, sheets=["Model"], shared_with=[SA_EMAIL])
        sh = open_spreadsheet(gsheets_client, KEY)

It is a test double, not a spreadsheet engine: formula results come only from the pluggable
``compute`` hook.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import functools
import json
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np
import pytest
import sheets_discovery
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from sheetgen.gsheets_client import RetryingHTTPClient, authorize

SA_EMAIL = "sheetgen-test@proj.iam.gserviceaccount.com"
PROJECT_ID = "proj"
PROJECT_NUMBER = "123456789012"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
GOOGLE_API_PREFIXES = ("https://sheets.googleapis.com", "https://www.googleapis.com")
SHEETS_SCOPES = {
    "https://www.googleapis.com/auth/spreadsheets",
    "https://www.googleapis.com/auth/drive",
    "https://www.googleapis.com/auth/drive.file",
}
READ_SCOPES = SHEETS_SCOPES | {
    "https://www.googleapis.com/auth/spreadsheets.readonly",
    "https://www.googleapis.com/auth/drive.readonly",
}

CELL_LIMIT = 10_000_000  # cells per spreadsheet, all tabs together
CellKey = tuple[str, str]  # (sheet title, "A1")
ComputeHook = Callable[["Snapshot"], Mapping[CellKey, Any]]


# =========================================================================== A1 helpers


@functools.lru_cache(maxsize=4096)
def col_letters(index: int) -> str:
    """0-based column index -> letters (0 -> A, 26 -> AA)."""
    out = ""
    n = index + 1
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return out


def col_index(letters: str) -> int:
    """Letters -> 0-based column index."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n - 1


def a1(row: int, col: int) -> str:
    """0-based (row, col) -> "A1"."""
    return f"{col_letters(col)}{row + 1}"


def quote_sheet(title: str) -> str:
    """Sheet name as Google writes it in a range: quoted when it is not a plain identifier."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", title) and not re.fullmatch(
        r"[A-Za-z]{1,3}\d+|[Rr]\d*[Cc]\d*", title
    ):
        return title
    return "'" + title.replace("'", "''") + "'"


_CELL_RE = re.compile(r"^\$?([A-Za-z]{0,3})\$?(\d*)$")


@dataclass
class A1Range:
    """A parsed range: sheet title (None = first sheet) and 0-based half-open bounds."""

    sheet: str | None
    r0: int | None
    r1: int | None
    c0: int | None
    c1: int | None


class BadRange(ValueError):
    """The A1 text cannot be parsed (Google answers 400 "Unable to parse range")."""


def parse_a1(text: str) -> A1Range:
    """Parse ``Sheet!A1:B2``, ``'My Sheet'!A:A``, ``A5:B``, ``2:3``, ``Sheet`` and ``A1``."""
    text = text.strip()
    sheet: str | None = None
    rest = text
    if text.startswith("'"):
        i, buf = 1, []
        while i < len(text):
            if text[i] == "'":
                if i + 1 < len(text) and text[i + 1] == "'":
                    buf.append("'")
                    i += 2
                    continue
                break
            buf.append(text[i])
            i += 1
        else:
            raise BadRange(text)
        sheet = "".join(buf)
        rest = text[i + 1 :]
        if rest.startswith("!"):
            rest = rest[1:]
        elif rest:
            raise BadRange(text)
        else:
            return A1Range(sheet, None, None, None, None)
    elif "!" in text:
        sheet, rest = text.rsplit("!", 1)
    if not rest:
        return A1Range(sheet, None, None, None, None)
    parts = rest.split(":")
    if len(parts) > 2:
        raise BadRange(text)
    cells = []
    for p in parts:
        m = _CELL_RE.match(p)
        if not m or (not m.group(1) and not m.group(2)):
            if sheet is None and len(parts) == 1:
                return A1Range(text, None, None, None, None)  # a bare sheet title
            raise BadRange(text)
        c = col_index(m.group(1)) if m.group(1) else None
        r = int(m.group(2)) - 1 if m.group(2) else None
        if r is not None and r < 0:
            raise BadRange(text)
        cells.append((r, c))
    (ra, ca) = cells[0]
    (rb, cb) = cells[-1]
    if len(cells) == 1 and (ra is None or ca is None):
        raise BadRange(text)
    r0 = None if ra is None else min(ra, rb if rb is not None else ra)
    r1 = None if rb is None and len(cells) == 2 else max(ra or 0, rb if rb is not None else 0) + 1
    if ra is None:
        r0, r1 = None, None
    c0 = None if ca is None else min(ca, cb if cb is not None else ca)
    c1 = None if cb is None and len(cells) == 2 else max(ca or 0, cb if cb is not None else 0) + 1
    if ca is None:
        c0, c1 = None, None
    return A1Range(sheet, r0, r1, c0, c1)


# =========================================================================== formula shifting

_STRING_LITERAL = re.compile(r'("(?:[^"]|"")*")')
_A1_REF = re.compile(r"(?<![A-Za-z0-9_.$])(\$?)([A-Za-z]{1,3})(\$?)(\d+)(?![A-Za-z0-9_(!])")


def shift_formula(formula: str, dr: int, dc: int) -> str:
    """A formula as Google fills it ``dr`` rows down and ``dc`` columns right: relative row and
    column parts of A1 references move, ``$`` parts stay; text in quotes, function names
    (``LOG10(``) and named ranges (``PEAK_FLOPS``) are not references and stay as they are."""
    return _shifter(formula)(dr, dc)


@functools.lru_cache(maxsize=1024)
def _shifter(formula: str) -> Callable[[int, int], str]:
    """shift_formula's work, with the formula tokenised once (repeatCell shifts it per cell)."""
    pieces: list[Any] = []  # literal text, or (col_abs, col, row_abs, row)
    for i, part in enumerate(_STRING_LITERAL.split(formula)):
        if i % 2:
            pieces.append(part)
            continue
        pos = 0
        for m in _A1_REF.finditer(part):
            pieces.append(part[pos:m.start()])
            cabs, col, rabs, row = m.groups()
            pieces.append((bool(cabs), col_index(col), bool(rabs), int(row)))
            pos = m.end()
        pieces.append(part[pos:])

    def shift(dr: int, dc: int) -> str:
        out = []
        for p in pieces:
            if isinstance(p, str):
                out.append(p)
                continue
            cabs, c, rabs, r = p
            c, r = c + (0 if cabs else dc), r + (0 if rabs else dr)
            if c < 0 or r < 1:
                out.append("#REF!")
            else:
                out.append(f"{'$' if cabs else ''}{col_letters(c)}{'$' if rabs else ''}{r}")
        return "".join(out)

    return shift


# =========================================================================== field masks


def jcopy(obj: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), much faster than deepcopy."""
    if isinstance(obj, dict):
        return {k: jcopy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [jcopy(v) for v in obj]
    return obj


def parse_fields(mask: str) -> list[str]:
    """``"a(b,c.d),e"`` -> ``["a.b", "a.c.d", "e"]`` (Google's field-mask shorthand)."""
    return list(_parse_fields(mask))


@functools.lru_cache(maxsize=256)
def _parse_fields(mask: str) -> tuple[str, ...]:
    out: list[str] = []

    def split_top(s: str) -> list[str]:
        items, depth, cur = [], 0, []
        for ch in s:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            if ch == "," and depth == 0:
                items.append("".join(cur))
                cur = []
            else:
                cur.append(ch)
        items.append("".join(cur))
        return [i.strip() for i in items if i.strip()]

    for item in split_top(mask.replace(" ", "")):
        if "(" in item and item.endswith(")"):
            prefix, inner = item.split("(", 1)
            out.extend(f"{prefix}.{sub}" for sub in parse_fields(inner[:-1]))
        else:
            out.append(item)
    return tuple(out)


_MISSING = object()


def _get_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(obj, Mapping) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
    obj[parts[-1]] = jcopy(value)


def _del_path(obj: dict[str, Any], path: str) -> None:
    parts = path.split(".")
    stack = []
    for part in parts[:-1]:
        if part not in obj or not isinstance(obj[part], dict):
            return
        stack.append((obj, part))
        obj = obj[part]
    obj.pop(parts[-1], None)
    for parent, key in reversed(stack):  # prune emptied containers
        if not parent[key]:
            del parent[key]


def apply_mask(dst: dict[str, Any], src: Mapping[str, Any], fields: str) -> None:
    """Google's update semantics: listed fields are copied from src, or cleared if absent."""
    for path in parse_fields(fields):
        if path == "*":
            dst.clear()
            dst.update(jcopy(dict(src)))
            continue
        value = _get_path(src, path)
        if value is _MISSING:
            _del_path(dst, path)
        else:
            _set_path(dst, path, value)


def apply_mask_shared(dst: dict[str, Any], src: Mapping[str, Any], fields: str) -> None:
    """apply_mask for stored cells, which are never mutated in place: dicts along each path
    are copied (not the whole cell), values are shared rather than deep-copied."""
    for path in parse_fields(fields):
        if path == "*":
            dst.clear()
            dst.update(src)
            continue
        value = _get_path(src, path)
        parts = path.split(".")
        if value is _MISSING:
            _del_path_shared(dst, parts)
            continue
        obj = dst
        for part in parts[:-1]:
            child = obj.get(part)
            child = dict(child) if isinstance(child, dict) else {}
            obj[part] = child
            obj = child
        obj[parts[-1]] = value


def _del_path_shared(dst: dict[str, Any], parts: list[str]) -> None:
    if len(parts) == 1:
        dst.pop(parts[0], None)
        return
    child = dst.get(parts[0])
    if not isinstance(child, dict):
        return
    child = dict(child)
    _del_path_shared(child, parts[1:])
    if child:
        dst[parts[0]] = child
    else:
        dst.pop(parts[0], None)


def filter_fields(obj: Any, mask: str) -> Any:
    """Partial response (``fields=`` query): keep only the listed paths, through lists."""
    paths = parse_fields(mask)
    if not paths or "*" in paths:
        return obj
    tree: dict[str, Any] = {}
    for p in paths:
        node = tree
        for part in p.split("."):
            node = node.setdefault(part, {})

    def walk(o: Any, t: dict[str, Any]) -> Any:
        if not t:
            return o
        if isinstance(o, list):
            return [walk(x, t) for x in o]
        if isinstance(o, dict):
            return {k: walk(o[k], sub) for k, sub in t.items() if k in o}
        return o

    return walk(obj, tree)


# =========================================================================== schemas
# Allowed keys, so that a typo or an unsupported option (e.g. a log-scale axis, which the
# Sheets API does not have) is a 400 here as it is at Google. ``None`` = any value.

_COLOR = None
_GRID_RANGE = {k: None for k in (
    "sheetId", "startRowIndex", "endRowIndex", "startColumnIndex", "endColumnIndex"
)}
_CELL_FORMAT = None  # formats are stored as received; Google's format schema is large
_CONDITION = {"type": None, "values": {"userEnteredValue": None, "relativeDate": None}}
_CHART_DATA = {
    "sourceRange": {"sources": _GRID_RANGE},
    "groupRule": None, "aggregateType": None, "columnReference": None,
}
_AXIS = {
    "position": None, "title": None, "format": None, "titleTextPosition": None,
    "viewWindowOptions": {"viewWindowMin": None, "viewWindowMax": None, "viewWindowMode": None},
}
_BASIC_CHART = {
    "chartType": None, "legendPosition": None, "axis": _AXIS,
    "domains": {"domain": _CHART_DATA, "reversed": None},
    "series": {
        "series": _CHART_DATA, "targetAxis": None, "type": None, "lineStyle": None,
        "dataLabel": None, "pointStyle": None, "color": _COLOR, "colorStyle": None,
        "styleOverrides": None,
    },
    "headerCount": None, "threeDimensional": None, "interpolateNulls": None,
    "stackedType": None, "lineSmoothing": None, "compareMode": None, "totalDataLabel": None,
}
_CHART_SPEC = {
    "title": None, "altText": None, "titleTextFormat": None, "titleTextPosition": None,
    "subtitle": None, "subtitleTextFormat": None, "subtitleTextPosition": None,
    "fontName": None, "maximized": None, "backgroundColor": None,
    "backgroundColorStyle": None, "hiddenDimensionStrategy": None, "basicChart": _BASIC_CHART,
    "pieChart": None, "bubbleChart": None, "candlestickChart": None, "orgChart": None,
    "histogramChart": None, "waterfallChart": None, "treemapChart": None,
    "scorecardChart": None,
}
_EMBEDDED_POSITION = {
    "sheetId": None, "newSheet": None,
    "overlayPosition": {
        "anchorCell": {"sheetId": None, "rowIndex": None, "columnIndex": None},
        "offsetXPixels": None, "offsetYPixels": None, "widthPixels": None,
        "heightPixels": None,
    },
}
_SHEET_PROPERTIES = {
    "sheetId": None, "title": None, "index": None, "sheetType": None, "hidden": None,
    "tabColor": None, "tabColorStyle": None, "rightToLeft": None,
    "gridProperties": {k: None for k in (
        "rowCount", "columnCount", "frozenRowCount", "frozenColumnCount", "hideGridlines",
        "rowGroupControlAfter", "columnGroupControlAfter",
    )},
}
_CELL_DATA = {
    "userEnteredValue": {k: None for k in (
        "numberValue", "stringValue", "boolValue", "formulaValue", "errorValue"
    )},
    "userEnteredFormat": _CELL_FORMAT, "dataValidation": None, "note": None,
    "textFormatRuns": None,
}
_BORDER = {"style": None, "width": None, "color": None, "colorStyle": None}
_BOOLEAN_RULE = {"condition": _CONDITION, "format": _CELL_FORMAT}

REQUEST_SCHEMAS: dict[str, dict[str, Any]] = {
    "addSheet": {"properties": _SHEET_PROPERTIES},
    "deleteSheet": {"sheetId": None},
    "updateSheetProperties": {"properties": _SHEET_PROPERTIES, "fields": None},
    "updateSpreadsheetProperties": {"properties": None, "fields": None},
    "updateCells": {
        "rows": {"values": _CELL_DATA},
        "fields": None,
        "start": {"sheetId": None, "rowIndex": None, "columnIndex": None},
        "range": _GRID_RANGE,
    },
    "repeatCell": {"range": _GRID_RANGE, "cell": _CELL_DATA, "fields": None},
    "addNamedRange": {"namedRange": {"namedRangeId": None, "name": None, "range": _GRID_RANGE}},
    "updateNamedRange": {
        "namedRange": {"namedRangeId": None, "name": None, "range": _GRID_RANGE},
        "fields": None,
    },
    "deleteNamedRange": {"namedRangeId": None},
    "setDataValidation": {
        "range": _GRID_RANGE,
        "rule": {"condition": _CONDITION, "inputMessage": None, "strict": None,
                 "showCustomUi": None},
        "filteredRowsIncluded": None,
    },
    "addConditionalFormatRule": {
        "rule": {"ranges": _GRID_RANGE, "booleanRule": _BOOLEAN_RULE, "gradientRule": None},
        "index": None,
    },
    "deleteConditionalFormatRule": {"sheetId": None, "index": None},
    "updateDimensionProperties": {
        "range": {"sheetId": None, "dimension": None, "startIndex": None, "endIndex": None},
        "properties": {"pixelSize": None, "hiddenByUser": None, "developerMetadata": None},
        "fields": None,
    },
    "appendDimension": {"sheetId": None, "dimension": None, "length": None},
    "autoResizeDimensions": {
        "dimensions": {"sheetId": None, "dimension": None, "startIndex": None, "endIndex": None},
    },
    "addChart": {"chart": {"chartId": None, "spec": _CHART_SPEC, "position": _EMBEDDED_POSITION,
                           "border": None}},
    "mergeCells": {"range": _GRID_RANGE, "mergeType": None},
    "unmergeCells": {"range": _GRID_RANGE},
    "updateBorders": {"range": _GRID_RANGE, **{k: _BORDER for k in (
        "top", "bottom", "left", "right", "innerHorizontal", "innerVertical"
    )}},
    "addProtectedRange": {"protectedRange": None},
}

_CAMEL_RE = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(name: str) -> str:
    return _CAMEL_RE.sub("_", name).lower()


def check_schema(value: Any, schema: Any, where: str) -> None:
    """Raise Invalid for keys Google would answer 'Unknown name ... Cannot find field.'"""
    if schema is None:
        return
    if isinstance(value, list):
        for i, v in enumerate(value):
            check_schema(v, schema, f"{where}[{i}]")
        return
    if not isinstance(value, Mapping):
        raise Invalid(f"Invalid value at '{where}': expected an object")
    for key, sub in value.items():
        if key not in schema:
            raise Invalid(
                f'Invalid JSON payload received. Unknown name "{key}" at \'{where}\': '
                "Cannot find field."
            )
        check_schema(sub, schema[key], f"{where}.{_snake(key)}")


# =========================================================================== store


class Invalid(Exception):
    """A request Google would reject with 400 INVALID_ARGUMENT."""


DV_CONDITIONS = {
    "NUMBER_GREATER", "NUMBER_GREATER_THAN_EQ", "NUMBER_LESS", "NUMBER_LESS_THAN_EQ",
    "NUMBER_EQ", "NUMBER_NOT_EQ", "NUMBER_BETWEEN", "NUMBER_NOT_BETWEEN", "TEXT_CONTAINS",
    "TEXT_NOT_CONTAINS", "TEXT_EQ", "TEXT_IS_EMAIL", "TEXT_IS_URL", "DATE_EQ", "DATE_BEFORE",
    "DATE_AFTER", "DATE_ON_OR_BEFORE", "DATE_ON_OR_AFTER", "DATE_BETWEEN", "DATE_NOT_BETWEEN",
    "DATE_IS_VALID", "ONE_OF_RANGE", "ONE_OF_LIST", "CUSTOM_FORMULA", "BOOLEAN",
}
CF_CONDITIONS = {
    "NUMBER_GREATER", "NUMBER_GREATER_THAN_EQ", "NUMBER_LESS", "NUMBER_LESS_THAN_EQ",
    "NUMBER_EQ", "NUMBER_NOT_EQ", "NUMBER_BETWEEN", "NUMBER_NOT_BETWEEN", "TEXT_CONTAINS",
    "TEXT_NOT_CONTAINS", "TEXT_STARTS_WITH", "TEXT_ENDS_WITH", "TEXT_EQ", "TEXT_NOT_EQ",
    "DATE_EQ", "DATE_BEFORE", "DATE_AFTER", "DATE_NOT_EQ", "BLANK", "NOT_BLANK",
    "CUSTOM_FORMULA",
}
_NO_VALUES = {"BLANK", "NOT_BLANK", "TEXT_IS_EMAIL", "TEXT_IS_URL", "DATE_IS_VALID"}
_TWO_VALUES = {"NUMBER_BETWEEN", "NUMBER_NOT_BETWEEN", "DATE_BETWEEN", "DATE_NOT_BETWEEN"}
CHART_TYPES = {"BAR", "LINE", "AREA", "COLUMN", "SCATTER", "COMBO", "STEPPED_AREA"}
_NAME_OK = re.compile(r"^[A-Za-z_\\][A-Za-z0-9_.]{0,249}$")
_NAME_LIKE_REF = re.compile(r"^([A-Za-z]{1,3}\d+|[Rr]\d*[Cc]\d*)$")


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


def _gridrange_a1(ss: StoredSpreadsheet, gr: Mapping[str, Any], absolute: bool = True) -> str:
    sheet = ss.sheet(gr.get("sheetId", 0))
    d = "$" if absolute else ""
    r0, r1 = gr.get("startRowIndex", 0), gr.get("endRowIndex", sheet.rows)
    c0, c1 = gr.get("startColumnIndex", 0), gr.get("endColumnIndex", sheet.cols)
    start = f"{d}{col_letters(c0)}{d}{r0 + 1}"
    end = f"{d}{col_letters(c1 - 1)}{d}{r1}"
    return f"{quote_sheet(sheet.title)}!{start}" + ("" if start == end else f":{end}")


def _num(x: float | int) -> float | int:
    """Google writes integral numbers without a fraction."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return int(x)
    return x


_NUMBER_RE = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)?(\.\d*)?([eE][+-]?\d+)?$")


def parse_user_entered(value: Any) -> dict[str, Any] | None:
    """A value as the Sheets UI would take it (USER_ENTERED); None clears the cell."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int | float):
        return {"numberValue": value}
    text = str(value)
    if text == "":
        return None
    if text.startswith("'"):
        return {"stringValue": text[1:]}
    if text.startswith("=") and len(text) > 1:
        return {"formulaValue": text}
    if text.upper() in ("TRUE", "FALSE"):
        return {"boolValue": text.upper() == "TRUE"}
    body = text.strip()
    pct = body.endswith("%")
    if pct:
        body = body[:-1]
    if body and any(ch.isdigit() for ch in body) and _NUMBER_RE.match(body):
        number = float(body.replace(",", ""))
        return {"numberValue": _num(number / 100 if pct else number)}
    return {"stringValue": text}


def parse_raw(value: Any) -> dict[str, Any] | None:
    """RAW input: strings stay strings (``"=1+2"`` is text), numbers and booleans as they are."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int | float):
        return {"numberValue": value}
    text = str(value)
    return None if text == "" else {"stringValue": text}


# =========================================================================== emulator


@dataclass
class Fault:
    """An injected response: a status (with headers/body), "drop", "drop_after" or "timeout"."""

    kind: str  # "status" | "drop" | "drop_after" | "timeout"
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


DEFAULT_ERROR_BODIES = {
    400: ("Invalid request.", "INVALID_ARGUMENT"),
    401: (
        "Request is missing required authentication credential. Expected OAuth 2 access "
        "token, login cookie or other valid authentication credential.",
        "UNAUTHENTICATED",
    ),
    403: ("The caller does not have permission", "PERMISSION_DENIED"),
    404: ("Requested entity was not found.", "NOT_FOUND"),
    429: (
        "Quota exceeded for quota metric 'Write requests' and limit 'Write requests per "
        "minute per user' of service 'sheets.googleapis.com' for consumer "
        f"'project_number:{PROJECT_NUMBER}'.",
        "RESOURCE_EXHAUSTED",
    ),
    500: ("Internal error encountered.", "INTERNAL"),
    502: ("Bad Gateway", "UNAVAILABLE"),
    503: ("The service is currently unavailable.", "UNAVAILABLE"),
    504: ("Deadline exceeded.", "DEADLINE_EXCEEDED"),
}


def google_error(code: int, message: str | None = None, status: str | None = None,
                 details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Google's JSON error body ``{"error": {"code", "message", "status"[, "details"]}}``."""
    dmsg, dstatus = DEFAULT_ERROR_BODIES.get(code, ("Error.", "UNKNOWN"))
    err: dict[str, Any] = {"code": code, "message": message or dmsg, "status": status or dstatus}
    if details:
        err["details"] = details
    if code == 429 and not details:
        err["details"] = [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "RATE_LIMIT_EXCEEDED", "domain": "googleapis.com",
            "metadata": {"service": "sheets.googleapis.com",
                         "consumer": f"projects/{PROJECT_NUMBER}"},
        }]
    return {"error": err}


class HTTPReply(Exception):
    """Raised inside handlers to answer with a status and a JSON body."""

    def __init__(self, status: int, body: Any, headers: Mapping[str, str] | None = None):
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


class SheetsEmulator:
    """In-process Sheets API v4 + OAuth token endpoint on 127.0.0.1 (see module docstring).

    Attributes tests use: ``base_url``, ``token_url``, ``requests`` (the log), ``api_enabled``,
    ``compute`` (the formula hook), ``timeout_fault_seconds``, ``formula_render_quotes_text``.
    """

    def __init__(self, compute: ComputeHook | None = None) -> None:
        self.spreadsheets: dict[str, StoredSpreadsheet] = {}
        self.requests: list[LoggedRequest] = []
        self.compute: ComputeHook | None = compute
        self.api_enabled = True
        self.project_number = PROJECT_NUMBER
        self.timeout_fault_seconds = 3.0
        #: False (default, like Google as far as we can tell): FORMULA render returns a text
        #: cell's text as is, so text "=x" and formula =x look the same there; only
        #: spreadsheets.get (includeGridData) tells stringValue from formulaValue. True: such
        #: text comes back with a leading apostrophe (its user-entered form).
        self.formula_render_quotes_text = False
        #: Every request body is validated against Google's discovery document
        #: (tests/sheets_discovery.py) before it is applied: how many were, and what failed.
        self.validated_bodies = 0
        self.schema_errors: list[str] = []
        self._faults: list[tuple[re.Pattern[str], str | None, list[Fault]]] = []
        self._accounts: dict[str, Any] = {}  # email -> RSA public key
        self._tokens: dict[str, tuple[str, set[str], float]] = {}  # token -> (email, scopes, exp)
        self._lock = threading.RLock()
        self._compute_cache: dict[tuple[str, int], Mapping[CellKey, Any]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> SheetsEmulator:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread."""
        emu = self

        class Handler(_Handler):
            emulator = emu

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.02,), name="sheets-emulator", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; in-flight "timeout" faults are abandoned (daemon threads)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> SheetsEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "emulator not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def token_url(self) -> str:
        return self.base_url + "/token"

    # ------------------------------------------------------------------ test-facing API
    def register_service_account(self, email: str, public_key: Any) -> None:
        """Trust JWT grants from ``email`` signed by the private half of ``public_key``."""
        with self._lock:
            self._accounts[email.lower()] = public_key

    def service_account_info(self, private_key_pem: str, email: str = SA_EMAIL,
                             project_id: str = PROJECT_ID) -> dict[str, Any]:
        """A service-account key dict whose token_uri points at this emulator."""
        return {
            "type": "service_account",
            "project_id": project_id,
            "private_key_id": secrets.token_hex(20),
            "private_key": private_key_pem,
            "client_email": email,
            "client_id": "100000000000000000000",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.token_url,
            "universe_domain": "googleapis.com",
        }

    def create_spreadsheet(
        self,
        key: str,
        sheets: Sequence[str | Mapping[str, Any]] = ("Sheet1",),
        shared_with: Sequence[str] | Mapping[str, str] = (),
        title: str = "Untitled spreadsheet",
    ) -> StoredSpreadsheet:
        """Make a spreadsheet as a user would, shared (Editor) with ``shared_with`` emails.

        ``sheets`` items are titles or sheet property dicts (``{"title":..,
        "gridProperties": {"rowCount":..}}``); sheet ids are 0, 1, 2, ...
        """
        props = []
        for i, s in enumerate(sheets):
            p = {"title": s} if isinstance(s, str) else copy.deepcopy(dict(s))
            p.setdefault("sheetId", i)
            p.setdefault("index", i)
            p.setdefault("sheetType", "GRID")
            grid = p.setdefault("gridProperties", {})
            grid.setdefault("rowCount", 1000)
            grid.setdefault("columnCount", 26)
            props.append(p)
        share = (dict(shared_with) if isinstance(shared_with, Mapping)
                 else dict.fromkeys(shared_with, "writer"))
        ss = StoredSpreadsheet(
            id=key,
            properties={"title": title, "locale": "en_US", "autoRecalc": "ON_CHANGE",
                        "timeZone": "Etc/GMT"},
            sheets=[Sheet(p) for p in props],
            shared_with={k.lower(): v for k, v in share.items()},
        )
        with self._lock:
            self.spreadsheets[key] = ss
        return ss

    def share(self, key: str, email: str, role: str = "writer") -> None:
        """Share an existing spreadsheet with ``email`` (role "writer" or "reader")."""
        with self._lock:
            self.spreadsheets[key].shared_with[email.lower()] = role

    def inject(self, path_regex: str, responses: Sequence[int | str | Mapping[str, Any]],
               method: str | None = None) -> None:
        """Queue faults for requests whose path matches ``path_regex`` (``re.search``).

        Items: a status code (Google-shaped body), ``{"status": 429, "headers": {...},
        "body": {...}}``, ``"drop"`` (close without answering), ``"drop_after"`` (apply, then
        close: a lost response), ``"timeout"`` (answer nothing for timeout_fault_seconds).
        Consumed in order, one per matching request, before the request is applied.
        """
        faults = []
        for r in responses:
            if isinstance(r, int):
                faults.append(Fault("status", r))
            elif isinstance(r, str):
                if r not in ("drop", "drop_after", "timeout"):
                    raise ValueError(f"unknown fault {r!r}")
                faults.append(Fault(r))
            else:
                faults.append(Fault("status", int(r["status"]), dict(r.get("headers", {})),
                                    r.get("body")))
        with self._lock:
            self._faults.append((re.compile(path_regex), method and method.upper(), faults))

    def revoke_tokens(self) -> None:
        """Expire every issued access token (clients must refresh on the 401)."""
        with self._lock:
            self._tokens.clear()

    def count(self, method: str | None = None, path_regex: str = "", status: int | None = None
              ) -> int:
        """How many logged requests match (e.g. ``count("POST", r":batchUpdate$")``)."""
        rx = re.compile(path_regex)
        return sum(
            1 for r in list(self.requests)
            if (method is None or r.method == method.upper()) and rx.search(r.path)
            and (status is None or r.status == status)
        )

    def snapshot(self, key: str) -> Snapshot:
        """The compute hook's view of a spreadsheet."""
        with self._lock:
            ss = self.spreadsheets[key]
            return self._snapshot(ss)

    def cell(self, key: str, sheet: str, ref: str) -> dict[str, Any] | None:
        """Stored CellData at ``sheet!ref`` (typed userEnteredValue, format, validation)."""
        rng = parse_a1(ref)
        with self._lock:
            c = self.spreadsheets[key].sheet(title=sheet).cells.get((rng.r0 or 0, rng.c0 or 0))
            return copy.deepcopy(c)

    def http_client_class(self, **policy: Any) -> type[RetryingHTTPClient]:
        """RetryingHTTPClient (with ``policy`` changes) routed to this emulator."""
        base = RetryingHTTPClient.with_policy(**policy) if policy else RetryingHTTPClient
        return make_http_client_class(self.base_url, base)

    # ------------------------------------------------------------------ internals
    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for rx, m, faults in self._faults:
                if faults and (m is None or m == method) and rx.search(path):
                    return faults.pop(0)
        return None

    def _snapshot(self, ss: StoredSpreadsheet) -> Snapshot:
        sheets = {
            s.title: {a1(r, c): jcopy(cd["userEnteredValue"])
                      for (r, c), cd in sorted(s.cells.items()) if "userEnteredValue" in cd}
            for s in ss.sheets
        }
        names = {n["name"]: _gridrange_a1(ss, n["range"]) for n in ss.named_ranges}
        grids = {s.title: (s.rows, s.cols) for s in ss.sheets}
        return Snapshot(ss.id, sheets, names, grids)

    def _computed(self, ss: StoredSpreadsheet) -> Mapping[CellKey, Any]:
        if self.compute is None:
            return {}
        k = (ss.id, ss.revision)
        if k not in self._compute_cache:
            self._compute_cache[k] = dict(self.compute(self._snapshot(ss)))
        return self._compute_cache[k]

    # token endpoint -------------------------------------------------------
    def handle_token(self, form: Mapping[str, list[str]]) -> tuple[int, Any]:
        def bad(desc: str) -> tuple[int, Any]:
            return 400, {"error": "invalid_grant", "error_description": desc}

        if form.get("grant_type", [""])[0] != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return 400, {"error": "unsupported_grant_type",
                         "error_description": "Invalid grant_type."}
        assertion = form.get("assertion", [""])[0]
        try:
            h64, p64, s64 = assertion.split(".")
            header = json.loads(_b64d(h64))
            claims = json.loads(_b64d(p64))
            signature = _b64d(s64)
        except Exception:
            return bad("Invalid JWT: malformed.")
        if header.get("alg") != "RS256":
            return bad("Invalid JWT: unsupported algorithm.")
        key = self._accounts.get(str(claims.get("iss", "")).lower())
        if key is None:
            return bad("Invalid grant: account not found")
        try:
            key.verify(signature, f"{h64}.{p64}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return bad("Invalid JWT Signature.")
        now = time.time()
        if claims.get("aud") != GOOGLE_TOKEN_AUDIENCE:
            return bad("Invalid JWT: audience.")
        if not (claims.get("iat", 0) - 300 <= now <= claims.get("exp", 0) + 300):
            return bad("Invalid JWT: Token must be a short-lived token and in a reasonable "
                       "timeframe.")
        token = "ya29.emu-" + secrets.token_urlsafe(24)
        scopes = set(str(claims.get("scope", "")).split())
        with self._lock:
            self._tokens[token] = (str(claims["iss"]).lower(), scopes, now + 3600)
        return 200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}

    # API ------------------------------------------------------------------
    def authenticate(self, authorization: str | None) -> tuple[str, set[str]]:
        if not authorization or not authorization.startswith("Bearer "):
            raise HTTPReply(401, google_error(401))
        entry = self._tokens.get(authorization[7:].strip())
        if entry is None or entry[2] < time.time():
            raise HTTPReply(401, google_error(
                401, "Request had invalid authentication credentials. Expected OAuth 2 access "
                "token, login cookie or other valid authentication credential."))
        return entry[0], entry[1]

    def disabled_error(self) -> dict[str, Any]:
        n = self.project_number
        url = f"https://console.developers.google.com/apis/api/sheets.googleapis.com/overview?project={n}"
        return google_error(
            403,
            f"Google Sheets API has not been used in project {n} before or it is disabled. "
            f"Enable it by visiting {url} then retry. If you enabled this API recently, wait a "
            "few minutes for the action to propagate to our systems and retry.",
            "PERMISSION_DENIED",
            [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED",
              "domain": "googleapis.com",
              "metadata": {"service": "sheets.googleapis.com", "consumer": f"projects/{n}",
                           "activationUrl": url}}],
        )

    def access(self, key: str, email: str, scopes: set[str], write: bool) -> StoredSpreadsheet:
        if not (scopes & (SHEETS_SCOPES if write else READ_SCOPES)):
            raise HTTPReply(403, google_error(
                403, "Request had insufficient authentication scopes.", "PERMISSION_DENIED",
                [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                  "reason": "ACCESS_TOKEN_SCOPE_INSUFFICIENT", "domain": "googleapis.com"}]))
        ss = self.spreadsheets.get(key)
        if ss is None:
            raise HTTPReply(404, google_error(404))
        role = ss.shared_with.get(email) or ss.shared_with.get("*")
        if role is None or (write and role != "writer"):
            raise HTTPReply(403, google_error(403))
        return ss

    def route(self, method: str, raw_path: str, query: dict[str, list[str]], body: Any,
              headers: Mapping[str, str]) -> tuple[int, Any]:
        """Dispatch one API request (after faults and logging set-up)."""
        m = re.fullmatch(r"/v4/spreadsheets/([^/:]+)(.*)", raw_path)
        if not m:
            raise HTTPReply(404, google_error(404, f"Method not found: {raw_path}"))
        key, rest = unquote(m.group(1)), m.group(2)
        write = method in ("POST", "PUT")
        email, scopes = self.authenticate(headers.get("Authorization"))
        if not self.api_enabled:
            raise HTTPReply(403, self.disabled_error())
        with self._lock:
            ss = self.access(key, email, scopes, write)
            self._validate(method, rest, query, body)
            if method == "GET" and rest == "":
                return 200, self.get_spreadsheet(ss, query)
            if method == "POST" and rest == ":batchUpdate":
                return 200, self.batch_update(ss, body)
            if method == "GET" and rest == "/values:batchGet":
                return 200, self.values_batch_get(ss, query)
            if method == "POST" and rest == "/values:batchUpdate":
                return 200, self.values_batch_update(ss, body)
            if method == "POST" and rest == "/values:batchClear":
                return 200, self.values_clear(ss, (body or {}).get("ranges", []))
            vm = re.fullmatch(r"/values/([^:/]+)(:clear)?", rest)
            if vm:
                rng = unquote(vm.group(1))
                if method == "GET" and not vm.group(2):
                    return 200, self.values_get(ss, rng, query)
                if method == "PUT" and not vm.group(2):
                    opt = query.get("valueInputOption", [""])[0]
                    return 200, self.values_update(ss, rng, body or {}, opt)
                if method == "POST" and vm.group(2):
                    return 200, self.values_clear(ss, [rng])
        raise HTTPReply(404, google_error(404, f"Method not found: {method} {raw_path}"))

    #: request body schema per (method, path after the key), from the discovery document
    BODY_SCHEMAS: ClassVar[dict[tuple[str, str], str]] = {
        ("POST", ":batchUpdate"): "BatchUpdateSpreadsheetRequest",
        ("POST", "/values:batchUpdate"): "BatchUpdateValuesRequest",
        ("POST", "/values:batchClear"): "BatchClearValuesRequest",
        ("PUT", "/values"): "ValueRange",
    }

    def _validate(self, method: str, rest: str, query: Mapping[str, list[str]], body: Any
                  ) -> None:
        """400 for a body (or a `fields` mask) that Google's published schema refuses."""
        errors: list[str] = []
        if method == "GET" and rest == "":  # spreadsheets.get: a partial Spreadsheet
            for mask in query.get("fields", []):
                errors += sheets_discovery.validate_query_fields(mask, "Spreadsheet")
        path = "/values" if re.fullmatch(r"/values/[^:/]+", rest) else rest
        schema = self.BODY_SCHEMAS.get((method, path))
        if schema is not None and body is not None:
            self.validated_bodies += 1
            errors += sheets_discovery.validate(body, schema)
        if errors:
            self.schema_errors += errors
            raise HTTPReply(400, google_error(400, errors[0]))

    # spreadsheets.get ------------------------------------------------------
    def get_spreadsheet(self, ss: StoredSpreadsheet, query: Mapping[str, list[str]]
                        ) -> dict[str, Any]:
        grid = query.get("includeGridData", ["false"])[0].lower() == "true"
        computed = self._computed(ss) if grid else {}
        sheets = []
        for s in ss.sheets:
            out: dict[str, Any] = {"properties": copy.deepcopy(s.properties)}
            if s.merges:
                out["merges"] = copy.deepcopy(s.merges)
            if s.conditional_formats:
                out["conditionalFormats"] = copy.deepcopy(s.conditional_formats)
            if s.protected_ranges:
                out["protectedRanges"] = copy.deepcopy(s.protected_ranges)
            if s.charts:
                out["charts"] = copy.deepcopy(s.charts)
            if grid:
                out["data"] = [self._grid_data(s, computed)]
            sheets.append(out)
        doc: dict[str, Any] = {
            "spreadsheetId": ss.id,
            "properties": copy.deepcopy(ss.properties),
            "sheets": sheets,
            "spreadsheetUrl": f"https://docs.google.com/spreadsheets/d/{ss.id}/edit",
        }
        if ss.named_ranges:
            doc["namedRanges"] = copy.deepcopy(ss.named_ranges)
        if "fields" in query:
            doc = filter_fields(doc, query["fields"][0])
        return doc

    def _grid_data(self, s: Sheet, computed: Mapping[CellKey, Any]) -> dict[str, Any]:
        nrows = max((r for r, _ in s.cells), default=-1) + 1
        ncols = max((c for _, c in s.cells), default=-1) + 1
        rows = []
        for r in range(nrows):
            values = []
            for c in range(ncols):
                cd = jcopy(s.cells.get((r, c), {}))
                uev = cd.get("userEnteredValue")
                if uev is not None:
                    if "formulaValue" in uev:
                        v = computed.get((s.title, a1(r, c)))
                        if v is not None:
                            cd["effectiveValue"] = _typed(v)
                    else:
                        cd["effectiveValue"] = jcopy(uev)
                values.append(cd)
            while values and not values[-1]:
                values.pop()
            rows.append({"values": values} if values else {})
        data: dict[str, Any] = {"rowData": rows}
        if s.row_meta:
            data["rowMetadata"] = [s.row_meta.get(i, {}) for i in range(max(s.row_meta) + 1)]
        if s.col_meta:
            data["columnMetadata"] = [s.col_meta.get(i, {}) for i in range(max(s.col_meta) + 1)]
        return data

    # batchUpdate ----------------------------------------------------------
    def batch_update(self, ss: StoredSpreadsheet, body: Any) -> dict[str, Any]:
        """Apply every request to a copy; swap it in only if all of them are valid."""
        if not isinstance(body, Mapping) or not isinstance(body.get("requests"), list):
            raise HTTPReply(400, google_error(400, "Must specify at least one request."))
        if not body["requests"]:
            raise HTTPReply(400, google_error(400, "Must specify at least one request."))
        work = ss.clone()
        replies = []
        for i, req in enumerate(body["requests"]):
            if not isinstance(req, Mapping) or len(req) != 1:
                raise HTTPReply(400, google_error(
                    400, f"Invalid requests[{i}]: exactly one request kind per entry."))
            kind, payload = next(iter(req.items()))
            handler = getattr(self, f"_req_{kind}", None)
            if handler is None or kind not in REQUEST_SCHEMAS:
                raise HTTPReply(400, google_error(
                    400, f'Invalid JSON payload received. Unknown name "{kind}" at '
                    f"'requests[{i}]': Cannot find field."))
            try:
                check_schema(payload, REQUEST_SCHEMAS[kind], f"requests[{i}].{_snake(kind)}")
                reply = handler(work, payload)
            except Invalid as err:
                msg = str(err)
                if not msg.startswith("Invalid JSON payload"):
                    msg = f"Invalid requests[{i}].{kind}: {msg}"
                raise HTTPReply(400, google_error(400, msg)) from None
            replies.append(reply or {})
        cells = sum(sh.rows * sh.cols for sh in work.sheets)
        if cells > CELL_LIMIT:  # every tab counts (https://support.google.com/drive/answer/37603)
            raise HTTPReply(400, google_error(
                400, "This action would increase the number of cells in the workbook above "
                f"the limit of {CELL_LIMIT} cells."))
        work.revision += 1
        ss.__dict__.update(work.__dict__)
        return {"spreadsheetId": ss.id, "replies": replies}

    # -- helpers for request handlers
    @staticmethod
    def _range_bounds(ss: StoredSpreadsheet, gr: Mapping[str, Any], check_grid: bool = True
                      ) -> tuple[Sheet, int, int, int, int]:
        sheet = ss.sheet(int(gr.get("sheetId", 0)))
        r0, r1 = int(gr.get("startRowIndex", 0)), int(gr.get("endRowIndex", sheet.rows))
        c0, c1 = int(gr.get("startColumnIndex", 0)), int(gr.get("endColumnIndex", sheet.cols))
        if r0 < 0 or c0 < 0 or r1 < r0 or c1 < c0:
            raise Invalid("Invalid range: start index must be <= end index and >= 0.")
        if check_grid:
            _check_grid(sheet, r1, c1)
        return sheet, r0, r1, c0, c1

    @staticmethod
    def _check_value(uev: Any) -> None:
        if uev is None:
            return
        if not isinstance(uev, Mapping) or len(uev) != 1:
            raise Invalid("userEnteredValue must set exactly one of numberValue, stringValue, "
                          "boolValue, formulaValue, errorValue.")
        (k, v), = uev.items()
        ok = {
            "numberValue": isinstance(v, int | float) and not isinstance(v, bool),
            "stringValue": isinstance(v, str),
            "boolValue": isinstance(v, bool),
            "formulaValue": isinstance(v, str) and v.startswith("="),
            "errorValue": isinstance(v, Mapping),
        }.get(k, False)
        if not ok:
            raise Invalid(f"Invalid value for userEnteredValue.{k}: {v!r}")

    def _write_cell(self, sheet: Sheet, r: int, c: int, src: Mapping[str, Any], fields: str,
                    checked: bool = False, ss: StoredSpreadsheet | None = None) -> None:
        if not checked:
            self._check_value(src.get("userEnteredValue"))
        if src.get("dataValidation") and not checked:
            _check_condition(src["dataValidation"].get("condition"), DV_CONDITIONS)
        cell = dict(sheet.cells.get((r, c), {}))  # stored cells are replaced, never mutated
        uev = src.get("userEnteredValue")
        masked = parse_fields(fields)
        if uev and ss is not None and ("userEnteredValue" in masked or "*" in masked):
            try:
                self._check_strict(ss, sheet, r, c, cell, uev)
            except HTTPReply as reply:
                raise Invalid(reply.body["error"]["message"]) from None
        apply_mask_shared(cell, src, fields)
        if cell:
            sheet.cells[(r, c)] = cell
        else:
            sheet.cells.pop((r, c), None)

    def _check_strict(self, ss: StoredSpreadsheet, sheet: Sheet, r: int, c: int,
                      cell: Mapping[str, Any], uev: Mapping[str, Any]) -> None:
        """A strict rule rejects input that breaks it, as Google's "Reject the input" does.
        Cheap cases only: formulas (judged by their result) and rule kinds sheetgen does not
        use pass. The wording is the emulator's own."""
        rule = cell.get("dataValidation")
        if not rule or not rule.get("strict") or not uev or "formulaValue" in uev:
            return
        (_, v), = uev.items()
        if not self._satisfies(ss, sheet, r, c, rule.get("condition") or {}, v):
            raise HTTPReply(400, google_error(
                400, f"Invalid value: {json.dumps(v)} violates the data validation rule "
                f"of cell {quote_sheet(sheet.title)}!{a1(r, c)} (strict)."))

    def _satisfies(self, ss: StoredSpreadsheet, sheet: Sheet, r: int, c: int,
                   cond: Mapping[str, Any], v: Any) -> bool:
        kind = cond.get("type")
        given = [str(x.get("userEnteredValue", "")) for x in cond.get("values") or []]
        number = isinstance(v, int | float) and not isinstance(v, bool)
        if kind == "NUMBER_BETWEEN":
            lo, hi = float(given[0]), float(given[1])
            return number and lo <= v <= hi
        if kind == "ONE_OF_LIST":
            return (_fmt_number(v) if number else str(v)) in given
        if kind == "ONE_OF_RANGE":
            src, r0, r1, c0, c1 = self._resolve(ss, given[0].lstrip("="))
            allowed = {next(iter(cd["userEnteredValue"].values()))
                       for (rr, cc), cd in src.cells.items()
                       if r0 <= rr < r1 and c0 <= cc < c1 and "userEnteredValue" in cd}
            return v in allowed
        if kind == "CUSTOM_FORMULA":
            return _custom_formula_holds(sheet.title, r, c, v, given[0], ss)
        return True

    # -- request kinds
    def _req_addSheet(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> dict[str, Any]:
        props = copy.deepcopy(dict(p.get("properties") or {}))
        if "sheetId" in props:
            if any(s.id == props["sheetId"] for s in ss.sheets):
                raise Invalid(f"A sheet with the id {props['sheetId']} already exists.")
        else:
            props["sheetId"] = ss.new_id()
        title = props.setdefault("title", f"Sheet{len(ss.sheets) + 1}")
        _check_title(ss, title)
        props.setdefault("sheetType", "GRID")
        grid = props.setdefault("gridProperties", {})
        grid.setdefault("rowCount", 1000)
        grid.setdefault("columnCount", 26)
        _check_grid_props(grid)
        index = int(props.pop("index", len(ss.sheets)))
        ss.sheets.insert(min(max(index, 0), len(ss.sheets)), Sheet(props))
        ss.reindex()
        return {"addSheet": {"properties": copy.deepcopy(props)}}

    def _req_deleteSheet(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        sheet = ss.sheet(int(p.get("sheetId", 0)))
        if len(ss.sheets) == 1:
            raise Invalid("You can't remove all the sheets in a document.")
        ss.sheets.remove(sheet)
        ss.named_ranges = [n for n in ss.named_ranges
                           if n["range"].get("sheetId", 0) != sheet.id]
        ss.reindex()

    def _req_updateSheetProperties(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        props, fields = p.get("properties") or {}, _need_fields(p)
        sheet = ss.sheet(int(props.get("sheetId", 0)))
        new = copy.deepcopy(sheet.properties)
        apply_mask(new, props, fields)
        new["sheetId"] = sheet.id
        if new.get("title") != sheet.title:
            _check_title(ss, new.get("title"), exclude=sheet)
        _check_grid_props(new.get("gridProperties", {}))
        if "gridProperties" not in new or "rowCount" not in new["gridProperties"]:
            raise Invalid("gridProperties.rowCount and columnCount cannot be cleared.")
        index = new.pop("index", sheet.properties["index"])
        sheet.properties = new
        sheet.cells = {k: v for k, v in sheet.cells.items()
                       if k[0] < sheet.rows and k[1] < sheet.cols}
        ss.sheets.remove(sheet)
        ss.sheets.insert(min(max(int(index), 0), len(ss.sheets)), sheet)
        ss.reindex()

    def _req_updateSpreadsheetProperties(self, ss: StoredSpreadsheet, p: Mapping[str, Any]
                                         ) -> None:
        apply_mask(ss.properties, p.get("properties") or {}, _need_fields(p))

    def _req_updateCells(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        fields = _need_fields(p)
        rows = p.get("rows") or []
        if ("start" in p) == ("range" in p):
            raise Invalid("Exactly one of start or range must be set.")
        if "start" in p:
            st = p["start"]
            sheet = ss.sheet(int(st.get("sheetId", 0)))
            r0, c0 = int(st.get("rowIndex", 0)), int(st.get("columnIndex", 0))
            for dr, row in enumerate(rows):
                for dc, cd in enumerate(row.get("values") or []):
                    _check_grid(sheet, r0 + dr + 1, c0 + dc + 1)
                    self._write_cell(sheet, r0 + dr, c0 + dc, cd, fields, ss=ss)
        else:
            sheet, r0, r1, c0, c1 = self._range_bounds(ss, p["range"])
            for r in range(r0, r1):
                row = rows[r - r0].get("values") or [] if r - r0 < len(rows) else []
                for c in range(c0, c1):
                    cd = row[c - c0] if c - c0 < len(row) else {}
                    self._write_cell(sheet, r, c, cd, fields, ss=ss)

    def _req_repeatCell(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        """Google: "If writing a cell with a formula, the formula's ranges will automatically
        increment for each field in the range" ($-anchored parts stay): see shift_formula."""
        fields = _need_fields(p)
        sheet, r0, r1, c0, c1 = self._range_bounds(ss, p.get("range") or {})
        src = p.get("cell") or {}
        formula = (src.get("userEnteredValue") or {}).get("formulaValue")
        if r1 > r0 and c1 > c0:
            self._write_cell(sheet, r0, c0, src, fields)  # validates the value once
        for c in range(c0, c1):
            for r in range(r0, r1):
                if (r, c) == (r0, c0):
                    continue
                cell = src
                if formula is not None:
                    cell = dict(src)
                    cell["userEnteredValue"] = {
                        "formulaValue": shift_formula(formula, r - r0, c - c0)}
                self._write_cell(sheet, r, c, cell, fields, checked=True)

    def _req_addNamedRange(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> dict[str, Any]:
        nr = copy.deepcopy(dict(p.get("namedRange") or {}))
        _check_name(ss, nr.get("name"))
        self._range_bounds(ss, nr.get("range") or {})
        if not nr.get("namedRangeId"):
            nr["namedRangeId"] = f"nr{ss.new_id()}"
        elif any(n["namedRangeId"] == nr["namedRangeId"] for n in ss.named_ranges):
            raise Invalid(f"Named range id {nr['namedRangeId']} already exists.")
        ss.named_ranges.append(nr)
        return {"addNamedRange": {"namedRange": copy.deepcopy(nr)}}

    def _req_updateNamedRange(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        src = p.get("namedRange") or {}
        target = _find_named(ss, src.get("namedRangeId"))
        new = copy.deepcopy(target)
        apply_mask(new, src, _need_fields(p))
        if new.get("name") != target.get("name"):
            _check_name(ss, new.get("name"), exclude=target)
        self._range_bounds(ss, new.get("range") or {})
        target.clear()
        target.update(new)

    def _req_deleteNamedRange(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        ss.named_ranges.remove(_find_named(ss, p.get("namedRangeId")))

    def _req_setDataValidation(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        rule = p.get("rule")
        if rule:
            _check_condition(rule.get("condition"), DV_CONDITIONS)
        sheet, r0, r1, c0, c1 = self._range_bounds(ss, p.get("range") or {})
        cell = {"dataValidation": rule} if rule else {}
        for r in range(r0, r1):
            for c in range(c0, c1):
                self._write_cell(sheet, r, c, cell, "dataValidation", checked=True)

    def _req_addConditionalFormatRule(self, ss: StoredSpreadsheet, p: Mapping[str, Any]
                                      ) -> None:
        rule = p.get("rule") or {}
        ranges = rule.get("ranges") or []
        if not ranges:
            raise Invalid("A conditional format rule needs at least one range.")
        sheets = {self._range_bounds(ss, gr)[0].id for gr in ranges}
        if len(sheets) != 1:
            raise Invalid("All ranges of a conditional format rule must be on one sheet.")
        if ("booleanRule" in rule) == ("gradientRule" in rule):
            raise Invalid("Exactly one of booleanRule or gradientRule must be set.")
        if "booleanRule" in rule:
            _check_condition(rule["booleanRule"].get("condition"), CF_CONDITIONS)
        sheet = ss.sheet(sheets.pop())
        index = int(p.get("index", 0))
        if not 0 <= index <= len(sheet.conditional_formats):
            raise Invalid(f"Invalid index {index}.")
        sheet.conditional_formats.insert(index, copy.deepcopy(dict(rule)))

    def _req_deleteConditionalFormatRule(self, ss: StoredSpreadsheet, p: Mapping[str, Any]
                                         ) -> dict[str, Any]:
        sheet = ss.sheet(int(p.get("sheetId", 0)))
        index = int(p.get("index", 0))
        if not 0 <= index < len(sheet.conditional_formats):
            raise Invalid(f"No conditional format on sheet {sheet.id} at index {index}.")
        rule = sheet.conditional_formats.pop(index)
        return {"deleteConditionalFormatRule": {"rule": rule}}

    def _req_updateDimensionProperties(self, ss: StoredSpreadsheet, p: Mapping[str, Any]
                                       ) -> None:
        rng, fields = p.get("range") or {}, _need_fields(p)
        sheet = ss.sheet(int(rng.get("sheetId", 0)))
        dim = rng.get("dimension")
        if dim not in ("ROWS", "COLUMNS"):
            raise Invalid(f"Invalid dimension {dim!r}.")
        size = sheet.rows if dim == "ROWS" else sheet.cols
        start, end = int(rng.get("startIndex", 0)), int(rng.get("endIndex", size))
        if not 0 <= start <= end <= size:
            raise Invalid(f"Invalid dimension range [{start}, {end}) for size {size}.")
        meta = sheet.row_meta if dim == "ROWS" else sheet.col_meta
        for i in range(start, end):
            m = meta.setdefault(i, {})
            apply_mask(m, p.get("properties") or {}, fields)

    def _req_appendDimension(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        sheet = ss.sheet(int(p.get("sheetId", 0)))
        length = int(p.get("length", 0))
        if length <= 0:
            raise Invalid("length must be positive.")
        key = {"ROWS": "rowCount", "COLUMNS": "columnCount"}.get(p.get("dimension", ""))
        if key is None:
            raise Invalid(f"Invalid dimension {p.get('dimension')!r}.")
        sheet.properties["gridProperties"][key] += length
        _check_grid_props(sheet.properties["gridProperties"])

    def _req_autoResizeDimensions(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        ss.sheet(int((p.get("dimensions") or {}).get("sheetId", 0)))

    def _req_addChart(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> dict[str, Any]:
        chart = copy.deepcopy(dict(p.get("chart") or {}))
        spec = chart.get("spec") or {}
        basic = spec.get("basicChart")
        if basic is not None:
            if basic.get("chartType") not in CHART_TYPES:
                raise Invalid(f"Invalid chartType {basic.get('chartType')!r}.")
            for part in ("domains", "series"):
                for item in basic.get(part) or []:
                    data = item.get("domain" if part == "domains" else "series") or {}
                    for gr in (data.get("sourceRange") or {}).get("sources") or []:
                        self._range_bounds(ss, gr)
        if "chartId" in chart:
            if any(c.get("chartId") == chart["chartId"] for s in ss.sheets for c in s.charts):
                raise Invalid(f"Chart id {chart['chartId']} already exists.")
        else:
            chart["chartId"] = ss.new_id()
        pos = chart.get("position") or {}
        if pos.get("newSheet"):
            sheet = Sheet({"sheetId": ss.new_id(), "title": f"Chart{len(ss.sheets) + 1}",
                           "index": len(ss.sheets), "sheetType": "OBJECT",
                           "gridProperties": {"rowCount": 0, "columnCount": 0}})
            ss.sheets.append(sheet)
            chart["position"] = {"sheetId": sheet.id}
        elif "sheetId" in pos:
            sheet = ss.sheet(int(pos["sheetId"]))
        elif "overlayPosition" in pos:
            anchor = pos["overlayPosition"].get("anchorCell") or {}
            sheet = ss.sheet(int(anchor.get("sheetId", 0)))
        else:
            raise Invalid("Chart position must be set.")
        sheet.charts.append(chart)
        return {"addChart": {"chart": copy.deepcopy(chart)}}

    def _req_mergeCells(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        sheet, r0, r1, c0, c1 = self._range_bounds(ss, p.get("range") or {})
        if p.get("mergeType", "MERGE_ALL") not in ("MERGE_ALL", "MERGE_COLUMNS", "MERGE_ROWS"):
            raise Invalid(f"Invalid mergeType {p.get('mergeType')!r}.")
        for m in sheet.merges:
            if (m["startRowIndex"] < r1 and r0 < m["endRowIndex"]
                    and m["startColumnIndex"] < c1 and c0 < m["endColumnIndex"]):
                raise Invalid("You can't merge cells that intersect an existing merge.")
        sheet.merges.append({"sheetId": sheet.id, "startRowIndex": r0, "endRowIndex": r1,
                             "startColumnIndex": c0, "endColumnIndex": c1})

    def _req_unmergeCells(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        sheet, r0, r1, c0, c1 = self._range_bounds(ss, p.get("range") or {})
        sheet.merges = [m for m in sheet.merges if not (
            r0 <= m["startRowIndex"] and m["endRowIndex"] <= r1
            and c0 <= m["startColumnIndex"] and m["endColumnIndex"] <= c1)]

    def _req_updateBorders(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        sheet, r0, r1, c0, c1 = self._range_bounds(ss, p.get("range") or {})
        for r in range(r0, r1):
            for c in range(c0, c1):
                sides = {
                    "top": p.get("top") if r == r0 else p.get("innerHorizontal"),
                    "bottom": p.get("bottom") if r == r1 - 1 else p.get("innerHorizontal"),
                    "left": p.get("left") if c == c0 else p.get("innerVertical"),
                    "right": p.get("right") if c == c1 - 1 else p.get("innerVertical"),
                }
                cell = jcopy(sheet.cells.get((r, c), {}))
                sheet.cells[(r, c)] = cell
                borders = cell.setdefault("userEnteredFormat", {}).setdefault("borders", {})
                for side, b in sides.items():
                    if b is not None:
                        borders[side] = copy.deepcopy(b)

    def _req_addProtectedRange(self, ss: StoredSpreadsheet, p: Mapping[str, Any]
                               ) -> dict[str, Any]:
        pr = copy.deepcopy(dict(p.get("protectedRange") or {}))
        sheet = self._range_bounds(ss, pr.get("range") or {})[0]
        pr.setdefault("protectedRangeId", ss.new_id())
        sheet.protected_ranges.append(pr)
        return {"addProtectedRange": {"protectedRange": copy.deepcopy(pr)}}

    # values -------------------------------------------------------------
    def _resolve(self, ss: StoredSpreadsheet, text: str) -> tuple[Sheet, int, int, int, int]:
        for n in ss.named_ranges:
            if n["name"].lower() == text.strip().lower():
                return self._range_bounds(ss, n["range"], check_grid=False)
        try:
            rng = parse_a1(text)
        except BadRange:
            raise HTTPReply(400, google_error(400, f"Unable to parse range: {text}")) from None
        try:
            sheet = ss.sheets[0] if rng.sheet is None else ss.sheet(title=rng.sheet)
        except Invalid:
            raise HTTPReply(400, google_error(400, f"Unable to parse range: {text}")) from None
        return (sheet, rng.r0 or 0, sheet.rows if rng.r1 is None else rng.r1,
                rng.c0 or 0, sheet.cols if rng.c1 is None else rng.c1)

    def _render(self, ss: StoredSpreadsheet, sheet: Sheet, r: int, c: int, option: str) -> Any:
        uev = sheet.value(r, c)
        if not uev:
            return ""
        (kind, v), = uev.items()
        if kind == "formulaValue":
            if option == "FORMULA":
                return v
            v = self._computed(ss).get((sheet.title, a1(r, c)))
            if v is None:
                return ""
            kind = "boolValue" if isinstance(v, bool) else (
                "numberValue" if isinstance(v, int | float) else "stringValue")
        if kind == "numberValue":
            return _num(v) if option != "FORMATTED_VALUE" else _fmt_number(v)
        if kind == "boolValue":
            return v if option != "FORMATTED_VALUE" else ("TRUE" if v else "FALSE")
        if kind == "errorValue":
            return "#ERROR!"
        if (option == "FORMULA" and self.formula_render_quotes_text
                and parse_user_entered(v) != {"stringValue": v}):
            return "'" + v
        return v

    def _value_range(self, ss: StoredSpreadsheet, text: str, query: Mapping[str, list[str]]
                     ) -> dict[str, Any]:
        option = query.get("valueRenderOption", ["FORMATTED_VALUE"])[0]
        major = query.get("majorDimension", ["ROWS"])[0]
        if option not in ("FORMATTED_VALUE", "UNFORMATTED_VALUE", "FORMULA"):
            raise HTTPReply(400, google_error(400, f"Invalid valueRenderOption: {option}"))
        sheet, r0, r1, c0, c1 = self._resolve(ss, text)
        r1, c1 = min(r1, sheet.rows), min(c1, sheet.cols)
        rows = [[self._render(ss, sheet, r, c, option) for c in range(c0, c1)]
                for r in range(r0, r1)]
        if major == "COLUMNS":
            rows = [list(col) for col in zip(*rows, strict=False)] if rows else []
        for row in rows:
            while row and row[-1] == "":
                row.pop()
        while rows and not rows[-1]:
            rows.pop()
        start, end = a1(r0, c0), a1(max(r1 - 1, r0), max(c1 - 1, c0))
        out: dict[str, Any] = {
            "range": f"{quote_sheet(sheet.title)}!{start}" + ("" if start == end else f":{end}"),
            "majorDimension": major,
        }
        if rows:
            out["values"] = rows
        return out

    def values_get(self, ss: StoredSpreadsheet, text: str, query: Mapping[str, list[str]]
                   ) -> dict[str, Any]:
        return self._value_range(ss, text, query)

    def values_batch_get(self, ss: StoredSpreadsheet, query: Mapping[str, list[str]]
                         ) -> dict[str, Any]:
        return {"spreadsheetId": ss.id,
                "valueRanges": [self._value_range(ss, t, query) for t in query.get("ranges", [])]}

    def _write_values(self, ss: StoredSpreadsheet, text: str, data: Mapping[str, Any],
                      option: str) -> dict[str, Any]:
        parse = {"RAW": parse_raw, "USER_ENTERED": parse_user_entered}.get(option)
        if parse is None:
            raise HTTPReply(400, google_error(
                400, "'valueInputOption' is required but not specified" if not option
                else f"Invalid valueInputOption: {option}"))
        sheet, r0, r1, c0, c1 = self._resolve(ss, text)
        single = r1 - r0 == 1 and c1 - c0 == 1  # a single start cell: data may extend
        values = data.get("values") or []
        if data.get("majorDimension", "ROWS") == "COLUMNS":
            width = max((len(v) for v in values), default=0)
            values = [[col[i] if i < len(col) else None for col in values] for i in range(width)]
        nrows = len(values)
        ncols = max((len(v) for v in values), default=0)
        if not single and (nrows > r1 - r0 or ncols > c1 - c0):
            raise HTTPReply(400, google_error(
                400, f"Requested writing within range [{text}], but tried writing "
                f"{nrows} rows and {ncols} columns"))
        try:
            _check_grid(sheet, r0 + nrows, c0 + ncols)
        except Invalid as err:
            raise HTTPReply(400, google_error(400, str(err))) from None
        for dr, row in enumerate(values):
            for dc, v in enumerate(row):
                if v is None:
                    continue
                uev = parse(v)
                cell = jcopy(sheet.cells.get((r0 + dr, c0 + dc), {}))
                sheet.cells[(r0 + dr, c0 + dc)] = cell
                if uev is None:
                    cell.pop("userEnteredValue", None)
                    if not cell:
                        del sheet.cells[(r0 + dr, c0 + dc)]
                else:
                    self._check_strict(ss, sheet, r0 + dr, c0 + dc, cell, uev)
                    cell["userEnteredValue"] = uev
        end = a1(r0 + max(nrows, 1) - 1, c0 + max(ncols, 1) - 1)
        return {"spreadsheetId": ss.id,
                "updatedRange": f"{quote_sheet(sheet.title)}!{a1(r0, c0)}:{end}",
                "updatedRows": nrows, "updatedColumns": ncols,
                "updatedCells": sum(len(r) for r in values)}

    def values_update(self, ss: StoredSpreadsheet, text: str, body: Mapping[str, Any],
                      option: str) -> dict[str, Any]:
        work = ss.clone()
        out = self._write_values(work, text, body, option)
        work.revision += 1
        ss.__dict__.update(work.__dict__)
        return out

    def values_batch_update(self, ss: StoredSpreadsheet, body: Any) -> dict[str, Any]:
        body = body or {}
        work = ss.clone()
        responses = [self._write_values(work, d.get("range", ""), d,
                                        body.get("valueInputOption", ""))
                     for d in body.get("data") or []]
        work.revision += 1
        ss.__dict__.update(work.__dict__)
        return {
            "spreadsheetId": ss.id,
            "totalUpdatedRows": sum(r["updatedRows"] for r in responses),
            "totalUpdatedColumns": sum(r["updatedColumns"] for r in responses),
            "totalUpdatedCells": sum(r["updatedCells"] for r in responses),
            "totalUpdatedSheets": len({r["updatedRange"].rsplit("!", 1)[0] for r in responses}),
            "responses": responses,
        }

    def values_clear(self, ss: StoredSpreadsheet, ranges: Sequence[str]) -> dict[str, Any]:
        cleared = []
        for text in ranges:
            sheet, r0, r1, c0, c1 = self._resolve(ss, text)
            for (r, c) in list(sheet.cells):
                if r0 <= r < r1 and c0 <= c < c1:
                    cell = {k: v for k, v in sheet.cells[(r, c)].items()
                            if k != "userEnteredValue"}
                    if cell:
                        sheet.cells[(r, c)] = cell
                    else:
                        del sheet.cells[(r, c)]
            cleared.append(f"{quote_sheet(sheet.title)}!{a1(r0, c0)}:"
                           f"{a1(min(r1, sheet.rows) - 1, min(c1, sheet.cols) - 1)}")
        ss.revision += 1
        if len(ranges) == 1:
            return {"spreadsheetId": ss.id, "clearedRange": cleared[0]}
        return {"spreadsheetId": ss.id, "clearedRanges": cleared}


# =========================================================================== validators


def _need_fields(p: Mapping[str, Any]) -> str:
    fields = p.get("fields")
    if not fields or not isinstance(fields, str):
        raise Invalid("'fields' is required (a field mask such as \"userEnteredValue\").")
    return fields


def _check_grid(sheet: Sheet, end_row: int, end_col: int) -> None:
    if end_row > sheet.rows or end_col > sheet.cols:
        ref = a1(max(end_row - 1, 0), max(end_col - 1, 0))
        raise Invalid(f"Range ({quote_sheet(sheet.title)}!{ref}) exceeds grid limits. "
                      f"Max rows: {sheet.rows}, max columns: {sheet.cols}")


def _check_grid_props(grid: Mapping[str, Any]) -> None:
    rows, cols = int(grid.get("rowCount", 0)), int(grid.get("columnCount", 0))
    if rows < 0 or cols < 0:
        raise Invalid("rowCount and columnCount must be >= 0.")
    if rows * cols > CELL_LIMIT:
        raise Invalid("This action would increase the number of cells in the workbook above "
                      "the limit of 10000000 cells.")
    if int(grid.get("frozenRowCount", 0)) > rows or int(grid.get("frozenColumnCount", 0)) > cols:
        raise Invalid("frozen rows/columns exceed the grid size.")


def _check_title(ss: StoredSpreadsheet, title: Any, exclude: Sheet | None = None) -> None:
    if not isinstance(title, str) or not title.strip():
        raise Invalid("Sheet title must be a non-empty string.")
    if len(title) > 100:
        raise Invalid("Sheet title is too long (max 100 characters).")
    for s in ss.sheets:
        if s is not exclude and s.title.lower() == title.lower():
            raise Invalid(f'A sheet with the name "{title}" already exists. Please enter '
                          "another name.")


def _check_name(ss: StoredSpreadsheet, name: Any, exclude: Mapping[str, Any] | None = None
                ) -> None:
    if (not isinstance(name, str) or not _NAME_OK.match(name) or _NAME_LIKE_REF.match(name)
            or name.lower() in ("true", "false")):
        raise Invalid(f"The range name {name!r} is not valid: use letters, numbers and "
                      "underscores, not starting with a number and not like a cell reference.")
    for n in ss.named_ranges:
        if n is not exclude and n["name"].lower() == name.lower():
            raise Invalid(f"A named range with the name {name!r} already exists.")


def _find_named(ss: StoredSpreadsheet, nid: Any) -> dict[str, Any]:
    for n in ss.named_ranges:
        if n["namedRangeId"] == nid:
            return n
    raise Invalid(f"No named range with id {nid!r}.")


def _check_condition(cond: Any, allowed: set[str]) -> None:
    if not isinstance(cond, Mapping):
        raise Invalid("condition is required.")
    kind = cond.get("type")
    if kind not in allowed:
        raise Invalid(f"Invalid condition type {kind!r} here.")
    values = cond.get("values") or []
    n = len(values)
    if kind in _NO_VALUES and n:
        raise Invalid(f"{kind} takes no values.")
    if kind in _TWO_VALUES and n != 2:
        raise Invalid(f"{kind} needs exactly 2 values.")
    if kind == "ONE_OF_LIST" and n < 1:
        raise Invalid("ONE_OF_LIST needs at least one value.")
    if kind == "BOOLEAN" and n > 2:
        raise Invalid("BOOLEAN takes at most 2 values.")
    if kind not in _NO_VALUES | _TWO_VALUES | {"ONE_OF_LIST", "BOOLEAN"} and n != 1:
        raise Invalid(f"{kind} needs exactly 1 value.")
    if kind == "ONE_OF_RANGE":
        ref = str(values[0].get("userEnteredValue", ""))
        if not ref.startswith("="):
            raise Invalid("ONE_OF_RANGE needs a range reference starting with '='.")
    if kind == "CUSTOM_FORMULA" and not str(values[0].get("userEnteredValue", "")).startswith("="):
        raise Invalid("CUSTOM_FORMULA needs a formula starting with '='.")


def _custom_formula_holds(title: str, r: int, c: int, v: Any, formula: str,
                          ss: StoredSpreadsheet) -> bool:
    """A CUSTOM_FORMULA rule for value v at (r, c), by sheetgen's evaluator. The formula is
    written for the rule range's top-left cell; this finds that cell from the stored rule."""
    from sheetgen.evaluate import evaluate_cells

    r0, c0 = _rule_origin(ss, title, r, c, formula)
    shifted = shift_formula(formula, r - r0, c - c0)
    scratch = (r, c + 1)  # the only other cell of this one-rule workbook
    ev = evaluate_cells({title: {scratch: shifted}}, {title: {(r, c): v}})
    got = ev.value(title, a1(*scratch))
    return isinstance(got, bool | np.bool_) and bool(got)


def _rule_origin(ss: StoredSpreadsheet, title: str, r: int, c: int, formula: str
                 ) -> tuple[int, int]:
    """Top-left cell of the block of cells around (r, c) holding this same rule formula."""
    cells = ss.sheet(title=title).cells

    def same(rr: int, cc: int) -> bool:
        cond = ((cells.get((rr, cc)) or {}).get("dataValidation") or {}).get("condition") or {}
        return [x.get("userEnteredValue") for x in cond.get("values") or []] == [formula]

    while r > 0 and same(r - 1, c):
        r -= 1
    while c > 0 and same(r, c - 1):
        c -= 1
    return r, c


def _typed(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int | float):
        return {"numberValue": v}
    return {"stringValue": str(v)}


def _fmt_number(v: float) -> str:
    n = _num(v)
    return str(n) if isinstance(n, int) else repr(float(n))


def _b64d(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


# =========================================================================== HTTP layer


class _Handler(BaseHTTPRequestHandler):
    emulator: SheetsEmulator
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # keep-alive + Nagle/delayed ACK costs ~40 ms a request

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def _dispatch(self, method: str) -> None:
        emu = self.emulator
        split = urlsplit(self.path)
        raw_path = split.path
        query = parse_qs(split.query, keep_blank_values=True)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        entry = LoggedRequest(method, unquote(raw_path), query, None)
        ctype = self.headers.get("Content-Type", "")
        if raw_path == "/token":
            form = parse_qs(raw.decode("utf-8", "replace"))
            entry.body = {"grant_type": form.get("grant_type", [""])[0]}  # never the assertion
        elif raw:
            try:
                entry.body = json.loads(raw) if "json" in ctype or raw[:1] in b"{[" else raw
            except ValueError:
                entry.body = raw
        with emu._lock:
            emu.requests.append(entry)

        fault = emu._take_fault(method, unquote(raw_path))
        if fault is not None:
            entry.fault = fault.kind
            if fault.kind in ("drop", "timeout"):
                if fault.kind == "timeout":
                    time.sleep(emu.timeout_fault_seconds)
                self._drop()
                return
            if fault.kind == "status":
                entry.status = fault.status
                body = fault.body if fault.body is not None else google_error(fault.status)
                self._send(fault.status, body, fault.headers)
                return

        try:
            if raw_path == "/token" and method == "POST":
                status, body = emu.handle_token(parse_qs(raw.decode("utf-8", "replace")))
                headers: dict[str, str] = {}
            else:
                if raw and isinstance(entry.body, bytes):
                    raise HTTPReply(400, google_error(400, "Invalid JSON payload received."))
                status, body = emu.route(method, raw_path, query, entry.body, self.headers)
                headers = {}
        except HTTPReply as reply:
            status, body, headers = reply.status, reply.body, reply.headers
        entry.status = status
        if fault is not None and fault.kind == "drop_after":
            self._drop()
            return
        self._send(status, body, headers)

    def _send(self, status: int, body: Any, headers: Mapping[str, str]) -> None:
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        self.send_response(status, phrase)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


# =========================================================================== client routing


def make_http_client_class(base_url: str, base: type[RetryingHTTPClient] = RetryingHTTPClient
                           ) -> type[RetryingHTTPClient]:
    """A subclass of ``base`` that sends Google API URLs to ``base_url`` instead.

    The rewrite happens before ``base.request`` so the production retry loop runs unchanged.
    """

    class RoutedHTTPClient(base):  # type: ignore[valid-type,misc]
        def request(self, method: str, endpoint: str, *args: Any, **kwargs: Any) -> Any:
            for prefix in GOOGLE_API_PREFIXES:
                if endpoint.startswith(prefix):
                    endpoint = base_url + endpoint[len(prefix):]
                    break
            return super().request(method, endpoint, *args, **kwargs)

    RoutedHTTPClient.__name__ = f"Routed{base.__name__}"
    return RoutedHTTPClient


# =========================================================================== keys and fixtures


@dataclass(frozen=True)
class KeyPair:
    """An RSA key pair made at test time (no key material is stored in the repository)."""

    private_pem: str
    public_key: Any


def generate_test_key() -> KeyPair:
    """A fresh 2048-bit RSA key pair, PEM (PKCS#8) private half as service-account JSON wants."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return KeyPair(pem, key.public_key())


#: Retry policy for tests: real backoff code, millisecond delays.
FAST_RETRY = {"base_delay": 0.01, "max_delay": 0.05, "max_elapsed": 5.0, "jitter": 0.1}
#: Client timeout for tests (connect, read): below the emulator's timeout fault, with room for
#: a loaded machine (the emulator evaluates every pushed formula before it answers).
TEST_TIMEOUT = (2.0, 2.0)


@pytest.fixture(scope="session")
def sa_key() -> KeyPair:
    """The service account's key pair (session-wide: RSA generation costs ~50 ms)."""
    return generate_test_key()


@pytest.fixture
def sheets_emulator() -> Iterator[SheetsEmulator]:
    """A running emulator; stopped after the test."""
    emu = SheetsEmulator().start()
    try:
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def service_account_file(tmp_path: Path, sheets_emulator: SheetsEmulator, sa_key: KeyPair
                         ) -> Path:
    """A service-account JSON key for SA_EMAIL whose token_uri is the emulator (registered)."""
    sheets_emulator.register_service_account(SA_EMAIL, sa_key.public_key)
    path = tmp_path / "service_account.json"
    path.write_text(json.dumps(sheets_emulator.service_account_info(sa_key.private_pem)))
    return path


@pytest.fixture
def gsheets_client(service_account_file: Path, sheets_emulator: SheetsEmulator) -> Any:
    """A real gspread client authorised with the test key, routed to the emulator, fast retries.

    ``client.http_client.policy`` can be replaced per test (``dataclasses.replace``).
    """
    return authorize(service_account_file,
                     http_client=sheets_emulator.http_client_class(**FAST_RETRY),
                     timeout=TEST_TIMEOUT)
