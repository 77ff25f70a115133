"""Excel semantics of the evaluator on small workbooks written with xlsxwriter."""

from __future__ import annotations

import numpy as np
import pytest
from evaluate_helpers import one, write_book

from sheetgen.evaluate import ExcelError, evaluate_workbook

CODES = ("#DIV/0!", "#VALUE!", "#N/A", "#NAME?", "#NUM!", "#REF!")
DIV0, VALUE, NA, NAME, NUM, REF = (ExcelError(c) for c in CODES)


def test_excel_error_value_object():
    assert ExcelError("#DIV/0!") == DIV0
    assert ExcelError("#DIV/0!") != NA
    assert str(NA) == "#N/A" and hash(ExcelError("#N/A")) == hash(NA)
    with pytest.raises(ValueError):
        ExcelError("#WHAT")


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=-2^2", 4.0),
        ("=2^3^2", 64.0),
        ("=1+2*3-4/2", 5.0),
        ("=50%*2", 1.0),
        ("=-(3)", -3.0),
        ("=TRUE+TRUE", 2.0),
        ('="4096"*1', 4096.0),
        ('=" 12 "+1', 13.0),
        ("=1E+12/1E+3", 1e9),
        ("=2^0.5", 2**0.5),
        ('=4096&""', "4096"),
        ('=0.5&""', "0.5"),
        ('=1/3&""', "0.333333333333333"),
        ('=1E+20&""', "1E+20"),
        ('=-7&"x"', "-7x"),
        ('=TRUE&""', "TRUE"),
        ('="a"&"b"&1', "ab1"),
        ('=1<"a"', True),
        ('="a"<TRUE', True),
        ('="ABC"="abc"', True),
        ('="b">"A"', True),
        ("=2>=2", True),
        ("=1<>1", False),
        ("=FALSE<TRUE", True),
    ],
)
def test_operators(tmp_path, formula, expected):
    got = one(tmp_path, formula)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=1/0", DIV0),
        ('="abc"*2', VALUE),
        ('=""+1', VALUE),
        ("=1/0+1", DIV0),
        ('="x"&1/0', DIV0),
        ("=(1/0)=1", DIV0),
        ("=NOPE+1", NAME),
        ("=LOG10(0)", NUM),
        ("=0^0", NUM),
        ("=0^-1", DIV0),
        ("=(-8)^0.5", NUM),
        ("=MOD(3,0)", DIV0),
        ("=1E+200*1E+200", NUM),
        ("=#N/A+1", NA),
    ],
)
def test_errors_are_values(tmp_path, formula, expected):
    assert one(tmp_path, formula) == expected


def test_errors_propagate_through_cells(tmp_path):
    cells = {"A1": "=1/0", "A2": "=A1*2", "A3": "=MAX(A1,5)", "A4": "=IFERROR(A2,-1)",
             "A5": '=A1&"x"'}  # fmt: skip
    path = write_book(tmp_path / "e.xlsx", {"S": cells})
    ev = evaluate_workbook(path)
    assert [ev.value("S", f"A{i}") for i in range(1, 6)] == [DIV0, DIV0, DIV0, -1.0, DIV0]


def test_if_does_not_leak_untaken_errors(tmp_path):
    cells = {"A1": 0, "A2": 4}
    assert one(tmp_path, "=IF(A1=0,0,1/A1)", cells) == 0.0
    assert one(tmp_path, "=IF(A2=0,0,1/A2)", cells) == 0.25
    assert one(tmp_path, "=IF(1/0,1,2)", cells) == DIV0
    assert one(tmp_path, '=IF("abc",1,2)', cells) == VALUE
    assert one(tmp_path, "=IF(A1,1)", cells) is False
    assert one(tmp_path, "=IF(A2,,2)", cells) == 0.0
    assert one(tmp_path, '=IFERROR(MATCH(9,A1:A2,0),"none")', cells) == "none"
    assert one(tmp_path, "=IFERROR(2,1/0)", cells) == 2.0


def test_empty_cells(tmp_path):
    assert one(tmp_path, "=A1+1") == 1.0
    assert one(tmp_path, '=A1&"x"') == "x"
    assert one(tmp_path, "=ISBLANK(A1)") is True
    assert one(tmp_path, '=A1=""') is True
    assert one(tmp_path, "=A1=0") is True
    assert one(tmp_path, "=A1") == 0.0  # a formula showing an empty cell shows 0
    assert one(tmp_path, "=ISBLANK(B1)", {"B1": '=""'}) is False
    assert one(tmp_path, "=ISTEXT(B1)", {"B1": '=""'}) is True


def test_whole_number_results_stay_float(tmp_path):
    path = write_book(tmp_path / "f.xlsx", {"S": {"A1": 3, "A2": "=A1*2", "A3": "=INT(2.7)"}})
    ev = evaluate_workbook(path)
    assert type(ev.value("S", "A2")) is float and ev.value("S", "A2") == 6.0
    assert type(ev.value("S", "A3")) is float and ev.value("S", "A3") == 2.0
    assert ev.value("S", "A1") == 3.0 and ev.value("S", "B9") is None


RANGE = {"A1": 1, "A2": "two", "A3": 3, "A4": True, "A5": None, "A6": 5,
         "B1": "x", "B2": "Y", "B3": "z", "C1": 10, "C2": 20, "C3": 30}  # fmt: skip


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("=SUM(A1:A6)", 9.0),
        ("=SUM(A1:A6,10,TRUE)", 20.0),
        ('=SUM(A1:A6,"2")', 11.0),
        ('=SUM("abc")', VALUE),
        ("=MAX(A1:A6)", 5.0),
        ("=MIN(A1:A6,-1)", -1.0),
        ("=MAX(B1:B3)", 0.0),
        ("=AVERAGE(A1:A6)", 3.0),
        ("=AVERAGE(B1:B3)", DIV0),
        ("=COUNT(A1:A6)", 3.0),
        ("=COUNTA(A1:A6)", 5.0),
        ("=COUNTBLANK(A1:A6)", 1.0),
        ("=AND(A1,A3,A4)", True),
        ("=AND(A1:A6,FALSE)", False),
        ("=OR(A5,0)", False),
        ("=OR(B1:B3)", VALUE),
        ("=NOT(A1)", False),
        ("=INDEX(C1:C3,2)", 20.0),
        ("=INDEX(B1:C3,3,2)", 30.0),
        ("=INDEX(B1:C1,2)", 10.0),
        ("=INDEX(C1:C3,4)", REF),
        ('=MATCH("y",B1:B3,0)', 2.0),
        ("=MATCH(30,C1:C3,0)", 3.0),
        ("=MATCH(31,C1:C3,0)", NA),
        ("=MATCH(25,C1:C3,1)", 2.0),
        ("=MATCH(25,C1:C3)", 2.0),
        ('=MATCH("?",B1:B3,0)', 1.0),
        ('=MATCH("z*",B1:B3,0)', 3.0),
        ('=VLOOKUP("Y",B1:C3,2,FALSE)', 20.0),
        ('=VLOOKUP("q",B1:C3,2,FALSE)', NA),
        ('=VLOOKUP("x",B1:C3,3,FALSE)', REF),
        ("=SUMPRODUCT(C1:C3,C1:C3)", 1400.0),
        ("=SUMPRODUCT((C1:C3>15)*C1:C3)", 50.0),
        ("=SUMPRODUCT(A1:A3,C1:C3)", 100.0),
        ("=SUMPRODUCT(C1:C3,C1:C2)", VALUE),
        ("=ROUND(2.5,0)", 3.0),
        ("=ROUND(-2.5,0)", -3.0),
        ("=ROUND(2.675,2)", 2.68),
        ("=ROUND(1234.5,-2)", 1200.0),
        ("=ROUNDUP(1.01,1)", 1.1),
        ("=ROUNDUP(-1.01,0)", -2.0),
        ("=ROUNDDOWN(-1.99,1)", -1.9),
        ("=ROUNDUP(3,0)", 3.0),
        ("=INT(-1.5)", -2.0),
        ("=MOD(-3,2)", 1.0),
        ("=MOD(7.5,2)", 1.5),
        ("=LOG10(1000)", 3.0),
        ("=ABS(-2)", 2.0),
        ("=ISNUMBER(A1)", True),
        ("=ISNUMBER(A2)", False),
        ("=ISTEXT(A2)", True),
        ("=ISNUMBER(A4)", False),
    ],
)
def test_functions(tmp_path, formula, expected):
    got = one(tmp_path, formula, RANGE)
    assert got == expected and type(got) is type(expected)


def test_defined_names_and_cross_sheet_refs(tmp_path):
    path = write_book(
        tmp_path / "n.xlsx",
        {
            "Inputs": {"A1": "PEAK", "B1": 1e15, "B2": 2},
            "GPU Specs": {"A5": "H100", "A6": "A100", "B5": 989, "B6": 312},
            "Matmul": {
                "A1": "=PEAK_FLOPS/1E+12",
                "A2": "=SUM(SPECS_COL)",
                "A3": "=VLOOKUP(\"a100\",'GPU Specs'!$A$5:$B$6,2,FALSE)",
                "A4": "=dtype_bytes*2",
                "A5": "='GPU Specs'!B5+Inputs!B2",
            },
        },
        names={
            "PEAK_FLOPS": "=Inputs!$B$1",
            "SPECS_COL": "='GPU Specs'!$B$5:$B$6",
            "DTYPE_BYTES": "=Inputs!$B$2",
        },
    )
    ev = evaluate_workbook(path)
    assert [ev.value("Matmul", f"A{i}") for i in range(1, 6)] == [1000.0, 1301.0, 312.0, 4.0, 991.0]
    assert ev.defined_names["SPECS_COL"] == "'GPU Specs'!$B$5:$B$6"
    assert ev.sheet_names == ["Inputs", "GPU Specs", "Matmul"]


def test_column_formulas_and_api(tmp_path):
    cells: dict[str, object] = {"A5": "m", "B5": "guard", "C5": "total"}
    for r in range(6, 56):
        if r % 10:
            cells[f"A{r}"] = r * 2
        cells[f"B{r}"] = f'=IF(ISNUMBER(A{r}),A{r}*B$3,"")'
        cells[f"C{r}"] = f"=SUM(B$6:B{r})"
        cells[f"D{r}"] = f"=SUMPRODUCT(($A$6:$A$55>A{r})*1)"
    cells["B3"] = 3
    path = write_book(tmp_path / "c.xlsx", {"S": cells})
    progress: list[tuple[int, int]] = []
    ev = evaluate_workbook(path, progress=lambda d, t: progress.append((d, t)))
    assert progress and progress[-1] == (150, 150)
    b = ev.column("S", "B", 6, 55)
    assert b.dtype == object and b[4] == "" and b[0] == 36.0
    vals = [r * 6 if r % 10 else 0 for r in range(6, 56)]
    np.testing.assert_allclose(ev.column("S", "C", 6, 55), np.cumsum(vals))
    assert ev.value("S", "D6") == 44.0  # 45 numbers in A, all but A6 itself exceed A6
    assert ev.formula("S", "C7") == "=SUM(B$6:B7)" and ev.formula("S", "A6") is None
    assert ev.range_values("S", "A5:B6") == [["m", "guard"], [12.0, 36.0]]
    assert len(list(ev.formula_cells("S"))) == 150
    assert next(iter(ev.formula_cells())) == ("S", "B6")


def test_cached_values_are_ignored_and_inputs_kept(tmp_path):
    import zipfile

    path = write_book(tmp_path / "c.xlsx", {"S": {"A1": 5, "B1": "=A1*2", "C1": '=B1&"!"'}})
    with zipfile.ZipFile(path) as zf:
        xml = zf.read("xl/worksheets/sheet1.xml").decode()
    assert "<v>-1</v>" in xml  # the file really carries a wrong cached result
    ev = evaluate_workbook(path)
    assert ev.value("S", "B1") == 10.0 and ev.value("S", "C1") == "10!"
    assert ev.value("S", "A1") == 5.0


def test_workbook_saved_by_openpyxl(tmp_path):
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Data"
    ws["A1"], ws["A2"], ws["A3"] = 2, "x & y", True
    ws["B1"] = "=A1*3"
    ws["B2"] = '=A2&" <ok>"'
    ws["B3"] = "=IF(A3,SUM(A1:B1),0)"
    path = tmp_path / "op.xlsx"
    wb.save(path)
    ev = evaluate_workbook(path)
    assert ev.range_values("Data", "B1:B3") == [[6.0], ["x & y <ok>"], [8.0]]
    assert ev.formula("Data", "B2") == '=A2&" <ok>"'
