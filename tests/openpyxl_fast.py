"""The tests' faster openpyxl load: shared formulas translated from a template.

openpyxl translates every copy of a shared formula from its master as it loads a workbook
(openpyxl.formula.translate.Translator): for each cell it walks the master's tokens and
re-parses each range with regular expressions. On the default workbook (21,312 shared
formula cells) that is 1.2 of the 2.2 s a load takes, and the tests load workbooks about a
hundred times a run. `TemplateTranslator` parses each range of the master once, into text
and row/column numbers, and per cell only adds the offsets: the load takes 1.0 s.

It returns exactly what openpyxl's Translator returns (anything unusual, such as a reference
moved off the sheet, goes to openpyxl's own code, errors and all), which
tests/test_openpyxl_compat.py holds it to on every formula of the default workbook and on
hand-picked references. conftest installs it for the whole test session; a test about what
a user's openpyxl reads uses `library_translator()`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import openpyxl.worksheet._reader as openpyxl_reader
from openpyxl.formula.tokenizer import Token
from openpyxl.formula.translate import Translator
from openpyxl.utils.cell import (
    column_index_from_string,
    coordinate_to_tuple,
    get_column_letter,
)

#: a template part: text, or (ROW, row number) / (COLUMN, column number) that move
ROW, COLUMN = 0, 1
#: the last column xlsx allows (XFD), as openpyxl's column conversion does
MAX_COLUMN = 18_278


class TemplateTranslator(Translator):
    """openpyxl's Translator with its ranges parsed once (see the module docstring)."""

    _template: list[str | tuple[int, int]] | None = None

    def translate_formula(self, dest: str | None = None, row_delta: int = 0,
                          col_delta: int = 0) -> str:
        tokens = self.get_tokens()
        if not dest or not tokens or tokens[0].type == Token.LITERAL:
            return super().translate_formula(dest, row_delta, col_delta)
        if self._template is None:
            self._template = self._compile(tokens)
        row, col = coordinate_to_tuple(dest)
        rd, cd = row - self.row, col - self.col
        out = []
        for part in self._template:
            if isinstance(part, str):
                out.append(part)
                continue
            kind, number = part
            moved = number + (rd if kind == ROW else cd)
            if moved <= 0 or (kind == COLUMN and moved > MAX_COLUMN):
                return super().translate_formula(dest)  # openpyxl's own error
            out.append(str(moved) if kind == ROW else get_column_letter(moved))
        return "".join(out)

    @classmethod
    def _compile(cls, tokens: list[Token]) -> list[str | tuple[int, int]]:
        parts: list[str | tuple[int, int]] = ["="]
        for token in tokens:
            if token.type == Token.OPERAND and token.subtype == Token.RANGE:
                parts.extend(cls._range(token.value))
            else:
                parts.append(token.value)
        merged: list[str | tuple[int, int]] = []
        for part in parts:
            if isinstance(part, str) and merged and isinstance(merged[-1], str):
                merged[-1] += part
            else:
                merged.append(part)
        return merged

    @classmethod
    def _range(cls, text: str) -> list[str | tuple[int, int]]:
        """Translator.translate_range, step for step, with the moving parts left as numbers."""
        sheet, text = cls.strip_ws_name(text)
        out: list[str | tuple[int, int]] = [sheet] if sheet else []
        if (m := cls.ROW_RANGE_RE.match(text)) is not None:
            return [*out, cls._row(m.group(1)), ":", cls._row(m.group(2))]
        if (m := cls.COL_RANGE_RE.match(text)) is not None:
            return [*out, cls._col(m.group(1)), ":", cls._col(m.group(2))]
        if ":" in text:
            for i, piece in enumerate(text.split(":")):
                out += [":", *cls._range(piece)] if i else cls._range(piece)
            return out
        if (m := cls.CELL_REF_RE.match(text)) is None:
            return [*out, text]  # a defined name
        return [*out, cls._col(m.group(1)), cls._row(m.group(2))]

    @staticmethod
    def _row(text: str) -> str | tuple[int, int]:
        return text if text.startswith("$") else (ROW, int(text))

    @staticmethod
    def _col(text: str) -> str | tuple[int, int]:
        return text if text.startswith("$") else (COLUMN, column_index_from_string(text))


def install() -> None:
    """openpyxl's worksheet reader translates shared formulas with TemplateTranslator."""
    openpyxl_reader.Translator = TemplateTranslator


@contextlib.contextmanager
def library_translator() -> Iterator[None]:
    """openpyxl's own Translator for the duration: what a user's openpyxl reads."""
    current = openpyxl_reader.Translator
    openpyxl_reader.Translator = Translator
    try:
        yield
    finally:
        openpyxl_reader.Translator = current
