"""Google Sheets requests from a WorkbookPlan: pure, no HTTP (the push lives in gsheets.py).

The whole workbook becomes `spreadsheets.batchUpdate` bodies of at most ~2 MB each, which is
one request up to a few tens of thousands of rows. Every cell is typed: a formula goes in as
`formulaValue`, user text as `stringValue` (so `=HYPERLINK(...)` typed into a preset stays
text). Each table formula column is one `repeatCell` of its first row's formula, which Google
increments down the rows exactly as the planner writes each row (same-row references are
relative, all others absolute or named), so the body does not grow with the formula rows;
only input values are sent per row.

Which tabs are sheetgen's: those whose titles are the plan's sheet names, and the named ranges
with the plan's names. Replacing deletes and recreates exactly those, in the same atomic
request, at the same tab position and with fixed sheet/chart/named-range ids, so a repeated
push gives an identical spreadsheet.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xlsxwriter.utility import xl_cell_to_rowcol, xl_rowcol_to_cell

from sheetgen.layout import page, palette
from sheetgen.layout.charts import LABELLED_POINTS_MAX
from sheetgen.layout.planner import Cell, ChartPlan, SheetPlan, TablePlan, WorkbookPlan
from sheetgen.layout.styles import (
    BOOLEAN_CODE,
    FONT_SIZE,
    CellStyle,
    cell_style,
    dim_style,
    highlight_style,
)

#: Upper bound on one batchUpdate body (Google advises ~2 MB); larger pushes are chunked.
MAX_BODY_BYTES = 2_000_000
#: sheetgen's tabs get ids SHEET_ID_BASE + position (+ ID_STRIDE if a foreign tab has one).
SHEET_ID_BASE = 1_764_000_000
CHART_ID_BASE = SHEET_ID_BASE + 500
ID_STRIDE = 1_000
NAMED_RANGE_PREFIX = "sheetgen_"
#: a blank tab that exists only inside a replace that would otherwise delete every tab
PLACEHOLDER_TITLE = "sheetgen (replacing)"
PX_PER_CHAR = 7  # xlsx column width (characters) to pixels, as Excel draws the default font
MIN_ROWS, MIN_COLS = 1000, 26  # a new tab's grid, as Google makes one, or more if needed
CHART_PX = (720, 440)

Progress = Callable[[int], None]
Request = dict[str, Any]


# --------------------------------------------------------------------------- state


@dataclass(frozen=True)
class SpreadsheetState:
    """What the spreadsheet holds now: tabs in order, named ranges, chart ids."""

    sheets: tuple[tuple[str, int], ...] = ()  # (title, sheetId) in tab order
    named_ranges: tuple[tuple[str, str, int], ...] = ()  # (name, namedRangeId, sheetId)
    charts: tuple[tuple[int, int], ...] = ()  # (sheetId, chartId)
    cells: tuple[tuple[int, int], ...] = ()  # (sheetId, rowCount x columnCount)

    @classmethod
    def from_metadata(cls, meta: Mapping[str, Any]) -> SpreadsheetState:
        sheets, charts, cells = [], [], []
        for s in meta.get("sheets") or []:
            p = s.get("properties") or {}
            sid = int(p.get("sheetId", 0))
            sheets.append((str(p.get("title", "")), sid, int(p.get("index", len(sheets)))))
            charts += [(sid, int(c["chartId"])) for c in s.get("charts") or [] if "chartId" in c]
            grid = p.get("gridProperties") or {}
            cells.append((sid, int(grid.get("rowCount", 0)) * int(grid.get("columnCount", 0))))
        sheets.sort(key=lambda t: t[2])
        names = tuple((str(n.get("name", "")), str(n.get("namedRangeId", "")),
                       int((n.get("range") or {}).get("sheetId", 0)))
                      for n in meta.get("namedRanges") or [])
        return cls(tuple((t, i) for t, i, _ in sheets), names, tuple(charts), tuple(cells))

    def kept_cells(self, plan: WorkbookPlan) -> int:
        """Cells in the tabs a push keeps (every tab but sheetgen's own)."""
        ours = {s.name.lower() for s in plan.sheets}
        kept = {i for t, i in self.sheets if t.lower() not in ours}
        return sum(n for sid, n in self.cells if sid in kept)

    def sheet_id(self, title: str) -> int | None:
        return next((i for t, i in self.sheets if t.lower() == title.lower()), None)


def conflicts(plan: WorkbookPlan, state: SpreadsheetState) -> list[str]:
    """sheetgen's tabs and named ranges that already exist, as the user would name them."""
    tabs = [f"tab {s.name!r}" for s in plan.sheets if state.sheet_id(s.name) is not None]
    wanted = {n.lower() for n in plan.defined_names}
    names = [f"named range {n}" for n, _, _ in state.named_ranges if n.lower() in wanted]
    return tabs + names


def _ids(plan: WorkbookPlan, state: SpreadsheetState) -> dict[str, int]:
    """Fixed sheet ids, skipping any id a tab sheetgen will keep already has."""
    ours = {s.name.lower() for s in plan.sheets}
    taken = {i for t, i in state.sheets if t.lower() not in ours}
    out = {}
    for pos, sheet in enumerate(plan.sheets):
        sid = SHEET_ID_BASE + pos
        while sid in taken:
            sid += ID_STRIDE
        out[sheet.name] = sid
    return out


def own_ids(plan: WorkbookPlan) -> set[int]:
    """Every id `_ids` can hand out (for recognising sheetgen's own tabs after a lost reply)."""
    return {SHEET_ID_BASE + pos + k * ID_STRIDE for pos in range(len(plan.sheets))
            for k in range(8)}


# --------------------------------------------------------------------------- formats


def _rgb(hex_color: str) -> dict[str, float]:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) / 255 for i in (0, 2, 4))
    return {"red": round(r, 4), "green": round(g, 4), "blue": round(b, 4)}


def color_style(hex_color: str) -> dict[str, dict[str, float]]:
    """A ColorStyle: the plain Color fields (backgroundColor, foregroundColor, Border.color,
    BasicChartSeries.color) are deprecated in favour of their *Style twins."""
    return {"rgbColor": _rgb(hex_color)}


def number_format(code: str) -> dict[str, str] | None:
    """An xlsx number-format code (styles.NUMBER_FORMATS) as a Sheets NumberFormat."""
    if code in ("General", BOOLEAN_CODE):
        return None  # Google's automatic format is its General; it shows TRUE/FALSE itself
    if code == "@":
        return {"type": "TEXT", "pattern": "@"}
    if code.startswith("[>"):
        # sections chosen by size (GB/MB/B, TFLOP/GFLOP/...): a number pattern, whatever
        # notation its last section uses
        return {"type": "NUMBER", "pattern": code}
    if "E+" in code.upper():
        return {"type": "SCIENTIFIC", "pattern": code}
    if code.endswith("%"):
        return {"type": "PERCENT", "pattern": code}
    return {"type": "NUMBER", "pattern": code}


#: CellStyle's alignments as the Sheets API spells them. Left and right are not sent: the
#: cells styled so hold text or numbers, which Sheets aligns so already, and it pads every
#: cell, so neighbours never run together (and a 10,000-row push stays small).
_HORIZONTAL = {"center": "CENTER"}


def sheets_format(style: CellStyle) -> dict[str, Any]:
    """A neutral CellStyle as a Sheets CellFormat: the only styling decision made here is how
    to spell it, and what Sheets does by itself is not sent. The typeface is left to Google
    (its default, which it renders on every platform); sizes other than the body's are
    sent."""
    out: dict[str, Any] = {}
    text: dict[str, Any] = {}
    if style.bold:
        text["bold"] = True
    if style.italic:
        text["italic"] = True
    if style.font_size is not None and style.font_size != FONT_SIZE:
        text["fontSize"] = style.font_size
    if style.font_color is not None:
        text["foregroundColorStyle"] = color_style(style.font_color)
    if text:
        out["textFormat"] = text
    if style.fill is not None:
        out["backgroundColorStyle"] = color_style(style.fill)
    if style.wrap:
        out["wrapStrategy"] = "WRAP"
    if style.align in _HORIZONTAL:
        out["horizontalAlignment"] = _HORIZONTAL[style.align]
    if style.valign == "top":
        out["verticalAlignment"] = "TOP"
    # no indent: Sheets has none, and pads every cell, so a word never touches a number
    side: dict[str, Any] = {"style": "SOLID"}
    if style.border_color is not None:
        side["colorStyle"] = color_style(style.border_color)
    if style.border == "box":
        out["borders"] = {k: side for k in ("top", "bottom", "left", "right")}
    elif style.border == "bottom":
        out["borders"] = {"bottom": side}
    if style.number_format is not None:
        nf = number_format(style.number_format)
        if nf:
            out["numberFormat"] = nf
    return out


def cell_format(role: str, fmt: str = "general", wrap: bool = False) -> dict[str, Any]:
    """The CellFormat of a cell role and number format (styles.cell_style, translated)."""
    return sheets_format(cell_style(role, fmt, wrap))


# --------------------------------------------------------------------------- values


def typed_value(value: Any) -> dict[str, Any] | None:
    """A constant as a typed userEnteredValue: text is always stringValue, never a formula."""
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, str):
        value = value.item()
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int | float):
        f = float(value)
        if not math.isfinite(f):
            return None
        return {"numberValue": int(f) if f.is_integer() and abs(f) < 2**53 else f}
    return {"stringValue": str(value)}


def _cell_data(cell: Cell) -> dict[str, Any]:
    if cell.role == "formula":
        uev: dict[str, Any] | None = {"formulaValue": cell.formula}
        fmt = cell_format("formula", cell.fmt, cell.wrap)
    elif cell.role == "input":
        uev, fmt = typed_value(cell.value), cell_format("input", cell.fmt, cell.wrap)
    else:
        uev, fmt = {"stringValue": str(cell.value)}, cell_format(cell.role, "general", cell.wrap)
    out: dict[str, Any] = {}
    if uev is not None:
        out["userEnteredValue"] = uev
    if fmt:
        out["userEnteredFormat"] = fmt
    return out


def _grid(sid: int, r0: int, r1: int, c0: int, c1: int) -> dict[str, int]:
    """GridRange, half open: rows [r0, r1), columns [c0, c1)."""
    return {"sheetId": sid, "startRowIndex": r0, "endRowIndex": r1,
            "startColumnIndex": c0, "endColumnIndex": c1}


def _parse_ref(ref: str) -> tuple[str, int, int, int, int]:
    """`'GPU Specs'!$A$5:$A$10` -> (sheet, r0, r1, c0, c1), half open."""
    sheet, _, cells = ref.rpartition("!")
    if sheet.startswith("'"):
        sheet = sheet[1:-1].replace("''", "'")
    a, _, b = cells.partition(":")
    r0, c0 = xl_cell_to_rowcol(a.replace("$", ""))
    r1, c1 = xl_cell_to_rowcol((b or a).replace("$", ""))
    return sheet, r0, r1 + 1, c0, c1 + 1


# --------------------------------------------------------------------------- requests

#: Google's limit: "up to 10 million cells" per spreadsheet, every tab counted
#: (https://support.google.com/drive/answer/37603).
CELL_LIMIT = 10_000_000


def grid_cells(plan: WorkbookPlan) -> dict[str, int]:
    """The cells (rows x columns of its grid) each of sheetgen's tabs will have."""
    out = {}
    for sheet in plan.sheets:
        rows, cols = grid_size(sheet)
        out[sheet.name] = rows * cols
    return out


def grid_size(sheet: SheetPlan) -> tuple[int, int]:
    rows = [c.row for c in sheet.cells] + [t.last_row for t in sheet.tables]
    rows += [ch.row + 25 for ch in sheet.charts]
    return max(max(rows, default=0) + 1, MIN_ROWS), max(_pad_col(sheet) + 1, MIN_COLS)


def _pad_col(sheet: SheetPlan) -> int:
    """The first column right of everything on the sheet: empty by construction."""
    cols = [c.col for c in sheet.cells] + [c.col for t in sheet.tables for c in t.columns]
    cols += [ch.col for ch in sheet.charts]
    return max(cols, default=-1) + 1


def _heights(sid: int, heights: Mapping[int, float]) -> list[Request]:
    """Header rows as tall as their wrapped text (points -> pixels at 96 dpi)."""
    return [{"updateDimensionProperties": {
        "range": {"sheetId": sid, "dimension": "ROWS", "startIndex": row, "endIndex": row + 1},
        "properties": {"pixelSize": round(points * 4 / 3)}, "fields": "pixelSize"}}
        for row, points in sorted(heights.items())]


def _widths(sid: int, widths: Mapping[int, float]) -> list[Request]:
    out: list[Request] = []
    items = sorted((c, round(w * PX_PER_CHAR)) for c, w in widths.items())
    i = 0
    while i < len(items):
        j = i
        while j + 1 < len(items) and items[j + 1] == (items[j][0] + 1, items[i][1]):
            j += 1
        out.append({"updateDimensionProperties": {
            "range": {"sheetId": sid, "dimension": "COLUMNS", "startIndex": items[i][0],
                      "endIndex": items[j][0] + 1},
            "properties": {"pixelSize": items[i][1]}, "fields": "pixelSize"}})
        i = j + 1
    return out


def _cells_request(sid: int, cells: Sequence[Cell], max_bytes: int) -> list[Request]:
    """The non-table cells of a sheet: updateCells from A1, values and formats, chunked."""
    if not cells:
        return []
    by_row: dict[int, dict[int, Cell]] = {}
    for c in cells:
        by_row.setdefault(c.row, {})[c.col] = c
    rows: list[dict[str, Any]] = []
    for r in range(max(by_row) + 1):
        row = by_row.get(r, {})
        values = [_cell_data(row[c]) if c in row else {} for c in range(max(row, default=-1) + 1)]
        rows.append({"values": values} if values else {})
    return _chunked_rows(sid, rows, 0, 0, "userEnteredValue,userEnteredFormat", max_bytes)


def _chunked_rows(sid: int, rows: list[dict[str, Any]], r0: int, c0: int, fields: str,
                  max_bytes: int) -> list[Request]:
    """updateCells requests over consecutive row groups, none larger than the body budget
    (with room for a little more in the same body)."""
    budget = max(max_bytes - 50_000, max_bytes // 2, 1)
    out: list[Request] = []
    start = 0
    while start < len(rows):
        size, end = 0, start
        while end < len(rows):
            n = len(json.dumps(rows[end])) + 2
            if size + n > budget and end > start:
                break
            size += n
            end += 1
        out.append({"updateCells": {
            "start": {"sheetId": sid, "rowIndex": r0 + start, "columnIndex": c0},
            "rows": rows[start:end], "fields": fields}})
        start = end
    return out


def _table_requests(sid: int, table: TablePlan, max_bytes: int) -> list[Request]:
    """Formats and formulas per column (repeatCell), then the input values, chunked by rows."""
    if table.n_rows <= 0:
        return []
    out: list[Request] = []
    r0, r1 = table.first_row, table.last_row + 1
    for col in table.columns:
        cell: dict[str, Any] = {}
        fields = []
        if not col.is_input:
            cell["userEnteredValue"] = {"formulaValue": col.formula_at(r0)}
            fields.append("userEnteredValue")
        fmt = cell_format(col.style, col.fmt)
        if fmt:
            cell["userEnteredFormat"] = fmt
            fields.append("userEnteredFormat")
        if fields:
            out.append({"repeatCell": {"range": _grid(sid, r0, r1, col.col, col.col + 1),
                                       "cell": cell, "fields": ",".join(fields)}})
    inputs = [c for c in table.columns if c.is_input]
    if not inputs:
        return out
    c0 = inputs[0].col
    if [c.col for c in inputs] != list(range(c0, c0 + len(inputs))):  # pragma: no cover
        raise ValueError(f"table {table.name!r}: input columns are not contiguous")
    rows: list[dict[str, Any]] = []
    for i in range(table.n_rows):
        values = []
        for c in inputs:
            v = typed_value(c.values[i])
            values.append({"userEnteredValue": v} if v is not None else {})
        while values and not values[-1]:
            values.pop()
        rows.append({"values": values} if values else {})
    while rows and not rows[-1]:
        rows.pop()
    return out + _chunked_rows(sid, rows, r0, c0, "userEnteredValue", max_bytes)


def _validation_requests(sid: int, sheet: SheetPlan) -> list[Request]:
    """DataValidationRules as the xlsx writer's: a dropdown over a range or a fixed list, a
    whole-number rule (a CUSTOM_FORMULA: Google has no integer condition, and NUMBER_BETWEEN
    would accept 1.5) or a decimal range. All strict: Google rejects other input."""
    out: list[Request] = []
    for v in sheet.validations:
        rule = v.rule
        if rule.kind == "list":
            cond = {"type": "ONE_OF_RANGE",
                    "values": [{"userEnteredValue": "=" + (v.source or "")}]}
        elif rule.kind == "choices":
            cond = {"type": "ONE_OF_LIST",
                    "values": [{"userEnteredValue": c} for c in rule.choices]}
        elif rule.kind == "whole_min":
            top_left = xl_rowcol_to_cell(v.first_row, v.first_col)
            cond = {"type": "CUSTOM_FORMULA",
                    "values": [{"userEnteredValue": rule.whole_formula(top_left)}]}
        else:
            cond = {"type": "NUMBER_BETWEEN", "values": [
                {"userEnteredValue": repr(float(rule.minimum or 0))},
                {"userEnteredValue": repr(float(rule.maximum or 0))}]}
        body: dict[str, Any] = {"condition": cond, "strict": True}
        if rule.kind in ("list", "choices"):
            body["showCustomUi"] = True
        if rule.message:
            body["inputMessage"] = rule.message
        out.append({"setDataValidation": {
            "range": _grid(sid, v.first_row, v.last_row + 1, v.first_col, v.last_col + 1),
            "rule": body}})
    return out


def _merge_requests(sid: int, sheet: SheetPlan) -> list[Request]:
    """Cells that span columns (long notes, live sentences) as merged ranges."""
    return [{"mergeCells": {"range": _grid(sid, c.row, c.row + 1, c.col, c.col + c.span),
                            "mergeType": "MERGE_ALL"}}
            for c in sheet.cells if c.span > 1]


def _hidden_requests(sid: int, sheet: SheetPlan) -> list[Request]:
    """Columns the xlsx build hides (the Practice sheet's answers) hidden here too."""
    return [{"updateDimensionProperties": {
        "range": {"sheetId": sid, "dimension": "COLUMNS", "startIndex": c, "endIndex": c + 1},
        "properties": {"hiddenByUser": True}, "fields": "hiddenByUser"}}
        for c in sheet.hidden]


def _conditional_requests(sid: int, sheet: SheetPlan) -> list[Request]:
    def condition(c: Any) -> dict[str, Any]:
        if isinstance(c.equals, bool) or c.negate:  # =A6=FALSE, relative to the first cell
            first = xl_rowcol_to_cell(c.first_row, c.col)
            op = "<>" if c.negate else "="
            return {"type": "CUSTOM_FORMULA",
                    "values": [{"userEnteredValue": f"={first}{op}{c.literal}"}]}
        return {"type": "TEXT_EQ", "values": [{"userEnteredValue": c.equals}]}

    def style(c: Any) -> dict[str, Any]:
        return sheets_format(highlight_style(c.color, c.font))

    out = [{"addConditionalFormatRule": {"index": i, "rule": {
        "ranges": [_grid(sid, c.first_row, c.last_row + 1, c.col, c.col + 1)],
        "booleanRule": {"condition": condition(c), "format": style(c)}}}}
        for i, c in enumerate(sheet.conditionals)]
    dim = sheets_format(dim_style())
    return out + [{"addConditionalFormatRule": {"index": len(out) + i, "rule": {
        "ranges": [_grid(sid, d.first_row, d.last_row + 1, d.col, d.col + 1)],
        "booleanRule": {"condition": {"type": "CUSTOM_FORMULA",
                                      "values": [{"userEnteredValue": "=" + d.condition}]},
                        "format": dim}}}}
        for i, d in enumerate(sheet.dim_rules)]


def _axis(position: str, title: str, bounds: tuple[float, float] | None) -> dict[str, Any]:
    """A chart axis, fixed to `bounds` when given (ChartAxisViewWindowOptions, EXPLICIT)."""
    axis: dict[str, Any] = {"position": position, "title": title}
    if bounds is not None:
        axis["viewWindowOptions"] = {"viewWindowMin": bounds[0], "viewWindowMax": bounds[1],
                                     "viewWindowMode": "EXPLICIT"}
    return axis


def _chart_request(sid: int, chart: ChartPlan, chart_id: int) -> Request:
    """A SCATTER basicChart. Google has one domain per chart, so series with different x
    columns share it by splitting every range into one source range per distinct x column
    ("offset"): at offset j the domain is that x column, series i is the column i + 1 to its
    right (the y of a series drawn against that x, a blank column for the others), and a
    labelled series' labels are the column right after it, as the API requires ("in order
    and contiguous"; labels "from the next column"; ChartSourceRange and DataLabel in the
    discovery document). The planner lays the columns out so (sheets/chart_helpers.py); a
    layout that does not fit is a programming error, raised here rather than sent. The
    chart data sit in hidden columns: SHOW_ALL plots them (ChartSpec.hiddenDimensionStrategy).
    """
    def rng(x: int, rows: tuple[int, int, int]) -> dict[str, int]:
        return _grid(sid, rows[1], rows[2] + 1, x, x + 1)

    offsets = list(dict.fromkeys(s.x for s in chart.series))
    last = len(chart.series) - 1
    for i, s in enumerate(chart.series):
        if s.y[0] != s.x[0] + 1 + i or s.y[1:] != s.x[1:]:
            raise ValueError(f"chart {chart.title!r}: series {s.name!r} y is not column "
                             f"{i + 1} right of its x over the same rows")
        if s.labels is not None and (s.labels[0] != s.y[0] + 1 or i != last):
            raise ValueError(f"chart {chart.title!r}: {s.name!r} labels are not right of y "
                             "after every series")
    for a, b in itertools.pairwise(offsets):
        if b[0] <= a[0] + last + 1:
            raise ValueError(f"chart {chart.title!r}: x columns {a[0]} and {b[0]} overlap")
    series = []
    for i, s in enumerate(chart.series):
        sources = [rng(o[0] + 1 + i, o) for o in offsets]
        item: dict[str, Any] = {"series": {"sourceRange": {"sources": sources}},
                                "targetAxis": "LEFT_AXIS"}
        if s.line:
            item |= {"lineStyle": {"width": 2, "type": "SOLID"},
                     "colorStyle": color_style(s.color or palette.CEILING)}
            if s.marker != "none":  # a line with markers
                item["pointStyle"] = {"shape": s.marker.upper(), "size": s.marker_size}
        else:
            item |= {"pointStyle": {"shape": s.marker.upper(), "size": s.marker_size},
                     "colorStyle": color_style(s.color or palette.POINT)}
            if s.labels is not None and s.labels[2] - s.labels[1] < LABELLED_POINTS_MAX:
                labels = [rng(o[0] + 2 + i, o) for o in offsets]
                item["dataLabel"] = {"type": "CUSTOM", "placement": "RIGHT",
                                     "textFormat": {"fontSize": 7},
                                     "customLabelData": {"sourceRange": {"sources": labels}}}
        series.append(item)
    return {"addChart": {"chart": {
        "chartId": chart_id,
        "spec": {"title": chart.title, "hiddenDimensionStrategy": "SHOW_ALL", "basicChart": {
            "chartType": "SCATTER", "legendPosition": "BOTTOM_LEGEND", "headerCount": 0,
            "axis": [_axis("BOTTOM_AXIS", chart.x_title, chart.x_range),
                     _axis("LEFT_AXIS", chart.y_title, chart.y_range)],
            "domains": [{"domain": {"sourceRange": {"sources": [rng(o[0], o)
                                                               for o in offsets]}}}],
            "series": series}},
        "position": {"overlayPosition": {
            "anchorCell": {"sheetId": sid, "rowIndex": chart.row, "columnIndex": chart.col},
            "widthPixels": CHART_PX[0], "heightPixels": CHART_PX[1]}}}}}


def structure_requests(plan: WorkbookPlan, state: SpreadsheetState) -> list[Request]:
    """Delete sheetgen's old tabs and names (if any), then add the tabs and the names."""
    ours = {s.name.lower() for s in plan.sheets}
    ids = _ids(plan, state)
    out: list[Request] = []
    wanted = {n.lower() for n in plan.defined_names}
    for name, nid, _ in state.named_ranges:
        if name.lower() in wanted:
            out.append({"deleteNamedRange": {"namedRangeId": nid}})
    old = [(t, i) for t, i in state.sheets if t.lower() in ours]
    kept = [(t, i) for t, i in state.sheets if t.lower() not in ours]
    placeholder = None
    if old and not kept:  # Google refuses to delete every tab, even for a moment
        placeholder = max([*ids.values(), *(i for _, i in state.sheets)]) + 1
        out.append({"addSheet": {"properties": {
            "sheetId": placeholder, "title": PLACEHOLDER_TITLE, "index": len(state.sheets),
            "gridProperties": {"rowCount": 1, "columnCount": 1}}}})
    out += [{"deleteSheet": {"sheetId": i}} for _, i in old]
    # Where the old tabs were (the first of them), else at the end.
    at = len(kept)
    if old:
        first_old = next(k for k, (t, _) in enumerate(state.sheets) if t.lower() in ours)
        at = sum(1 for t, _ in state.sheets[:first_old] if t.lower() not in ours)
    for pos, sheet in enumerate(plan.sheets):
        rows, cols = grid_size(sheet)
        grid: dict[str, int] = {"rowCount": rows, "columnCount": cols}
        frozen = page.freeze(sheet)
        if frozen:
            if frozen[0]:
                grid["frozenRowCount"] = frozen[0]
            if frozen[1]:
                grid["frozenColumnCount"] = frozen[1]
        out.append({"addSheet": {"properties": {
            "sheetId": ids[sheet.name], "title": sheet.name, "index": at + pos,
            "gridProperties": grid}}})
    if placeholder is not None:
        out.append({"deleteSheet": {"sheetId": placeholder}})
    for name, ref in plan.defined_names.items():
        title, r0, r1, c0, c1 = _parse_ref(ref)
        out.append({"addNamedRange": {"namedRange": {
            "namedRangeId": NAMED_RANGE_PREFIX + name.lower(), "name": name,
            "range": _grid(ids[title], r0, r1, c0, c1)}}})
    return out


def sheet_requests(plan: WorkbookPlan, state: SpreadsheetState,
                   max_bytes: int = MAX_BODY_BYTES) -> list[Request]:
    """Widths, cells, formulas, validation, conditional formats and charts of every tab."""
    ids = _ids(plan, state)
    ours = {state.sheet_id(s.name) for s in plan.sheets}  # their charts go with them
    taken = {c for sid, c in state.charts if sid not in ours}
    out: list[Request] = []
    chart_id = CHART_ID_BASE
    for sheet in plan.sheets:
        sid = ids[sheet.name]
        out += _widths(sid, sheet.widths)
        out += _heights(sid, page.row_heights(sheet))
        out += _hidden_requests(sid, sheet)
        out += _cells_request(sid, sheet.cells, max_bytes)
        out += _merge_requests(sid, sheet)
        for table in sheet.tables:
            out += _table_requests(sid, table, max_bytes)
        out += _validation_requests(sid, sheet)
        out += _conditional_requests(sid, sheet)
        for chart in sheet.charts:
            while chart_id in taken:
                chart_id += ID_STRIDE
            out.append(_chart_request(sid, chart, chart_id))
            taken.add(chart_id)
            chart_id += 1
    return out


def _size(request: Request) -> int:
    return len(json.dumps(request)) + 2


def pack(requests: Iterable[Request], max_bytes: int = MAX_BODY_BYTES) -> list[list[Request]]:
    """Consecutive requests into as few bodies of at most max_bytes as order allows."""
    batches: list[list[Request]] = []
    size = max_bytes + 1
    for req in requests:
        n = _size(req)
        if size + n > max_bytes:
            batches.append([])
            size = len('{"requests": []}')
        batches[-1].append(req)
        size += n
    return batches


def requests_for(plan: WorkbookPlan, existing: SpreadsheetState | None = None, *,
                 max_bytes: int = MAX_BODY_BYTES) -> list[list[Request]]:
    """The batchUpdate bodies (as request lists) that write `plan` into a spreadsheet.

    Pure: no I/O. `existing` is what the spreadsheet holds; sheetgen's tabs and named ranges
    found there are deleted and recreated in the first body (the caller decides whether
    that is allowed: see `conflicts`).
    """
    state = existing or SpreadsheetState()
    return pack([*structure_requests(plan, state), *sheet_requests(plan, state, max_bytes)],
                max_bytes)
