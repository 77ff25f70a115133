"""Type values into cells of an xlsx the way a user does in Excel: only the typed cells' XML
changes; every other part of the package stays byte for byte as it was, shared formulas
included.

Why not openpyxl: loading a built workbook and saving it translates each of its shared
formulas (the default workbook has 21,312; 2.6 s of Python with the save) and writes them
back as plain formulas, which LibreOffice then parses one by one (about 1.5 s more of its CPU
per workbook: 4.5 s against 3.1 s, start-up included).
Patching the worksheet XML takes milliseconds and leaves LibreOffice the file sheetgen wrote.

What it does not do: recalculate. Formula cells keep their cached values, stale after an
edit, so use it only for workbooks that something recalculates in full before values are
read: LibreOffice with the forced-recalculation profile (a `libreoffice_job` with the default
`recalc=True`) or `sheetgen check` (it evaluates the formulas). Never for a workbook whose
cached values are read as they stand (openpyxl's data_only without a recalculation, or a
`recalc=False` job).

    edit_cells(src, out, {("Inputs", "B9"): 0.5, ("Inputs", "B7"): "H100 SXM",
                          cell_of(plan.defined_names["DTYPE"]): "fp8"})
"""

from __future__ import annotations

import math
import numbers
import os
import posixpath
import re
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Mapping
from pathlib import Path
from xml.sax.saxutils import escape, unescape

from openpyxl.formula.translate import Translator

from sheetgen.core.a1 import MAX_COLS, MAX_ROWS, col_index, col_name

#: what a cell can be given: a number, text (always text, even "=..."), a boolean, or None
#: for blank (the cell keeps its style and loses its value)
Value = float | int | str | bool | None

_SHEET_DATA = re.compile(r"<sheetData\b[^>]*?(?:/>|>(.*?)</sheetData>)", re.S)
_ROW = re.compile(r"<row\b([^>]*?)(?:/>|>(.*?)</row>)", re.S)
_CELL = re.compile(r"<c\b([^>]*?)(?:/>|>(.*?)</c>)", re.S)
_FORMULA = re.compile(r"<f\b([^>]*?)(?:/>|>(.*?)</f>)", re.S)
_ATTR = re.compile(r"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_REF = re.compile(r"^\$?([A-Z]{1,3})\$?([1-9][0-9]{0,6})$")
_COLS = re.compile(r"<col\b([^>]*?)/?>")
_DIMENSION = re.compile(r'<dimension\b[^>]*?\bref="([^"]*)"')
#: characters XML 1.0 cannot carry (a cell could not hold them either)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_MAX_TEXT = 32_767
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


def edit_cells(src: str | Path, out: str | Path,
               edits: Mapping[tuple[str, str], Value]) -> Path:
    """Write `src` to `out` with each (sheet name, "B9") cell set to its value. A formula
    cell becomes the constant; a cell not in the file yet is added in row and column order
    (rows too). `out` may be `src`."""
    by_sheet: dict[str, dict[tuple[int, int], Value]] = {}
    for (sheet, ref), value in edits.items():
        by_sheet.setdefault(sheet, {})[_parse_ref(ref)] = _checked(value)
    src, out = Path(src), Path(out)
    with zipfile.ZipFile(src) as z:
        parts = sheet_parts(z)
        unknown = sorted(set(by_sheet) - set(parts))
        if unknown:
            raise KeyError(f"{src.name} has no sheet {unknown[0]!r} (it has {sorted(parts)})")
        patched = {}
        for sheet, cells in by_sheet.items():
            text, replaced_formula = _patch_sheet(z.read(parts[sheet]).decode("utf-8"), cells)
            if replaced_formula and any(n.endswith("calcChain.xml") for n in z.namelist()):
                raise ValueError(f"{src.name} has a calculation chain that would list the "
                                 f"replaced formula cells of {sheet!r}; not supported")
            patched[parts[sheet]] = text.encode("utf-8")
    return replace_parts(src, out, patched)


def replace_parts(src: str | Path, out: str | Path, parts: Mapping[str, bytes]) -> Path:
    """Write `src` to `out` with the named parts' bytes replaced, every other part byte for
    byte and all in the same order and compression; `out` may be `src` (written to a
    temporary file beside it, then moved over it)."""
    src, out = Path(src), Path(out)
    with zipfile.ZipFile(src) as z:
        missing = sorted(set(parts) - set(z.namelist()))
        if missing:
            raise KeyError(f"{src.name} has no part {missing[0]!r}")
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
        os.close(fd)
        try:
            with zipfile.ZipFile(tmp, "w") as dst:
                for info in z.infolist():
                    dst.writestr(info, parts.get(info.filename) or z.read(info))
        except BaseException:
            os.unlink(tmp)
            raise
    os.replace(tmp, out)
    return out


def cell_of(reference: str) -> tuple[str, str]:
    """The (sheet, "B9") key of a single-cell reference such as a defined name's target,
    "'GPU Specs'!$B$9" or "Inputs!$B$7"."""
    sheet, _, cell = reference.rpartition("!")
    if sheet.startswith("'") and sheet.endswith("'"):
        sheet = sheet[1:-1].replace("''", "'")
    return sheet, cell.replace("$", "")


def defined_names(path: str | Path) -> dict[str, str]:
    """The workbook's global defined names and their targets ("Inputs!$B$8"), from
    xl/workbook.xml, without loading any sheet."""
    with zipfile.ZipFile(path) as z:
        root = ET.fromstring(z.read(_workbook_part(z)))
    return {e.get("name", ""): (e.text or "") for e in root.iter()
            if _local(e.tag) == "definedName" and e.get("localSheetId") is None}


def sheet_xml(path: str | Path, sheet: str) -> str:
    """The XML of one sheet of an xlsx file, read from its part alone (no workbook load)."""
    with zipfile.ZipFile(path) as z:
        return z.read(sheet_parts(z)[sheet]).decode("utf-8")


def sheet_parts(z: zipfile.ZipFile) -> dict[str, str]:
    """Each sheet's name and the zip part that holds it, through xl/workbook.xml and its
    relationships (a sheet's part name need not follow its position)."""
    book = _workbook_part(z)
    folder, name = posixpath.split(book)
    targets = _relationships(z, posixpath.join(folder, "_rels", name + ".rels"), folder)
    root = ET.fromstring(z.read(book))
    return {e.get("name", ""): targets[e.get(_REL, "")] for e in root.iter()
            if _local(e.tag) == "sheet" and e.get(_REL) in targets}


def _workbook_part(z: zipfile.ZipFile) -> str:
    office = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/" \
             "officeDocument"
    root = ET.fromstring(z.read("_rels/.rels"))
    for rel in root:
        if rel.get("Type") == office:
            return _resolve("", rel.get("Target", ""))
    return "xl/workbook.xml"


def _relationships(z: zipfile.ZipFile, part: str, folder: str) -> dict[str, str]:
    root = ET.fromstring(z.read(part))
    return {rel.get("Id", ""): _resolve(folder, rel.get("Target", ""))
            for rel in root if rel.get("TargetMode") != "External"}


def _resolve(folder: str, target: str) -> str:
    if target.startswith("/"):
        return target.lstrip("/")
    return posixpath.normpath(posixpath.join(folder, target))


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _parse_ref(ref: str) -> tuple[int, int]:
    """("B9") -> (row 9, column 2), both 1-based."""
    m = _REF.match(ref.strip().upper())
    if not m:
        raise ValueError(f"not a single cell: {ref!r}")
    col = col_index(m.group(1)) + 1
    row = int(m.group(2))
    if row > MAX_ROWS or col > MAX_COLS:
        raise ValueError(f"{ref!r} is beyond the sheet's last cell")
    return row, col


def _letters(col: int) -> str:
    """1 -> "A": sheetgen.core.a1 counts columns from 0."""
    return col_name(col - 1)


def _checked(value: Value) -> Value:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        if _NOT_XML.search(value) or len(value) > _MAX_TEXT:
            raise ValueError(f"a cell cannot hold the text {value[:40]!r}")
        return value
    if isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise ValueError(f"a cell cannot hold {value!r}")
        return value
    raise TypeError(f"cannot type a {type(value).__name__} into a cell")


def _attrs(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
            for m in _ATTR.finditer(text)}


def _cell_xml(row: int, col: int, style: str | None, value: Value) -> str:
    """The cell as Excel stores a typed constant (text as an inline string: never a
    formula, and sharedStrings.xml stays as it was)."""
    head = f'<c r="{_letters(col)}{row}"' + (f' s="{style}"' if style is not None else "")
    if value is None:
        return head + "/>"
    if isinstance(value, bool):
        return f'{head} t="b"><v>{int(value)}</v></c>'
    if isinstance(value, str):
        space = ' xml:space="preserve"' if value != value.strip() else ""
        return f'{head} t="inlineStr"><is><t{space}>{escape(value)}</t></is></c>'
    number = str(int(value)) if isinstance(value, numbers.Integral) else repr(float(value))
    return f"{head}><v>{number}</v></c>"


def _patch_sheet(text: str, cells: dict[tuple[int, int], Value]) -> tuple[str, bool]:
    """The worksheet XML with the cells set; and whether a formula was replaced."""
    data = _SHEET_DATA.search(text)
    if data is None:
        raise ValueError("the worksheet has no sheetData")
    body = data.group(1) or ""
    masters, replaced_formula = _targets(body, cells)
    if masters:
        body = _unshare(body, masters)
    col_styles = _column_styles(text[:data.start()])
    wanted: dict[int, dict[int, Value]] = {}
    for (row, col), value in cells.items():
        wanted.setdefault(row, {})[col] = value
    pieces, pos, last = [], 0, 0
    for m in _ROW.finditer(body):
        row = _row_number(m.group(1))
        if row <= last:
            raise ValueError(f"rows out of order at row {row}")
        last = row
        for new in sorted(r for r in wanted if r < row):
            pieces += [body[pos:m.start()], _row_xml(new, "", None, wanted.pop(new),
                                                     col_styles)]
            pos = m.start()
        if row in wanted:
            pieces += [body[pos:m.start()], _row_xml(row, m.group(1), m.group(2),
                                                     wanted.pop(row), col_styles)]
            pos = m.end()
    pieces.append(body[pos:])
    pieces += [_row_xml(r, "", None, wanted[r], col_styles) for r in sorted(wanted)]
    head = _widen_dimension(text[:data.start()], cells)
    if data.group(1) is None:  # <sheetData/>: an empty sheet
        return f"{head}<sheetData>{''.join(pieces)}</sheetData>{text[data.end():]}", (
            replaced_formula)
    return (head + text[data.start():data.start(1)] + "".join(pieces)
            + text[data.end(1):], replaced_formula)


def _row_number(attrs: str) -> int:
    number = _attrs(attrs).get("r")
    if number is None:
        raise ValueError("a row without a number (r) is not supported")
    return int(number)


def _targets(body: str, cells: dict[tuple[int, int], Value]
             ) -> tuple[dict[str, tuple[str, str]], bool]:
    """The shared-formula groups whose master cell is being replaced, {si: (formula,
    master's address)}, and whether any target holds a formula. Refuses to cut into an
    array formula's range, as Excel does."""
    masters: dict[str, tuple[str, str]] = {}
    replaced = False
    rows = {row for row, _ in cells}
    for m in _ROW.finditer(body):
        row = _row_number(m.group(1))
        if row not in rows or not m.group(2):
            continue
        for c in _CELL.finditer(m.group(2)):
            ref = _attrs(c.group(1)).get("r")
            if ref is None:
                raise ValueError(f"row {row} has a cell without an address")
            if _parse_ref(ref) not in cells or not c.group(2) or "<f" not in c.group(2):
                continue
            replaced = True
            f = _FORMULA.search(c.group(2))
            attrs = _attrs(f.group(1)) if f else {}
            if attrs.get("t") == "array" and ":" in attrs.get("ref", ":"):
                raise ValueError(f"{ref} is part of an array formula's range")
            if attrs.get("t") == "shared" and f is not None and f.group(2):
                masters[attrs["si"]] = (unescape(f.group(2)), ref)
    return masters, replaced


def _unshare(body: str, masters: dict[str, tuple[str, str]]) -> str:
    """Every cell of the given shared-formula groups with its own plain formula: the group
    loses its master, so the others cannot keep pointing at it."""

    def plain(c: re.Match[str]) -> str:
        inner = c.group(2)
        if not inner or 't="shared"' not in inner:
            return c.group(0)
        f = _FORMULA.search(inner)
        attrs = _attrs(f.group(1)) if f else {}
        if f is None or attrs.get("si") not in masters:
            return c.group(0)
        formula, origin = masters[attrs["si"]]
        here = _attrs(c.group(1))["r"]
        moved = Translator("=" + formula, origin=origin).translate_formula(here)[1:]
        start, end = c.start(2) - c.start(), c.end(2) - c.start()
        whole = c.group(0)
        new_inner = inner[:f.start()] + f"<f>{escape(moved)}</f>" + inner[f.end():]
        return whole[:start] + new_inner + whole[end:]

    return _CELL.sub(plain, body)


def _row_xml(row: int, attrs: str, inner: str | None, cells: dict[int, Value],
             col_styles: dict[int, str]) -> str:
    """The row with the cells set, existing ones replaced in place, new ones inserted in
    column order with the style a typed cell gets (the row's, else the column's)."""
    row_attrs = _attrs(attrs)
    style = row_attrs.get("s") if row_attrs.get("customFormat") in ("1", "true") else None
    pieces, pos = [], 0
    inner = inner or ""
    for c in _CELL.finditer(inner):
        ref = _attrs(c.group(1)).get("r")
        if ref is None:
            raise ValueError(f"row {row} has a cell without an address")
        col = _parse_ref(ref)[1]
        for new in sorted(k for k in cells if k < col):
            pieces += [inner[pos:c.start()],
                       _cell_xml(row, new, style or col_styles.get(new), cells.pop(new))]
            pos = c.start()
        if col in cells:
            pieces += [inner[pos:c.start()],
                       _cell_xml(row, col, _attrs(c.group(1)).get("s"), cells.pop(col))]
            pos = c.end()
    pieces.append(inner[pos:])
    pieces += [_cell_xml(row, k, style or col_styles.get(k), cells[k]) for k in sorted(cells)]
    if not attrs:
        attrs = f' r="{row}"'
    elif "spans" in row_attrs:  # an optimisation hint: it must still cover every cell
        lo, _, hi = row_attrs["spans"].partition(":")
        cols = [_parse_ref(a)[1] for a in re.findall(r'<c\b[^>]*?\br="([^"]+)"',
                                                     "".join(pieces))]
        spans = f"{min([int(lo), *cols])}:{max([int(hi or lo), *cols])}"
        attrs = re.sub(r'\bspans="[^"]*"', f'spans="{spans}"', attrs)
    return f"<row{attrs.rstrip('/').rstrip()}>{''.join(pieces)}</row>"


def _column_styles(head: str) -> dict[int, str]:
    """Each column's default style, from <cols>."""
    styles = {}
    for m in _COLS.finditer(head):
        a = _attrs(m.group(1))
        if "style" in a:
            for col in range(int(a["min"]), int(a["max"]) + 1):
                styles[col] = a["style"]
    return styles


def _widen_dimension(head: str, cells: dict[tuple[int, int], Value]) -> str:
    """The <dimension> (the used range) grown to cover the typed cells."""
    m = _DIMENSION.search(head)
    if m is None:
        return head
    corners = [_parse_ref(r) for r in m.group(1).split(":")]
    rows = [r for r, _ in corners] + [r for r, _ in cells]
    cols = [c for _, c in corners] + [c for _, c in cells]
    ref = f"{_letters(min(cols))}{min(rows)}:{_letters(max(cols))}{max(rows)}"
    return head[:m.start(1)] + ref + head[m.end(1):]
