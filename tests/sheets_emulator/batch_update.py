"""spreadsheets.batchUpdate: every request kind sheetgen sends, applied atomically to a
working copy, with the validation Google applies to each."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from .a1 import a1, fill_formulas, quote_sheet
from .constants import CELL_LIMIT
from .errors import HTTPReply, Invalid, google_error
from .masks import apply_mask, apply_mask_shared, jcopy, parse_fields
from .rules import (
    CF_CONDITIONS,
    CHART_TYPES,
    DV_CONDITIONS,
    check_condition,
    check_grid_props,
    check_in_grid,
    check_name,
    check_title,
    custom_formula_holds,
    find_named,
    need_fields,
)
from .schemas import REQUEST_SCHEMAS, check_schema, snake
from .state import Sheet, StoredSpreadsheet
from .values import fmt_number


class BatchUpdateMixin:
    """batchUpdate and its request handlers (``_req_<kind>``) for SheetsEmulator."""

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
                check_schema(payload, REQUEST_SCHEMAS[kind], f"requests[{i}].{snake(kind)}")
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
            check_in_grid(sheet, r1, c1)
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
            check_condition(src["dataValidation"].get("condition"), DV_CONDITIONS)
        cell = dict(sheet.cells.get((r, c), {}))  # stored cells are replaced, never mutated
        uev = src.get("userEnteredValue")
        if uev and ss is not None and ("userEnteredValue" in (masked := parse_fields(fields))
                                       or "*" in masked):
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
            return (fmt_number(v) if number else str(v)) in given
        if kind == "ONE_OF_RANGE":
            src, r0, r1, c0, c1 = self._resolve(ss, given[0].lstrip("="))
            allowed = {next(iter(cd["userEnteredValue"].values()))
                       for (rr, cc), cd in src.cells.items()
                       if r0 <= rr < r1 and c0 <= cc < c1 and "userEnteredValue" in cd}
            return v in allowed
        if kind == "CUSTOM_FORMULA":
            return custom_formula_holds(sheet.title, r, c, v, given[0], ss)
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
        check_title(ss, title)
        props.setdefault("sheetType", "GRID")
        grid = props.setdefault("gridProperties", {})
        grid.setdefault("rowCount", 1000)
        grid.setdefault("columnCount", 26)
        check_grid_props(grid)
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
        props, fields = p.get("properties") or {}, need_fields(p)
        sheet = ss.sheet(int(props.get("sheetId", 0)))
        new = copy.deepcopy(sheet.properties)
        apply_mask(new, props, fields)
        new["sheetId"] = sheet.id
        if new.get("title") != sheet.title:
            check_title(ss, new.get("title"), exclude=sheet)
        check_grid_props(new.get("gridProperties", {}))
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
        apply_mask(ss.properties, p.get("properties") or {}, need_fields(p))

    def _req_updateCells(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        fields = need_fields(p)
        rows = p.get("rows") or []
        if ("start" in p) == ("range" in p):
            raise Invalid("Exactly one of start or range must be set.")
        if "start" in p:
            st = p["start"]
            sheet = ss.sheet(int(st.get("sheetId", 0)))
            r0, c0 = int(st.get("rowIndex", 0)), int(st.get("columnIndex", 0))
            for dr, row in enumerate(rows):
                for dc, cd in enumerate(row.get("values") or []):
                    check_in_grid(sheet, r0 + dr + 1, c0 + dc + 1)
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
        fields = need_fields(p)
        sheet, r0, r1, c0, c1 = self._range_bounds(ss, p.get("range") or {})
        src = p.get("cell") or {}
        formula = (src.get("userEnteredValue") or {}).get("formulaValue")
        if r1 > r0 and c1 > c0:
            self._write_cell(sheet, r0, c0, src, fields)  # validates the value once
        # An empty cell under a mask of whole fields becomes `proto` (the mask applied to src),
        # its formula shifted: what _write_cell makes of it, without a mask walk per cell.
        proto: dict[str, Any] = {}
        apply_mask_shared(proto, src, fields)
        whole = all("." not in path for path in parse_fields(fields))
        shifts = proto.get("userEnteredValue") is src.get("userEnteredValue") is not None
        cells = sheet.cells
        n = r1 - r0
        # every cell's shifted formula (shift_formula), column by column
        filled = fill_formulas(formula, n, c1 - c0) if formula is not None and n else ()
        for c in range(c0, c1):
            for r in range(r0, r1):
                if (r, c) == (r0, c0):
                    continue
                uev = None if formula is None else {
                    "formulaValue": filled[(c - c0) * n + (r - r0)]}
                if whole and proto and (r, c) not in cells:
                    new = dict(proto)
                    if shifts and uev is not None:
                        new["userEnteredValue"] = uev
                    cells[(r, c)] = new
                    continue
                cell = src
                if uev is not None:
                    cell = dict(src)
                    cell["userEnteredValue"] = uev
                self._write_cell(sheet, r, c, cell, fields, checked=True)

    def _req_addNamedRange(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> dict[str, Any]:
        nr = copy.deepcopy(dict(p.get("namedRange") or {}))
        check_name(ss, nr.get("name"))
        self._range_bounds(ss, nr.get("range") or {})
        if not nr.get("namedRangeId"):
            nr["namedRangeId"] = f"nr{ss.new_id()}"
        elif any(n["namedRangeId"] == nr["namedRangeId"] for n in ss.named_ranges):
            raise Invalid(f"Named range id {nr['namedRangeId']} already exists.")
        ss.named_ranges.append(nr)
        return {"addNamedRange": {"namedRange": copy.deepcopy(nr)}}

    def _req_updateNamedRange(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        src = p.get("namedRange") or {}
        target = find_named(ss, src.get("namedRangeId"))
        new = copy.deepcopy(target)
        apply_mask(new, src, need_fields(p))
        if new.get("name") != target.get("name"):
            check_name(ss, new.get("name"), exclude=target)
        self._range_bounds(ss, new.get("range") or {})
        target.clear()
        target.update(new)

    def _req_deleteNamedRange(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        ss.named_ranges.remove(find_named(ss, p.get("namedRangeId")))

    def _req_setDataValidation(self, ss: StoredSpreadsheet, p: Mapping[str, Any]) -> None:
        rule = p.get("rule")
        if rule:
            check_condition(rule.get("condition"), DV_CONDITIONS)
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
            check_condition(rule["booleanRule"].get("condition"), CF_CONDITIONS)
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
        rng, fields = p.get("range") or {}, need_fields(p)
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
        check_grid_props(sheet.properties["gridProperties"])

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
