"""Group a sheet's formula cells into runs of shifted copies of one formula.

Why groups: a generated column holds one formula shifted row by row. Splitting the text on
digit runs gives a skeleton; the digits that are relative row numbers are replaced by their
offset from the cell's row, so every cell of such a column gets the same key at the cost of
two C-level regex calls. Each distinct key is then parsed once (compiler.py) and evaluated
for all its rows with NumPy (engine.py).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sheetgen.errors import WorkbookError

from .parser import FormulaSyntaxError, Node
from .refs import a1, quote_sheet
from .tokenizer import OffGridError, tokenize

_DIGITS = re.compile(r"([1-9]\d*)")  # no leading zeros: "05" stays literal


@dataclass
class Group:
    """Cells of one column of one sheet sharing a canonical formula."""

    sheet: str
    col: int
    rows: Any  # list[int] while collecting, then a sorted int64 array
    text: str  # formula of the first (origin) row
    origin: int = 0
    ast: Node | None = None
    refs: list[Node] = field(default_factory=list)
    width: int = 1
    moving: bool = False
    skipped: str | None = None  # why the group is not evaluated (lenient engines only)

    def label(self, row: int | None = None) -> str:
        return f"{quote_sheet(self.sheet)}!{a1(self.origin if row is None else row, self.col)}"


class _Codes(dict[str, int]):
    """Dense integer code per distinct key, assigned on first sight."""

    def __missing__(self, key: str) -> int:
        code = self[key] = len(self)
        return code


def group_formulas(sheet: str, rows: np.ndarray, cols: np.ndarray, texts: list[str],
                   lenient: bool) -> list[Group]:  # fmt: skip
    """Fast pass: key = text with the row number replaced, validated once per key.

    ``text.replace(str(row), X)`` is one C call. A key is trusted only if, in its first
    cell, the replaced places are exactly the relative same-row references; then every
    cell with that key (same column) is a shifted copy. Other cells -- and keys held by a
    single cell, as in running totals -- go through the exact digit-run canonical form.
    lenient: a formula that cannot be tokenized is left for compile() to report as not
    evaluated instead of failing the workbook here.
    """
    if not texts:
        return []
    groups: list[Group] = []
    mark = "\x01"
    row_list = rows.tolist()
    # map() over builtins keeps these per-cell steps in C
    keys = list(map(str.replace, texts, map(str, row_list), itertools.repeat(mark)))
    codes = np.fromiter(map(_Codes().__getitem__, keys), np.int64, len(keys))
    combined = codes * (int(cols.max()) + 1) + cols
    slow: list[np.ndarray] = []
    for _, idx in split_by(combined):
        i0 = int(idx[0])
        if len(idx) < 2 or not _key_valid(texts[i0], row_list[i0], keys[i0]):
            slow.append(idx)
            continue
        groups.append(Group(sheet, int(cols[i0]), rows[idx], texts[i0], origin=row_list[i0]))
    if slow:
        rest = np.sort(np.concatenate(slow))
        groups.extend(_group_exact(sheet, rows[rest], cols[rest],
                                   [texts[i] for i in rest.tolist()], lenient))  # fmt: skip
    return groups


def _key_valid(text: str, row: int, key: str) -> bool:
    try:
        _, spans = tokenize(text[1:])
    except FormulaSyntaxError:
        return False
    own = str(row)
    out, pos = [], 0
    for a, b in spans:
        if text[a + 1 : b + 1] == own:
            out.append(text[pos : a + 1])
            out.append("\x01")
            pos = b + 1
    out.append(text[pos:])
    return "".join(out) == key


def _group_exact(sheet: str, rows: np.ndarray, cols: np.ndarray, texts: list[str],
                 lenient: bool) -> list[Group]:  # fmt: skip
    roles: dict[str, tuple[int, ...]] = {}
    groups: dict[tuple[Any, ...], Group] = {}
    split = _DIGITS.split
    for r, c, t in zip(rows.tolist(), cols.tolist(), texts, strict=True):
        parts = split(t)
        skel = "\x00".join(parts[0::2])
        rel = roles.get(skel)
        if rel is None:
            rel = roles[skel] = _roles(sheet, r, c, t, lenient)
        digits = parts[1::2]
        for i in rel:
            digits[i] = int(digits[i]) - r
        key = (c, skel, *digits)
        g = groups.get(key)
        if g is None:
            groups[key] = Group(sheet, c, [r], t, origin=r)
        else:
            g.rows.append(r)
    for g in groups.values():
        g.rows = np.asarray(g.rows, dtype=np.int64)
    return list(groups.values())


def _roles(sheet: str, row: int, col: int, text: str, lenient: bool) -> tuple[int, ...]:
    """Indices of the digit runs of `text` that are relative row numbers."""
    try:
        _, spans = tokenize(text[1:])
    except FormulaSyntaxError as exc:
        if lenient and not isinstance(exc, OffGridError):
            return ()  # compile() reports the cell as not evaluated
        where = f"{quote_sheet(sheet)}!{a1(row, col)}"
        raise WorkbookError(f"cannot parse formula in {where}: {exc}") from None
    rel = {(a + 1, b + 1) for a, b in spans}
    return tuple(i for i, m in enumerate(_DIGITS.finditer(text)) if m.span() in rel)


def split_by(keys: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(key, sorted indices) for each distinct key, in order of first appearance."""
    if len(keys) == 0:
        return
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    cuts = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    chunks = np.split(order, cuts)
    chunks.sort(key=lambda ix: int(ix[0]))
    for ix in chunks:
        yield int(keys[ix[0]]), ix
