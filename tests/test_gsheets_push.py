"""`sheetgen push / read / check` against the loopback Sheets emulator, with the real gspread
and google-auth clients (no network).

Formula values (UNFORMATTED_VALUE) come from the emulator's default ``compute`` hook,
`engine_compute` (tests/sheets_emulator/compute.py), which evaluates the formulas **as stored
in the emulator** (typed cells, formula columns filled down by `repeatCell`, named ranges)
with sheetgen's formula evaluator, an engine independent of the reference model, so `check`
compares two independent answers, as it does against Google.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import pickle
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from helpers import built_workbook, one_line_error, preset_toml, run
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from sheets_emulator import (
    FAST_RETRY,
    FAULT_TIMEOUT,
    SA_EMAIL,
    TEST_TIMEOUT,
    HTTPReply,
    SheetsEmulator,
    a1,
    engine_compute,
    google_error,
)
from xlsxwriter.utility import xl_col_to_name

import sheetgen
import sheetgen.writers.google.client
from sheetgen.errors import SheetsError
from sheetgen.inputs.presets import builtin_presets
from sheetgen.layout import palette
from sheetgen.layout.styles import NUMBER_FORMATS
from sheetgen.sheets import chart_helpers, matmul
from sheetgen.sheets.parallel import chart as parallel_chart
from sheetgen.sheets.parallel import sheet as parallel
from sheetgen.writers.google import requests as gsheets_requests
from sheetgen.writers.google import sheets as gsheets
from sheetgen.writers.google.client import authorize
from sheetgen.writers.google.sheets import SpreadsheetState, requests_for

KEY = "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd"
OTHER = "1ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210-_zyxw"
URL = f"https://docs.google.com/spreadsheets/d/{KEY}/edit#gid=0"
SHAPES = [(1, 4096, 4096), (64, 8192, 8192), (4096, 4096, 4096)]
#: Matmul, Google only: the chart helpers (LOG10 columns, blank spacers)
_CH = chart_helpers
#: log10 ceiling x, ceiling y, ridge y | log10 points x, compute-bound y, memory-bound y
LOG_X, LOG_CEIL, LOG_RIDGE = (xl_col_to_name(_CH.CEILING_BLOCK + i) for i in range(3))
LOG_PX, LOG_COMP, LOG_MEM = (xl_col_to_name(_CH.POINTS_BLOCK + i) for i in (0, 3, 4))
LOG_COLUMNS = {LOG_X, LOG_CEIL, LOG_RIDGE, LOG_PX, LOG_COMP, LOG_MEM}
BLANK_COLUMNS = {xl_col_to_name(c) for c in _CH.BLANK_COLUMNS}
HELPER_COLUMNS = LOG_COLUMNS | BLANK_COLUMNS
#: Parallelism, Google only: log10 m and the three latencies (ms) right of the #N/A data
SWEEP_DATA = (parallel.SWEEP.col + len(parallel.SWEEP.all_columns()) + 1
              + parallel_chart.CHART_COLS + 1)
SWEEP_LOG = [xl_col_to_name(SWEEP_DATA + 4 + i) for i in range(4)]
GOOGLE_ONLY = {"Matmul": HELPER_COLUMNS, "Parallelism": set(SWEEP_LOG)}


# --------------------------------------------------------------------------- helpers


def dump(emu: SheetsEmulator, key: str) -> dict[str, Any]:
    """Everything the emulator stores for a spreadsheet, for identity comparisons: a deep
    copy (through pickle: a JSON round trip of the 15 MB a default push stores took 0.7 s,
    pickle's 0.2 s)."""
    ss = emu.spreadsheets[key]
    return pickle.loads(pickle.dumps({
        "sheets": [{
            "properties": s.properties,
            "cells": {a1(r, c): v for (r, c), v in sorted(s.cells.items())},
            "charts": s.charts, "conditional": s.conditional_formats, "merges": s.merges,
            "cols": {str(k): v for k, v in sorted(s.col_meta.items())},
        } for s in ss.sheets],
        "named": sorted(ss.named_ranges, key=lambda n: n["name"]),
    }, protocol=pickle.HIGHEST_PROTOCOL))


def writes(emu: SheetsEmulator) -> int:
    return emu.count("POST", r":batchUpdate$")


@pytest.fixture
def big_client(service_account_file, sheets_emulator):
    """Like gsheets_client, with a read timeout long enough for a 10,000-row batch."""
    return authorize(service_account_file,
                     http_client=sheets_emulator.http_client_class(**FAST_RETRY),
                     timeout=(2.0, 60.0))


@pytest.fixture
def shared(sheets_emulator):
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    return sheets_emulator


def _pushed_once(sa_key, tmp_path_factory, **kw: Any):
    """A fresh emulator, a client, and `push(client, **kw)` into KEY: (emulator, client,
    the push's result), for tests that only read what the push stored or computed (each of
    them pushed the same plan itself, ~1 s)."""
    with SheetsEmulator() as emu:
        emu.register_service_account(SA_EMAIL, sa_key.public_key)
        path = tmp_path_factory.mktemp("pushed") / "service_account.json"
        path.write_text(json.dumps(emu.service_account_info(sa_key.private_pem)))
        emu.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
        gc = authorize(path, http_client=emu.http_client_class(**FAST_RETRY),
                       timeout=TEST_TIMEOUT)
        result = push(gc, **kw)
        yield emu, gc, result


@pytest.fixture(scope="module")
def pushed(sa_key, tmp_path_factory):
    """The default push (A100 40GB SXM, bf16, efficiencies 1.0), read by several tests."""
    yield from _pushed_once(sa_key, tmp_path_factory)


@pytest.fixture(scope="module")
def pushed_h100(sa_key, tmp_path_factory):
    """The push with gpu="H100 SXM", read by several tests."""
    yield from _pushed_once(sa_key, tmp_path_factory, gpu="H100 SXM")


@pytest.fixture(scope="module")
def pushed_values(pushed):
    """What the emulator computes for the default push's formulas (`engine_compute`, 1 s),
    for the tests that hold them to hand figures; nothing writes to that spreadsheet."""
    shared, _, _ = pushed
    return engine_compute(shared.snapshot(KEY))


@pytest.fixture(scope="module")
def pushed_check(pushed):
    """`check_spreadsheet` of the default push (it has the emulator compute every formula
    and replans: 1.5 s), once for the tests that need it to pass."""
    shared, gc, _ = pushed
    assert shared.compute is engine_compute
    return sheetgen.check_spreadsheet(KEY, client=gc)


@pytest.fixture(scope="module")
def clean_push(pushed):
    """Everything the default push stored (`dump`): what a push that survived faults must
    have stored. Pushed into a fresh emulator; a spreadsheet's sheet ids and contents do not
    depend on the emulator or its other spreadsheets (the fault tests once pushed the same
    plan beside theirs to compare with)."""
    shared, _, _ = pushed
    return dump(shared, KEY)


def push(gc, **kw: Any):
    kw.setdefault("shapes", SHAPES)
    kw.setdefault("spare_rows", 5)
    return sheetgen.push(URL, client=gc, **kw)


# --------------------------------------------------------------------------- pure requests


def test_requests_are_typed_and_few():
    p = sheetgen.plan(shapes=SHAPES, spare_rows=5, chart_helpers=True)
    batches = requests_for(p)
    assert len(batches) == 1
    kinds = {next(iter(r)) for r in batches[0]}
    assert kinds <= {"addSheet", "addNamedRange", "updateDimensionProperties", "updateCells",
                     "repeatCell", "setDataValidation", "addConditionalFormatRule", "addChart",
                     "mergeCells"}
    for req in batches[0]:
        body = next(iter(req.values()))
        cells = [c for row in body.get("rows", []) for c in row.get("values", [])]
        cells += [body["cell"]] if "cell" in body else []
        for c in cells:
            uev = c.get("userEnteredValue")
            if uev:
                assert len(uev) == 1
                (kind, v), = uev.items()
                assert kind in ("formulaValue", "stringValue", "numberValue", "boolValue")
                assert (kind == "formulaValue") == (isinstance(v, str) and v.startswith("=")
                                                    and kind != "stringValue")
    # A replace deletes sheetgen's tabs and names first, in the same body.
    state = SpreadsheetState((("Notes", 0), ("Inputs", 9)), (("RIDGE", "x1", 9),))
    first = requests_for(p, state)[0]
    assert first[0] == {"deleteNamedRange": {"namedRangeId": "x1"}}
    assert first[1] == {"deleteSheet": {"sheetId": 9}}
    assert not any("deleteSheet" in r and r["deleteSheet"]["sheetId"] == 0 for r in first)


def test_large_plans_are_chunked_under_the_body_limit():
    p = sheetgen.plan(shapes=[(i + 1, 64, 64) for i in range(3000)], spare_rows=0,
                      chart_helpers=True)
    batches = requests_for(p, max_bytes=100_000)
    sizes = [len(json.dumps({"requests": b})) for b in batches]
    assert len(batches) > 1 and max(sizes) <= 100_000
    rows = sum(len(r["updateCells"]["rows"]) for b in batches for r in b
               if "updateCells" in r and r["updateCells"]["start"]["columnIndex"] == 0
               and r["updateCells"]["start"]["rowIndex"] >= 5
               and r["updateCells"]["fields"] == "userEnteredValue")
    assert rows >= 3000


# --------------------------------------------------------------------------- cells


def typed_from_xlsx(cell) -> dict[str, Any]:
    if cell.data_type == "f":
        return {"formulaValue": cell.value}
    if cell.data_type == "b":
        return {"boolValue": cell.value}
    if isinstance(cell.value, int | float):
        return {"numberValue": cell.value}
    return {"stringValue": cell.value}


def test_stored_cells_equal_the_xlsx_build(tmp_path, pushed_h100):
    out = sheetgen.build(tmp_path / "r.xlsx", shapes=SHAPES, spare_rows=5, gpu="H100 SXM")
    shared, _, result = pushed_h100  # push(client, gpu="H100 SXM")
    assert result.write_requests == 1
    # read-only: the cells stream by once (a full load, a second more, is not needed)
    wb = openpyxl.load_workbook(out, read_only=True)
    snap = shared.snapshot(KEY)
    assert [s.title for s in shared.spreadsheets[KEY].sheets] == ["Sheet1", *wb.sheetnames]
    n = 0
    for ws in wb.worksheets:
        google = dict(snap.sheets[ws.title])
        for row in ws.iter_rows():
            for cell in row:
                if cell.value is None:
                    continue
                got = google.pop(cell.coordinate, None)
                want = typed_from_xlsx(cell)
                if "numberValue" in want and got and "numberValue" in got:
                    assert float(got["numberValue"]) == float(want["numberValue"])
                else:
                    assert got == want, (ws.title, cell.coordinate)
                n += 1
        extra = {ref for ref in google
                 if ref.rstrip("0123456789") not in GOOGLE_ONLY.get(ws.title, set())}
        assert not extra, (ws.title, sorted(extra)[:5])
    assert n > 300
    helpers = snap.sheets["Matmul"]
    for col in sorted(LOG_COLUMNS - {LOG_RIDGE}):
        assert helpers[f"{col}5"]["stringValue"].startswith("chart helper: log10")
        assert helpers[f"{col}6"]["formulaValue"].count("LOG10(") == 1
        assert helpers[f"{col}6"]["formulaValue"].count("NA()") >= 1  # never "" or text
    assert helpers[f"{LOG_RIDGE}6"]["formulaValue"] == \
        f"=IF(AND({xl_col_to_name(matmul.CEILING_COL)}6=0,ISNUMBER({LOG_CEIL}6)),{LOG_CEIL}6,NA())"
    for col in BLANK_COLUMNS:  # the chart's spacer columns hold nothing in the data rows
        assert helpers[f"{col}5"] == {"stringValue": "(blank)"}
        assert not [ref for ref in helpers if ref.rstrip("0123456789") == col and ref != f"{col}5"]
    # named ranges: the xlsx defined names, same targets
    names = {n["name"]: n for n in shared.spreadsheets[KEY].named_ranges}
    assert set(names) == set(wb.defined_names)
    got = gsheets_requests._parse_ref(wb.defined_names["GPU_LIST"].attr_text)
    r = names["GPU_LIST"]["range"]
    assert (r["startRowIndex"], r["endRowIndex"], r["startColumnIndex"]) == got[1:4]
    wb.close()


def test_formats_validation_conditional_freeze_chart(pushed):
    shared, _, _ = pushed
    ss = shared.spreadsheets[KEY]
    mat = ss.sheet(title="Matmul")
    assert mat.properties["gridProperties"]["frozenRowCount"] == 5
    b7 = shared.cell(KEY, "Inputs", "B7")
    last = 16 + len(builtin_presets().gpus)  # the GPU list starts on GPU Specs' row 17
    assert b7["dataValidation"]["condition"] == {
        "type": "ONE_OF_RANGE", "values": [{"userEnteredValue": f"='GPU Specs'!$A$17:$A${last}"}]}
    assert b7["userEnteredFormat"]["backgroundColorStyle"] == {"rgbColor": {
        "red": round(0xFF / 255, 4), "green": round(0xF2 / 255, 4), "blue": round(0xCC / 255, 4)}}
    a6 = shared.cell(KEY, "Matmul", "A6")
    assert a6["dataValidation"]["condition"] == {"type": "CUSTOM_FORMULA", "values": [
        {"userEnteredValue": "=AND(ISNUMBER(A6),INT(A6)=A6,A6>=1,A6<=2147483647)"}]}
    assert a6["dataValidation"]["strict"] is True
    assert a6["userEnteredFormat"]["numberFormat"] == {"type": "NUMBER", "pattern": "#,##0"}
    e6 = shared.cell(KEY, "Matmul", "E6")  # FLOPs: readable units, the same pattern as xlsx
    assert e6["userEnteredFormat"]["numberFormat"] == {"type": "NUMBER",
                                                       "pattern": NUMBER_FORMATS["flop"]}
    i6 = shared.cell(KEY, "Matmul", "I6")  # compute time: held in µs, plain digits
    assert i6["userEnteredFormat"]["numberFormat"] == {"type": "NUMBER",
                                                       "pattern": NUMBER_FORMATS["time_us"]}
    assert shared.cell(KEY, "Matmul", "M6")["userEnteredFormat"]["numberFormat"]["type"] == \
        "PERCENT"
    assert shared.cell(KEY, "Matmul", "A5")["userEnteredFormat"]["textFormat"]["bold"]
    rules = [c["booleanRule"]["condition"]["values"][0]["userEnteredValue"]
             for c in mat.conditional_formats]
    # the regimes, then the wave columns (N:P, R) greyed out while waves are off or there is
    # no SM count to count them with, then the compute ramp's (Q) while it is off, the
    # write cost's (S) while it is 1, then the kernel terms' (T:Y) each while it is off
    assert rules == ["compute-bound", "memory-bound",
                     *['=OR(WAVE_QUANT="off",NOT(ISNUMBER(SM_COUNT)))'] * 4,
                     "=COMPUTE_RAMP_FLOPS<=0",  # the compute ramp's column, greyed while off
                     "=WRITE_COST<=1",  # the memory time with the write cost, while it is 1
                     *["=SPLIT_K_MIN_K<=0"] * 2, "=K_LOOP_LATENCY<=0",
                     *['=K_LOOP_TILE_GROWTH<>"on"'] * 2,
                     '=AND(K_LOOP_LATENCY<=0,SPLIT_K_MIN_K<=0,K_LOOP_TILE_GROWTH<>"on")']
    kernel = [xl_col_to_name(c["ranges"][0]["startColumnIndex"])
              for c in mat.conditional_formats[8:]]
    # split-K (U, Y), the K loop (X), the tile growth (V, W), the time before them (T)
    assert kernel == ["U", "Y", "X", "V", "W", "T"]
    dims = [c for c in mat.conditional_formats if "WAVE" in str(c)]
    assert [xl_col_to_name(c["ranges"][0]["startColumnIndex"]) for c in dims] == list("NOPR")
    assert all("foregroundColorStyle" in c["booleanRule"]["format"]["textFormat"] for c in dims)
    assert mat.col_meta[0]["pixelSize"] == 70
    (chart,) = mat.charts
    # Google's chart titles are text: the live title's value when pushed names GPU and dtype
    assert chart["spec"]["title"] == "Roofline: A100 40GB SXM, bf16 (log10 axes)"
    basic = chart["spec"]["basicChart"]
    assert basic["chartType"] == "SCATTER"
    assert [a["title"] for a in basic["axis"]] == [
        "log10 arithmetic intensity (FLOP/B)", "log10 attained TFLOP/s (TOP/s for int8)"]


def _span(src):
    return xl_col_to_name(src["startColumnIndex"]), src["startRowIndex"], src["endRowIndex"]


def test_chart_series_ridge_and_regimes(pushed, pushed_values, pushed_check):
    """The Google chart has the xlsx chart's design: ceiling, ridge, one series per regime,
    from hidden columns it still plots, over the ranges and values known by hand."""
    shared, _, _ = pushed  # A100 40GB SXM, bf16, efficiencies 1.0
    assert shared.compute is engine_compute
    mat = shared.spreadsheets[KEY].sheet(title="Matmul")
    (chart,) = mat.charts
    spec = chart["spec"]
    assert spec["hiddenDimensionStrategy"] == "SHOW_ALL"
    basic = spec["basicChart"]
    # whole decades, as the xlsx chart: x 0.1..10^4 FLOP/B (1x4096x4096's 0.9995 FLOP/B up to
    # the ridge, 200.6, and 4096^3's 1365), y 1..1000 TFLOP/s (1.554 up to the 312 roof)
    windows = [a["viewWindowOptions"] for a in basic["axis"]]
    assert windows == [{"viewWindowMin": -1, "viewWindowMax": 4, "viewWindowMode": "EXPLICIT"},
                       {"viewWindowMin": 0, "viewWindowMax": 3, "viewWindowMode": "EXPLICIT"}]
    # two offsets: the ceiling's 7 decade rows (6..12), the matmul table's 3 + 5 spare rows
    ceiling, points = (LOG_X, 5, 12), (LOG_PX, 5, 13)
    assert [_span(s) for s in basic["domains"][0]["domain"]["sourceRange"]["sources"]] == [
        ceiling, points]
    blank = sorted(BLANK_COLUMNS)
    want = {  # series -> its column at the ceiling offset, then at the points offset
        "ceiling": (LOG_CEIL, blank[2]), "ridge": (LOG_RIDGE, blank[3]),
        "compute": (blank[0], LOG_COMP), "memory": (blank[1], LOG_MEM)}
    got = [tuple(_span(s)[0] for s in item["series"]["sourceRange"]["sources"])
           for item in basic["series"]]
    assert got == list(want.values())
    styles = [(item.get("lineStyle", {}).get("type"), item.get("pointStyle", {}).get("shape"),
               item["colorStyle"]["rgbColor"]) for item in basic["series"]]
    rgb = gsheets_requests.color_style
    assert styles == [("SOLID", None, rgb(palette.CEILING)["rgbColor"]),
                      (None, "DIAMOND", rgb(palette.RIDGE)["rgbColor"]),
                      (None, "SQUARE", rgb(palette.COMPUTE)["rgbColor"]),
                      (None, "TRIANGLE", rgb(palette.MEMORY)["rgbColor"])]
    # every chart-data column (the #N/A points AH..AJ to the last log10 column) is hidden
    hidden = {i for i, m in mat.col_meta.items() if m.get("hiddenByUser")}
    assert hidden == set(range(matmul.POINTS_COL, _CH.LAST_COL + 1))
    v = pushed_values  # engine_compute(shared.snapshot(KEY))
    # By hand: ridge = 312e12 / 1.555e12 = 200.643 FLOP/B at 312 TFLOP/s, on decade-0 row 9
    ridge_x, peak = 312e12 / 1.555e12, 312.0
    assert v[("Matmul", f"{LOG_X}9")] == pytest.approx(math.log10(ridge_x), rel=1e-12)
    assert v[("Matmul", f"{LOG_RIDGE}9")] == pytest.approx(math.log10(peak), rel=1e-12)
    assert [v[("Matmul", f"{LOG_RIDGE}{r}")] for r in (6, 7, 8, 10, 11, 12)] == ["#N/A"] * 6
    # the ceiling one decade below the ridge: 20.064 FLOP/B at 20.064 x 1.555 = 31.2 TFLOP/s
    assert v[("Matmul", f"{LOG_CEIL}8")] == pytest.approx(math.log10(31.2), rel=1e-12)
    # 1x4096x4096: 2*4096^2 / (2*(4096 + 4096^2 + 4096)) = 0.99951 FLOP/B, memory-bound at
    # 0.99951 x 1.555 = 1.5542 TFLOP/s; 4096^3: 4096/3 = 1365.3 FLOP/B, compute-bound at 312
    i1 = 4096**2 / (4096 + 4096**2 + 4096)
    assert v[("Matmul", f"{LOG_PX}6")] == pytest.approx(math.log10(i1), rel=1e-12)
    assert v[("Matmul", f"{LOG_MEM}6")] == pytest.approx(math.log10(i1 * 1.555), rel=1e-12)
    assert v[("Matmul", f"{LOG_COMP}6")] == "#N/A"
    assert v[("Matmul", f"{LOG_PX}8")] == pytest.approx(math.log10(4096 / 3), rel=1e-12)
    assert v[("Matmul", f"{LOG_COMP}8")] == pytest.approx(math.log10(peak), rel=1e-12)
    assert v[("Matmul", f"{LOG_MEM}8")] == "#N/A"
    for col in (LOG_PX, LOG_COMP, LOG_MEM):  # spare rows: #N/A, no point
        assert v[("Matmul", f"{col}9")] == "#N/A"
    assert pushed_check.ok  # sheetgen.check_spreadsheet(KEY, client=gsheets_client)


def test_sweep_chart_plots_log10_helpers_of_the_latencies(pushed, pushed_values, pushed_check):
    """Parallelism's sweep chart on Google: one domain (log10 m) and the three latencies'
    log10 (ms) in the next three columns, lines with markers, from hidden columns. Hand
    figures (tests/test_parallelism.py, NVLink, the 5 µs launch floor): at m = 4096 PP
    271.262 ms at its best M = 19, TP 262.327 ms (one-shot all-reduces)."""
    shared, _, _ = pushed
    assert shared.compute is engine_compute
    par = shared.spreadsheets[KEY].sheet(title="Parallelism")
    (chart,) = par.charts
    assert chart["spec"]["hiddenDimensionStrategy"] == "SHOW_ALL"
    basic = chart["spec"]["basicChart"]
    first, last = parallel.SWEEP.header_row + 1, parallel.SWEEP.header_row + 9  # 8 rows
    assert [_span(s) for s in basic["domains"][0]["domain"]["sourceRange"]["sources"]] == [
        (SWEEP_LOG[0], first, last)]
    assert [[_span(s) for s in item["series"]["sourceRange"]["sources"]]
            for item in basic["series"]] == [[(c, first, last)] for c in SWEEP_LOG[1:]]
    assert [(item["lineStyle"]["type"], item["pointStyle"]["shape"])
            for item in basic["series"]] == [("SOLID", "CIRCLE"), ("SOLID", "SQUARE"),
                                             ("SOLID", "TRIANGLE")]
    # m 1..16384: log10 0..5; latency 12.8..2030 ms: log10 1..4
    assert [(a["viewWindowOptions"]["viewWindowMin"], a["viewWindowOptions"]["viewWindowMax"])
            for a in basic["axis"]] == [(0, 5), (1, 4)]
    hidden = {i for i, m in par.col_meta.items() if m.get("hiddenByUser")}
    # the chart's data, and (hidden too) the best-M helper table and the layer counts
    assert set(range(SWEEP_DATA, SWEEP_DATA + 8)) <= hidden
    best = parallel.BEST
    assert set(range(best.col, best.col + len(best.all_columns()))) <= hidden
    v = pushed_values  # engine_compute(shared.snapshot(KEY))
    row = first + 7  # the "× 1 input m" row, m = 4096
    x, one, pp, tp = (v[("Parallelism", f"{c}{row}")] for c in SWEEP_LOG)
    assert x == pytest.approx(math.log10(4096), rel=1e-12)
    assert pp == pytest.approx(math.log10(271.262), abs=1e-6)  # PP at its best M = 19
    assert tp == pytest.approx(math.log10(262.327), abs=1e-6)
    assert tp < pp < one
    assert pushed_check.ok  # sheetgen.check_spreadsheet(KEY, client=gsheets_client)


def test_user_text_lands_as_text(tmp_path, shared, gsheets_client, shapes_csv):
    gpu_file = tmp_path / "mine.toml"
    gpu_file.write_text(
        '[[gpu]]\nname = "=1+1"\npeak_flops = { bf16 = 1e15 }\nhbm_bandwidth = 1e12\n'
        'memory_bytes = 1e9\nlink_bandwidth = 1e11\nlink_latency = 1e-6\n'
        'host_bandwidth = 1e10\nsm_count = 100\nmeasured_compute_efficiency = 0.8\n'
        'measured_memory_efficiency = 0.9\nmeasured_link_efficiency = 0.8\n'
        'peak_flops_source = "=HYPERLINK(\\"http://x\\",\\"x\\")"\n')
    csv = shapes_csv('m,k,n,note\n+1,2,3,"=HYPERLINK(""http://x"",""x"")"\n8,+1,16,+1\n')
    push(gsheets_client, gpu="=1+1", gpu_file=gpu_file, shapes=csv)
    snap = shared.snapshot(KEY)
    assert snap.sheets["Inputs"]["B7"] == {"stringValue": "=1+1"}
    specs = snap.sheets["GPU Specs"]
    texts = [v["stringValue"] for v in specs.values() if "stringValue" in v]
    assert "=1+1" in texts
    assert '=HYPERLINK("http://x","x")' in texts  # its row of the Sources list
    mat = snap.sheets["Matmul"]
    assert mat["A6"] == {"numberValue": 1} and mat["B7"] == {"numberValue": 1}
    formulas = [v["formulaValue"] for s in snap.sheets.values() for v in s.values()
                if "formulaValue" in v]
    assert not any("HYPERLINK" in f or f.startswith("=1+1") for f in formulas)


def test_a_preset_without_sm_count_pushes_and_checks(tmp_path, shared, gsheets_client):
    """A datasheet preset (no sm_count, waves asked for): the wave cells are "n/a" text, the
    refined time the plain roofline by hand (2·8192³ FLOP / 400 TFLOP/s, in µs), as the
    pushed formulas compute them."""
    gpu_file = tmp_path / "datasheet.toml"
    gpu_file.write_text(
        '[[gpu]]\nname = "Datasheet GPU"\npeak_flops = { bf16 = 400e12 }\n'
        'hbm_bandwidth = 2e12\nmemory_bytes = 48e9\nlink_bandwidth = 1e11\n'
        'link_latency = 8e-6\nhost_bandwidth = 3e10\nwave_quantization = true\n')
    shapes = [(8192, 8192, 8192)]
    push(gsheets_client, gpu="Datasheet GPU", gpu_file=gpu_file, shapes=shapes)
    v = engine_compute(shared.snapshot(KEY))
    planned = sheetgen.plan(shapes=shapes, gpu="Datasheet GPU", gpu_file=gpu_file)
    t = planned.table("matmul")
    col = {c.name: xl_col_to_name(c.col) for c in t.columns}
    row = t.first_row + 1
    assert v[("Matmul", f"{col['waves']}{row}")] == "n/a"
    assert v[("Matmul", f"{col['refined_time']}{row}")] == pytest.approx(
        2 * 8192**3 / 400e12 * 1e6, rel=1e-9)
    assert "waves off: preset has no SM count" in v.values()
    sms = next(c for s in planned.sheets for c in s.cells if c.name == "sm_count")
    assert v[("Inputs", f"{xl_col_to_name(sms.col)}{sms.row + 1}")] == "n/a"
    # and `check` agrees, with no compute hook installed by this test: the emulator
    # calculates formulas by default, as Google does (it once answered them blank)
    report = sheetgen.check_spreadsheet(KEY, client=gsheets_client)
    assert report.ok and report.cells > 1000, report.mismatches[:3]


# --------------------------------------------------------------------------- request counts


@pytest.mark.parametrize("rows", [10, 10_000])
def test_request_count(rows, shared, big_client):
    shapes = [(i % 4096 + 1, 4096, 8192) for i in range(rows)]
    result = sheetgen.push(KEY, client=big_client, shapes=shapes, spare_rows=200)
    assert result.write_requests == writes(shared) <= 3
    # 10,000 rows now pass Google's advised 2 MB per body, so they go in two requests
    assert result.write_requests == (1 if rows == 10 else 2)
    assert shared.count("GET", r"/v4/") == 2  # open + list tabs and named ranges
    biggest = max(len(json.dumps(r.body)) for r in shared.requests if r.method == "POST"
                  and r.path.endswith(":batchUpdate"))
    assert biggest <= gsheets.MAX_BODY_BYTES
    last = 5 + rows + 200
    stored = shared.cell(KEY, "Matmul", f"L{last}")["userEnteredValue"]["formulaValue"]
    # attained FLOP/s = FLOPs / predicted time, the time cell holding µs
    assert stored == (f'=IF(D{last}="ok",IF(ISNUMBER(PEAK_FLOPS),E{last}/(K{last}/1E+06),'
                      'DTYPE_GAP),"")')
    assert shared.cell(KEY, "Matmul", f"A{5 + rows}")["userEnteredValue"] == {
        "numberValue": shapes[-1][0]}


# --------------------------------------------------------------------------- faults


def test_faults_survived_nothing_duplicated_or_lost(sheets_emulator, gsheets_client,
                                                   clean_push):
    clean = clean_push  # what the same push stores when nothing goes wrong
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    slept: list[float] = []
    # the "timeout" fault alone takes FAULT_TIMEOUT's 4 s of real time, so the budget is a
    # minute, not FAST_RETRY's 5 s: on a loaded CI the three faults before it took over 1 s
    gsheets_client.http_client.policy = dataclasses.replace(
        gsheets_client.http_client.policy, sleep=slept.append, max_attempts=6,
        max_elapsed=60.0)
    gsheets_client.set_timeout(FAULT_TIMEOUT)  # the fault outlasts it
    sheets_emulator.inject(KEY + r":batchUpdate$",
                           [{"status": 429, "headers": {"Retry-After": "2"}}, 500, "drop",
                            "timeout"])
    push(gsheets_client)
    assert slept[0] == 2.0
    assert dump(sheets_emulator, KEY) == clean, _diff(dump(sheets_emulator, KEY), clean)[:8]
    assert sheets_emulator.count("POST", KEY + r":batchUpdate$", status=200) == 1


def test_lost_response_is_redone_as_replace(sheets_emulator, gsheets_client, clean_push):
    clean = clean_push  # what the same push stores when nothing goes wrong
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    sheets_emulator.inject(KEY + r":batchUpdate$", ["drop_after"])
    result = push(gsheets_client)
    assert dump(sheets_emulator, KEY) == clean, _diff(dump(sheets_emulator, KEY), clean)[:8]
    assert result.write_requests == 2  # the applied one (reply lost), then the redo


def test_interrupted_chunked_push_then_replace(sheets_emulator, big_client, monkeypatch):
    gsheets_client = big_client
    sheets_emulator.create_spreadsheet(OTHER, shared_with=[SA_EMAIL])
    shapes = [(i + 1, 64, 64) for i in range(1000)]
    sheetgen.push(OTHER, client=gsheets_client, shapes=shapes, spare_rows=5)
    clean = dump(sheets_emulator, OTHER)

    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    p = sheetgen.plan(shapes=shapes, spare_rows=5, chart_helpers=True)
    gsheets_client.http_client.policy = dataclasses.replace(
        gsheets_client.http_client.policy, max_attempts=2)
    calls = {"n": 0}
    real = sheets_emulator.batch_update

    def first_then_fail(ss, body):
        calls["n"] += 1
        if calls["n"] > 1:
            raise HTTPReply(503, google_error(503))
        return real(ss, body)

    monkeypatch.setattr(sheets_emulator, "batch_update", first_then_fail)
    with pytest.raises(SheetsError, match="kept failing"):
        gsheets.push_plan(p, KEY, client=gsheets_client, max_bytes=40_000)
    assert calls["n"] == 3  # the first body landed; the second failed twice
    monkeypatch.setattr(sheets_emulator, "batch_update", real)
    with pytest.raises(SheetsError, match="--replace"):
        gsheets.push_plan(p, KEY, client=gsheets_client)
    gsheets.push_plan(p, KEY, client=gsheets_client, replace=True)
    assert dump(sheets_emulator, KEY) == clean, _diff(dump(sheets_emulator, KEY), clean)[:8]


@pytest.mark.parametrize("role", [None, "reader"])
def test_not_shared_gives_the_sharing_message(sheets_emulator, gsheets_client, role):
    sheets_emulator.create_spreadsheet(
        KEY, shared_with={SA_EMAIL: role} if role else ["someone@example.com"])
    with pytest.raises(SheetsError) as err:
        push(gsheets_client)
    msg = str(err.value)
    assert "\n" not in msg
    assert f"Share it (Editor) with {SA_EMAIL}" in msg and KEY in msg
    assert writes(sheets_emulator) == (1 if role else 0)  # 403 on the write is not retried


def test_unknown_spreadsheet_404(sheets_emulator, gsheets_client):
    with pytest.raises(SheetsError, match=f"not found or not shared.*{SA_EMAIL}"):
        push(gsheets_client)


# --------------------------------------------------------------------------- tabs


def test_other_tabs_survive_and_repush_needs_replace(sheets_emulator, gsheets_client):
    sheets_emulator.create_spreadsheet(KEY, sheets=["Notes", "Sheet2"],
                                       shared_with=[SA_EMAIL])
    sh = sheetgen.writers.google.client.open_spreadsheet(gsheets_client, KEY)
    sh.values_update("Notes!A1", params={"valueInputOption": "USER_ENTERED"},
                     body={"values": [["mine", "=1+1"]]})
    sh.batch_update({"requests": [{"addNamedRange": {"namedRange": {
        "name": "MY_NAME", "range": {"sheetId": 0, "startRowIndex": 0, "endRowIndex": 1}}}}]})
    notes = dump(sheets_emulator, KEY)["sheets"][0]

    push(gsheets_client)
    first = dump(sheets_emulator, KEY)
    assert [s["properties"]["title"] for s in first["sheets"]] == [
        "Notes", "Sheet2", "Inputs", "Matmul", "Pipeline", "Parallelism", "What-if",
        "GPU Specs"]
    assert first["sheets"][0] == notes
    assert "MY_NAME" in {n["name"] for n in first["named"]}

    before = writes(sheets_emulator)
    with pytest.raises(SheetsError) as err:
        push(gsheets_client)
    msg = str(err.value)
    # the API names its own argument (the CLI says --replace)
    assert "already has tab 'Inputs'" in msg and "replace=True" in msg and "\n" not in msg
    assert writes(sheets_emulator) == before  # refused before writing anything

    # The user edits sheetgen's tabs and adds a tab after them; replace rewrites ours only.
    sh.values_update("Matmul!A6", params={"valueInputOption": "RAW"}, body={"values": [[7]]})
    sh.batch_update({"requests": [{"addSheet": {"properties": {"title": "Later"}}}]})
    push(gsheets_client, replace=True)
    again = dump(sheets_emulator, KEY)
    assert [s["properties"]["title"] for s in again["sheets"]] == [
        "Notes", "Sheet2", "Inputs", "Matmul", "Pipeline", "Parallelism", "What-if",
        "GPU Specs", "Later"]
    again["sheets"] = [s for s in again["sheets"] if s["properties"]["title"] != "Later"]
    assert again == first  # identical, user edits to sheetgen's tabs overwritten
    push(gsheets_client, replace=True)
    third = dump(sheets_emulator, KEY)
    third["sheets"] = [s for s in third["sheets"] if s["properties"]["title"] != "Later"]
    assert third == first


def test_replace_when_only_sheetgen_tabs_remain(shared, gsheets_client):
    push(gsheets_client)
    first = dump(shared, KEY)
    sh = sheetgen.writers.google.client.open_spreadsheet(gsheets_client, KEY)
    sh.batch_update({"requests": [{"deleteSheet": {"sheetId": 0}}]})
    push(gsheets_client, replace=True)
    got = dump(shared, KEY)
    for sheet in first["sheets"][1:]:
        sheet["properties"]["index"] -= 1  # Sheet1 is gone
    assert got["sheets"] == first["sheets"][1:], _diff(got["sheets"], first["sheets"][1:])[:8]
    assert got["named"] == first["named"]


# --------------------------------------------------------------------------- read and check


def test_read_returns_google_values(pushed_h100):
    shared, gsheets_client, _ = pushed_h100  # push(client, gpu="H100 SXM")
    assert shared.compute is engine_compute
    frame = sheetgen.read(URL, client=gsheets_client)
    ref = sheetgen.analyze(SHAPES, gpu="H100 SXM")
    assert list(frame.index) == [6, 7, 8]
    for col in ("m", "flops", "intensity", "predicted_time"):
        assert list(frame[col]) == pytest.approx(list(ref[col]), rel=1e-12), col
    assert list(frame["regime"]) == list(ref["regime"])
    google = engine_compute(shared.snapshot(KEY))  # the chart's log10 helper, as computed
    assert ref["regime"][0] == "memory-bound"
    assert google[("Matmul", f"{LOG_MEM}6")] == pytest.approx(
        math.log10(ref["attained_flops"][0] / 1e12))
    assert google[("Matmul", f"{LOG_PX}6")] == pytest.approx(math.log10(ref["intensity"][0]))
    inputs = sheetgen.read(KEY, client=gsheets_client, sheet="inputs")
    assert inputs.loc["gpu_name", "value"] == "H100 SXM"
    assert inputs.loc["peak_flops", "value"] == pytest.approx(989.4e12, rel=1e-3)
    with pytest.raises(SheetsError, match="no sheet 'Nope'"):
        sheetgen.read(KEY, client=gsheets_client, sheet="Nope")


def test_check_follows_user_edits_and_finds_disagreement(shared, gsheets_client):
    shared.compute = engine_compute
    push(gsheets_client)
    sh = sheetgen.writers.google.client.open_spreadsheet(gsheets_client, KEY)
    # The user picks another GPU and types a shape into a spare row, in Google.
    sh.values_update("Inputs!B7", params={"valueInputOption": "RAW"},
                     body={"values": [["H100 SXM"]]})
    sh.values_update("Matmul!A9:C9", params={"valueInputOption": "USER_ENTERED"},
                     body={"values": [["2048", "2048", "2048"]]})
    report = sheetgen.check_spreadsheet(KEY, client=gsheets_client)
    assert report.ok and report.shape_rows == 4 and report.cells > 100
    frame = sheetgen.read(KEY, client=gsheets_client)
    assert frame.loc[9, "flops"] == 2 * 2048**3

    # Google disagrees on one cell; someone edits a formula.
    def off_by_one_percent(snap):
        values = engine_compute(snap)
        values[("Matmul", "G6")] *= 1.01
        return values

    shared.compute = off_by_one_percent
    sh.values_update("Matmul!K7", params={"valueInputOption": "USER_ENTERED"},
                     body={"values": [["=1"]]})
    report = sheetgen.check_spreadsheet(KEY, client=gsheets_client)
    where = {(m.cell, m.note.startswith("formula changed")) for m in report.mismatches}
    assert {("G6", False), ("K7", True)} <= where
    # the cells computed from K7 follow its new formula, and are reported as such
    plotted = {f"{xl_col_to_name(matmul.POINTS_COL + i)}7" for i in (1, 2)}  # #N/A helpers
    assert {c for c, changed in where - {("G6", False), ("K7", True)}} <= {
        "L7", "M7", f"{LOG_COMP}7", f"{LOG_MEM}7", *plotted}
    assert all(not changed for c, changed in where if c != "K7")


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def cli_env(monkeypatch, shared, service_account_file):
    """The CLI's own authorize(), routed to the emulator; credentials from the environment."""
    monkeypatch.setattr(sheetgen.writers.google.client, "RetryingHTTPClient",
                        shared.http_client_class(**FAST_RETRY))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(service_account_file))
    shared.compute = engine_compute
    return shared


def test_cli_push_read_check(cli_env, tmp_path):
    result = run("push", URL, "--spare-rows", "3")
    assert result.exit_code == 0, result.output
    assert "pushed Inputs, Matmul, Pipeline, Parallelism, What-if, GPU Specs" in result.output
    assert "1 write request" in result.output
    one_line_error(run("push", URL), "already has tab 'Inputs'", "--replace")
    assert run("push", URL, "--replace", "--spare-rows", "3").exit_code == 0
    out = run("read", KEY)
    assert out.exit_code == 0
    lines = out.output.splitlines()
    assert lines[0].startswith("row,m,k,n,row_check,flops") and len(lines) == 13
    js = json.loads(run("read", KEY, "--sheet", "Inputs", "--format", "json").output)
    assert {"name": "dtype", "value": "bf16"} in js
    ok = run("check", URL)
    assert ok.exit_code == 0
    assert ok.output.splitlines()[-1] == "ok: every formula cell agrees with the reference model"


#: A user's preset from a datasheet, and its figures as the Inputs sheet must show them.
#: a datasheet's figures, and a compute ramp as `calibrate --preset-out` writes one
DATASHEET_TOML = preset_toml("Datasheet GPU", "bf16 = 400e12, fp32 = 50e12", 2.0e12,
                             "sm_count = 96", "compute_ramp_flops = 2e9",
                             "compute_ramp_exponent = 0.8", "compute_ramp_end_flops = 8e9",
                             "k_latency = 1e-9", "split_k_floor = 3e-6",
                             "split_k_min_k = 2048")


def test_cli_push_with_gpu_file_then_check(tmp_path, shared, service_account_file,
                                           monkeypatch):
    """`sheetgen push --gpu-file` then `sheetgen check` (issue #18's leftover: `check` came
    back with blank Inputs cells). Nothing here installs a compute hook: the emulator
    calculates every formula, as Google does. The Inputs read back are the preset's own
    figures, worked out by hand from the file above."""
    monkeypatch.setattr(sheetgen.writers.google.client, "RetryingHTTPClient",
                        shared.http_client_class(**FAST_RETRY))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(service_account_file))
    preset = tmp_path / "datasheet.toml"
    preset.write_text(DATASHEET_TOML)
    pushed = run("push", URL, "--gpu-file", str(preset), "--gpu", "Datasheet GPU",
                 "--spare-rows", "2")
    assert pushed.exit_code == 0, pushed.output
    # every body Google's discovery document allows (the emulator validates each one)
    assert shared.validated_bodies >= 1 and shared.schema_errors == []
    checked = run("check", URL)
    assert checked.exit_code == 0, checked.output
    assert checked.output.splitlines()[-1] == (
        "ok: every formula cell agrees with the reference model")
    assert "Inputs             39 cells  0 mismatches" in checked.output
    js = run("read", KEY, "--sheet", "Inputs", "--format", "json")
    assert js.exit_code == 0, js.output
    got = {row["name"]: row["value"] for row in json.loads(js.output)}
    assert got["gpu_name"] == "Datasheet GPU" and got["dtype"] == "bf16"
    assert got["peak_flops"] == pytest.approx(400e12, rel=1e-12)  # bf16 peak
    assert got["hbm_bw"] == pytest.approx(2.0e12, rel=1e-12)
    assert got["ridge"] == pytest.approx(400e12 / 2.0e12, rel=1e-12)  # 200 FLOP/B
    assert got["link_bw"] == pytest.approx(100e9, rel=1e-12)
    assert got["link_latency"] == pytest.approx(8e-6, rel=1e-12)
    assert got["host_bw"] == pytest.approx(31.5e9, rel=1e-12)
    assert got["sm_count"] == 96
    assert got["card_bytes"] == 48e9  # the datasheet's GB, read as the vendor means them
    assert got["vram_bytes"] == 48e9 - 2 * 1024**3  # less the default 2 GiB reserve
    # the ramp, and its share at 1024³ (2^31 FLOPs): (1 + 0.25^0.8) / (1 + (2e9/2^31)^0.8)
    assert (got["compute_ramp_flops"], got["compute_ramp_h"], got["compute_ramp_end"]) == (
        2e9, 0.8, 8e9)
    mat = run("read", KEY, "--sheet", "Matmul", "--format", "json")
    rows = {(r["m"], r["k"], r["n"]): r for r in json.loads(mat.output)}
    assert rows[(1024, 1024, 1024)]["compute_ramp"] == pytest.approx(
        (1 + 0.25**0.8) / (1 + (2e9 / 2**31) ** 0.8), rel=1e-12)
    # the kernel terms: 1024³ fills 64 of 96 SMs with k < 2,048, so it does not split and
    # waits 1,024 · 1 ns on its K loop; 1 × 4096 · 4096 × 4096 (32 tiles, k = 4,096) splits:
    # no loop, a 3 µs second kernel (read gives seconds)
    big, gemv = rows[(1024, 1024, 1024)], rows[(1, 4096, 4096)]
    assert (big["split"], big["k_loop"], big["split_k"]) == (0, pytest.approx(1.024e-6), 0)
    assert big["refined_time"] == pytest.approx(big["gemm_time"] + 1.024e-6, rel=1e-12)
    assert (gemv["split"], gemv["k_loop"], gemv["split_k"]) == (1, 0, pytest.approx(3e-6))
    assert gemv["refined_time"] == pytest.approx(gemv["gemm_time"] + 3e-6, rel=1e-12)
    # the user then picks the fp32 peak in Google: check models the edit, read follows it
    sh = sheetgen.writers.google.client.open_spreadsheet(
        authorize(service_account_file, http_client=shared.http_client_class(**FAST_RETRY)),
        KEY)
    sh.values_update("Inputs!B8", params={"valueInputOption": "RAW"},
                     body={"values": [["fp32"]]})
    assert run("check", KEY).exit_code == 0
    got = {row["name"]: row["value"] for row in json.loads(
        run("read", KEY, "--sheet", "Inputs", "--format", "json").output)}
    assert got["peak_flops"] == pytest.approx(50e12, rel=1e-12)
    assert got["ridge"] == pytest.approx(50e12 / 2.0e12, rel=1e-12)


def test_cli_check_reports_mismatch_exit_1(cli_env):
    assert run("push", KEY, "--spare-rows", "0").exit_code == 0
    cli_env.compute = lambda snap: {**engine_compute(snap), ("Matmul", "E6"): 1.0}
    result = run("check", KEY)
    assert result.exit_code == 1
    assert "Matmul!E6  flops  got 1  expected 33554432" in result.output


def test_cli_check_xlsx_dispatch(cli_env, tmp_path):
    """`check` on an .xlsx path reads the file with the xlsx checker and never calls Google."""
    out, _ = built_workbook(tmp_path / "r.xlsx", spare_rows=0)  # sheetgen.build's, shared
    result = run("check", str(out))
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{out}: ") and "formula cells checked" in result.output
    assert result.output.splitlines()[-1] == (
        "ok: every formula cell agrees with the reference model")
    assert cli_env.count() == 0  # no request reached the (emulated) Sheets API


@pytest.mark.parametrize(("setup", "needles"), [
    ("missing", ["key file not found"]),
    ("not_json", ["not valid JSON"]),
    ("not_sa", ["not a service-account key"]),
    ("bad_key", ["cannot be parsed"]),
])
def test_cli_credential_errors(cli_env, tmp_path, setup, needles, sa_key):
    path = tmp_path / "sa.json"
    info = cli_env.service_account_info(sa_key.private_pem)
    if setup == "not_json":
        path.write_text("{'type': " + sa_key.private_pem)
    elif setup == "not_sa":
        path.write_text(json.dumps({**info, "type": "authorized_user"}))
    elif setup == "bad_key":
        path.write_text(json.dumps({**info, "private_key": "-----BEGIN PRIVATE KEY-----\nxx\n"}))
    line = one_line_error(run("push", KEY, "--credentials", str(path)), *needles)
    assert "PRIVATE" not in line and sa_key.private_pem[40:80] not in line
    assert writes(cli_env) == 0


def test_cli_access_errors(cli_env, monkeypatch):
    one_line_error(run("push", "https://example.com/sheet"), "Not a Google Sheets URL")
    one_line_error(run("push", OTHER), "not found or not shared", SA_EMAIL)
    cli_env.api_enabled = False
    one_line_error(run("read", KEY), "Google Sheets API is not enabled")
    cli_env.api_enabled = True
    cli_env.inject(r":batchUpdate$", [429] * 10)
    one_line_error(run("push", KEY), "quota exceeded after 5 attempts")
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    one_line_error(run("push", KEY), "No Google credentials")


def test_cli_read_before_push(cli_env):
    one_line_error(run("read", KEY), "has no tab 'Matmul'", "sheetgen push")


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two dumps differ (assertion messages)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += _diff(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in _diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:150]} != {str(b)[:150]}"]


@functools.cache
def _google_variant_plan():
    return sheetgen.plan(shapes=[*SHAPES, (3, 5, 7)], spare_rows=3, gpu="H100 SXM",
                         dtype="fp8", chart_helpers=True)


@libreoffice_job("gsheets-google-variant", to="values")
def _google_variant(tmp: Path) -> dict[str, Path]:
    import sheetgen.writers.xlsx

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sheetgen.writers.xlsx, "_cached",
                   lambda v: "WRONG" if isinstance(v, str) and v else -12345.0)
        src = sheetgen.writers.xlsx.write_xlsx(_google_variant_plan(),
                                               tmp / "google_variant.xlsx")
    return {"src": src}


@needs_libreoffice
def test_pushed_plan_formulas_agree_with_libreoffice(libreoffice):
    """An independent engine for the Google variant (LOG10 helpers included): its plan,
    written as xlsx with every cached value wrong, recalculated by LibreOffice."""
    out = libreoffice.outputs("gsheets-google-variant")["src"]
    assert mismatches(_google_variant_plan(), read_values(out)) == []


def test_practice_tab_is_pushed_and_checked(shared, gsheets_client):
    shared.compute = engine_compute
    result = push(gsheets_client, practice=4, layers=6)
    assert "Practice" in result.sheets
    report = sheetgen.check_spreadsheet(KEY, client=gsheets_client)
    assert report.ok, [m.line() for m in report.mismatches[:3]]
    assert report.checked["Practice"] > 4 * 10
    # an answer typed in Google gets the model's feedback, and the check follows it
    sh = sheetgen.writers.google.client.open_spreadsheet(gsheets_client, KEY)
    sh.values_update("Practice!D10", params={"valueInputOption": "USER_ENTERED"},
                     body={"values": [["1"]]})
    report = sheetgen.check_spreadsheet(KEY, client=gsheets_client)
    assert report.ok and report.checked["Practice"] > 40


def test_colab_style_plain_client(shared, service_account_file, monkeypatch):
    """Colab: `gspread.authorize(creds)` gives a plain client (no key file, no retries);
    push and read take it as is and add sheetgen's bounded retries around its session."""
    import gspread
    from google.oauth2.service_account import Credentials
    from sheets_emulator import make_http_client_class

    creds = Credentials.from_service_account_file(str(service_account_file),
                                                  scopes=sheetgen.writers.google.client.SCOPES)
    plain = gspread.authorize(creds, http_client=make_http_client_class(  # routed, no retries
        shared.base_url, gspread.HTTPClient))  # type: ignore[arg-type]
    assert not isinstance(plain.http_client, sheetgen.writers.google.client.RetryingHTTPClient)
    monkeypatch.setattr(sheetgen.writers.google.client, "RetryingHTTPClient",
                        shared.http_client_class(**FAST_RETRY))
    shared.compute = engine_compute
    shared.inject(r":batchUpdate$", [503])  # survived thanks to the added retries
    result = sheetgen.push(URL, client=plain, shapes=SHAPES, spare_rows=2)
    assert result.write_requests == 1
    assert shared.count("POST", r":batchUpdate$", 503) == 1  # the fault really happened
    frame = sheetgen.read(URL, client=plain)
    assert len(frame) == len(SHAPES)
    assert sheetgen.check_spreadsheet(URL, client=plain).ok

