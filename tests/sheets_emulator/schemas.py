"""The keys each batchUpdate request kind accepts, so that a typo or an unsupported option
(e.g. a log-scale axis, which the Sheets API does not have) is a 400 here as at Google.
``None`` = any value. (Every body is also validated against Google's discovery document,
tests/sheets_discovery.py; these tables add the emulator's narrower subset.)"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import Invalid

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


def snake(name: str) -> str:
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
        check_schema(sub, schema[key], f"{where}.{snake(key)}")
