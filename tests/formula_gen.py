"""A seeded generator of random formulas over sheetgen's dialect, for the differential test.

The formulas read a small data sheet D (numbers, words, numeric text, blanks, booleans in
single cells) and mix literals, references, ranges, operators with their precedence and the
functions of the dialect. It steers clear of the documented places where Excel and
LibreOffice differ (docs/checking.md, "Where Excel and LibreOffice differ"): booleans are never
compared with numbers nor put in ranges, powers have exponents 1 to 3, INDEX positions stay
in range, ordered text comparisons hold no symbols, TEXT formats only non-negative numbers,
and numbers joined into text are rounded to 4 places with a separator after them
(LibreOffice writes tiny and huge numbers as text in its own forms, such as 1E-015).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

NUMBERS = [1.5, -2.0, 0.0, 3.0, 10.0, 2.25, 7.0, 100.0]  # D!A1:A8
WORDS = ["gpu", "CPU", "x", "10", "abc", "b c", "Tpu", "b"]  # D!B1:B8
MIXED = [4.0, None, "5", None, 8.0, "z", 4.0, 0.5]  # D!C1:C8 (blanks, numeric text)
COUNTS = [float(i) for i in range(1, 9)]  # D!D1:D8
FLAGS = [True, False]  # D!E1:E2: booleans only as single cells

DATA: dict[str, list[Any]] = {"A": NUMBERS, "B": WORDS, "C": MIXED, "D": COUNTS, "E": FLAGS}
NUM_RANGES = ["D!A1:A8", "D!C1:C8", "D!D1:D8", "D!A1:A4", "D!A1:D8", "D!$A$1:$A$8"]
TEXT_RANGES = ["D!B1:B8", "D!B1:B4"]
CRITERIA = ['">2"', '"<=3"', '"<>x"', '"b*"', '"?pu"', '"gpu"', "3", '"=10"', '"<>"', '""',
            '">=b"', '"*c*"', '"5"']
TEXT_FORMATS = ['"0.00"', '"0"', '"#,##0"', '"0%"', '"0.0E+00"', '"0.000"']


class FormulaGen:
    """Random formulas of a given depth; the same seed gives the same formulas."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def pick(self, options: list[Any]) -> Any:
        return self.r.choice(options)

    # --- leaves ---------------------------------------------------------------------------
    def number(self) -> str:
        kind = self.r.random()
        if kind < 0.5:
            return str(self.r.randint(0, 20))
        if kind < 0.8:
            return f"{self.r.uniform(0, 50):.{self.r.randint(1, 4)}f}"
        return self.pick(["1E+3", "2.5E-2", "1E+12", "0.1", "0.3", "1E-5"])

    def num_ref(self) -> str:
        col = self.pick(["A", "C", "D"])
        return f"D!{col}{self.r.randint(1, 8)}"

    def text(self) -> str:
        return '"' + self.pick(["gpu", "a", "B", "10", "1,000", "$12", "50%", "x y", ""]) + '"'

    # --- expressions ----------------------------------------------------------------------
    def num(self, depth: int) -> str:
        if depth <= 0:
            return self.number() if self.r.random() < 0.5 else self.num_ref()
        makers: list[Callable[[int], str]] = [
            self._arith, self._arith, self._neg, self._pct, self._num_fn, self._num_fn,
            self._agg, self._agg, self._cond_agg, self._if_num, self._lookup_num,
        ]
        return self.pick(makers)(depth - 1)

    def _arith(self, d: int) -> str:
        op = self.pick(["+", "-", "*", "/", "^", "+", "*"])
        if op == "^":
            return f"{self.num(d)}^{self.r.randint(1, 3)}"
        a, b = self.num(d), self.num(d)
        return f"({a}{op}{b})" if self.r.random() < 0.5 else f"{a}{op}{b}"

    def _neg(self, d: int) -> str:
        return f"-{self.num(d)}"

    def _pct(self, d: int) -> str:
        return f"{self.number()}%"

    def _num_fn(self, d: int) -> str:
        x = self.num(d)
        pos = f"ABS({x})+1"
        choices = [
            f"ABS({x})", f"ROUND({x},{self.r.randint(-1, 3)})", f"ROUNDUP({x},1)",
            f"ROUNDDOWN({x},0)", f"INT({x})", f"TRUNC({x},1)", f"SIGN({x})", f"SQRT({pos})",
            f"POWER({x},{self.r.randint(1, 3)})", f"MOD({x},{self.r.randint(1, 7)})",
            f"QUOTIENT({x},{self.r.randint(1, 7)})", f"CEILING({pos},0.5)",
            f"FLOOR({pos},2)", f"CEILING.MATH({x},2)", f"FLOOR.MATH({x})",
            f"MROUND({pos},3)", f"EXP(MIN({x},5))", f"LN({pos})", f"LOG({pos},2)",
            f"LOG10({pos})", "PI()", f"LEN({self.any_text(d)})", f"VALUE({self.text_num()})",
            f"N({self.num_ref()})", f"ROWS({self.pick(NUM_RANGES)})",
            f"COLUMNS({self.pick(NUM_RANGES)})", f"ROW(D!A{self.r.randint(1, 8)})",
            f"COLUMN(D!C{self.r.randint(1, 8)})", f"IFERROR({x}/{self.num(d)},-1)",
            f"CHOOSE({self.r.randint(1, 3)},{x},{self.num(d)},{self.number()})",
            f"{x}*D!E{self.r.randint(1, 2)}",
        ]
        return self.pick(choices)

    def text_num(self) -> str:
        return '"' + self.pick(["12", "1,000", "$5", "25%", "(3)", "2024-01-01", "1E+3"]) + '"'

    def _agg(self, d: int) -> str:
        rng = self.pick(NUM_RANGES)
        fn = self.pick(["SUM", "MAX", "MIN", "AVERAGE", "COUNT", "COUNTA", "COUNTBLANK",
                        "PRODUCT", "SUMSQ", "MEDIAN", "STDEV.S", "MAXA", "LARGE", "SMALL",
                        "SUMPRODUCT"])
        if fn in ("LARGE", "SMALL"):
            return f"{fn}({rng},{self.r.randint(1, 3)})"
        if fn == "COUNTBLANK":
            return f"COUNTBLANK({self.pick(['D!C1:C8', 'D!C:C', 'D!A1:A8'])})"
        if fn == "SUMPRODUCT":
            return "SUMPRODUCT(D!A1:A8,D!D1:D8)"
        extra = f",{self.num(d)}" if self.r.random() < 0.3 and fn not in ("COUNTA",) else ""
        return f"{fn}({rng}{extra})"

    def _cond_agg(self, d: int) -> str:
        crit = self.pick(CRITERIA)
        rng = self.pick(["D!A1:A8", "D!B1:B8", "D!C1:C8", "D!D1:D8"])
        fn = self.pick(["SUMIF", "COUNTIF", "AVERAGEIF", "SUMIFS", "COUNTIFS", "MAXIFS"])
        if fn == "COUNTIF":
            return f"COUNTIF({rng},{crit})"
        if fn == "SUMIF":
            return f"SUMIF({rng},{crit},D!D1:D8)"
        if fn == "AVERAGEIF":
            return f"IFERROR(AVERAGEIF({rng},{crit},D!D1:D8),-1)"
        if fn == "COUNTIFS":
            return f"COUNTIFS({rng},{crit},D!D1:D8,{self.pick(CRITERIA[:3])})"
        return f"{fn}(D!D1:D8,{rng},{crit},D!A1:A8,{self.pick(CRITERIA[:2])})"

    def _if_num(self, d: int) -> str:
        c = self.cond(d)
        if self.r.random() < 0.3:
            return f"IFS({c},{self.num(d)},TRUE,{self.num(d)})"
        if self.r.random() < 0.2:
            return f"SWITCH({self.r.randint(1, 3)},1,{self.num(d)},2,{self.num(d)},-1)"
        return f"IF({c},{self.num(d)},{self.num(d)})"

    def _lookup_num(self, d: int) -> str:
        choices = [
            f"INDEX(D!A1:A8,{self.r.randint(1, 8)})",
            f"INDEX(D!A1:D8,{self.r.randint(1, 8)},{self.r.randint(1, 4)})",
            f"IFERROR(MATCH({self.text()},D!B1:B8,0),-1)",
            f"IFERROR(VLOOKUP({self.r.randint(1, 9)},D!D1:D8,1,FALSE),-1)",
            f"LOOKUP({self.r.uniform(1, 9):.1f},D!D1:D8,D!A1:A8)",
            f"HLOOKUP({self.r.randint(1, 3)},{{1,2,3;10,20,30}},2,FALSE)",
            f"SUM(INDEX(D!A1:D8,0,{self.r.randint(1, 4)}))",
            f"SUM({{1,2,3}})*{self.num(d)}",
            f"IFNA(MATCH({self.r.randint(0, 9)},D!D1:D8,0),0)",
            "ERROR.TYPE(1/0)+ISNA(NA())",
        ]
        return self.pick(choices)

    def cond(self, d: int) -> str:
        kind = self.r.random()
        if kind < 0.45:
            op = self.pick(["=", "<>", "<", "<=", ">", ">="])
            return f"{self.num(d)}{op}{self.num(d)}"
        if kind < 0.6:
            op = self.pick(["=", "<>", "<", ">"])
            return f"{self.word(d)}{op}{self.word(d)}"
        if kind < 0.75:
            fn = self.pick(["AND", "OR"])
            return f"{fn}({self.cond(max(d - 1, 0))},{self.cond(max(d - 1, 0))})"
        if kind < 0.85:
            return f"NOT({self.cond(max(d - 1, 0))})"
        ref = f"D!{self.pick(['A', 'B', 'C'])}{self.r.randint(1, 8)}"
        fn = self.pick(["ISNUMBER", "ISTEXT", "ISBLANK", "ISERROR", "ISNA"])
        return f"{fn}({ref})" if self.r.random() < 0.7 else f'EXACT({self.any_text(d)},"gpu")'

    def word(self, d: int) -> str:
        """Text of letters, digits and spaces only: the symbols' order differs between
        Excel and LibreOffice, so ordered comparisons stay away from them."""
        leaf = (f"D!B{self.r.randint(1, 8)}" if self.r.random() < 0.5 else
                '"' + self.pick(["gpu", "a", "B", "10", "x y", "", "Ab", "b c", "9"]) + '"')
        if d <= 0:
            return leaf
        return self.pick([leaf, f"UPPER({leaf})", f"LEFT({leaf},{self.r.randint(0, 3)})",
                          f"TRIM({leaf})", f"{leaf}&{leaf}"])

    def any_text(self, d: int) -> str:
        if d <= 0:
            return self.text() if self.r.random() < 0.5 else f"D!B{self.r.randint(1, 8)}"
        choices = [
            f"{self.any_text(d - 1)}&\"|\"&ROUND({self.num(d - 1)},4)",
            f"CONCATENATE({self.any_text(d - 1)},\"-\",ROUND({self.num(d - 1)},4),\"|\")",
            f"LEFT({self.any_text(d - 1)},{self.r.randint(0, 4)})",
            f"UPPER({self.any_text(d - 1)})", f"TRIM(\"  a  b \"&{self.any_text(d - 1)})",
            f"REPT({self.any_text(d - 1)},{self.r.randint(0, 3)})",
            f"T({self.any_text(d - 1)})",
            f"TEXT(ABS({self.num(d - 1)}),{self.pick(TEXT_FORMATS)})",
            f"TEXTJOIN(\",\",TRUE,{self.pick(TEXT_RANGES)})", f"CONCAT({self.pick(TEXT_RANGES)})",
            f"IF({self.cond(d - 1)},{self.any_text(d - 1)},\"no\")",
            f"INDEX(D!B1:B8,{self.r.randint(1, 8)})",
        ]
        return self.pick(choices)

    def formula(self) -> str:
        d = self.r.randint(1, 3)
        kind = self.r.random()
        if kind < 0.6:
            return "=" + self.num(d)
        if kind < 0.8:
            return "=" + self.any_text(d)
        return "=" + self.cond(d)


def formulas(seed: int, n: int) -> list[str]:
    """n formulas of the seed (unique, in generation order)."""
    gen = FormulaGen(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        f = gen.formula()
        if len(f) <= 400:
            out[f] = None
    return list(out)
