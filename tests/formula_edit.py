"""Type formulas into cells of an xlsx the way a user does in Excel, in milliseconds: what
tests/xlsx_edit.py does for constants, for formulas (a test that alters a formula to see
`check` catch it).

Loading a built workbook with openpyxl and saving it costs about 2.5 s of CPU for the
default workbook, and the file it saves (every shared formula written out plain, no cached
values) takes `check` three times as long to evaluate as the one sheetgen wrote. Here only the
typed cells change: each is first typed as a placeholder text by `xlsx_edit.edit_cells`
(which turns a shared formula group whose master it replaces into plain formulas), and the
placeholder is then swapped for the formula.

Like edit_cells, it does not recalculate: the new formula cells carry no cached value and
every other cell keeps its own, stale after the edit; use it only for workbooks that are
evaluated in full before values are read (`sheetgen check` / `read`, a recalculating
LibreOffice job).
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path
from xml.sax.saxutils import escape

from xlsx_edit import edit_cells, replace_parts, sheet_parts


def edit_formulas(src: str | Path, out: str | Path,
                  formulas: Mapping[tuple[str, str], str]) -> Path:
    """Write `src` to `out` with each (sheet name, "B9") cell holding its formula ("=..."),
    no cached value. `out` may be `src`."""
    tokens = {}
    for i, (key, formula) in enumerate(formulas.items()):
        if not formula.startswith("="):
            raise ValueError(f"not a formula: {formula!r}")
        tokens[key] = f"sheetgen-test-formula-{i}-placeholder"
    src, out = Path(src), Path(out)
    edit_cells(src, out, tokens)
    swaps: dict[str, list[tuple[str, str]]] = {}
    with zipfile.ZipFile(out) as z:
        parts = sheet_parts(z)
        for key, formula in formulas.items():
            # edit_cells' text cell: <c r=".." s=".." t="inlineStr"><is><t>TOKEN</t></is></c>
            placeholder = f' t="inlineStr"><is><t>{tokens[key]}</t></is></c>'
            swaps.setdefault(parts[key[0]], []).append(
                (placeholder, f"><f>{escape(formula[1:])}</f></c>"))
        patched = {}
        for part, pairs in swaps.items():
            text = z.read(part).decode("utf-8")
            for old, new in pairs:
                if text.count(old) != 1:
                    raise AssertionError(f"placeholder {old!r} found {text.count(old)} times")
                text = text.replace(old, new)
            patched[part] = text.encode("utf-8")
    return replace_parts(out, out, patched)
