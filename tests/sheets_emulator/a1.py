"""A1 notation as Google Sheets writes and parses it (0-based internally), and formula
shifting as repeatCell fills a formula across a range."""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@functools.lru_cache(maxsize=4096)
def col_letters(index: int) -> str:
    """0-based column index -> letters (0 -> A, 26 -> AA)."""
    out = ""
    n = index + 1
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return out


def col_index(letters: str) -> int:
    """Letters -> 0-based column index."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n - 1


def a1(row: int, col: int) -> str:
    """0-based (row, col) -> "A1"."""
    return f"{col_letters(col)}{row + 1}"


def quote_sheet(title: str) -> str:
    """Sheet name as Google writes it in a range: quoted when it is not a plain identifier."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", title) and not re.fullmatch(
        r"[A-Za-z]{1,3}\d+|[Rr]\d*[Cc]\d*", title
    ):
        return title
    return "'" + title.replace("'", "''") + "'"


_CELL_RE = re.compile(r"^\$?([A-Za-z]{0,3})\$?(\d*)$")


@dataclass
class A1Range:
    """A parsed range: sheet title (None = first sheet) and 0-based half-open bounds."""

    sheet: str | None
    r0: int | None
    r1: int | None
    c0: int | None
    c1: int | None


class BadRange(ValueError):
    """The A1 text cannot be parsed (Google answers 400 "Unable to parse range")."""


def parse_a1(text: str) -> A1Range:
    """Parse ``Sheet!A1:B2``, ``'My Sheet'!A:A``, ``A5:B``, ``2:3``, ``Sheet`` and ``A1``."""
    text = text.strip()
    sheet: str | None = None
    rest = text
    if text.startswith("'"):
        i, buf = 1, []
        while i < len(text):
            if text[i] == "'":
                if i + 1 < len(text) and text[i + 1] == "'":
                    buf.append("'")
                    i += 2
                    continue
                break
            buf.append(text[i])
            i += 1
        else:
            raise BadRange(text)
        sheet = "".join(buf)
        rest = text[i + 1 :]
        if rest.startswith("!"):
            rest = rest[1:]
        elif rest:
            raise BadRange(text)
        else:
            return A1Range(sheet, None, None, None, None)
    elif "!" in text:
        sheet, rest = text.rsplit("!", 1)
    if not rest:
        return A1Range(sheet, None, None, None, None)
    parts = rest.split(":")
    if len(parts) > 2:
        raise BadRange(text)
    cells = []
    for p in parts:
        m = _CELL_RE.match(p)
        if not m or (not m.group(1) and not m.group(2)):
            if sheet is None and len(parts) == 1:
                return A1Range(text, None, None, None, None)  # a bare sheet title
            raise BadRange(text)
        c = col_index(m.group(1)) if m.group(1) else None
        r = int(m.group(2)) - 1 if m.group(2) else None
        if r is not None and r < 0:
            raise BadRange(text)
        cells.append((r, c))
    (ra, ca) = cells[0]
    (rb, cb) = cells[-1]
    if len(cells) == 1 and (ra is None or ca is None):
        raise BadRange(text)
    r0 = None if ra is None else min(ra, rb if rb is not None else ra)
    r1 = None if rb is None and len(cells) == 2 else max(ra or 0, rb if rb is not None else 0) + 1
    if ra is None:
        r0, r1 = None, None
    c0 = None if ca is None else min(ca, cb if cb is not None else ca)
    c1 = None if cb is None and len(cells) == 2 else max(ca or 0, cb if cb is not None else 0) + 1
    if ca is None:
        c0, c1 = None, None
    return A1Range(sheet, r0, r1, c0, c1)


_STRING_LITERAL = re.compile(r'("(?:[^"]|"")*")')
_A1_REF = re.compile(r"(?<![A-Za-z0-9_.$])(\$?)([A-Za-z]{1,3})(\$?)(\d+)(?![A-Za-z0-9_(!])")


def shift_formula(formula: str, dr: int, dc: int) -> str:
    """A formula as Google fills it ``dr`` rows down and ``dc`` columns right: relative row and
    column parts of A1 references move, ``$`` parts stay; text in quotes, function names
    (``LOG10(``) and named ranges (``PEAK_FLOPS``) are not references and stay as they are."""
    return _shifter(formula)(dr, dc)


#: fill_formulas' answers by (formula, rows, columns), least recently used first
_FILLS: OrderedDict[tuple[str, int, int], tuple[str, ...]] = OrderedDict()
#: the most formulas kept in all (a default push fills about 24,000; ~10 MB)
_FILLS_MAX = 50_000
_FILLS_LOCK = threading.Lock()


def fill_formulas(formula: str, rows: int, cols: int) -> tuple[str, ...]:
    """`shift_formula(formula, dr, dc)` for every cell of a `rows` x `cols` range, column by
    column (dc, then dr): a repeatCell's fill. Kept per process by its arguments, since test
    after test pushes the same workbook (a default push's fills took 0.1 s of each)."""
    key = (formula, rows, cols)
    with _FILLS_LOCK:
        got = _FILLS.get(key)
        if got is not None:
            _FILLS.move_to_end(key)
            return got
    shift = _shifter(formula)
    got = tuple(shift(dr, dc) for dc in range(cols) for dr in range(rows))
    if len(got) <= _FILLS_MAX // 4:
        with _FILLS_LOCK:
            _FILLS[key] = got
            kept = sum(len(v) for v in _FILLS.values())
            while kept > _FILLS_MAX:
                kept -= len(_FILLS.popitem(last=False)[1])
    return got


@functools.lru_cache(maxsize=1024)
def _shifter(formula: str) -> Callable[[int, int], str]:
    """shift_formula's work, with the formula tokenised once (repeatCell shifts it per cell)."""
    pieces: list[Any] = []  # literal text, or (col_abs, col, row_abs, row)
    for i, part in enumerate(_STRING_LITERAL.split(formula)):
        if i % 2:
            pieces.append(part)
            continue
        pos = 0
        for m in _A1_REF.finditer(part):
            pieces.append(part[pos:m.start()])
            cabs, col, rabs, row = m.groups()
            pieces.append((bool(cabs), col_index(col), bool(rabs), int(row)))
            pos = m.end()
        pieces.append(part[pos:])

    rel_rows = [p[3] for p in pieces if not isinstance(p, str) and not p[2]]
    lowest = min(rel_rows, default=1)
    templates: dict[int, tuple[str, tuple[int, ...]]] = {}

    def template(dc: int) -> tuple[str, tuple[int, ...]]:
        """The formula `dc` columns right as a str.format template whose fields are the
        relative rows (listed beside it), so a shift down a column is one format call."""
        fmt, rows = [], []
        for p in pieces:
            if isinstance(p, str):
                fmt.append(p.replace("{", "{{").replace("}", "}}"))
                continue
            cabs, c, rabs, r = p
            c = c + (0 if cabs else dc)
            if c < 0 or (rabs and r < 1):
                fmt.append("#REF!")
            elif rabs:
                fmt.append(f"{'$' if cabs else ''}{col_letters(c)}${r}")
            else:
                fmt.append(f"{'$' if cabs else ''}{col_letters(c)}{{}}")
                rows.append(r)
        return "".join(fmt), tuple(rows)

    def shift(dr: int, dc: int) -> str:
        if lowest + dr >= 1:  # no relative row falls off the top: the template's case
            t = templates.get(dc)
            if t is None:
                t = templates[dc] = template(dc)
            return t[0].format(*[r + dr for r in t[1]])
        return shift_each(dr, dc)

    def shift_each(dr: int, dc: int) -> str:
        out = []
        for p in pieces:
            if isinstance(p, str):
                out.append(p)
                continue
            cabs, c, rabs, r = p
            c, r = c + (0 if cabs else dc), r + (0 if rabs else dr)
            if c < 0 or r < 1:
                out.append("#REF!")
            else:
                out.append(f"{'$' if cabs else ''}{col_letters(c)}{'$' if rabs else ''}{r}")
        return "".join(out)

    return shift
