"""Validate Sheets API v4 request bodies against Google's own discovery document.

Why: the emulator (tests/sheets_emulator/) only knows the subset of the API sheetgen uses;
this checks every body it receives against the schema Google publishes, so a field Google does
not have, a wrong JSON type, an unknown enum value, an int32 out of range or a field mask that
names no real field fails in the tests as it would at Google. The document is the one the
`google-api-python-client` wheel ships (googleapiclient/discovery_cache/documents/sheets.v4.json,
a test dependency); its revision is in ``REVISION``.

Beyond the machine-readable schema, the rules Google states only in prose are checked too:

* unions ("Union field ... can be only one of the following" in the REST reference, which the
  discovery format does not mark): ``UNIONS`` lists them, at most one member set (exactly one
  for ``Request.kind``);
* read-only fields are refused, and so are deprecated ones ("Deprecated: Use ..."): Google
  still accepts those, but sheetgen must not send them (stricter than Google, on purpose);
* ``ChartSourceRange.sources``: each source one row or one column wide, the domain and every
  series with the same number of sources, and when there are several, the sources at each
  offset "in order and contiguous" across the domain and the series;
* ``DataLabel.customLabelData``: as long as its series, and for a series split into several
  source ranges, each label range is the column right after the series' range at that offset.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import googleapiclient

DOCUMENT = (Path(googleapiclient.__file__).parent / "discovery_cache" / "documents"
            / "sheets.v4.json")

#: Unions from Google's REST reference (https://developers.google.com/workspace/sheets/api/
#: reference/rest/v4/spreadsheets/request, .../spreadsheets/cells, .../spreadsheets/charts,
#: .../spreadsheets/other, .../spreadsheets/sheets): schema -> (union name, member fields).
UNIONS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "ExtendedValue": (("value", ("numberValue", "stringValue", "boolValue", "formulaValue",
                                 "errorValue")),),
    "ColorStyle": (("kind", ("rgbColor", "themeColor")),),
    "UpdateCellsRequest": (("area", ("start", "range")),),
    "ConditionalFormatRule": (("rule", ("booleanRule", "gradientRule")),),
    "ConditionValue": (("value", ("relativeDate", "userEnteredValue")),),
    "EmbeddedObjectPosition": (("location", ("sheetId", "overlayPosition", "newSheet")),),
    "ChartSpec": (("chart", ("basicChart", "pieChart", "bubbleChart", "candlestickChart",
                             "orgChart", "histogramChart", "waterfallChart", "treemapChart",
                             "scorecardChart")),),
    "ChartData": (("type", ("sourceRange", "columnReference")),),
    "ChartGroupRule": (("rule", ("dateTimeRule", "histogramRule")),),
    "AutoFillRequest": (("area", ("range", "sourceAndDestination")),),
    "PasteDataRequest": (("kind", ("delimiter", "html")),),
    "FindReplaceRequest": (("scope", ("range", "sheetId", "allSheets")),),
    "DataFilter": (("filter", ("developerMetadataLookup", "a1Range", "gridRange")),),
    "DeveloperMetadataLocation": (("location", ("spreadsheet", "sheetId", "dimensionRange")),),
    "SortSpec": (("reference", ("dimensionIndex", "dataSourceColumnReference")),),
    "FilterSpec": (("reference", ("columnIndex", "dataSourceColumnReference")),),
    "PivotGroup": (("source", ("sourceColumnOffset", "dataSourceColumnReference")),),
    "PivotValue": (("value", ("sourceColumnOffset", "formula", "dataSourceColumnReference")),),
    "DataSourceSpec": (("spec", ("bigQuery", "looker")),),
    "BigQueryDataSourceSpec": (("spec", ("querySpec", "tableSpec")),),
    "DataSourceRefreshSchedule": (("schedule_config", ("dailySchedule", "weeklySchedule",
                                                       "monthlySchedule")),),
}
#: Unions where exactly one member is required (not merely at most one).
REQUIRED_UNIONS = {("Request", "kind")}

#: The object each `fields` mask (format google-fieldmask) is rooted at, per the field's
#: description ("The root is the CellData", "The root `properties` is implied", ...).
MASK_ROOTS: dict[str, str] = {
    "UpdateCellsRequest": "CellData",
    "RepeatCellRequest": "CellData",
    "AppendCellsRequest": "CellData",
    "UpdateDimensionPropertiesRequest": "DimensionProperties",
    "UpdateSheetPropertiesRequest": "SheetProperties",
    "UpdateSpreadsheetPropertiesRequest": "SpreadsheetProperties",
    "UpdateNamedRangeRequest": "NamedRange",
    "UpdateProtectedRangeRequest": "ProtectedRange",
    "UpdateFilterViewRequest": "FilterView",
    "UpdateBandingRequest": "BandedRange",
    "UpdateDimensionGroupRequest": "DimensionGroup",
    "UpdateEmbeddedObjectPositionRequest": "EmbeddedObjectPosition",
    "UpdateEmbeddedObjectBorderRequest": "EmbeddedObjectBorder",
    "UpdateSlicerSpecRequest": "SlicerSpec",
    "UpdateDeveloperMetadataRequest": "DeveloperMetadata",
    "UpdateDataSourceRequest": "DataSource",
    "UpdateTableRequest": "Table",
}

INT32 = (-(2**31), 2**31 - 1)
UINT32 = (0, 2**32 - 1)
MAX_ERRORS = 20


@functools.cache
def document() -> dict[str, Any]:
    return json.loads(DOCUMENT.read_text(encoding="utf-8"))


def schemas() -> dict[str, Any]:
    return document()["schemas"]


REVISION = document()["revision"]

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


@functools.cache
def snake(name: str) -> str:
    """Google reports paths in proto (snake_case) names: requests[0].add_chart.chart."""
    return _CAMEL.sub("_", name).lower()


def _deprecated(prop: Mapping[str, Any]) -> bool:
    return bool(prop.get("deprecated")) or "Deprecated" in prop.get("description", "")


def _read_only(prop: Mapping[str, Any]) -> bool:
    return bool(prop.get("readOnly")) or "This field is read-only" in prop.get("description", "")


@functools.cache
def _fields(name: str) -> dict[str, tuple[Mapping[str, Any], str, bool, bool]]:
    """A schema's properties: key -> (property, snake name, deprecated, read-only), worked
    out once per schema rather than once per key of every body."""
    return {key: (prop, snake(key), _deprecated(prop), _read_only(prop))
            for key, prop in schemas()[name].get("properties", {}).items()}


class _Walker:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, path: str, message: str) -> None:
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(f"{message} at '{path}'")

    # ---------------------------------------------------------------- types
    def value(self, v: Any, prop: Mapping[str, Any], path: str) -> None:
        if v is None:
            return  # proto3 JSON: null is accepted for every field and means its default
        if "$ref" in prop:
            self.object(v, prop["$ref"], path)
            return
        kind = prop.get("type")
        if kind == "array":
            if not isinstance(v, list):
                self.error(path, f"Invalid value (expected a list), {_short(v)}")
                return
            for i, item in enumerate(v):
                self.value(item, prop.get("items", {}), f"{path}[{i}]")
        elif kind == "object":
            if not isinstance(v, Mapping):
                self.error(path, f"Invalid value (expected an object), {_short(v)}")
            elif "additionalProperties" in prop:
                for k, item in v.items():
                    self.value(item, prop["additionalProperties"], f"{path}[{k!r}]")
        elif kind == "string":
            if not isinstance(v, str):
                self.error(path, f"Invalid value (TYPE_STRING), {_short(v)}")
            elif "enum" in prop and v not in prop["enum"]:
                self.error(path, f"Invalid value (TYPE_ENUM), {_short(v)}")
            elif prop.get("format") in ("int64", "uint64") and not re.fullmatch(r"-?\d+", v):
                self.error(path, f"Invalid value (TYPE_INT64), {_short(v)}")
        elif kind == "integer":
            if isinstance(v, bool) or not isinstance(v, int):
                if isinstance(v, float) and v.is_integer():
                    v = int(v)
                else:
                    self.error(path, f"Invalid value (TYPE_INT32), {_short(v)}")
                    return
            lo, hi = UINT32 if prop.get("format") == "uint32" else INT32
            if not lo <= v <= hi:
                self.error(path, f"Invalid value (TYPE_INT32, out of range), {v}")
        elif kind == "number":
            if isinstance(v, bool) or not isinstance(v, int | float):
                self.error(path, f"Invalid value (TYPE_DOUBLE), {_short(v)}")
            elif isinstance(v, float) and not math.isfinite(v):
                self.error(path, f"Invalid value (not finite JSON), {v}")
        elif kind == "boolean" and not isinstance(v, bool):
            self.error(path, f"Invalid value (TYPE_BOOL), {_short(v)}")
        # "any" (ValueRange.values items) and untyped: anything JSON

    def object(self, v: Any, name: str, path: str) -> None:
        if not isinstance(v, Mapping):
            self.error(path, f"Invalid value (expected {name} object), {_short(v)}")
            return
        props = _fields(name)
        for key, item in v.items():
            field = props.get(key)
            if field is None:
                self.errors.append(f'Invalid JSON payload received. Unknown name "{key}" at '
                                   f"'{path}': Cannot find field.")
                continue
            prop, snake_key, deprecated, read_only = field
            where = f"{path}.{snake_key}" if path else snake_key
            if deprecated:
                self.error(where, f"Deprecated field {name}.{key} (use its *Style/"
                                  "replacement field)")
            if read_only:
                self.error(where, f"Read-only field {name}.{key} cannot be written")
            self.value(item, prop, where)
        for union, members in UNIONS.get(name, ()) + _request_union(name):
            present = [m for m in members if m in v]
            if len(present) > 1:
                self.error(path, f"Union field {union} of {name} has several members set: "
                                 f"{', '.join(present)}")
            if not present and (name, union) in REQUIRED_UNIONS:
                self.error(path, f"Union field {union} of {name} must be set")
        if name in MASK_ROOTS and isinstance(v.get("fields"), str):
            for message in mask_errors(v["fields"], MASK_ROOTS[name]):
                self.error(f"{path}.fields", message)
        if name == "BasicChartSpec":
            for message in chart_rule_errors(v):
                self.error(path, message)


def _request_union(name: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if name != "Request":
        return ()
    return (("kind", tuple(schemas()["Request"]["properties"])),)


def _short(v: Any) -> str:
    text = json.dumps(v) if not isinstance(v, float) or math.isfinite(v) else repr(v)
    return text if len(text) <= 60 else text[:59] + "…"


# ---------------------------------------------------------------------------- field masks


def mask_paths(mask: str) -> list[str]:
    """'a.b,c(d,e(f))' -> ['a.b', 'c.d', 'c.e.f'] (the syntax of a `fields` parameter)."""
    out: list[str] = []

    def parse(text: str, prefix: str) -> None:
        depth, start = 0, 0
        parts = []
        for i, ch in enumerate(text):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth < 0:
                    raise ValueError(f"unbalanced ')' in field mask {mask!r}")
            elif ch == "," and depth == 0:
                parts.append(text[start:i])
                start = i + 1
        if depth:
            raise ValueError(f"unbalanced '(' in field mask {mask!r}")
        parts.append(text[start:])
        for part in parts:
            part = part.strip()
            if not part:
                raise ValueError(f"empty path in field mask {mask!r}")
            if "(" in part:
                head, _, rest = part.partition("(")
                parse(rest[:-1] if rest.endswith(")") else rest, f"{prefix}{head.strip()}.")
            else:
                out.append(prefix + part)

    parse(mask, "")
    return out


def mask_errors(mask: str, root: str) -> list[str]:
    """Paths of a field mask that name no field of `root` (a schema name)."""
    if mask.strip() == "*":
        return []
    try:
        paths = mask_paths(mask)
    except ValueError as err:
        return [str(err)]
    errors = []
    for path in paths:
        schema: Mapping[str, Any] = {"$ref": root}
        for seg in path.split("."):
            while "$ref" in schema or schema.get("type") == "array":
                schema = (schemas()[schema["$ref"]] if "$ref" in schema
                          else schema.get("items", {}))
            props = schema.get("properties", {})
            if seg not in props:
                errors.append(f"Field mask path {path!r} names no field of {root} "
                              f"({seg!r} is not a field)")
                break
            schema = props[seg]
    return errors


# ---------------------------------------------------------------------------- chart rules


def _sources(data: Any) -> list[Mapping[str, Any]] | None:
    if not isinstance(data, Mapping):
        return None
    sr = data.get("sourceRange")
    if not isinstance(sr, Mapping) or not isinstance(sr.get("sources"), list):
        return None
    return sr["sources"]


def _span(gr: Mapping[str, Any]) -> tuple[int, int, int, int] | None:
    keys = ("startRowIndex", "endRowIndex", "startColumnIndex", "endColumnIndex")
    if not all(isinstance(gr.get(k), int) for k in keys):
        return None
    return tuple(int(gr[k]) for k in keys)  # type: ignore[return-value]


def _orientation(gr: Mapping[str, Any]) -> str | None:
    """'col' for one column wide, 'row' for one row tall; None when neither is known."""
    span = _span(gr)
    if span is None:
        return None
    r0, r1, c0, c1 = span
    if c1 - c0 == 1:
        return "col"
    if r1 - r0 == 1:
        return "row"
    return None


def _next_to(a: Mapping[str, Any], b: Mapping[str, Any], orientation: str, steps: int) -> bool:
    """b is `steps` columns (rows) after a, over the same rows (columns), same sheet."""
    sa, sb = _span(a), _span(b)
    if sa is None or sb is None or a.get("sheetId", 0) != b.get("sheetId", 0):
        return False
    if orientation == "col":
        return sa[:2] == sb[:2] and sb[2] == sa[2] + steps
    return sa[2:] == sb[2:] and sb[0] == sa[0] + steps


def chart_rule_errors(spec: Mapping[str, Any]) -> Iterator[str]:
    """The ChartSourceRange and DataLabel.customLabelData rules of a BasicChartSpec."""
    domains = [_sources(d.get("domain")) for d in spec.get("domains") or []
               if isinstance(d, Mapping)]
    series = [s for s in spec.get("series") or [] if isinstance(s, Mapping)]
    lists: list[tuple[str, list[Mapping[str, Any]]]] = []
    lists += [(f"domains[{i}]", d) for i, d in enumerate(domains) if d is not None]
    lists += [(f"series[{i}]", src) for i, s in enumerate(series)
              if (src := _sources(s.get("series"))) is not None]
    orientation = None
    for where, sources in lists:
        for k, gr in enumerate(sources):
            o = _orientation(gr)
            if o is None:
                yield (f"{where} source {k}: exactly one dimension must have a length of 1 "
                       "(ChartSourceRange)")
            elif orientation is None:
                orientation = o
            elif o != orientation:
                yield f"{where} source {k}: all sources must have the same dimension of length 1"
    counts = {len(sources) for _, sources in lists}
    if len(counts) > 1:
        yield ("the domain and all series must have the same number of source ranges "
               f"(ChartSourceRange), got {sorted(counts)}")
        return
    n = counts.pop() if counts else 0
    if orientation is None or not lists:
        return
    if n > 1 and domains and domains[0] is not None:
        ordered = [domains[0]] + [_sources(s.get("series")) or [] for s in series]
        for k in range(n):
            for j in range(1, len(ordered)):
                if not _next_to(ordered[0][k], ordered[j][k], orientation, j):
                    yield (f"source offset {k}: series[{j - 1}] is not in order and contiguous "
                           "with the domain (ChartSourceRange)")
    for i, s in enumerate(series):
        label = s.get("dataLabel")
        if not isinstance(label, Mapping) or "customLabelData" not in label:
            continue
        labels = _sources(label["customLabelData"]) or []
        own = _sources(s.get("series")) or []
        if len(labels) != len(own):
            yield (f"series[{i}] customLabelData has {len(labels)} source ranges for "
                   f"{len(own)} series ranges (DataLabel)")
            continue
        for k, (lab, src) in enumerate(zip(labels, own, strict=True)):
            if n > 1 and not _next_to(src, lab, orientation, 1):
                yield (f"series[{i}] customLabelData source {k} must come from the next "
                       "column after the series' source range (DataLabel)")
            elif n <= 1 and _length(lab) != _length(src):
                yield f"series[{i}] customLabelData must be as long as the series (DataLabel)"


def _length(gr: Mapping[str, Any]) -> int | None:
    span = _span(gr)
    return None if span is None else max(span[1] - span[0], span[3] - span[2])


# ---------------------------------------------------------------------------- entry points


def validate(body: Any, schema: str = "BatchUpdateSpreadsheetRequest") -> list[str]:
    """Every way `body` breaks the discovery schema `schema` or the rules above ([] if none)."""
    walker = _Walker()
    walker.object(body, schema, "")
    return walker.errors


#: validate's answers by (schema, digest of the body's JSON text), for validate_once
_ANSWERS: dict[tuple[str, bytes], tuple[str, ...]] = {}
_ANSWERS_MAX = 4096


def validate_once(body: Any, schema: str = "BatchUpdateSpreadsheetRequest",
                  text: bytes | None = None) -> list[str]:
    """`validate`, answered from memory for a body seen before: the emulator receives the
    same bodies in test after test (every default push), and the walk is a pure function of
    the body's JSON text (which keeps 1, 1.0 and true apart) and the schema. `text`: the
    JSON text `body` was parsed from, when the caller has it (else it is written again)."""
    if text is None:
        text = json.dumps(body, allow_nan=True).encode()
    key = (schema, hashlib.sha256(text).digest())
    answer = _ANSWERS.get(key)
    if answer is None:
        answer = tuple(validate(body, schema))
        if len(_ANSWERS) >= _ANSWERS_MAX:
            _ANSWERS.clear()
        _ANSWERS[key] = answer
    return list(answer)


def validate_query_fields(mask: str, root: str = "Spreadsheet") -> list[str]:
    """A `fields` query parameter (partial response) against the response schema."""
    return mask_errors(mask, root)


def union_members() -> Sequence[tuple[str, str, str]]:
    """(schema, union, field) for every listed union member (for the test that they exist)."""
    return [(s, u, f) for s, unions in UNIONS.items() for u, fields in unions for f in fields]
