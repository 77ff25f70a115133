"""`push --measured`: the Measured sheet in Google Sheets, with its chart, against the loopback
Sheets emulator (every request body validated against Google's discovery document), with the
fitted curve's formulas evaluated from the stored cells equal to the reference model."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import one_line_error, run
from sheets_emulator import FAST_RETRY, SA_EMAIL, a1

import sheetgen
from sheetgen.calibrate import fit
from sheetgen.calibrate.report import calibrate_file, device_for, measured_inputs
from sheetgen.sheets import measured
from sheetgen.writers.google.client import authorize

ROOT = Path(__file__).resolve().parent.parent
XLA = ROOT / "benchmarks" / "data" / "xla_h100_sm90.csv"
KEY = "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_meas"
URL = f"https://docs.google.com/spreadsheets/d/{KEY}/edit"
CSV = ("m,k,n,b,time_s\n4096,4096,4096,1,2.1e-4\n1,8192,8192,1,4.6e-5\n256,256,256,1,5.2e-6\n"
       "1024,1024,1024,4,2e-5\n2048,512,1024,2,1.3e-5\n512,2048,512,1,7e-6\n")


@pytest.fixture
def pushed(tmp_path, sheets_emulator, service_account_file):
    # the emulator evaluates every pushed formula before it answers: a whole workbook takes
    # longer than the default test client's 2 s on a loaded machine
    client = authorize(service_account_file,
                       http_client=sheets_emulator.http_client_class(**FAST_RETRY),
                       timeout=(2.0, 60.0))
    sheets_emulator.create_spreadsheet(KEY, shared_with=[SA_EMAIL])
    src = tmp_path / "times.csv"
    src.write_text(CSV)
    cal = calibrate_file(src, gpu="H100 SXM", dtype="bf16")
    forced = fit.fit(device_for(cal.gpu, cal.dtype), cal.data, overlap=True)
    inputs = measured.MeasuredInputs(**{**measured_inputs(cal).__dict__,
                                        "overlap": forced.overlap})
    result = sheetgen.push(URL, client=client, gpu="H100 SXM", shapes=[(1, 2, 3)],
                           spare_rows=0, measured=inputs)
    plan = sheetgen.plan(gpu="H100 SXM", shapes=[(1, 2, 3)], spare_rows=0, measured=inputs,
                         chart_helpers=True)
    return sheets_emulator, result, plan, cal, forced


def test_push_writes_the_measured_sheet_and_its_chart(pushed):
    emu, result, plan, cal, forced = pushed
    assert "Measured" in result.sheets
    assert emu.validated_bodies > 0 and emu.schema_errors == []
    ss = emu.spreadsheets[KEY]
    sheet = ss.sheet(title="Measured")
    (chart,) = sheet.charts
    basic = chart["spec"]["basicChart"]
    assert basic["chartType"] == "SCATTER"
    assert len(basic["series"]) == 2  # the diagonal and the refined model
    # the fitted overlap exponent is an input cell the refined formulas read
    snap = emu.snapshot(KEY)
    cells = snap.sheets["Measured"]
    block = {(cells.get(f"A{r}") or {}).get("stringValue"): r for r in range(1, 28)}
    row = block[measured.CAL_OVERLAP.label]
    assert float(cells[f"B{row}"]["numberValue"]) == pytest.approx(forced.overlap)
    # the refined column, evaluated from the stored formulas, is the model's (µs on the sheet)
    from test_gsheets_push import engine_compute

    values = engine_compute(snap)
    t = plan.table(measured.TABLE.name)
    col = next(c for c in t.columns if c.name == measured.CAL_TIME.name)
    params = fit.Params(**{**cal.params.__dict__, "overlap": forced.overlap})
    expect = fit.predict(device_for(cal.gpu, cal.dtype), params, cal.data)
    for i, want in enumerate(expect):
        got = values[("Measured", a1(t.first_row + i, col.col))]
        assert got == pytest.approx(want * 1e6, rel=1e-9)


def test_push_measured_option_is_one_line_on_bad_input(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("m,k,n\n1,2,3\n")
    result = run("push", KEY, "--measured", str(bad), "--credentials",
                 str(tmp_path / "no.json"))
    one_line_error(result, "no time column")
