"""Cross-engine agreement: our values == LibreOffice's full recalculation, to rel 1e-9.

The workbook is written with every cached value set to -1, so a match proves LibreOffice
recalculated (and that we ignored the cached values).
"""

from __future__ import annotations

from pathlib import Path

import openpyxl
import xlsxwriter
from evaluate_helpers import same
from lo_helpers import libreoffice_job, needs_libreoffice

from sheetgen.evaluate import evaluate_workbook

ROWS = 240
FIRST = 6
LAST = FIRST + ROWS - 1

COLUMNS = {
    "D": '=IF(AND(ISNUMBER(A{r}),ISNUMBER(B{r}),ISNUMBER(C{r})),"ok","")',
    "E": '=IF($D{r}="ok",2*A{r}*B{r}*C{r},"")',
    "F": '=IF($D{r}="ok",DTYPE_BYTES*(A{r}*B{r}+B{r}*C{r}+A{r}*C{r}),"")',
    "G": '=IF($D{r}="ok",E{r}/F{r},"")',
    "H": '=IF($D{r}="ok",IF(G{r}>=RIDGE,"compute-bound","memory-bound"),"")',
    "I": '=IF($D{r}="ok",E{r}/PEAK_FLOPS,"")',
    "J": '=IF($D{r}="ok",F{r}/HBM_BW,"")',
    "K": '=IF($D{r}="ok",MAX(I{r},J{r}),"")',
    "L": '=IF($D{r}="ok",E{r}/K{r}/1E+12,"")',
    "M": '=IF($D{r}="ok",ROUNDUP(LOG10(E{r}),0)+ROUNDDOWN(G{r},1)+ROUND(G{r},-1),"")',
    "N": '=IF($D{r}="ok",A{r}&"x"&B{r}&"x"&C{r}&" "&H{r}&" "&ROUND(G{r},3),"")',
    "O": '=IF($D{r}="ok",VLOOKUP(GPU,\'GPU Specs\'!$A$5:$C$13,2,FALSE)*1E+12,"")',
    "P": "=INDEX('GPU Specs'!$B$5:$C$13,MATCH(GPU,'GPU Specs'!$A$5:$A$13,0),2)",
    "Q": "=SUMPRODUCT(($A${first}:$A${last}=A{r})*$B${first}:$B${last})",
    "R": "=SUM(E${first}:E{r})",
    "S": "=COUNT($E${first}:E{r})+COUNTA($D${first}:$D${last})+COUNTBLANK($A${first}:$A${last})",
    "T": '=IFERROR(1/(A{r}-512),"inf")',
    "U": "=OR(A{r}>4000,B{r}<256)",
    "V": "=IF(ISBLANK(A{r}),-1,MOD(A{r},7)+INT(C{r}/1000)+ABS(B{r}-2048))",
    "W": "=AVERAGE($K${first}:$K${last})*1E+6+MIN($E${first}:$E${last})",
    "X": '=IF(ISTEXT(H{r}),H{r}="MEMORY-BOUND",NOT(ISNUMBER(G{r})))',
    "Y": '=SUMPRODUCT(SPECS_PEAK,SPECS_BW)/1E+6+MATCH("B200",SPEC_NAMES,0)',
    "Z": '=IFERROR(MATCH(A{r},$A${first}:$A${last},0),"none")',
}

SPECS = [("A100", 312, 2.0), ("H100", 989, 3.35), ("H200", 989, 4.8), ("B200", 2250, 8.0),
         ("L40S", 362, 0.864), ("MI300X", 1307, 5.3), ("A10", 125, 0.6), ("T4", 65, 0.32),
         ("V100", 125, 0.9)]  # fmt: skip


def build(path):
    wb = xlsxwriter.Workbook(str(path))
    inputs = wb.add_worksheet("Inputs")
    specs = wb.add_worksheet("GPU Specs")
    sheet = wb.add_worksheet("Matmul")
    for i, (name, peak, bw) in enumerate(SPECS):
        specs.write_string(f"A{5 + i}", name)
        specs.write_number(f"B{5 + i}", peak)
        specs.write_number(f"C{5 + i}", bw)
    inputs.write_string("B10", "h100")
    wb.define_name("GPU", "=Inputs!$B$10")
    wb.define_name("SPEC_NAMES", "='GPU Specs'!$A$5:$A$13")
    wb.define_name("SPECS_PEAK", "='GPU Specs'!$B$5:$B$13")
    wb.define_name("SPECS_BW", "='GPU Specs'!$C$5:$C$13")
    inputs.write_formula("B5", "=VLOOKUP(GPU,'GPU Specs'!$A$5:$C$13,2,FALSE)*1E+12", None, -1)
    inputs.write_formula("B6", "=INDEX(SPECS_BW,MATCH(GPU,SPEC_NAMES,0))*1E+12", None, -1)
    inputs.write_number("B7", 2)
    inputs.write_formula("B8", "=PEAK_FLOPS/HBM_BW", None, -1)
    for name, row in (("PEAK_FLOPS", 5), ("HBM_BW", 6), ("DTYPE_BYTES", 7), ("RIDGE", 8)):
        wb.define_name(name, f"=Inputs!$B${row}")
    for i in range(ROWS):
        r = FIRST + i
        if i % 17 == 5:
            sheet.write_string(f"A{r}", "n/a")  # text input row: guards must hold
        elif i % 13 != 7:
            sheet.write_number(f"A{r}", 256 * (1 + (i * 7) % 23))
        sheet.write_number(f"B{r}", 128 * (1 + (i * 5) % 19))
        sheet.write_number(f"C{r}", 512 * (1 + (i * 3) % 11))
        for col, f in COLUMNS.items():
            sheet.write_formula(f"{col}{r}", f.format(r=r, first=FIRST, last=LAST), None, -1)
    wb.close()


def _semantic_cases() -> list[str]:
    """Every single-formula case of the semantics tests."""
    import test_evaluate_semantics as sem

    cases = [f for f, _ in sem.test_operators.pytestmark[0].args[1]]
    cases += [f for f, _ in sem.test_errors_are_values.pytestmark[0].args[1]]
    cases += [f for f, _ in sem.test_functions.pytestmark[0].args[1]]
    return cases


@libreoffice_job("evaluate-libreoffice")
def _workbooks(tmp: Path) -> dict[str, Path]:
    import test_evaluate_semantics as sem
    from evaluate_helpers import write_book

    src = tmp / "roofline.xlsx"
    build(src)
    cells: dict[str, object] = dict(sem.RANGE)
    for i, f in enumerate(_semantic_cases(), start=1):
        cells[f"Z{i}"] = f
    return {"roofline": src, "cases": write_book(tmp / "cases.xlsx", {"S": cells})}


@needs_libreoffice
def test_values_match_libreoffice(libreoffice):
    src = libreoffice.sources("evaluate-libreoffice")["roofline"]
    lo_file = libreoffice.outputs("evaluate-libreoffice")["roofline"]
    lo = openpyxl.load_workbook(lo_file, data_only=True)
    ours = evaluate_workbook(src)
    mismatches = []
    checked = 0
    for sheet, cell in ours.formula_cells():
        mine = ours.value(sheet, cell)
        theirs = lo[sheet][cell].value
        if theirs is None and mine == "":
            theirs = ""  # LibreOffice stores an empty-string result as an empty cell
        checked += 1
        if not same(mine, theirs):
            mismatches.append((sheet, cell, ours.formula(sheet, cell), mine, theirs))
    assert checked == ROWS * len(COLUMNS) + 3
    assert not mismatches, mismatches[:10]
    # the cached -1 values were really replaced by LibreOffice
    assert lo["Matmul"][f"E{FIRST}"].value != -1
    # LibreOffice serialises differently (<f aca="false">, shared strings, t="n"): reading its
    # file must give the same formulas and values as reading ours
    again = evaluate_workbook(lo_file)
    assert again.value("Matmul", f"N{FIRST}") == ours.value("Matmul", f"N{FIRST}")
    for sheet, cell in ours.formula_cells():
        assert same(again.value(sheet, cell), ours.value(sheet, cell)), (sheet, cell)


# Where LibreOffice 7.4 and Excel disagree we follow Excel (LibreOffice treats booleans as
# numbers, uses different error codes for some domain errors, and pads exponents).
# formula -> (our/Excel value, LibreOffice value)
KNOWN_LO_DIFFERENCES = {
    '=1E+20&""': ("1E+20", "1E+020"),
    '=TRUE&""': ("TRUE", "1"),
    '="a"<TRUE': (True, False),
    "=LOG10(0)": ("#NUM!", "#VALUE!"),
    "=0^0": ("#NUM!", 1),
    "=0^-1": ("#DIV/0!", "#NUM!"),
    "=SUM(A1:A6)": (9.0, 10),  # A4 holds TRUE: Excel skips booleans in ranges
    "=SUM(A1:A6,10,TRUE)": (20.0, 21),
    '=SUM(A1:A6,"2")': (11.0, "#VALUE!"),
    "=AVERAGE(A1:A6)": (3.0, 2.5),
    "=COUNT(A1:A6)": (3.0, 4),
    "=ISNUMBER(A4)": (False, True),
    "=INDEX(C1:C3,4)": ("#REF!", "#VALUE!"),
    '=VLOOKUP("x",B1:C3,3,FALSE)': ("#REF!", "#VALUE!"),
}


@needs_libreoffice
def test_semantic_cases_match_libreoffice(libreoffice):
    """Every single-formula case of the semantics tests, recalculated by LibreOffice too."""
    cases = _semantic_cases()
    assert len(cases) > 80 and set(KNOWN_LO_DIFFERENCES) <= set(cases)
    src = libreoffice.sources("evaluate-libreoffice")["cases"]
    lo = openpyxl.load_workbook(libreoffice.outputs("evaluate-libreoffice")["cases"],
                                data_only=True)["S"]
    ours = evaluate_workbook(src)
    diffs = []
    for i, f in enumerate(cases, start=1):
        mine, theirs = ours.value("S", f"Z{i}"), lo[f"Z{i}"].value
        expected = KNOWN_LO_DIFFERENCES.get(f)
        if expected is not None:
            ok = same(mine, expected[0]) and same(theirs, expected[1])
        else:
            ok = same(mine, theirs)
        if not ok:
            diffs.append((f, mine, theirs))
    assert not diffs, "\n".join(map(repr, diffs))
