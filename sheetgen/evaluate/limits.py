"""The documented budgets that bound what the evaluator takes on from an untrusted file.

Each limit is checked before the work it guards, so a hostile workbook is refused with the
limit named instead of exhausting memory, time or the Python stack. Formula limits are
Excel's own ("Excel specifications and limits", support.microsoft.com: 8,192 characters
of formula contents, 64 nested levels of functions); the grid is Excel's 1,048,576 rows by
16,384 columns. The memory budgets are sheetgen's (docs/checking.md, "Limits on untrusted files").
"""

from __future__ import annotations

from sheetgen.errors import WorkbookError

MAX_ROW = 1_048_576
MAX_COL = 16_384
#: Excel's limit on formula contents, in characters (without the leading '=').
MAX_FORMULA_CHARS = 8_192
#: Excel's limit on nested levels of functions.
MAX_FUNCTION_NESTING = 64
#: Parentheses that only group are not functions; bounded too, so the parser cannot recurse
#: past Python's stack (each level costs a few frames of the recursive-descent parser).
MAX_PAREN_NESTING = 128
#: Uncompressed size of all parts of an xlsx package together (every part, any case, .rels
#: and docProps included), beyond what the sheets' declared dimensions cover
#: (sheetgen.files.untrusted: MAX_CELL_BYTES per declared cell, MAX_DECLARED_BYTES in all).
MAX_PART_BYTES = 512_000_000
#: Cells present (formulas and values) in one workbook: a 1,048,576-row sheetgen workbook
#: (Excel's whole grid of shapes, 29 cells a row with the kernel terms' six) has about 30.4
#: million. A shared formula's copies cost a few bytes each (one template per run), plain
#: formulas their text.
MAX_CELLS = 32_000_000
#: Cells the evaluator allocates: each column is stored from its first to its last present
#: row, so this bounds the sum of those spans (9-25 bytes per cell).
MAX_SPAN_CELLS = 40_000_000
#: Cells one range argument may materialise once clipped to the cells present.
MAX_RANGE_CELLS = 20_000_000
#: Nodes of one formula once its defined names are substituted (names used many times by
#: names used many times fan out exponentially).
MAX_EXPANDED_NODES = 100_000


class LimitExceeded(Exception):
    """A budget was exceeded while evaluating; the engine adds the cell and re-raises."""


def check_formula(text: str, where: str) -> None:
    """Refuse a formula over Excel's length or nesting limits before it is parsed."""
    body = text[1:] if text.startswith("=") else text
    if len(body) > MAX_FORMULA_CHARS:
        raise WorkbookError(f"formula in {where} is {len(body):,} characters long; Excel's "
                            f"limit is {MAX_FORMULA_CHARS:,}")
    if body.count("(") <= MAX_FUNCTION_NESTING:
        return  # cannot nest deeper than it has parentheses
    depth = calls = 0
    stack: list[bool] = []  # True where the '(' opened a function call
    quote = ""  # inside "text" or a 'sheet name'
    prev = ""
    for ch in body:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "(":
            is_call = prev.isalnum() or prev in "._"
            stack.append(is_call)
            depth += 1
            calls += is_call
            if calls > MAX_FUNCTION_NESTING:
                raise WorkbookError(f"formula in {where} nests functions more than "
                                    f"{MAX_FUNCTION_NESTING} levels deep (Excel's limit)")
            if depth - calls > MAX_PAREN_NESTING:
                raise WorkbookError(f"formula in {where} nests parentheses more than "
                                    f"{MAX_PAREN_NESTING} levels deep")
        elif ch == ")" and stack:
            calls -= stack.pop()
            depth -= 1
        if not ch.isspace():
            prev = ch
    return


def in_grid(row: int, col: int) -> bool:
    return 1 <= row <= MAX_ROW and 1 <= col <= MAX_COL


__all__ = [
    "MAX_CELLS", "MAX_COL", "MAX_EXPANDED_NODES", "MAX_FORMULA_CHARS", "MAX_FUNCTION_NESTING",
    "MAX_PAREN_NESTING", "MAX_PART_BYTES", "MAX_RANGE_CELLS", "MAX_ROW", "MAX_SPAN_CELLS",
    "LimitExceeded", "check_formula", "in_grid",
]
