"""Hand-written regex tokenizer for the portable formula dialect.

One compiled alternation scanned with ``match(pos)`` is several times faster than
openpyxl's character-by-character Tokenizer, and it reports the text span of every relative
row number, which is what makes the canonical (row-shift invariant) form of a formula cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .limits import MAX_COL, MAX_ROW
from .refs import col_to_index

_SHEET = r"(?:'(?P<qsheet>(?:[^']|'')+)'|(?P<sheet>[A-Za-z_][A-Za-z0-9_.]*))!"
_CELL = r"(?P<{p}ca>\$?)(?P<{p}c>[A-Za-z]{{1,3}})(?P<{p}ra>\$?)(?P<{p}r>\d+)"
_END = r"(?![A-Za-z0-9_.(!])"
_TOKEN = re.compile(
    "|".join(
        [
            r"(?P<ws>\s+)",
            r'(?P<str>"(?:[^"]|"")*")',
            r"(?P<err>#DIV/0!|#N/A|#NAME\?|#NULL!|#NUM!|#REF!|#VALUE!)",
            r"(?P<func>(?:_xlfn\.|_xlws\.)?[A-Za-z_][A-Za-z0-9_.]*)\(",
            rf"(?P<ref>(?:{_SHEET})?(?:"
            + _CELL.format(p="a")
            + r"(?::"
            + _CELL.format(p="b")
            + r")?"
            + r"|(?P<cca>\$?)(?P<cc1>[A-Za-z]{1,3}):(?P<ccb>\$?)(?P<cc2>[A-Za-z]{1,3})"
            + r"|(?P<rra>\$?)(?P<rr1>\d+):(?P<rrb>\$?)(?P<rr2>\d+)"
            + rf"){_END})",
            rf"(?P<bool>(?i:TRUE|FALSE)){_END}",
            r"(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)",
            r"(?P<name>[A-Za-z_\\][A-Za-z0-9_.]*)",
            r"(?P<op><>|<=|>=|[-+*/^&=<>%(),{};])",
        ]
    )
)


@dataclass(slots=True)
class Token:
    """kind is one of num str bool err ref func name op; value depends on kind. The op " "
    is the intersection of two references (written as whitespace between them)."""

    kind: str
    value: object
    text: str


@dataclass(slots=True, frozen=True)
class RefSpec:
    """A reference as written: sheet (None = own sheet), rows/cols and absolute flags.

    A single cell has r2 == r1 and c2 == c1. Whole-column refs span rows 1..MAX_ROW.
    """

    sheet: str | None
    r1: int
    r1_abs: bool
    c1: int
    r2: int
    r2_abs: bool
    c2: int
    is_range: bool


class FormulaSyntaxError(ValueError):
    """The formula text could not be tokenized or parsed (message says where)."""


class OffGridError(FormulaSyntaxError):
    """A reference outside Excel's grid: no spreadsheet writes one, so even lenient grading
    refuses the file rather than calling the cell "not evaluated"."""


def tokenize(text: str) -> tuple[list[Token], list[tuple[int, int]]]:
    """Tokens of a formula (without its leading '='), and spans of relative row numbers.

    Remembered for texts of up to TOKENIZED_CHARS characters in all (then forgotten at
    once): a check tokenizes each group's formula twice (grouping it, then parsing it), and
    checks in one process (a test session, a notebook) meet the same formulas again (the
    default workbook's 510 formula texts hold some 70,000 characters). Fresh lists each
    call; the tokens are shared and only read (the parser never changes one)."""
    global _kept_chars
    hit = _kept.get(text)
    if hit is None:
        hit = _tokenize(text)
        if _kept_chars + len(text) > TOKENIZED_CHARS:
            _kept.clear()
            _kept_chars = 0
        _kept[text] = hit
        _kept_chars += len(text)
    return list(hit[0]), list(hit[1])


#: how many characters of formula text tokenize keeps the tokens of (a token takes some
#: 100 bytes, so at most about 30 MB however the formulas are written; a few MB as sheetgen
#: writes them)
TOKENIZED_CHARS = 300_000
_kept: dict[str, tuple[tuple[Token, ...], tuple[tuple[int, int], ...]]] = {}
_kept_chars = 0


def _tokenize(text: str) -> tuple[tuple[Token, ...], tuple[tuple[int, int], ...]]:
    tokens: list[Token] = []
    rel_spans: list[tuple[int, int]] = []
    pos, n = 0, len(text)
    match = _TOKEN.match
    spaced = False  # whitespace since the last token
    while pos < n:
        m = match(text, pos)
        if m is None:
            raise FormulaSyntaxError(f"cannot read formula at {text[pos : pos + 12]!r}")
        kind = m.lastgroup
        s = m.group()
        pos = m.end()
        if kind == "ws":
            spaced = True
            continue
        if spaced and tokens and _ends_reference(tokens[-1]) and _starts_reference(kind, s):
            tokens.append(Token("op", " ", " "))  # the intersection operator: A1:C3 B2:D4
        spaced = False
        if kind == "ref" or m.group("ref") is not None:
            tokens.append(Token("ref", _ref_spec(m, rel_spans), s))
        elif kind == "func":
            name = m.group("func").upper()
            for prefix in ("_XLFN.", "_XLWS."):
                if name.startswith(prefix):
                    name = name[len(prefix) :]
            tokens.append(Token("func", name, s))
        elif kind == "str":
            tokens.append(Token("str", s[1:-1].replace('""', '"'), s))
        elif kind == "num":
            tokens.append(Token("num", float(s), s))
        elif kind == "bool":
            tokens.append(Token("bool", s.upper() == "TRUE", s))
        elif kind == "err":
            tokens.append(Token("err", s, s))
        elif kind == "name":
            tokens.append(Token("name", s, s))
        else:
            tokens.append(Token("op", s, s))
    return tuple(tokens), tuple(rel_spans)


def _ends_reference(tok: Token) -> bool:
    return tok.kind in ("ref", "name") or (tok.kind == "op" and tok.value == ")")


def _starts_reference(kind: str | None, s: str) -> bool:
    """Whitespace between a reference's end and another's start is Excel's intersection
    operator; anywhere else (around + or a comma, after '(') it is only spacing."""
    return kind in ("ref", "name") or (kind == "op" and s == "(")


def _ref_spec(m: re.Match[str], rel_spans: list[tuple[int, int]]) -> RefSpec:
    q = m.group("qsheet")
    sheet = q.replace("''", "'") if q is not None else m.group("sheet")
    if m.group("ac") is not None:
        c1 = col_to_index(m.group("ac"))
        r1 = int(m.group("ar"))
        r1_abs = bool(m.group("ara"))
        if not r1_abs:
            rel_spans.append(m.span("ar"))
        if m.group("bc") is not None:
            c2 = col_to_index(m.group("bc"))
            r2 = int(m.group("br"))
            r2_abs = bool(m.group("bra"))
            if not r2_abs:
                rel_spans.append(m.span("br"))
            _in_grid(max(r1, r2), max(c1, c2))
            return RefSpec(
                sheet, min(r1, r2), r1_abs if r1 <= r2 else r2_abs, min(c1, c2),
                max(r1, r2), r2_abs if r1 <= r2 else r1_abs, max(c1, c2), True,
            )  # fmt: skip
        _in_grid(r1, c1)
        return RefSpec(sheet, r1, r1_abs, c1, r1, r1_abs, c1, False)
    if m.group("cc1") is not None:
        c1, c2 = col_to_index(m.group("cc1")), col_to_index(m.group("cc2"))
        _in_grid(1, max(c1, c2))
        return RefSpec(sheet, 1, True, min(c1, c2), MAX_ROW, True, max(c1, c2), True)
    r1, r2 = int(m.group("rr1")), int(m.group("rr2"))
    _in_grid(max(r1, r2), 1)
    if not m.group("rra"):
        rel_spans.append(m.span("rr1"))
    if not m.group("rrb"):
        rel_spans.append(m.span("rr2"))
    return RefSpec(sheet, r1, bool(m.group("rra")), 1, r2, bool(m.group("rrb")), 16384, True)


def _in_grid(row: int, col: int) -> None:
    if row < 1 or row > MAX_ROW:
        raise OffGridError(f"row {row} is outside Excel's grid (1 to {MAX_ROW:,})")
    if col > MAX_COL:
        raise OffGridError(f"column {col:,} is outside Excel's grid (1 to {MAX_COL:,})")
