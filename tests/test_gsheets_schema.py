"""Every request sheetgen sends is one Google's published Sheets API v4 schema accepts.

The schema is Google's discovery document as the google-api-python-client wheel ships it
(tests/sheets_discovery.py); the emulator validates every body it receives against it, so all
push tests are covered; here the validator itself is tested, the rules Google states only in
prose are held to Google's own examples, and every push scenario's bodies are validated
without the emulator too.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import pytest
import sheets_discovery as discovery
from sheets_emulator import SA_EMAIL

import sheetgen
from sheetgen.errors import SheetsError
from sheetgen.writers.google import requests as gsheets_requests
from sheetgen.writers.google import sheets as gsheets
from sheetgen.writers.google.sheets import SpreadsheetState, requests_for

KEY = "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd"
SHAPES = [(1, 4096, 4096), (64, 8192, 8192), (4096, 4096, 4096)]


# --------------------------------------------------------------------------- the document


def test_discovery_document_is_googles():
    doc = discovery.document()
    assert doc["name"] == "sheets" and doc["version"] == "v4"
    assert doc["rootUrl"] == "https://sheets.googleapis.com/"
    assert len(discovery.REVISION) == 8 and discovery.REVISION.isdigit()
    assert "BatchUpdateSpreadsheetRequest" in discovery.schemas()


def test_union_list_names_real_fields():
    schemas = discovery.schemas()
    members = discovery.union_members()
    assert len(members) > 40
    for schema, union, field in members:
        assert schema in schemas, schema
        assert field in schemas[schema]["properties"], (schema, union, field)
    for schema, unions in discovery.UNIONS.items():
        for _, fields in unions:
            assert len(fields) >= 2 and len(set(fields)) == len(fields), schema


def test_every_field_mask_has_a_known_root():
    schemas = discovery.schemas()
    masks = {name for name, s in schemas.items()
             for p in s.get("properties", {}).values() if p.get("format") == "google-fieldmask"}
    assert masks and masks <= set(discovery.MASK_ROOTS), masks - set(discovery.MASK_ROOTS)
    assert set(discovery.MASK_ROOTS.values()) <= set(schemas)


# --------------------------------------------------------------------------- the validator


def _body(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"requests": list(requests)}


GRID = {"sheetId": 1, "startRowIndex": 0, "endRowIndex": 2, "startColumnIndex": 0,
        "endColumnIndex": 1}


@pytest.mark.parametrize(("body", "needle"), [
    (_body({"frobnicate": {}}), 'Unknown name "frobnicate"'),
    (_body({"addSheet": {"properties": {"title": "x", "gridProperties": {"rowCount": "9"}}}}),
     "TYPE_INT32"),
    (_body({"addSheet": {"properties": {"sheetId": 2**31}}}), "out of range"),
    (_body({"addSheet": {"properties": {"sheetType": "SPREADSHEET"}}}), "TYPE_ENUM"),
    (_body({"repeatCell": {"range": GRID, "cell": {}, "fields": "userEnteredValu"}}),
     "'userEnteredValu' is not a field"),
    (_body({"repeatCell": {"range": GRID, "cell": {}, "fields": "userEnteredFormat.color"}}),
     "names no field of CellData"),
    (_body({"updateCells": {"start": {"sheetId": 1}, "range": GRID, "fields": "note"}}),
     "Union field area"),
    (_body({"repeatCell": {"range": GRID, "cell": {"userEnteredValue": {
        "numberValue": 1, "stringValue": "1"}}, "fields": "userEnteredValue"}}),
     "Union field value"),
    (_body({"repeatCell": {"range": GRID, "cell": {"userEnteredFormat": {
        "backgroundColor": {"red": 1}}}, "fields": "userEnteredFormat"}}), "Deprecated"),
    (_body({"repeatCell": {"range": GRID, "cell": {"userEnteredValue": {
        "numberValue": float("nan")}}, "fields": "userEnteredValue"}}), "not finite"),
    (_body({"repeatCell": {"range": GRID, "cell": {"effectiveValue": {"numberValue": 1}},
                           "fields": "effectiveValue"}}), "Read-only"),
    (_body({}), "Union field kind of Request must be set"),
    (_body({"addSheet": {}, "deleteSheet": {"sheetId": 1}}), "several members"),
])
def test_validator_catches(body, needle):
    errors = discovery.validate(body)
    assert any(needle in e for e in errors), errors


def test_validator_accepts_nulls_and_wildcards():
    body = _body({"repeatCell": {"range": GRID, "cell": {"note": None}, "fields": "*"}},
                 {"updateCells": {"range": GRID, "rows": [], "fields": "userEnteredFormat("
                                  "textFormat(bold,foregroundColorStyle),numberFormat)"}})
    assert discovery.validate(body) == []
    assert discovery.validate_query_fields(gsheets.STATE_FIELDS) == []
    assert discovery.validate_query_fields("sheets(properties(tittle))") != []


def _col(c: int, r0: int = 0, r1: int = 5) -> dict[str, int]:
    return {"sheetId": 0, "startRowIndex": r0, "endRowIndex": r1, "startColumnIndex": c,
            "endColumnIndex": c + 1}


def _chart(domain, *series, labels=None) -> dict[str, Any]:
    items = [{"series": {"sourceRange": {"sources": s}}} for s in series]
    if labels is not None:
        items[-1]["dataLabel"] = {"type": "CUSTOM",
                                  "customLabelData": {"sourceRange": {"sources": labels}}}
    return {"chartType": "SCATTER", "domains": [{"domain": {"sourceRange": {"sources": domain}}}],
            "series": items}


def test_chart_rules_hold_googles_examples():
    A, B, C, D, E, F = range(6)
    # ChartSourceRange's two valid configurations, verbatim: A1:A5 | B1:B5 | D6:D10, and
    # A1:A5,C10:C12 | B1:B5,D10:D12 | C1:C5,E10:E12.
    ok1 = _chart([_col(A)], [_col(B)], [_col(D, 5, 10)])
    ok2 = _chart([_col(A), _col(C, 9, 12)], [_col(B), _col(D, 9, 12)],
                 [_col(C), _col(E, 9, 12)])
    assert list(discovery.chart_rule_errors(ok1)) == []
    assert list(discovery.chart_rule_errors(ok2)) == []
    # DataLabel: series B2:B4,E6:E8 takes its labels from C2:C4,F6:F8.
    split = [_col(B, 1, 4), _col(E, 5, 8)]
    good = _chart([_col(A, 1, 4), _col(D, 5, 8)], split,
                  labels=[_col(C, 1, 4), _col(F, 5, 8)])
    assert list(discovery.chart_rule_errors(good)) == []
    bad = copy.deepcopy(good)
    bad["series"][0]["dataLabel"]["customLabelData"]["sourceRange"]["sources"][1] = _col(A, 5, 8)
    assert any("next column" in e for e in discovery.chart_rule_errors(bad))
    uneven = _chart([_col(A), _col(C, 9, 12)], [_col(B)])
    assert any("same number" in e for e in discovery.chart_rule_errors(uneven))
    square = _chart([{"sheetId": 0, "startRowIndex": 0, "endRowIndex": 2,
                      "startColumnIndex": 0, "endColumnIndex": 2}], [_col(B, 0, 2)])
    assert any("length of 1" in e for e in discovery.chart_rule_errors(square))


def test_the_old_chart_layout_is_refused():
    """Before: domain T,O; ceiling U,V (pad); points V,P; labels V,N: the second offset runs
    O, V, P (not in order) and the labels are not right of the points."""
    col_t, col_u, col_v, col_o, col_p, col_n = 19, 20, 21, 14, 15, 13
    old = _chart([_col(col_t, 5, 12), _col(col_o, 5, 13)],
                 [_col(col_u, 5, 12), _col(col_v, 5, 13)],
                 [_col(col_v, 5, 12), _col(col_p, 5, 13)],
                 labels=[_col(col_v, 5, 12), _col(col_n, 5, 13)])
    errors = list(discovery.chart_rule_errors(old))
    assert any("source offset 1" in e and "in order and contiguous" in e for e in errors)
    assert any("next column" in e for e in errors)


# --------------------------------------------------------------------------- every scenario


SCENARIOS: dict[str, dict[str, Any]] = {
    "default": {},
    "practice_layers": {"practice": 6, "layers": 12},
    "gpus_h100_fp8": {"gpus": 8, "gpu": "H100 SXM", "dtype": "fp8", "micro_batches": 4},
    "no_spare_rows": {"spare_rows": 0},
    "many_rows_unlabelled": {"shapes": [(i + 1, 64, 128) for i in range(800)]},
}
STATES = {
    "empty": None,
    "replace_beside_a_tab": SpreadsheetState(
        (("Notes", 0), ("Inputs", 9), ("Matmul", 1764000001)), (("PEAK_FLOPS", "x1", 9),),
        ((1764000001, 1764000500),), ((0, 26000), (9, 26000))),
    "replace_all": SpreadsheetState((("Inputs", 9),), (), (), ((9, 26000),)),
}


@functools.cache
def _scenario_plan(scenario: str) -> Any:
    """The scenario's plan, made once for its three states (requests_for only reads it)."""
    return sheetgen.plan(chart_helpers=True,
                         **{"shapes": SHAPES, "spare_rows": 5} | SCENARIOS[scenario])


@pytest.mark.parametrize("state", list(STATES))
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_push_body_is_schema_valid(scenario, state):
    p = _scenario_plan(scenario)
    max_bytes = 60_000 if scenario == "many_rows_unlabelled" else gsheets.MAX_BODY_BYTES
    batches = requests_for(p, STATES[state], max_bytes=max_bytes)
    assert batches
    for body in batches:
        assert discovery.validate({"requests": body}) == []
        assert len(json.dumps({"requests": body})) <= max_bytes
    kinds = {next(iter(r)) for b in batches for r in b}
    assert "addChart" in kinds and "setDataValidation" in kinds


def test_the_emulator_refuses_what_the_schema_refuses(sheets_emulator, gsheets_client,
                                                      monkeypatch):
    """The hook is live: a push whose body breaks the schema gets Google's 400, and a good
    push is validated body by body."""
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sheetgen.push(KEY, client=gsheets_client, shapes=SHAPES, spare_rows=2)
    assert sheets_emulator.validated_bodies >= 1 and sheets_emulator.schema_errors == []
    real = gsheets_requests.cell_format

    def deprecated(*args: Any) -> dict[str, Any]:
        out = real(*args)
        if "backgroundColorStyle" in out:
            out["backgroundColor"] = out["backgroundColorStyle"]["rgbColor"]
        return out

    monkeypatch.setattr(gsheets_requests, "cell_format", deprecated)
    with pytest.raises(SheetsError, match=r"HTTP 400 .*Deprecated field CellFormat"):
        sheetgen.push(KEY, client=gsheets_client, shapes=SHAPES, spare_rows=2, replace=True)
    assert sheets_emulator.schema_errors


def test_a_layout_the_split_domain_rules_refuse_is_not_sent():
    """_chart_request raises rather than sends: a series' y not at column i + 1 right of its
    x, or point labels on a series that is not the last (its "next column" is the next
    series' own column)."""
    from sheetgen.layout.charts import ChartPlan, SeriesPlan

    def plan(*series: SeriesPlan) -> ChartPlan:
        return ChartPlan("t", 0, 0, series, "x", "y")

    ceiling = SeriesPlan("ceiling", (10, 5, 11), (11, 5, 11), line=True)
    a = SeriesPlan("a", (15, 5, 20), (17, 5, 20))  # i = 1: y at x + 2, as laid out
    b = SeriesPlan("b", (15, 5, 20), (18, 5, 20))
    request = gsheets_requests._chart_request(0, plan(ceiling, a, b), 7)
    spec = request["addChart"]["chart"]["spec"]["basicChart"]
    assert list(discovery.chart_rule_errors(spec)) == []
    assert [s["startColumnIndex"] for s in spec["domains"][0]["domain"]["sourceRange"]
            ["sources"]] == [10, 15]  # one offset per distinct x column
    with pytest.raises(ValueError, match="not column 2 right of its x"):
        gsheets_requests._chart_request(0, plan(ceiling, SeriesPlan("a", (15, 5, 20),
                                                                    (16, 5, 20))), 7)
    labelled = SeriesPlan("a", (15, 5, 20), (17, 5, 20), labels=(18, 5, 20))
    with pytest.raises(ValueError, match="labels"):
        gsheets_requests._chart_request(0, plan(ceiling, labelled, b), 7)
    last = SeriesPlan("b", (15, 5, 20), (18, 5, 20), labels=(19, 5, 20))
    spec = gsheets_requests._chart_request(0, plan(ceiling, a, last), 7)["addChart"]
    assert list(discovery.chart_rule_errors(spec["chart"]["spec"]["basicChart"])) == []
