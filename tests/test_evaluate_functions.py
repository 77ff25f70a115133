"""The functions people type in hand-made sheets, against Excel's documented results.

Each expected value is what Microsoft's function reference gives (support.microsoft.com,
"<NAME> function") for the same arguments, or follows from the rule it states.
"""

from __future__ import annotations

import math

import pytest

from sheetgen.evaluate import ExcelError, evaluate_cells

DIV0, VALUE, NA, NUM, REF = (ExcelError(c) for c in ("#DIV/0!", "#VALUE!", "#N/A", "#NUM!",
                                                      "#REF!"))

# A small sheet the formulas read: A1:A6 numbers, text, blank, boolean, error; B1:B6 labels.
CELLS = {
    (0, 0): 10.0, (1, 0): 20.0, (2, 0): "30", (4, 0): True, (5, 0): 40.0,
    (0, 1): "gpu", (1, 1): "cpu", (2, 1): "GPU", (3, 1): "tpu", (4, 1): "gpu-x", (5, 1): "cpu",
    (0, 2): 1.0, (1, 2): 2.0, (2, 2): 3.0, (3, 2): 4.0, (4, 2): 5.0, (5, 2): 6.0,
    (0, 3): ExcelError("#N/A"), (1, 3): 7.0,
}


def evaluated(formula: str, extra: dict | None = None) -> object:
    formulas = {(20, 5): formula}
    values = dict(CELLS)
    if extra:
        values.update(extra)
    return evaluate_cells({"S": formulas}, {"S": values}).value("S", "F21")


CASES = [
    # maths
    ("=POWER(5,2)", 25.0), ("=POWER(98.6,3.2)", 98.6**3.2), ("=POWER(4,5/4)", 4**1.25),
    ("=POWER(0,0)", NUM), ("=POWER(0,-1)", DIV0), ("=POWER(-8,1/3)", NUM),
    ("=SQRT(16)", 4.0), ("=SQRT(-16)", NUM), ("=EXP(1)", math.e), ("=EXP(1000)", NUM),
    ("=LN(86)", math.log(86)), ("=LN(0)", NUM), ("=LOG(10)", 1.0), ("=LOG(8,2)", 3.0),
    ("=LOG(86,2.7182818)", math.log(86) / math.log(2.7182818)), ("=LOG(8,1)", DIV0),
    ("=LOG(-1)", NUM), ("=PI()", math.pi), ("=SIGN(10)", 1.0), ("=SIGN(4-4)", 0.0),
    ("=SIGN(-0.00001)", -1.0), ("=TRUNC(8.9)", 8.0), ("=TRUNC(-8.9)", -8.0),
    ("=TRUNC(0.45,1)", 0.4), ("=INT(8.9)", 8.0), ("=INT(-8.9)", -9.0),
    ("=CEILING(2.5,1)", 3.0), ("=CEILING(-2.5,-2)", -4.0), ("=CEILING(-2.5,2)", -2.0),
    ("=CEILING(1.5,0.1)", 1.5), ("=CEILING(0.234,0.01)", 0.24), ("=CEILING(2.5,-2)", NUM),
    ("=FLOOR(3.7,2)", 2.0), ("=FLOOR(-2.5,-2)", -2.0), ("=FLOOR(2.5,-2)", NUM),
    ("=FLOOR(1.58,0.1)", 1.5), ("=FLOOR(0.234,0.01)", 0.23), ("=FLOOR(0.3,0.1)", 0.3),
    ("=FLOOR(1,0)", DIV0), ("=CEILING.MATH(24.3,5)", 25.0), ("=CEILING.MATH(6.7)", 7.0),
    ("=CEILING.MATH(-8.1,2)", -8.0), ("=CEILING.MATH(-5.5,2,-1)", -6.0),
    ("=FLOOR.MATH(24.3,5)", 20.0), ("=FLOOR.MATH(6.7)", 6.0), ("=FLOOR.MATH(-8.1,2)", -10.0),
    ("=FLOOR.MATH(-5.5,2,-1)", -4.0), ("=MROUND(10,3)", 9.0), ("=MROUND(-10,-3)", -9.0),
    ("=MROUND(1.3,0.2)", 1.4), ("=MROUND(5,-2)", NUM), ("=QUOTIENT(5,2)", 2.0),
    ("=QUOTIENT(4.5,3.1)", 1.0), ("=QUOTIENT(-10,3)", -3.0), ("=QUOTIENT(1,0)", DIV0),
    ("=PRODUCT(C1:C3)", 6.0), ("=PRODUCT(C1:C3,2)", 12.0), ("=PRODUCT(B1:B2)", 0.0),
    ("=SUMSQ(3,4)", 25.0), ("=SUMSQ(C1:C2)", 5.0), ("=MOD(-3,2)", 1.0),
    # statistics
    ("=MEDIAN(1,2,3,4,5)", 3.0), ("=MEDIAN(1,2,3,4,5,6)", 3.5), ("=MEDIAN(A1:A6)", 20.0),
    ("=LARGE(C1:C6,1)", 6.0), ("=LARGE(C1:C6,3)", 4.0), ("=LARGE(C1:C6,7)", NUM),
    ("=SMALL(C1:C6,2)", 2.0), ("=SMALL(C1:C6,0)", NUM), ("=LARGE({3,5,3,5,4},3)", 4.0),
    ("=STDEV.S(C1:C6)", math.sqrt(3.5)), ("=STDEV.S(1)", DIV0), ("=MAXA(A1:A6)", 40.0),
    ("=MAXA(B1:B2)", 0.0), ("=MAXA(A5,0.5)", 1.0), ("=MAX(A5,0.5)", 0.5),
    # conditional aggregates
    ('=SUMIF(B1:B6,"gpu",C1:C6)', 4.0), ('=SUMIF(C1:C6,">3")', 15.0),
    ('=SUMIF(B1:B6,"cpu",A1:A6)', 60.0), ('=SUMIF(B1:B6,"g*",C1:C6)', 9.0),
    ('=SUMIF(B1:B6,"?pu",C1:C6)', 16.0), ('=COUNTIF(B1:B6,"gpu")', 2.0),
    ('=COUNTIF(C1:C6,">=4")', 3.0), ('=COUNTIF(C1:C6,"<>4")', 5.0),
    ('=COUNTIF(A1:A6,"")', 1.0), ('=COUNTIF(A1:A6,"<>")', 5.0), ('=COUNTIF(C1:C6,4)', 1.0),
    ('=COUNTIF(B1:B6,"*")', 6.0), ('=COUNTIF(A1:A6,TRUE)', 1.0),
    ('=COUNTIFS(B1:B6,"cpu",C1:C6,">2")', 1.0), ('=SUMIFS(C1:C6,B1:B6,"*pu",C1:C6,"<5")', 10.0),
    ('=AVERAGEIF(C1:C6,">2")', 4.5), ('=AVERAGEIF(C1:C6,">20")', DIV0),
    ('=AVERAGEIF(B1:B6,"cpu",C1:C6)', 4.0), ('=MAXIFS(C1:C6,B1:B6,"gpu")', 3.0),
    ('=MAXIFS(C1:C6,B1:B6,"none")', 0.0), ('=SUMIF(B1:B2,"gpu",D1:D2)', NA),
    ('=SUMIF(B1:B6,"gpu",C1)', 4.0),
    # logic and errors
    ('=IFS(C1>2,"big",C1>0,"small")', "small"), ('=IFS(C1>5,"big")', NA),
    ('=IFS(D1,"x",TRUE,"y")', NA), ("=SWITCH(2,1,\"one\",2,\"two\")", "two"),
    ('=SWITCH(3,1,"one",2,"two")', NA), ('=SWITCH(3,1,"one","other")', "other"),
    ('=SWITCH("B","a",1,"b",2)', 2.0), ("=IFNA(D1,0)", 0.0), ("=IFNA(1/0,0)", DIV0),
    ("=ISNA(D1)", True), ("=ISNA(1/0)", False), ("=NA()", NA), ("=ERROR.TYPE(1/0)", 2.0),
    ("=ERROR.TYPE(D1)", 7.0), ("=ERROR.TYPE(1)", NA), ("=ERROR.TYPE(SQRT(-1))", 6.0),
    # lookup and reference
    ('=CHOOSE(2,"a","b","c")', "b"), ('=CHOOSE(4,"a","b","c")', VALUE),
    ("=CHOOSE(1.9,10,20)", 10.0), ('=HLOOKUP("b",{"a","b";1,2},2,FALSE)', 2.0),
    ("=HLOOKUP(2.5,{1,2,3;10,20,30},2)", 20.0), ("=HLOOKUP(2,{1,2,3;10,20,30},3)", REF),
    ("=LOOKUP(6.5,C1:C6,A1:A6)", 40.0), ("=LOOKUP(4.5,C1:C6,B1:B6)", "tpu"),
    ("=LOOKUP(0,C1:C6)", NA), ("=LOOKUP(3,C1:C6)", 3.0),
    ("=LOOKUP(2,{1,2,3;10,20,30})", 20.0), ("=ROW(C4)", 4.0), ("=ROW()", 21.0),
    ("=ROWS(C1:C6)", 6.0), ("=ROWS(A:A)", 1048576.0), ("=COLUMN(D2)", 4.0),
    ("=COLUMN()", 6.0), ("=COLUMNS(A1:C1)", 3.0), ("=ROWS({1,2;3,4})", 2.0),
    ("=SUM(INDEX(C1:D6,0,1))", 21.0), ("=SUM(INDEX(C1:D6,,2))", NA),
    ("=SUM(INDEX(C1:D6,2,0))", 9.0), ("=INDEX({1,2;3,4},2,2)", 4.0), ("=INDEX(C1:C6,7)", REF),
    ("=SUM({1,2,3})", 6.0), ("=SUM({1,\"2\",TRUE})", 1.0),
    # text
    ('=CONCATENATE("a",1,TRUE)', "a1TRUE"), ('=CONCAT(B1:B2,"!")', "gpucpu!"),
    ('=TEXTJOIN(", ",TRUE,A1:A3)', "10, 20, 30"), ('=TEXTJOIN("-",FALSE,A3:A4)', "30-"),
    ('=TEXT(1234.567,"0.00")', "1234.57"), ('=TEXT(1234.567,"#,##0")', "1,235"),
    ('=TEXT(0.285,"0%")', "29%"), ('=TEXT(0.285,"0.0%")', "28.5%"),
    ('=TEXT(12200000,"0.0E+00")', "1.2E+07"), ('=TEXT(0.000123,"0.00E+00")', "1.23E-04"),
    ('=TEXT(2.675,"0.00")', "2.68"), ('=TEXT(-0.4,"0")', "-0"), ('=TEXT("abc","0.00")', "abc"),
    ('=TEXT(1234567.891,"#,##0.00")', "1,234,567.89"), ('=TEXT(0,"0.00")', "0.00"),
    ('=LEFT("Sale Price",4)', "Sale"), ('=LEFT("Sweden")', "S"), ('=LEFT("abc",-1)', VALUE),
    ('=LEN("Phoenix, AZ")', 11.0), ("=LEN(A1)", 2.0), ("=LEN(A4)", 0.0),
    ('=TRIM("  First   Quarter Earnings ")', "First Quarter Earnings"),
    ('=UPPER("total")', "TOTAL"), ('=VALUE("$1,000")', 1000.0), ('=VALUE("16:48:00")', 0.7),
    ('=VALUE("abc")', VALUE), ("=VALUE(TRUE)", VALUE), ("=N(7)", 7.0), ('=N("7")', 0.0),
    ("=N(TRUE)", 1.0), ("=N(D1)", NA), ('=T("Rainfall")', "Rainfall"), ("=T(19)", ""),
    ('=EXACT("word","word")', True), ('=EXACT("Word","word")', False), ("=EXACT(1,\"1\")", True),
    ('=REPT("*-",3)', "*-*-*-"), ('=REPT("x",-1)', VALUE), ('=REPT("x",2.9)', "xx"),
]


@pytest.mark.parametrize(("formula", "expected"), CASES)
def test_function(formula, expected):
    got = evaluated(formula)
    if isinstance(expected, float) and not isinstance(expected, bool):
        assert isinstance(got, float) and math.isclose(got, expected, rel_tol=1e-12), got
    else:
        assert got == expected and type(got) is type(expected), got
