"""Where sheetgen follows Excel's documented behaviour rather than the obvious arithmetic.

Sources: Microsoft, "Floating-point arithmetic may give inaccurate results in Excel" (15
significant digits; the near-zero result of a final + or -); Apache POI NumberComparer
("(0.06-0.01)=0.05" is TRUE); published readings of Excel 16 for number-to-text.
"""

from __future__ import annotations

import numpy as np
import pytest

from sheetgen.core import excel as xn
from sheetgen.evaluate import ExcelError, evaluate_cells
from sheetgen.layout.styles import COMPUTE_BOUND
from sheetgen.model.factories import _regime, at_most


def evaluated(formula: str, values: dict | None = None, at: tuple[int, int] = (0, 25)) -> object:
    return evaluate_cells({"S": {at: formula}}, {"S": dict(values or {})}).value(
        "S", _a1(*at))


def _a1(r: int, c: int) -> str:
    from sheetgen.evaluate.refs import a1

    return a1(r + 1, c + 1)


@pytest.mark.parametrize(("formula", "expected"), [
    ("=0.1+0.2=0.3", True),            # 15-digit comparison (LibreOffice: TRUE)
    ("=3*0.1=0.3", True),              # (LibreOffice: TRUE)
    ("=1+4E-15=1", True),              # Excel: equal to 15 digits; LibreOffice says FALSE
    ("=1+1E-14=1", False),             # differs in the 15th digit
    ("=0.3<0.1+0.2", False), ("=0.3<=0.1+0.2", True), ("=0.1+0.2>0.3", False),
    ("=(0.06-0.01)=0.05", True),       # POI's documented example
    ("=0.1+0.2-0.3", 0.0),             # final subtraction snaps to 0 (the KB's rule)
    ("=-0.45+0.43+0.02", 0.0),
    ("=1*(0.1+0.2-0.3)", 0.1 + 0.2 - 0.3),  # not the last operation: no snapping in Excel
    ("=0.1+0.2", 0.30000000000000004),      # full precision is kept, only shown as 0.3
])
def test_numbers_near_the_last_bit(formula, expected):
    assert evaluated(formula) == expected


def test_the_model_compares_as_the_sheet_does():
    """A regime and a fit check on the ridge to the last bit agree with the sheet's IF."""
    ridge, x = 0.3, 0.1 + 0.2  # x > ridge in binary, equal to 15 digits
    assert _regime(x - 1e-17, ridge) == COMPUTE_BOUND  # 0.29999999999999999 >= 0.3 in Excel
    assert evaluated("=IF(0.1+0.2-1E-17>=0.3,\"c\",\"m\")") == "c"
    fit = at_most("fits", "v", "lim", "fits")
    assert fit.reference(v=1 + 4e-15, lim=1.0) is True
    assert bool(xn.le(1 + 4e-15, 1.0)) and not bool(xn.lt(1.0, 1 + 4e-15))
    assert list(_regime(np.array([0.1 + 0.2, 0.29]), 0.3)) == [COMPUTE_BOUND, "memory-bound"]


@pytest.mark.parametrize(("formula", "text"), [
    ('=1E-5/7&""', "1.42857142857143E-06"), ('=1/3&""', "0.333333333333333"),
    ('=2/3&""', "0.666666666666667"), ('=1E+15&""', "1000000000000000"),
    ('=1E+19&""', "10000000000000000000"), ('=1E+20&""', "1E+20"),
    ('=0.00001&""', "0.00001"), ('=1E-18&""', "0.000000000000000001"), ('=1E-19&""', "1E-19"),
    ('=-1.5E-20&""', "-1.5E-20"), ('=(0.1+0.2)&""', "0.3"), ('=1/7*1E+17&""', "14285714285714300"),
    ('=1/30&""', "0.0333333333333333"),
])
def test_number_to_text(formula, text):
    assert evaluated(formula) == text


def test_count_skips_errors():
    values = {(1, 6): 1.0, (2, 6): ExcelError("#N/A"), (3, 6): "x", (4, 6): 2.0}
    assert evaluated("=COUNT(G2:G5)", values) == 2.0
    assert evaluated("=COUNT(G2:G5,1/0,\"3\")", values) == 3.0  # a typed numeric text counts


def test_whole_column_counts_every_row():
    values = {(0, 7): 1.0, (9, 7): "a", (19, 7): ""}  # H1, H10 and H20 (empty text)
    assert evaluated("=COUNTBLANK(H:H)", values) == 1_048_576 - 2
    assert evaluated('=COUNTIF(H:H,"")', values) == 1_048_576 - 2
    assert evaluated("=COUNTA(H:H)", values) == 3.0
    assert evaluated("=ROWS(H:H)", values) == 1_048_576.0


@pytest.mark.parametrize(("formula", "expected"), [
    ('="$12"*2', 24.0), ('="50%"*2', 1.0), ('="1,000"+1', 1001.0), ('="2024-01-01"+0', 45292.0),
    ('="(5)"+0', -5.0), ('="1/15/2024"+0', 45306.0), ('="12:00"*2', 1.0),
    ('="1,00"+0', ExcelError("#VALUE!")), ('="abc"+0', ExcelError("#VALUE!")),
])
def test_text_read_as_a_number(formula, expected):
    assert evaluated(formula) == expected


@pytest.mark.parametrize(("formula", "expected"), [
    ('="a"<"B"', True), ('="B"<"a"', False), ('="1"<"a"', True), ('="!"<"1"', True),
    ('="abc"="ABC"', True), ('="a"<"ab"', True), ('="Z"<"a"', False), ('="9"<"10"', False),
    ('="_x"<"a"', True),
])
def test_text_ordering(formula, expected):
    assert evaluated(formula) == expected


def test_index_zero_intersects_with_the_formula_row():
    values = {(r, 2): float(r + 1) for r in range(6)}  # C1:C6 = 1..6
    assert evaluated("=INDEX(C1:C6,0)", values, at=(3, 25)) == 4.0  # in row 4: C4
    assert evaluated("=INDEX(C1:C6,0,1)", values, at=(9, 25)) == ExcelError("#VALUE!")  # row 10
    assert evaluated("=C1:C6", values, at=(1, 25)) == 2.0
