"""What Google itself enforces on a pushed spreadsheet, against the emulator: strict input
rules (the Practice regime list, whole numbers), hidden answer columns, and the 10,000,000-cell
limit per spreadsheet, refused before anything is written."""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers import one_line_error, run
from sheets_emulator import SA_EMAIL
from test_gsheets_push import (  # noqa: F401 - fixtures, used by name (F811 below)
    KEY,
    SHAPES,
    big_client,
    cli_env,
    push,
    shared,
    writes,
)

import sheetgen
from sheetgen.errors import SheetsError
from sheetgen.writers.google import requests
from sheetgen.writers.google import sheets as gsheets


def _write(sh, ref: str, value: Any) -> None:
    sh.values_update(ref, params={"valueInputOption": "USER_ENTERED"},
                     body={"values": [[value]]})


def test_practice_regime_takes_both_answers_and_answers_are_hidden(shared, gsheets_client):  # noqa: F811
    from gspread.exceptions import APIError

    from sheetgen.layout.styles import COMPUTE_BOUND, MEMORY_BOUND

    push(gsheets_client, practice=4)
    rule = shared.cell(KEY, "Practice", "E10")["dataValidation"]
    assert rule["condition"] == {"type": "ONE_OF_LIST", "values": [
        {"userEnteredValue": COMPUTE_BOUND}, {"userEnteredValue": MEMORY_BOUND}]}
    assert rule["strict"] is True and rule["showCustomUi"] is True
    sh = sheetgen.writers.google.client.open_spreadsheet(gsheets_client, KEY)
    _write(sh, "Practice!E10", COMPUTE_BOUND)  # both right answers are accepted ...
    _write(sh, "Practice!E11", MEMORY_BOUND)
    with pytest.raises(APIError, match="violates the data validation rule"):
        _write(sh, "Practice!E12", "0")  # ... and anything else is refused, like Google
    assert shared.cell(KEY, "Practice", "E12").get("userEnteredValue") is None
    # The model's working columns (M..S) are hidden as in the xlsx; the answers' own are not.
    cols = shared.spreadsheets[KEY].sheet(title="Practice").col_meta
    hidden = sorted(c for c, m in cols.items() if m.get("hiddenByUser"))
    p = sheetgen.plan(shapes=SHAPES, spare_rows=5, practice=4, chart_helpers=True)
    assert hidden == p.sheet("Practice").hidden == list(range(12, 19))


def test_whole_number_rule_refuses_fractions(shared, gsheets_client):  # noqa: F811
    """Matmul m, k, n: Excel's whole-number rule (1 to 2^31-1) as a CUSTOM_FORMULA, which
    the emulator evaluates: 1.5 was accepted by the old NUMBER_BETWEEN rule."""
    from gspread.exceptions import APIError

    push(gsheets_client)
    sh = sheetgen.writers.google.client.open_spreadsheet(gsheets_client, KEY)
    for ok in ("2048", "1", "2147483647"):
        _write(sh, "Matmul!A9", ok)
    for bad in ("1.5", "0", "-4", "2147483648", "many"):
        with pytest.raises(APIError, match="violates the data validation rule"):
            _write(sh, "Matmul!B9", bad)
    assert shared.cell(KEY, "Matmul", "A9")["userEnteredValue"] == {"numberValue": 2147483647}


def test_push_over_googles_cell_limit_is_refused_before_writing(sheets_emulator, big_client):  # noqa: F811
    gsheets_client = big_client
    # Other tabs count: 9,500,000 cells already there, and sheetgen's ~300,000 more ...
    sheets_emulator.create_spreadsheet(KEY, sheets=[
        {"title": "Big", "gridProperties": {"rowCount": 475_000, "columnCount": 20}}],
        shared_with=[SA_EMAIL])
    ok = push(gsheets_client, spare_rows=5)  # ... fit
    assert ok.write_requests == 1
    before = writes(sheets_emulator)
    with pytest.raises(SheetsError) as err:  # ... but 40,000 spare rows would not
        push(gsheets_client, spare_rows=40_000, replace=True)
    msg = str(err.value)
    assert "\n" not in msg and "over Google's limit of 10,000,000" in msg
    assert "other tabs 9,500,000" in msg and "nothing was written" in msg
    # the suggestion is the most spare rows that fit
    spare = int(re.search(r"(?:--spare-rows|spare_rows)[ =](\d+)", msg).group(1))
    assert "(now 40000)" in msg and 0 < spare < 40_000
    assert writes(sheets_emulator) == before
    p = sheetgen.plan(shapes=SHAPES, spare_rows=spare, chart_helpers=True)
    sh = sheetgen.writers.google.client.open_spreadsheet(gsheets_client, KEY)
    state = gsheets.fetch_state(sh)
    total = state.kept_cells(p) + sum(requests.grid_cells(p).values())
    width = requests.grid_size(p.sheet("Matmul"))[1]
    assert total <= 10_000_000 < total + width  # one more spare row would not fit
    # The emulator (which counts every tab, as Google does) agrees: one row more is refused
    # when sheetgen's own check is bypassed, and `spare` rows go through.
    over = sheetgen.plan(shapes=SHAPES, spare_rows=spare + 1, chart_helpers=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gsheets, "check_cell_limit", lambda *a: None)
        with pytest.raises(SheetsError, match="above the limit of 10000000 cells"):
            gsheets.push_plan(over, KEY, client=gsheets_client, replace=True)
    # p is what push(spare_rows=spare) plans (sheetgen.push: plan, then push_plan)
    gsheets.push_plan(p, KEY, client=gsheets_client, replace=True)


def test_cli_refuses_a_plan_over_the_cell_limit_without_asking_google(cli_env, monkeypatch):  # noqa: F811
    planned = []  # the plan the command refused, kept rather than planned again (3 s)

    def plan_and_keep(*args: Any, **kwargs: Any) -> Any:
        planned.append((args, kwargs, make_plan(*args, **kwargs)))
        return planned[-1][2]

    make_plan = sheetgen.api.plan
    monkeypatch.setattr(sheetgen.api, "plan", plan_and_keep)
    result = run("push", KEY, "--spare-rows", "400000")
    # By hand: Matmul is 6 rows above its data + 11 default shapes + 400,000 spare rows,
    # 400,017 rows x 60 columns = 24,001,020 cells (A..BG + 1: table A..AA, gap AB, the chart
    # over AC..AN, gap AO, the #N/A chart points AP..AR, gap AS, ceiling AT..AW, the log10
    # ceiling block AX..BB (x, ceiling y, ridge y, two blanks), the log10 points block
    # BC..BG (x, two blanks, compute-bound y, memory-bound y)); the other tabs' grids (read
    # from the plan, since other sheets grow) come on top. The excess over 10,000,000 in
    # whole Matmul rows, rounded up, is what --spare-rows must drop.
    [(args, kwargs, p)] = planned  # as sheetgen.plan(spare_rows=400_000, chart_helpers=True)
    assert not args and kwargs["spare_rows"] == 400_000 and kwargs["chart_helpers"] is True
    assert kwargs["shapes"] is None and kwargs["gpu"] is None and "measured" not in kwargs
    assert requests.grid_size(p.sheet("Matmul")) == (400_017, 60)
    others = sum(n for name, n in requests.grid_cells(p).items() if name != "Matmul")
    total = 400_017 * 60 + others
    fewer = -(-(total - 10_000_000) // 60)
    line = one_line_error(result, f"would hold {total:,} cells",
                          "over Google's limit of 10,000,000", f"--spare-rows {400_000 - fewer}")
    assert "(now 400000)" in line
    assert cli_env.count(None, r"/v4/") == 0 and cli_env.count(None, r"^/token$") == 0


def test_cell_limit_names_shapes_and_other_tabs_when_spare_rows_cannot_help():
    p = sheetgen.plan(shapes=[(i + 1, 64, 64) for i in range(2000)], spare_rows=0,
                      chart_helpers=True)
    ours = sum(requests.grid_cells(p).values())

    def beside(cells: int) -> gsheets.SpreadsheetState:
        return gsheets.SpreadsheetState((("Data", 7),), cells=((7, cells),))

    # another tab leaves room for all of sheetgen's tabs but 1,000 cells: 17 Matmul rows
    with pytest.raises(SheetsError) as err:
        gsheets.check_cell_limit(p, beside(10_000_000 - ours + 1_000), KEY)
    msg = str(err.value)
    assert "a --shapes file with 17 fewer rows (now 2000)" in msg  # ceil(1,000 / 60)
    assert "--spare-rows" not in msg and "fewer or smaller other tabs" in msg
    gsheets.check_cell_limit(p, beside(10_000_000 - ours), KEY)  # "up to": at the limit is ok
    # 1,000 rows is a tab's floor (Google's default grid): fewer shapes cannot help there
    small = sheetgen.plan(shapes=SHAPES, spare_rows=0, chart_helpers=True)
    with pytest.raises(SheetsError) as err:
        gsheets.check_cell_limit(small, beside(9_900_000), KEY)
    assert "--shapes" not in str(err.value) and "other tabs" in str(err.value)
