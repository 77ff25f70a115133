"""The values endpoints (get, batchGet, update, batchUpdate, clear, batchClear): ranges
resolved from A1 text or names, cells rendered per valueRenderOption."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .a1 import BadRange, a1, parse_a1, quote_sheet
from .errors import HTTPReply, Invalid, google_error
from .masks import jcopy
from .rules import check_in_grid
from .state import Sheet, StoredSpreadsheet
from .values import fmt_number, parse_raw, parse_user_entered, plain_number


class ValuesMixin:
    """spreadsheets.values.* for SheetsEmulator."""

    formula_render_quotes_text: bool

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
        return self._render_value(ss, sheet.title, sheet.value(r, c), r, c, option)

    def _render_value(self, ss: StoredSpreadsheet, title: str, uev: Mapping[str, Any] | None,
                      r: int, c: int, option: str) -> Any:
        """The cell at (r, c) of sheet `title`, whose userEnteredValue is `uev`, rendered."""
        if not uev:
            return ""
        (kind, v), = uev.items()
        if kind == "formulaValue":
            if option == "FORMULA":
                return v
            v = self._computed(ss).get((title, a1(r, c)))
            if v is None:
                return ""
            kind = "boolValue" if isinstance(v, bool) else (
                "numberValue" if isinstance(v, int | float) else "stringValue")
        if kind == "numberValue":
            return plain_number(v) if option != "FORMATTED_VALUE" else fmt_number(v)
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
        if (r1 - r0) * (c1 - c0) <= len(sheet.cells):
            rows = [[self._render(ss, sheet, r, c, option) for c in range(c0, c1)]
                    for r in range(r0, r1)]
            if major == "COLUMNS":
                rows = [list(col) for col in zip(*rows, strict=False)] if rows else []
            for row in rows:
                while row and row[-1] == "":
                    row.pop()
            while rows and not rows[-1]:
                rows.pop()
        else:  # a whole sheet's range, mostly empty: only the stored cells render to a value
            rows = self._sparse_rows(ss, sheet, (r0, r1, c0, c1), option, major == "COLUMNS")
        start, end = a1(r0, c0), a1(max(r1 - 1, r0), max(c1 - 1, c0))
        out: dict[str, Any] = {
            "range": f"{quote_sheet(sheet.title)}!{start}" + ("" if start == end else f":{end}"),
            "majorDimension": major,
        }
        if rows:
            out["values"] = rows
        return out

    def _sparse_rows(self, ss: StoredSpreadsheet, sheet: Sheet,
                     bounds: tuple[int, int, int, int], option: str, by_column: bool
                     ) -> list[list[Any]]:
        """The dense branch's rows (or columns), trailing blanks trimmed the same way, built
        from the stored cells alone: a cell with no stored value renders as ""."""
        r0, r1, c0, c1 = bounds
        lines: dict[int, dict[int, Any]] = {}
        title, render = sheet.title, self._render_value
        for (r, c), cell in sheet.cells.items():
            if r0 <= r < r1 and c0 <= c < c1:
                v = render(ss, title, cell.get("userEnteredValue"), r, c, option)
                if v != "":
                    major, minor = (c - c0, r - r0) if by_column else (r - r0, c - c0)
                    lines.setdefault(major, {})[minor] = v
        out: list[list[Any]] = [[] for _ in range(max(lines, default=-1) + 1)]
        for i, line in lines.items():
            out[i] = [line.get(j, "") for j in range(max(line) + 1)]
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
            check_in_grid(sheet, r0 + nrows, c0 + ncols)
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
