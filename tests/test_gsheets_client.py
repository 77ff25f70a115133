"""sheetgen.writers.google.client against the loopback emulator, with the real gspread and
google-auth."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import gspread
import pytest
from gspread.exceptions import APIError
from sheets_emulator import (
    FAST_RETRY,
    FAULT_TIMEOUT,
    SA_EMAIL,
    TEST_TIMEOUT,
    KeyPair,
    SheetsEmulator,
    Snapshot,
    generate_test_key,
    parse_a1,
)

from sheetgen.errors import SheetsError
from sheetgen.writers.google.client import (
    SCOPES,
    RetryingHTTPClient,
    RetryPolicy,
    authorize,
    open_spreadsheet,
    parse_spreadsheet_key,
    service_account_email,
)

KEY = "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd"
URL = f"https://docs.google.com/spreadsheets/d/{KEY}/edit#gid=0"


def one_line(err: pytest.ExceptionInfo[SheetsError]) -> str:
    msg = str(err.value)
    assert "\n" not in msg
    return msg


def batch_writes(emu: SheetsEmulator) -> int:
    return emu.count("POST", r":batchUpdate$")


def add_sheet_body(title: str = "Model") -> dict[str, Any]:
    return {"requests": [
        {"addSheet": {"properties": {"sheetId": 7, "title": title,
                                     "gridProperties": {"rowCount": 20, "columnCount": 5}}}},
        {"updateCells": {
            "start": {"sheetId": 7, "rowIndex": 0, "columnIndex": 0},
            "rows": [
                {"values": [{"userEnteredValue": {"numberValue": 2}},
                            {"userEnteredValue": {"formulaValue": "=A1*3"}},
                            {"userEnteredValue": {"stringValue": '=HYPERLINK("http://x","x")'}},
                            {"userEnteredValue": {"boolValue": True}}]},
                {"values": [{"userEnteredValue": {"stringValue": "peak"}}]},
            ],
            "fields": "userEnteredValue",
        }},
    ]}


# --------------------------------------------------------------------------- auth


def test_auth_sends_issued_bearer_token(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL], title="Roofline")
    sh = open_spreadsheet(gsheets_client, URL)
    assert sh.title == "Roofline"
    assert sheets_emulator.count("POST", r"^/token$", status=200) == 1
    get = next(r for r in sheets_emulator.requests if r.path.startswith("/v4/"))
    assert get.status == 200
    assert service_account_email(gsheets_client) == SA_EMAIL
    assert list(gsheets_client.http_client.auth.scopes) == list(SCOPES)


def test_request_without_token_is_401(sheets_emulator):
    import requests

    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    r = requests.get(f"{sheets_emulator.base_url}/v4/spreadsheets/{KEY}", timeout=5)
    assert r.status_code == 401
    assert r.json()["error"]["status"] == "UNAUTHENTICATED"
    r = requests.get(f"{sheets_emulator.base_url}/v4/spreadsheets/{KEY}", timeout=5,
                     headers={"Authorization": "Bearer made-up"})
    assert r.status_code == 401


def test_revoked_token_is_refreshed(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    open_spreadsheet(gsheets_client, KEY)
    sheets_emulator.revoke_tokens()
    open_spreadsheet(gsheets_client, KEY)  # google-auth refreshes on 401 and retries
    assert sheets_emulator.count("POST", r"^/token$", status=200) == 2


def test_key_signed_by_another_key_is_rejected(tmp_path, sheets_emulator, sa_key):
    sheets_emulator.register_service_account(SA_EMAIL, sa_key.public_key)
    other: KeyPair = generate_test_key()
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(sheets_emulator.service_account_info(other.private_pem)))
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    gc = authorize(path, http_client=sheets_emulator.http_client_class(**FAST_RETRY),
                   timeout=TEST_TIMEOUT)
    with pytest.raises(SheetsError) as err:
        open_spreadsheet(gc, KEY)
    msg = one_line(err)
    assert "rejected the service-account credentials" in msg
    assert "invalid_grant" in msg
    assert "PRIVATE KEY" not in msg and other.private_pem[40:80] not in msg
    assert sheets_emulator.count("POST", r"^/token$", status=400) >= 1
    assert sheets_emulator.count(None, r"^/v4/") == 0


@pytest.mark.parametrize("answer", [500, 503, {"status": 500, "body": "<html>oops</html>"}])
def test_token_service_failure_is_not_called_a_bad_key(sheets_emulator, gsheets_client,
                                                      monkeypatch, answer):
    import google.auth._exponential_backoff as backoff

    monkeypatch.setattr(backoff.time, "sleep", lambda s: None)  # google-auth's own retries
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sheets_emulator.inject(r"^/token$", [answer] * 10)
    with pytest.raises(SheetsError) as err:
        open_spreadsheet(gsheets_client, KEY)
    msg = one_line(err)
    assert msg.startswith("Google's token service failed")
    assert "not the key file" in msg and "rejected" not in msg
    assert sheets_emulator.count("POST", r"^/token$") >= 2  # google-auth retried it
    assert sheets_emulator.count(None, r"^/v4/") == 0


def test_missing_credentials_file(tmp_path, monkeypatch):
    with pytest.raises(SheetsError, match="not found") as err:
        authorize(tmp_path / "nope.json")
    one_line(err)
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    with pytest.raises(SheetsError, match="GOOGLE_APPLICATION_CREDENTIALS"):
        authorize()


def test_credentials_from_environment(service_account_file, sheets_emulator, monkeypatch):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(service_account_file))
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    gc = authorize(http_client=sheets_emulator.http_client_class(**FAST_RETRY))
    assert open_spreadsheet(gc, KEY).id == KEY


def test_not_json_credentials(tmp_path, sa_key):
    path = tmp_path / "sa.json"
    path.write_text("{'type': 'service_account', private_key: " + sa_key.private_pem)
    with pytest.raises(SheetsError, match="not valid JSON") as err:
        authorize(path)
    assert "PRIVATE" not in one_line(err)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"type": "authorized_user"}, "not a service-account key"),
        ({"type": None}, "not a service-account key"),
        ({"client_email": None}, "missing client_email"),
        ({"private_key": "-----BEGIN PRIVATE KEY-----\nnot-a-key\n-----END PRIVATE KEY-----\n"},
         "cannot be parsed"),
    ],
)
def test_bad_service_account_content(tmp_path, sheets_emulator, sa_key, change, expected):
    info = sheets_emulator.service_account_info(sa_key.private_pem)
    for k, v in change.items():
        if v is None:
            info.pop(k)
        else:
            info[k] = v
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(info))
    with pytest.raises(SheetsError, match=expected) as err:
        authorize(path)
    msg = one_line(err)
    assert "BEGIN PRIVATE KEY" not in msg and "not-a-key" not in msg
    assert sa_key.private_pem[40:80] not in msg


def test_json_list_is_not_a_key(tmp_path):
    path = tmp_path / "sa.json"
    path.write_text("[1, 2]")
    with pytest.raises(SheetsError, match="expected a JSON object"):
        authorize(path)


def test_existing_client_is_reused(sheets_emulator, gsheets_client):
    # A Colab-style client (plain gspread HTTPClient); authorize() keeps its session and auth.
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    plain = gspread.Client(auth=gsheets_client.http_client.auth,
                           http_client=type(gsheets_client.http_client))
    assert authorize(client=plain) is plain  # already retrying: used as is
    colab_like = gspread.Client(auth=gsheets_client.http_client.auth)
    wrapped = authorize(client=colab_like, http_client=sheets_emulator.http_client_class())
    assert wrapped.http_client.session is colab_like.http_client.session
    assert isinstance(wrapped.http_client, RetryingHTTPClient)
    assert open_spreadsheet(wrapped, KEY).id == KEY


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize(
    "text",
    [
        KEY,
        f"  {KEY}\n",
        URL,
        f"https://docs.google.com/spreadsheets/d/{KEY}",
        f"https://docs.google.com/spreadsheets/d/{KEY}/edit?usp=sharing",
        f"https://docs.google.com/spreadsheets/u/1/d/{KEY}/edit#gid=12",
        f"https://docs.google.com/spreadsheet/ccc?key={KEY}&hl=en",
    ],
)
def test_parse_key_good(text):
    assert parse_spreadsheet_key(text) == KEY


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Sheet1",
        "https://docs.google.com/document/d/",
        "https://example.com/foo",
        f"{KEY} extra",
        "https://docs.google.com/spreadsheets/d/e/2PACX-1vQabcdefghijklmnopqrstuvwxyz/pubhtml",
    ],
)
def test_parse_key_bad(text):
    with pytest.raises(SheetsError) as err:
        parse_spreadsheet_key(text)
    msg = one_line(err)
    assert repr(text.strip())[:40].strip("'") in msg or "published" in msg


# --------------------------------------------------------------------------- access errors


def test_not_shared_names_the_service_account(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=["someone@example.com"])
    with pytest.raises(SheetsError) as err:
        open_spreadsheet(gsheets_client, URL)
    msg = one_line(err)
    assert f"Share it (Editor) with {SA_EMAIL}" in msg
    assert KEY in msg
    assert sheets_emulator.count("GET", KEY, status=403) == 1  # not retried


def test_unknown_spreadsheet_same_message(sheets_emulator, gsheets_client):
    with pytest.raises(SheetsError) as err:
        open_spreadsheet(gsheets_client, KEY)
    msg = one_line(err)
    assert "not found or not shared" in msg and SA_EMAIL in msg
    assert sheets_emulator.count("GET", KEY, status=404) == 1


def test_api_disabled(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sheets_emulator.api_enabled = False
    with pytest.raises(SheetsError) as err:
        open_spreadsheet(gsheets_client, KEY)
    msg = one_line(err)
    assert msg.startswith(
        f"Google Sheets API is not enabled for project {sheets_emulator.project_number}"
    )
    assert "console.cloud.google.com/apis/library/sheets.googleapis.com" in msg


def test_reader_cannot_write(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with={SA_EMAIL: "reader"})
    sh = open_spreadsheet(gsheets_client, KEY)
    with pytest.raises(APIError) as err:
        sh.batch_update(add_sheet_body())
    assert err.value.response.status_code == 403


# --------------------------------------------------------------------------- retries


def test_retry_after_429_500_drop_timeout_applies_once(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    slept: list[float] = []
    # the "timeout" fault alone takes FAULT_TIMEOUT's 4 s of real time: a minute's budget, not
    # FAST_RETRY's 5 s, which a loaded CI overran with the faults before it
    gsheets_client.http_client.policy = dataclasses.replace(
        gsheets_client.http_client.policy, sleep=slept.append, max_attempts=6,
        max_elapsed=60.0
    )
    gsheets_client.set_timeout(FAULT_TIMEOUT)  # the fault outlasts it
    sheets_emulator.inject(
        r":batchUpdate$",
        [{"status": 429, "headers": {"Retry-After": "1"}}, 500, "drop", "timeout", 503],
    )
    reply = sh.batch_update(add_sheet_body())
    assert reply["replies"][0]["addSheet"]["properties"]["sheetId"] == 7
    assert batch_writes(sheets_emulator) == 6  # five faults, then success
    assert [r.fault for r in sheets_emulator.requests if r.path.endswith(":batchUpdate")] == [
        "status", "status", "drop", "timeout", "status", None
    ]
    assert slept[0] == 1.0  # Retry-After honoured
    assert all(s < 0.1 for s in slept[1:])
    titles = [ws.title for ws in sh.worksheets()]
    assert titles.count("Model") == 1
    assert len(gsheets_client.http_client.attempts_log) == 5


def test_permanent_429_gives_up_bounded(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    gsheets_client.http_client.policy = RetryPolicy(
        max_attempts=4, max_elapsed=2.0, base_delay=0.01, max_delay=0.02
    )
    sheets_emulator.inject(r":batchUpdate$", [429] * 10)
    t0 = time.monotonic()
    with pytest.raises(SheetsError) as err:
        sh.batch_update(add_sheet_body())
    assert time.monotonic() - t0 < 2.0
    msg = one_line(err)
    assert "quota exceeded after 4 attempts" in msg and "RESOURCE_EXHAUSTED" in msg
    assert batch_writes(sheets_emulator) == 4
    assert [ws.title for ws in sh.worksheets()] == ["Sheet1"]


def test_elapsed_cap_stops_long_retry_after(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    gsheets_client.http_client.policy = RetryPolicy(max_attempts=10, max_elapsed=5.0)
    sheets_emulator.inject(r":batchUpdate$", [{"status": 429, "headers": {"Retry-After": "30"}}])
    t0 = time.monotonic()
    with pytest.raises(SheetsError, match="after 1 attempt "):
        sh.batch_update(add_sheet_body())
    assert time.monotonic() - t0 < 1.0  # gave up instead of sleeping 30 s


def test_connection_errors_give_up_with_reason(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    gsheets_client.http_client.policy = dataclasses.replace(
        gsheets_client.http_client.policy, max_attempts=2
    )
    sheets_emulator.inject(r":batchUpdate$", ["drop", "drop"])
    with pytest.raises(SheetsError, match=r"Could not reach the Google Sheets API after 2 "):
        sh.batch_update(add_sheet_body())


def test_lost_response_is_not_applied_twice(sheets_emulator, gsheets_client):
    # The batch applied but its response was lost; the retry fails cleanly (duplicate title,
    # 400, not retried) instead of adding a second sheet.
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    sheets_emulator.inject(r":batchUpdate$", ["drop_after"])
    with pytest.raises(APIError) as err:
        sh.batch_update(add_sheet_body())
    assert err.value.response.status_code == 400
    assert "already exists" in str(err.value)
    assert [ws.title for ws in sh.worksheets()] == ["Sheet1", "Model"]


# --------------------------------------------------------------------------- round trip


def test_batch_update_round_trip_typed(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    reply = sh.batch_update(add_sheet_body())
    assert reply["spreadsheetId"] == KEY and len(reply["replies"]) == 2
    got = sh.values_get("Model!A1:E5", params={"valueRenderOption": "FORMULA"})
    assert got["range"] == "Model!A1:E5"
    # FORMULA render shows a text cell's text as is (as Google does, as far as we know), so
    # text '=HYPERLINK(...)' looks like a formula there; the stored type says otherwise.
    assert got["values"] == [[2, "=A1*3", '=HYPERLINK("http://x","x")', True], ["peak"]]
    sheets_emulator.formula_render_quotes_text = True
    quoted = sh.values_get("Model!C1", params={"valueRenderOption": "FORMULA"})
    assert quoted["values"] == [["'=HYPERLINK(\"http://x\",\"x\")"]]
    cell = sheets_emulator.cell(KEY, "Model", "C1")
    assert cell == {"userEnteredValue": {"stringValue": '=HYPERLINK("http://x","x")'}}
    meta = sh.fetch_sheet_metadata(
        {"includeGridData": "true", "fields": "sheets(data,properties.title)"}
    )
    model = next(s for s in meta["sheets"] if s["properties"]["title"] == "Model")
    first = model["data"][0]["rowData"][0]["values"]
    assert first[1]["userEnteredValue"] == {"formulaValue": "=A1*3"}
    assert first[2]["userEnteredValue"]["stringValue"].startswith("=HYPERLINK")


def test_unformatted_uses_compute_hook(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    sh.batch_update(add_sheet_body("GPU Specs"))
    params = {"valueRenderOption": "UNFORMATTED_VALUE"}
    # The default hook calculates a formula, as Google does (=A1*3 with A1 = 2), in
    # values.get and in spreadsheets.get's effectiveValue alike.
    assert sh.values_get("'GPU Specs'!B1:B2", params=params)["values"] == [[6]]
    grid = sh.fetch_sheet_metadata({"includeGridData": "true",
                                    "ranges": "'GPU Specs'!B1", "fields": "sheets.data"})
    assert grid["sheets"][-1]["data"][0]["rowData"][0]["values"][1]["effectiveValue"] == {
        "numberValue": 6}
    # No hook at all: asking for a formula's value fails loudly, never a silent blank (a
    # blank made `check` of a correct push report blank Inputs cells); formulas, text and
    # numbers still read back (trailing empties trimmed).
    sheets_emulator.compute = None
    with pytest.raises(APIError) as err:
        sh.values_get("'GPU Specs'!B1", params=params)
    assert err.value.response.status_code == 501 and "no compute hook" in str(err.value)
    assert sh.values_get("'GPU Specs'!A1:A3", params=params)["values"] == [[2], ["peak"]]
    assert sh.values_get("'GPU Specs'!B1:B2", params={"valueRenderOption": "FORMULA"})[
        "values"] == [["=A1*3"]]

    seen: list[Snapshot] = []

    def compute(snap: Snapshot) -> dict[tuple[str, str], Any]:
        seen.append(snap)
        a1 = snap.sheets["GPU Specs"]["A1"]["numberValue"]
        return {("GPU Specs", "B1"): a1 * 3}

    sheets_emulator.compute = compute
    got = sh.values_batch_get(["'GPU Specs'!A1:D2", "'GPU Specs'!B1"], params=params)
    assert got["valueRanges"][0]["values"] == [
        [2, 6, '=HYPERLINK("http://x","x")', True], ["peak"]]
    assert got["valueRanges"][1]["values"] == [[6]]
    assert len(seen) == 1  # cached per revision
    assert seen[0].sheets["GPU Specs"]["B1"] == {"formulaValue": "=A1*3"}


def test_batch_with_bad_request_changes_nothing(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    body = add_sheet_body()
    body["requests"].append({"addNamedRange": {"namedRange": {
        "name": "PEAK_FLOPS", "range": {"sheetId": 99, "startRowIndex": 0, "endRowIndex": 1}}}})
    with pytest.raises(APIError) as err:
        sh.batch_update(body)
    assert err.value.response.status_code == 400
    assert "requests[2].addNamedRange" in str(err.value)
    assert [ws.title for ws in sh.worksheets()] == ["Sheet1"]
    assert sheets_emulator.spreadsheets[KEY].named_ranges == []


def test_unknown_request_kind_and_field_rejected(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    with pytest.raises(APIError, match="Unknown name \"frobnicate\""):
        sh.batch_update({"requests": [{"frobnicate": {}}]})
    chart = {"addChart": {"chart": {
        "spec": {"basicChart": {"chartType": "SCATTER",
                                "axis": [{"position": "BOTTOM_AXIS", "logScale": True}]}},
        "position": {"overlayPosition": {"anchorCell": {"sheetId": 0}}}}}}
    with pytest.raises(APIError, match="Unknown name \"logScale\""):
        sh.batch_update({"requests": [chart]})


def test_values_update_raw_and_user_entered(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, sheets=["My Sheet"], shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    ws = sh.sheet1
    ws.update([["=1+2", "7", "x"]], "A1")  # gspread default: RAW
    ws.update([["=1+2", "7", "'8"]], "A2", value_input_option="USER_ENTERED")
    stored = sheets_emulator.snapshot(KEY).sheets["My Sheet"]
    assert stored["A1"] == {"stringValue": "=1+2"} and stored["B1"] == {"stringValue": "7"}
    assert stored["A2"] == {"formulaValue": "=1+2"} and stored["B2"] == {"numberValue": 7}
    assert stored["C2"] == {"stringValue": "8"}
    got = ws.get("A1:C2", value_render_option="FORMULA")
    assert got == [["=1+2", "7", "x"], ["=1+2", 7, "8"]]
    with pytest.raises(APIError, match="exceeds grid limits"):
        ws.update([[1]], "A1001")


def test_layout_requests_are_stored(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, sheets=["Model", "GPU Specs"], shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    rng = {"sheetId": 0, "startRowIndex": 1, "endRowIndex": 10, "startColumnIndex": 2,
           "endColumnIndex": 3}
    reply = sh.batch_update({"requests": [
        {"addNamedRange": {"namedRange": {"name": "PEAK_FLOPS", "range": {
            "sheetId": 1, "startRowIndex": 2, "endRowIndex": 3, "startColumnIndex": 1,
            "endColumnIndex": 2}}}},
        {"setDataValidation": {"range": rng, "rule": {"condition": {
            "type": "ONE_OF_RANGE", "values": [{"userEnteredValue": "='GPU Specs'!A2:A9"}]},
            "strict": True, "showCustomUi": True}}},
        {"addConditionalFormatRule": {"index": 0, "rule": {"ranges": [rng], "booleanRule": {
            "condition": {"type": "NUMBER_GREATER", "values": [{"userEnteredValue": "0"}]},
            "format": {"backgroundColorStyle": {"rgbColor": {"red": 1}}}}}}},
        {"repeatCell": {"range": rng, "cell": {"userEnteredFormat": {
            "numberFormat": {"type": "NUMBER", "pattern": "0.00E+00"}}},
            "fields": "userEnteredFormat.numberFormat"}},
        {"updateSheetProperties": {"properties": {"sheetId": 0, "gridProperties": {
            "frozenRowCount": 1}}, "fields": "gridProperties.frozenRowCount"}},
        {"updateDimensionProperties": {"range": {"sheetId": 0, "dimension": "COLUMNS",
                                                 "startIndex": 0, "endIndex": 1},
                                       "properties": {"pixelSize": 180}, "fields": "pixelSize"}},
        {"mergeCells": {"range": {"sheetId": 0, "startRowIndex": 0, "endRowIndex": 1,
                                  "startColumnIndex": 0, "endColumnIndex": 3},
                        "mergeType": "MERGE_ALL"}},
        {"updateBorders": {"range": rng, "top": {"style": "SOLID"}}},
        {"addChart": {"chart": {"spec": {"title": "Roofline", "basicChart": {
            "chartType": "SCATTER", "legendPosition": "BOTTOM_LEGEND",
            "axis": [{"position": "BOTTOM_AXIS", "title": "log10 intensity"}],
            "domains": [{"domain": {"sourceRange": {"sources": [rng]}}}],
            "series": [{"series": {"sourceRange": {"sources": [rng]}},
                        "targetAxis": "LEFT_AXIS"}]}},
            "position": {"overlayPosition": {"anchorCell": {"sheetId": 0, "rowIndex": 12,
                                                            "columnIndex": 1}}}}}},
    ]})
    named = reply["replies"][0]["addNamedRange"]["namedRange"]
    assert named["name"] == "PEAK_FLOPS" and named["namedRangeId"]
    assert reply["replies"][8]["addChart"]["chart"]["chartId"]
    meta = sh.fetch_sheet_metadata()
    assert meta["namedRanges"][0]["name"] == "PEAK_FLOPS"
    model = meta["sheets"][0]
    assert model["properties"]["gridProperties"]["frozenRowCount"] == 1
    assert model["charts"][0]["spec"]["basicChart"]["chartType"] == "SCATTER"
    assert model["conditionalFormats"][0]["booleanRule"]["condition"]["type"] == "NUMBER_GREATER"
    assert model["merges"][0]["endColumnIndex"] == 3
    c2 = sheets_emulator.cell(KEY, "Model", "C2")
    assert c2["dataValidation"]["condition"]["type"] == "ONE_OF_RANGE"
    assert c2["userEnteredFormat"]["numberFormat"]["pattern"] == "0.00E+00"
    assert c2["userEnteredFormat"]["borders"]["top"] == {"style": "SOLID"}
    assert sheets_emulator.spreadsheets[KEY].sheets[0].col_meta[0] == {"pixelSize": 180}
    # Named ranges resolve in values.get, like Google.
    assert sh.values_get("PEAK_FLOPS")["range"] == "'GPU Specs'!B3"


def test_parse_a1_forms():
    assert parse_a1("'It''s'!A1:B2").sheet == "It's"
    r = parse_a1("Model!C5:D")
    assert (r.r0, r.r1, r.c0, r.c1) == (4, None, 2, 4)
    assert parse_a1("Model").sheet == "Model"


def test_suite_writes_no_key_to_repo():
    # Keys are generated at test time; nothing under tests/ contains key material.
    here = Path(__file__).parent
    for p in here.glob("*.py"):
        assert "BEGIN PRIVATE KEY-----\nMII" not in p.read_text()


def test_more_request_kinds_and_value_endpoints(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, sheets=["A", "B"], shared_with=[SA_EMAIL])
    sh = open_spreadsheet(gsheets_client, KEY)
    reply = sh.batch_update({"requests": [
        {"addNamedRange": {"namedRange": {"namedRangeId": "n1", "name": "HBM_BW", "range": {
            "sheetId": 1, "startRowIndex": 0, "endRowIndex": 1, "startColumnIndex": 0,
            "endColumnIndex": 1}}}},
        {"updateSheetProperties": {"properties": {"sheetId": 0, "title": "Renamed", "index": 1},
                                   "fields": "title,index"}},
    ]})
    assert reply["replies"] == [reply["replies"][0], {}]
    assert [ws.title for ws in sh.worksheets()] == ["B", "Renamed"]
    sh.values_batch_update({"valueInputOption": "USER_ENTERED", "data": [
        {"range": "B!A1:B2", "values": [["1", "=A1*2"], ["TRUE", "x"]]},
        {"range": "Renamed!C3", "majorDimension": "COLUMNS", "values": [[1, 2]]},
    ]})
    cols = sh.values_get("B!A1:B2", params={"valueRenderOption": "FORMULA",
                                             "majorDimension": "COLUMNS"})
    assert cols["values"] == [[1, True], ["=A1*2", "x"]]
    assert sh.values_get("Renamed!C3:C4")["values"] == [["1"], ["2"]]
    assert sh.values_get("HBM_BW", params={"valueRenderOption": "UNFORMATTED_VALUE"})[
        "values"] == [[1]]
    sh.values_clear("B!A1:A2")
    assert sh.values_get("B!A1:B2", params={"valueRenderOption": "FORMULA"})["values"] == [
        ["", "=A1*2"], ["", "x"]]
    sh.batch_update({"requests": [{"deleteNamedRange": {"namedRangeId": "n1"}},
                                  {"deleteSheet": {"sheetId": 1}}]})
    meta = sh.fetch_sheet_metadata()
    assert "namedRanges" not in meta and [s["properties"]["title"] for s in meta["sheets"]] == [
        "Renamed"]
    with pytest.raises(APIError, match="remove all the sheets"):
        sh.batch_update({"requests": [{"deleteSheet": {"sheetId": 0}}]})
    with pytest.raises(APIError, match="exceeds grid limits"):
        sh.batch_update({"requests": [{"updateCells": {
            "start": {"sheetId": 0, "rowIndex": 1000, "columnIndex": 0},
            "rows": [{"values": [{"userEnteredValue": {"numberValue": 1}}]}],
            "fields": "userEnteredValue"}}]})
    with pytest.raises(APIError, match="not valid"):
        sh.batch_update({"requests": [{"addNamedRange": {"namedRange": {
            "name": "A1", "range": {"sheetId": 0}}}}]})
