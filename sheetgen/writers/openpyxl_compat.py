"""The one place sheetgen reaches into openpyxl's private parts (the style array, the cell
map, the worksheet row writer), kept apart so an openpyxl upgrade that changes them fails
here, loudly, and in tests/test_openpyxl_compat.py.

Why: each public style assignment (`cell.font = ...`, `cell.fill = ...`, five per cell)
looks its object up in the workbook's style tables by hash and equality. Two thirds of a
`sheetgen fill` of the default plan went there (cProfile: 293,000 lookups, 16 of 28 s).
Cells of one neutral style resolve to the same style array, so the first cell of each style
is styled through the public attributes and the others get a copy of its array: what
openpyxl's own worksheet copier does (openpyxl/worksheet/copier.py, `WorksheetCopy`:
`target_cell._style = copy(source_cell._style)`).

Cells: `ws.cell(row, column, value)` checks each string for characters XML cannot hold with
one regular-expression search a cell, and finds its place through three method calls;
`put_cells` checks a column's strings in one search and makes each plain cell (a formula, a
text, a number or a blank) in one constructor call, with its style array, as the library
does (0.3 of a fill's 1.5 s went to the per-cell path).

Merging: `Worksheet.merge_cells` first tests the new range against every merged range
already on the sheet (MultiCellRange.add: 120,000 subset tests for a fill's 568 merges,
0.15 of 1.55 s). `Merger` skips that test for a range known to overlap none (sheetgen's
merges never overlap: XlsxWriter refuses overlapping ones), and styles the cells of a range
like one merged before as the library styled that one.

Saving: openpyxl serialises each cell as an ElementTree element through et_xmlfile's
namespace-aware writer, about 40 us a cell; for the 26,000 cells `sheetgen fill` adds that
was half of a fill's CPU (cProfile: `etree_write_cell`, 1.0 of 3.3 s, the whole save 1.5 s).
`save_workbook` is `Workbook.save` with one change: a plain cell (a formula, a number or an
inline string, no comment or hyperlink) is written as the same bytes from one f-string;
any other cell, and every other part of the file, takes the library's own path.
tests/test_openpyxl_compat.py holds the two to the same bytes.
"""

from __future__ import annotations

import datetime
from copy import copy
from typing import IO, Any
from zipfile import ZIP_DEFLATED, ZipFile

import openpyxl
from openpyxl.cell._writer import write_cell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE, Cell, MergedCell
from openpyxl.compat import safe_string
from openpyxl.drawing.spreadsheet_drawing import SpreadsheetDrawing
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet._writer import WorksheetWriter
from openpyxl.worksheet.merge import MergedCellRange
from openpyxl.writer.excel import ExcelWriter

#: The private attribute the shim relies on (checked when it is used and by the test).
PRIVATE_ATTRIBUTE = "_style"
#: What put_cells relies on: the worksheet's cell map and the method ws.cell adds a cell with.
PRIVATE_CELLS = ("_cells", "_add_cell")
#: What the row writer relies on: the cell's private value and comment, the worksheet's
#: drawing, charts, images and relationships as ExcelWriter.write_worksheet sets them, and
#: et_xmlfile's write function (the incremental writer's `_file`; lxml's has none, and
#: then every cell takes the library's path).
PRIVATE_CELL = ("_value", "_comment")
PRIVATE_WORKSHEET = ("_drawing", "_charts", "_images", "_rels")
PRIVATE_WRITER = "_file"
#: The worksheet method merge_cells calls after adding the range.
PRIVATE_MERGE = "_clean_merge_range"


class StyleStamp:
    """One style's openpyxl attributes, stamped onto fresh cells of one workbook."""

    def __init__(self, attributes: dict[str, Any]) -> None:
        self.attributes = attributes
        self._array: Any = None

    def apply(self, cell: Cell) -> None:
        """Style a freshly made cell (one that carries the default style)."""
        if self._array is None:
            for attr, piece in self.attributes.items():
                setattr(cell, attr, piece)
            array = getattr(cell, PRIVATE_ATTRIBUTE, None)
            if array is None:
                raise RuntimeError(f"openpyxl {openpyxl.__version__} keeps no cell."
                                   f"{PRIVATE_ATTRIBUTE}: sheetgen/writers/openpyxl_compat.py "
                                   "needs updating for this version")
            self._array = copy(array)
        else:
            cell._style = copy(self._array)


#: the longest string a cell holds (openpyxl cuts longer ones; put_cells leaves those to it)
MAX_STRING = 32767
#: the rows a worksheet has
MAX_ROW = 1048576


def put_cells(ws: Any, cells: list[tuple[int, int, Any, bool]], stamp: StyleStamp) -> None:
    """Cells (row, column, value, text) of one style, 1-based, into places of ws that hold no
    cell yet: what `stamp.apply(ws.cell(row, column, value))` does, then with `text` the
    data type "s" (a string that starts with "=" stays text). A value other than a str, int,
    float or None, a string that is not a formula and not `text`, and a column holding a
    string openpyxl would refuse or cut, take that path itself (see the module's note)."""
    strings = [value for _, _, value, _ in cells if type(value) is str]
    fast = (all(len(v) <= MAX_STRING for v in strings)
            and ILLEGAL_CHARACTERS_RE.search("".join(strings)) is None)
    taken = ws._cells
    for row, column, value, text in cells:
        kind = "n"
        if type(value) is str:
            kind = "f" if not text and len(value) > 1 and value[0] == "=" else "s"
            plain = text or kind == "f"
        else:
            plain = value is None or type(value) in (int, float)
        if (fast and plain and stamp._array is not None and 0 < row <= MAX_ROW
                and (row, column) not in taken):
            cell = Cell(ws, row=row, column=column, style_array=stamp._array)
            cell._value = value
            cell.data_type = kind
            ws._add_cell(cell)
            continue
        cell = ws.cell(row=row, column=column, value=value)
        if text and isinstance(value, str):
            cell.data_type = "s"
        stamp.apply(cell)


class Merger:
    """`ws.merge_cells` for the ranges of one workbook that overlap no merged range already
    there (see the module's note). After the overlap test, the library gives every cell of
    a range its border and protection, five style-table lookups a cell (0.17 of a fill's
    1.9 s); a range of a shape and start-cell style seen before gets the style arrays the
    library gave the first one."""

    def __init__(self) -> None:
        self._looks: dict[tuple[Any, ...], list[Any]] = {}

    def merge(self, ws: Any, range_string: str) -> None:
        merged = MergedCellRange(ws, range_string)  # makes the start cell if need be
        ws.merged_cells.ranges.add(merged)
        taken = ws._cells
        coords = list(merged.cells)
        start = merged.start_cell
        key = None
        if all(c not in taken for c in coords[1:]):  # else the library alone knows
            key = (None if start._style is None else tuple(start._style),
                   merged.max_row - merged.min_row, merged.max_col - merged.min_col)
        look = self._looks.get(key) if key is not None else None
        if look is None:
            getattr(ws, PRIVATE_MERGE)(merged)
            if key is not None:
                self._looks[key] = [copy(taken[c]._style) for c in coords]
            return
        start._style = copy(look[0])
        for (row, col), style in zip(coords[1:], look[1:], strict=True):
            cell = MergedCell(ws, row=row, column=col)
            cell._style = copy(style)
            taken[row, col] = cell


def save_workbook(wb: Workbook, target: str | IO[bytes]) -> None:
    """`wb.save(target)`, its plain cells written by `_RowWriter` (see the module's note):
    the same bytes, a third of the time."""
    if wb.read_only or wb.write_only:
        wb.save(target)
        return
    archive = ZipFile(target, "w", ZIP_DEFLATED, allowZip64=True)
    wb.properties.modified = datetime.datetime.now(tz=datetime.UTC).replace(tzinfo=None)
    _ExcelWriter(wb, archive).save()


class _ExcelWriter(ExcelWriter):
    """openpyxl's ExcelWriter, its worksheets written by _RowWriter."""

    def __init__(self, workbook: Workbook, archive: ZipFile) -> None:
        super().__init__(workbook, archive)
        self.style_ids: dict[tuple[int, ...], int] = {}  # see cell_xml

    def write_worksheet(self, ws: Any) -> None:
        # ExcelWriter.write_worksheet (openpyxl 3.1), less the write-only branch
        ws._drawing = SpreadsheetDrawing()
        ws._drawing.charts = ws._charts
        ws._drawing.images = ws._images
        writer = _RowWriter(ws)
        writer.style_ids = self.style_ids
        writer.write()
        ws._rels = writer._rels
        self._archive.write(writer.out, ws.path[1:])
        self.manifest.append(ws)
        writer.cleanup()


class _RowWriter(WorksheetWriter):
    """openpyxl's WorksheetWriter; write_row writes a plain cell's XML in one piece."""

    style_ids: dict[tuple[int, ...], int]

    def write_row(self, xf: Any, row: list[Any], row_idx: int) -> None:
        write = getattr(xf, PRIVATE_WRITER, None)
        if write is None:
            super().write_row(xf, row, row_idx)
            return
        attrs = {"r": f"{row_idx}"}
        attrs.update(self.ws.row_dimensions.get(row_idx, {}))
        with xf.element("row", attrs):
            for cell in row:
                xml = cell_xml(cell, self.style_ids)
                if xml is None:
                    _library_cell(self.ws, xf, cell)
                elif xml:
                    write(xml)


def _library_cell(ws: Any, xf: Any, cell: Any) -> None:
    """One cell as WorksheetWriter.write_row writes it (openpyxl 3.1)."""
    from openpyxl.comments.comment_sheet import CommentRecord

    if cell._comment is not None:
        ws._comments.append(CommentRecord.from_cell(cell))
    if cell._value is None and not cell.has_style and not cell._comment:
        return
    write_cell(xf, ws, cell, cell.has_style)


def _escape(text: str) -> str:
    """ElementTree's escaping of element text."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def cell_xml(cell: Any, style_ids: dict[tuple[int, ...], int] | None = None) -> str | None:
    """A plain cell's <c> element as openpyxl's etree_write_cell writes it ("" for a cell it
    skips), or None for any other cell (a comment, a hyperlink, a date, a boolean, an error,
    an array formula, rich text): those take the library's path. `style_ids`: the style
    index of each style array met so far in this save (`cell.style_id` adds the array to
    the workbook's table and returns its index; an equal array has the same index)."""
    if cell._comment is not None or cell.hyperlink is not None:
        return None
    kind = cell.data_type
    if kind not in _KINDS:
        return None
    value = cell._value
    styled = cell.has_style
    if value is None and not styled:
        return ""
    style = ""
    if styled:
        key = tuple(cell._style)
        index = style_ids.get(key) if style_ids is not None else None
        if index is None:
            index = cell.style_id
            if style_ids is not None:
                style_ids[key] = index
        style = f' s="{index}"'
    head = f'<c r="{cell.coordinate}"{style}{_KINDS[kind]}'
    if value is None or value == "":
        return f"{head} />"
    if kind == "f":
        if type(value) is not str:
            return None
        return f"{head}><f>{_escape(value[1:])}</f><v /></c>"
    if kind == "s":
        if type(value) is not str:
            return None
        stripped = value.strip()
        space = ' xml:space="preserve"' if stripped and stripped != value else ""
        return f"{head}><is><t{space}>{_escape(value)}</t></is></c>"
    if type(value) not in (int, float):
        return None
    text = safe_string(value)
    return f"{head}><v>{text}</v></c>" if text else f"{head}><v /></c>"


#: the data types cell_xml writes, with the `t` attribute openpyxl gives each
_KINDS = {"f": "", "s": ' t="inlineStr"', "n": ' t="n"'}
