"""One odd cell does not cost the workbook (issue 18, part 5), and the reference operators.

A formula the evaluator cannot parse or does not support is "not evaluated" (a NotEvaluated
value naming why), as are the cells reading it; every other cell is evaluated. `check` of a
sheetgen workbook stays strict. The intersection (a space: `C2:C11 C5:D6`) and the union
(`(C2:C4,D2)` as an argument of SUM, MAX, ...) are evaluated as Excel defines them
(ECMA-376, formulas, "Operators",
https://c-rex.net/samples/ooxml/e1/Part4/OOXML_P4_DOCX_Operators_topic_ID0EXTECB.html: the
reference operators bind tightest, before negation; an empty intersection is #NULL!).

The Data sheet below holds C_r = 1.5 r and D_r = 10 r in rows 2..11, so by hand:
C2:C11 C5:D6 is C5:C6 = {7.5, 9}; C2:C11 B5:D5 is C5 = 7.5; (C2:C4,D2) is 3 + 4.5 + 6 + 20.
"""

from __future__ import annotations

import math
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from helpers import load_workbook
from lo_helpers import libreoffice_job, needs_libreoffice
from openpyxl.workbook.defined_name import DefinedName

from sheetgen.cli import cli
from sheetgen.errors import WorkbookError
from sheetgen.evaluate import ExcelError, NotEvaluated, evaluate_workbook

ROWS = range(2, 12)

#: cell -> (formula, hand value); all on sheet Data
HAND: dict[str, tuple[str, object]] = {
    "F1": ("=MAX(Data!C2:C11 Data!C5:D6)", 9.0),  # the formula: MAX(C5:C6)
    "F2": ("=C2:C11 B5:D5", 7.5),  # a single common cell
    "F3": ("=SUM(C2:C11 C5:D6)", 7.5 + 9.0),
    "F4": ("=SUM(C2:C3 D2:D3)", ExcelError("#NULL!")),  # nothing in common
    "F5": ("=-C2:C11 B5:D5", -7.5),  # the space binds before the minus
    "F6": ("=SUM(Cs Data!$B$3:$D$4)", 4.5 + 6.0),  # a defined name: C3:C4
    "F7": ("=SUM(C:C $5:$5)", 7.5),  # a whole column and a whole row: C5
    "F8": ("=SUM((C2:C4,D2))", 3.0 + 4.5 + 6.0 + 20.0),  # the union
    "F9": ("=COUNT((C2:C11,D2:D11))", 20.0),
    "F10": ("=MAX((C2:C3,D5),C4)", 50.0),
    "F11": ("=SUM(((C2,C3),C4))", 3.0 + 4.5 + 6.0),  # nested unions flatten
    "F12": ("=AVERAGE((C2:C3,D2))", (3.0 + 4.5 + 20.0) / 3),
    "F13": ("=SUM( C2 , C3 )", 7.5),  # spaces that only space things out
    "F14": ("=C2 + C3 * 2", 3.0 + 9.0),
    "F15": ('=IF(C2>0, "yes", "no")', "yes"),
}
#: cell -> (formula, the start of why it is not evaluated)
ODD: dict[str, tuple[str, str]] = {
    "H1": ("=SUM(C2:INDEX(C2:C11,3))", "cannot parse formula"),
    "H2": ("=SUM(C2:C11 $B$5:$D$5)", "an intersection of absolute and relative rows"),
    "H3": ("=SUM(C2:C11 Other!C2:C11)", "an intersection of references on different sheets"),
    "H4": ("=LARGE((C2:C4,D2),1)", "the union operator"),
    "H5": ("=SUM((1,2))", "a union (a,b) of something other than references"),
    "H6": ("=H1*2", "reads Data!H1: cannot parse formula"),  # reads an odd cell
}


def _book(path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Data"
    for r in ROWS:
        ws[f"C{r}"], ws[f"D{r}"] = 1.5 * r, 10.0 * r
        # copied down: row r's own C:D pair meets the D cells around it in D_r
        ws[f"G{r}"] = f"=SUM(C{r}:D{r} D{r - 1}:D{r + 1})"
    for cell, (formula, _) in {**HAND, **ODD}.items():
        ws[cell] = formula
    wb.create_sheet("Other")["A1"] = 1
    wb.defined_names["Cs"] = DefinedName("Cs", attr_text="Data!$C$2:$C$11")
    wb.save(path)
    return path


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    return _book(tmp_path_factory.mktemp("odd") / "odd.xlsx")


def _same(got, want) -> bool:
    if isinstance(want, float):
        return isinstance(got, float) and math.isclose(got, want, rel_tol=1e-12)
    return got == want


def test_reference_operators_match_the_hand_values(book):
    ev = evaluate_workbook(book)
    wrong = {c: ev.value("Data", c) for c, (_, want) in HAND.items()
             if not _same(ev.value("Data", c), want)}
    assert wrong == {}
    assert [ev.value("Data", f"G{r}") for r in ROWS] == [10.0 * r for r in ROWS]


def test_odd_cells_are_not_evaluated_and_the_rest_is(book):
    ev = evaluate_workbook(book)  # lenient by default: no WorkbookError
    skipped = {cell: why for (sheet, cell), why in ev.not_evaluated.items()
               if sheet == "Data"}
    assert set(skipped) == set(ODD)
    for cell, (_, why) in ODD.items():
        assert skipped[cell].startswith(why), (cell, skipped[cell])
        got = ev.value("Data", cell)
        assert isinstance(got, NotEvaluated) and got.why == skipped[cell]
    assert ev.value("Data", "F1") == 9.0


def test_strict_evaluation_still_names_the_cell(book):
    with pytest.raises(WorkbookError, match=r"cannot parse formula in Data!H1"):
        evaluate_workbook(book, lenient=False)


def test_check_stays_strict_on_a_sheetgen_workbook(tmp_path):
    path = tmp_path / "roofline.xlsx"
    assert CliRunner().invoke(cli, ["build", str(path)]).exit_code == 0
    wb = load_workbook(path)
    wb["Matmul"]["D6"] = "=SUM(A6:INDEX(A6:A7,1))"  # one of its own cells, now odd
    wb.save(path)
    result = CliRunner().invoke(cli, ["check", str(path)])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: cannot parse formula in Matmul!D6")


@libreoffice_job("evaluate-odd-cells")
def _odd_book(tmp: Path) -> dict[str, Path]:
    return {"odd": _book(tmp / "odd.xlsx")}


@needs_libreoffice
def test_libreoffice_agrees_on_the_reference_operators(libreoffice):
    # forced recalculation, so the values are LibreOffice's
    out = libreoffice.outputs("evaluate-odd-cells")["odd"]
    wb = openpyxl.load_workbook(out, data_only=True)
    ws = wb["Data"]
    got = {c: ws[c].value for c in HAND}
    # an empty intersection: #NULL! in Excel and the standard, #REF! in LibreOffice 7.4
    # (docs/checking.md, "Where Excel and LibreOffice differ")
    assert got.pop("F4") == "#REF!"
    wrong = {c: v for c, v in got.items()
             if not _same(float(v) if isinstance(v, int) else v, HAND[c][1])}
    assert wrong == {}
    assert [ws[f"G{r}"].value for r in ROWS] == [10 * r for r in ROWS]
