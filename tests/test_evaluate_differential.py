"""Differential test: random formulas (tests/formula_gen.py, seeded) evaluated by sheetgen and
by LibreOffice's forced recalculation, in one LibreOffice start.

Both sides are compared cell by cell: numbers to rel 1e-9 (abs 1e-12 near zero, where
Excel's final-result rule and LibreOffice's approximate subtraction both give 0), text exactly
after writing every number inside it with 12 significant digits (LibreOffice writes numbers
as text in its own forms, e.g. 1E+020 for Excel's 1E+20), error codes exactly. A second sheet
holds the documented Excel-vs-LibreOffice differences: there sheetgen gives Excel's value and
LibreOffice its own, so the list in docs/checking.md stays true.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Any

import openpyxl
import pytest
import xlsxwriter
from formula_gen import DATA, formulas
from lo_helpers import libreoffice_job, needs_libreoffice

from sheetgen.evaluate import ExcelError, evaluate_workbook

SEED = 12
COUNT = 1000

#: formula, sheetgen's (Excel's) value, LibreOffice 7's value. docs/checking.md: "Where Excel and
#: LibreOffice differ".
KNOWN = [
    ("=TRUE>5", True, False),                    # Excel: booleans sort above numbers
    ("=1=TRUE", False, True),                    # LibreOffice: TRUE is the number 1
    ("=0^0", ExcelError("#NUM!"), 1.0),
    ("=POWER(0,0)", ExcelError("#NUM!"), 1.0),
    ("=1+4E-15=1", True, False),                 # Excel compares 15 significant digits
    ("=1*(0.1+0.2-0.3)", 0.1 + 0.2 - 0.3, 0.0),  # Excel snaps only the last + or -
    ("=INDEX(D!A1:A8,9)", ExcelError("#REF!"), "#VALUE!"),
    ("=COUNT(D!E1:E2,1)", 1.0, 3.0),             # LibreOffice counts booleans in ranges
    ("=SUM({1,TRUE})", 1.0, 2.0),
    ('=TEXT(-0.4,"0")', "-0", "0"),
    ('=1E-5/7&""', "1.42857142857143E-06", "0.00000142857142857143"),
    ('=1E+20&""', "1E+20", "1E+020"),
    ('="a-b"<"a|b"', False, True),               # the order of symbols differs
    ('="$1"<"|1"', True, False),
    ("=SUM(D!A1:A2 D!B1:B2)", ExcelError("#NULL!"), "#REF!"),  # no common cell
]


def _write(path: Path, cells: list[str], known: list[str]) -> Path:
    wb = xlsxwriter.Workbook(str(path), {"use_future_functions": True,
                                         "strings_to_numbers": False})
    data = wb.add_worksheet("D")
    for c, (col, values) in enumerate(DATA.items()):
        for r, v in enumerate(values):
            if v is None:
                continue
            if isinstance(v, bool):
                data.write_boolean(r, c, v)
            elif isinstance(v, str):
                data.write_string(r, c, v)
            else:
                data.write_number(r, c, v)
        assert col == "ABCDE"[c]
    for name, texts in (("F", cells), ("K", known)):
        ws = wb.add_worksheet(name)
        for i, f in enumerate(texts):
            ws.write_formula(i, 0, f, None, -1)
    wb.close()
    return path


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:E[-+]?\d+)?")


def _text_norm(s: str) -> str:
    return _NUMBER.sub(lambda m: f"{float(m.group()):.12g}", s)


def agree(ours: Any, lo: Any) -> bool:
    if isinstance(ours, ExcelError):
        return isinstance(lo, str) and lo == ours.code
    if ours is None or ours == "":
        return lo is None or lo == ""
    # LibreOffice types a result cell by the functions in it, so it saves some comparisons
    # (of SWITCH) as 1 / 0 and some numbers (IFS(...,TRUE,...)) as booleans
    if isinstance(ours, bool):
        return (lo is ours) or (type(lo) in (int, float) and lo == int(ours))
    if isinstance(lo, bool):
        return isinstance(ours, float) and ours == float(lo)
    if isinstance(ours, float):
        if not isinstance(lo, int | float):
            return False
        return math.isclose(ours, lo, rel_tol=1e-9, abs_tol=1e-12)
    return isinstance(lo, str) and _text_norm(ours) == _text_norm(lo)


@functools.cache
def _cells() -> list[str]:
    return formulas(SEED, COUNT)


@libreoffice_job("evaluate-differential")
def _random_formulas(tmp: Path) -> dict[str, Path]:
    return {"random": _write(tmp / "random.xlsx", _cells(), [f for f, _, _ in KNOWN])}


@pytest.fixture(scope="module")
def both(libreoffice):
    src = libreoffice.sources("evaluate-differential")["random"]
    lo = openpyxl.load_workbook(libreoffice.outputs("evaluate-differential")["random"],
                                data_only=True)
    return _cells(), evaluate_workbook(src), lo


@needs_libreoffice
def test_random_formulas_agree_with_libreoffice(both):
    cells, ev, lo = both
    bad = []
    kinds = {"number": 0, "text": 0, "bool": 0, "error": 0}
    for i, f in enumerate(cells, start=1):
        ours, theirs = ev.value("F", f"A{i}"), lo["F"].cell(i, 1).value
        kinds["error" if isinstance(ours, ExcelError) else "bool" if isinstance(ours, bool)
              else "number" if isinstance(ours, float) else "text"] += 1
        if not agree(ours, theirs):
            bad.append(f"{f}: sheetgen {ours!r}, LibreOffice {theirs!r}")
    assert not bad, f"{len(bad)} of {len(cells)} disagree:\n" + "\n".join(bad[:30])
    assert min(kinds.values()) >= 8, kinds  # every kind of result is exercised


@needs_libreoffice
def test_documented_differences_still_hold(both):
    _cells, ev, lo = both
    for i, (f, excel, libre) in enumerate(KNOWN, start=1):
        ours, theirs = ev.value("K", f"A{i}"), lo["K"].cell(i, 1).value
        assert ours == excel and type(ours) is type(excel), (f, ours)
        assert theirs == libre, (f, theirs)
