"""Every formula sheetgen writes stays in the dialect Excel, LibreOffice 7.4 and Google
Sheets all evaluate alike (../shared/DESIGN.md), with exponents written with a sign."""

from __future__ import annotations

import re

from sheetgen.assemble import BuildConfig, plan_build
from sheetgen.verify.compare import expected_cells

PORTABLE = {"CHOOSE", "MAX", "MIN", "IF", "AND", "OR", "NOT", "SUM", "SUMPRODUCT", "INDEX", "MATCH",
            "ROUNDUP", "ROUNDDOWN", "ROUND", "MOD", "LOG10", "ABS", "ISNUMBER", "ISBLANK",
            "IFERROR", "COUNT",
            # NA(): Excel (support.microsoft.com "NA function"), LibreOffice (help "NA"),
            # Google Sheets (support.google.com/docs/answer/3093359); the chart data's #N/A
            "NA"}
AVOID = {"XLOOKUP", "LET", "LAMBDA", "TEXT", "FILTER", "SEQUENCE", "INDIRECT", "OFFSET"}
STRING_RE = re.compile(r'"[^"]*"')
FUNCTION_RE = re.compile(r"\b([A-Z][A-Z0-9.]*)\(")
NUMBER_RE = re.compile(r"(?<![A-Z$])\d+(?:\.\d+)?[eE]\d")


def _all_formulas():
    for helpers in (False, True):
        plan = plan_build(BuildConfig(practice=3, spare_rows=2), chart_helpers=helpers)
        yield from (e.formula for e in expected_cells(plan))


def test_only_portable_functions():
    used = set()
    for formula in _all_formulas():
        used |= set(FUNCTION_RE.findall(STRING_RE.sub('""', formula)))
    assert used <= PORTABLE, used - PORTABLE
    assert not used & AVOID
    assert {"MAX", "INDEX", "MATCH", "SUMPRODUCT", "IF"} <= used  # the scan sees them


def test_exponents_carry_a_sign():
    for formula in _all_formulas():
        assert not NUMBER_RE.search(STRING_RE.sub('""', formula)), formula
