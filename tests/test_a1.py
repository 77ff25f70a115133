"""core/a1.py: cell addresses and quoted sheet names, held against XlsxWriter's utility
(what the planner used before it stopped importing a spreadsheet library) and against
addresses worked out by hand."""

from __future__ import annotations

import pytest
from xlsxwriter.utility import quote_sheetname, xl_col_to_name, xl_rowcol_to_cell

from sheetgen.core import a1


@pytest.mark.parametrize(("row", "col", "text"), [
    (0, 0, "A1"), (4, 1, "B5"), (0, 25, "Z1"), (0, 26, "AA1"), (0, 701, "ZZ1"),
    (0, 702, "AAA1"), (1_048_575, 16_383, "XFD1048576"),
])
def test_cells_by_hand(row, col, text):
    assert a1.cell(row, col) == text
    assert a1.col_index(a1.col_name(col)) == col


def test_cells_and_columns_match_xlsxwriter():
    for col in [*range(0, 800), 16_383]:
        assert a1.col_name(col) == xl_col_to_name(col)
        assert a1.col_name(col, True) == xl_col_to_name(col, True)
    for row, col in [(0, 0), (9, 3), (99_999, 30), (1_048_575, 16_383)]:
        for ra in (False, True):
            for ca in (False, True):
                assert a1.cell(row, col, ra, ca) == xl_rowcol_to_cell(row, col, ra, ca)


@pytest.mark.parametrize("name", [
    "Matmul", "GPU Specs", "What-if", "Inputs", "My 'x", "A1", "XFD1048576", "XFE1",
    "AB12x", "R1", "R1x", "C5", "RC", "R", "C", "rc2", "1st", ".dot", "under_score",
    "Dots.ok", "Ünïcode", "tab\tname", "Sheet1", "ZZZ0", "R0", "C99999",
])
def test_sheet_names_are_quoted_as_xlsxwriter_quotes_them(name):
    assert a1.quote_sheet(name) == quote_sheetname(name)


def test_quoted_by_hand():
    assert a1.quote_sheet("GPU Specs") == "'GPU Specs'"
    assert a1.quote_sheet("My 'x") == "'My ''x'"
    assert a1.quote_sheet("Matmul") == "Matmul"
    assert a1.sheet_cell("GPU Specs", 6, 1) == "'GPU Specs'!$B$7"
    assert a1.sheet_range("Matmul", 5, 0, 16, 0) == "Matmul!$A$6:$A$17"


def test_negative_positions_are_refused():
    with pytest.raises(ValueError):
        a1.cell(-1, 0)
    with pytest.raises(ValueError):
        a1.col_name(-1)
