"""tests/xlsx_edit.py, the helper that types values into a built workbook's XML: openpyxl
reads back what was typed, with the right types; nothing else in the package changes; text
that looks like a formula stays text; new cells and rows land in order. (LibreOffice reads an
edited workbook in test_libreoffice.py's "edited" variant.)"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import openpyxl
import pytest
from helpers import built_workbook
from xlsx_edit import cell_of, defined_names, edit_cells, replace_parts, sheet_parts

MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Path:
    """A small sheetgen build: its Parallelism sheet holds shared formulas."""
    path, _ = built_workbook(tmp_path_factory.mktemp("edit") / "b.xlsx",
                             shapes=[(8, 8, 8)], spare_rows=1)
    return path


def _parts(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def _cell_xml(sheet_xml: str, ref: str) -> str:
    m = re.search(rf'<c r="{ref}"[^>]*?(?:/>|>.*?</c>)', sheet_xml, re.S)
    assert m, ref
    return m.group(0)


def test_typed_values_read_back_with_their_types(book: Path, tmp_path: Path):
    names = defined_names(book)
    assert names["GPU_NAME"] == "Inputs!$B$7"
    was = openpyxl.load_workbook(book, read_only=True)  # reads only the sheets asked for
    formula_cell = next(c for row in was["Inputs"].iter_rows() for c in row
                        if c.data_type == "f" and c.column == 2)
    out = edit_cells(book, tmp_path / "e.xlsx", {
        cell_of(names["GPU_NAME"]): "H100 SXM",       # a dropdown, shared string before
        cell_of(names["COMPUTE_EFF"]): 0.5,
        cell_of(names["N_LAYERS"]): 40,
        ("Inputs", formula_cell.coordinate): 3.25,      # a formula becomes the constant
        ("Inputs", "B9"): 0.5,
        ("Inputs", "D2"): True,
        ("Inputs", "E2"): False,
        ("Inputs", "F2"): "=1+1",                       # text, never a formula
        ("Inputs", "G2"): "  padded ",
        ("Inputs", "H2"): "a < b & c",
        ("What-if", "A1"): None,                        # blank: value gone, style kept
    })
    wb = openpyxl.load_workbook(out, read_only=True)
    ws = wb["Inputs"]
    assert (ws["B7"].value, ws["B7"].data_type) == ("H100 SXM", "s")
    assert isinstance(ws["B9"].value, float) and ws["B9"].value == 0.5
    pipeline = wb["Pipeline"][names["N_LAYERS"].split("!")[1].replace("$", "")]
    assert pipeline.value == 40 and type(pipeline.value) is int
    assert ws[formula_cell.coordinate].value == 3.25
    assert ws[formula_cell.coordinate].data_type == "n"
    assert ws["D2"].value is True and ws["E2"].value is False
    assert (ws["F2"].value, ws["F2"].data_type) == ("=1+1", "s")
    assert ws["G2"].value == "  padded " and ws["H2"].value == "a < b & c"
    before, after = was["What-if"]["A1"], wb["What-if"]["A1"]
    assert before.value and after.value is None
    assert after.has_style and (after.font, after.fill, after.number_format) == (
        before.font, before.fill, before.number_format)
    # in the XML, the "=1+1" is an inline string with no <f>
    with zipfile.ZipFile(out) as z:
        inputs = z.read(sheet_parts(z)["Inputs"]).decode()
    assert _cell_xml(inputs, "F2") == '<c r="F2" t="inlineStr"><is><t>=1+1</t></is></c>'


def test_every_other_part_and_every_other_cell_is_unchanged(book: Path, tmp_path: Path):
    out = edit_cells(book, tmp_path / "e.xlsx", {("Inputs", "B9"): 0.5,
                                                 ("Inputs", "B7"): "H100 SXM"})
    before, after = _parts(book), _parts(out)
    assert list(after) == list(before)  # same parts, same order
    with zipfile.ZipFile(book) as z:
        inputs = sheet_parts(z)["Inputs"]
    assert [n for n in before if before[n] != after[n]] == [inputs]
    old, new = before[inputs].decode(), after[inputs].decode()
    for ref in ("B9", "B7"):  # undo the two cells: the rest of the sheet is as it was
        new = new.replace(_cell_xml(new, ref), _cell_xml(old, ref))
    assert new == old
    with zipfile.ZipFile(book) as a, zipfile.ZipFile(out) as b:
        assert [i.compress_type for i in a.infolist()] == [i.compress_type
                                                           for i in b.infolist()]


def test_a_shared_formula_keeps_its_group_when_a_member_or_the_master_is_typed_over(
        book: Path, tmp_path: Path):
    with zipfile.ZipFile(book) as z:
        par = z.read(sheet_parts(z)["Parallelism"]).decode()
    master = re.search(r'<c r="([A-Z]+)(\d+)"[^>]*><f t="shared" ref="[A-Z]+\d+:[A-Z]+(\d+)"',
                       par)
    col, first, last = master.group(1), int(master.group(2)), int(master.group(3))
    assert last - first >= 3
    shared = par.count('<f t="shared"')
    # a member typed over: only that cell changes, the group stays shared
    out = edit_cells(book, tmp_path / "m.xlsx", {("Parallelism", f"{col}{first + 1}"): 5})
    with zipfile.ZipFile(out) as z:
        assert z.read(sheet_parts(z)["Parallelism"]).decode().count('<f t="shared"') == (
            shared - 1)
    # the master typed over: the other cells of its group keep their own formulas
    out2 = edit_cells(book, tmp_path / "n.xlsx", {("Parallelism", f"{col}{first}"): 7})
    def column(path: Path) -> list:
        ws = openpyxl.load_workbook(path, read_only=True)["Parallelism"]
        index = openpyxl.utils.column_index_from_string(col)
        return [row[0].value for row in ws.iter_rows(min_row=first, max_row=last,
                                                       min_col=index, max_col=index)]

    was, now = column(book), column(out2)
    assert now[0] == 7 and was[0] != 7
    assert now[1:] == was[1:] and all(str(v).startswith("=") for v in was[1:])


def _order_ok(sheet_xml: str) -> list[tuple[int, list[str]]]:
    """The rows and their cells as the XML lists them, checked for order and address."""
    root = ET.fromstring(sheet_xml)
    rows = []
    for row in root.iter(f"{MAIN}row"):
        r = int(row.get("r"))
        refs = [c.get("r") for c in row.iter(f"{MAIN}c")]
        cols = [openpyxl.utils.cell.coordinate_from_string(x) for x in refs]
        assert all(n == r for _, n in cols), (r, refs)
        idx = [openpyxl.utils.column_index_from_string(c) for c, _ in cols]
        assert idx == sorted(set(idx)), (r, refs)
        lo, _, hi = (row.get("spans") or "1:16384").partition(":")
        assert all(int(lo) <= i <= int(hi) for i in idx), (r, row.get("spans"), idx)
        rows.append((r, refs))
    numbers = [r for r, _ in rows]
    assert numbers == sorted(set(numbers))
    return rows


def test_new_cells_and_rows_are_inserted_in_order(book: Path, tmp_path: Path):
    with zipfile.ZipFile(book) as z:
        part = sheet_parts(z)["What-if"]
        old = z.read(part).decode()
    rows = dict(_order_ok(old))
    present = sorted(rows)
    gap = next(r for r in range(1, present[-1]) if r not in rows)  # a row not written
    row = next(r for r in present if len(rows[r]) >= 2)
    a, b = (openpyxl.utils.cell.coordinate_from_string(x)[0] for x in rows[row][:2])
    between = next((openpyxl.utils.get_column_letter(i) for i in range(
        openpyxl.utils.column_index_from_string(a) + 1,
        openpyxl.utils.column_index_from_string(b))), None)
    edits = {("What-if", f"{gap_col}{gap}"): v for gap_col, v in (("C", 3), ("A", 1))}
    edits[("What-if", f"A{present[-1] + 5}")] = "after the last row"
    edits[("What-if", f"ZZ{row}")] = 2.5  # after the row's last cell: spans grow
    if between:
        edits[("What-if", f"{between}{row}")] = "between"
    out = edit_cells(book, tmp_path / "o.xlsx", edits)
    with zipfile.ZipFile(out) as z:
        new = z.read(part).decode()
    got = dict(_order_ok(new))
    assert got[gap] == [f"A{gap}", f"C{gap}"]
    assert got[present[-1] + 5] == [f"A{present[-1] + 5}"]
    assert got[row][-1] == f"ZZ{row}"
    assert re.search(r'<dimension ref="A1:ZZ(\d+)"/>', new).group(1) == str(present[-1] + 5)
    ws = openpyxl.load_workbook(out, read_only=True)["What-if"]
    assert ws[f"C{gap}"].value == 3 and ws[f"A{gap}"].value == 1
    assert ws[f"ZZ{row}"].value == 2.5
    assert ws[f"A{present[-1] + 5}"].value == "after the last row"
    if between:
        assert ws[f"{between}{row}"].value == "between"


def test_sheet_names_go_through_the_relationships(tmp_path: Path):
    """openpyxl numbers sheet parts by position; moving a sheet first changes the names'
    order in workbook.xml, not its part: the helper must follow the relationship."""
    wb = openpyxl.Workbook()
    wb.active.title = "First"
    wb.create_sheet("GPU Specs")["A1"] = "old"
    wb.move_sheet("GPU Specs", offset=-1)
    path = tmp_path / "moved.xlsx"
    wb.save(path)
    edit_cells(path, path, {cell_of("'GPU Specs'!$A$1"): "new", ("First", "B2"): 1})
    back = openpyxl.load_workbook(path)
    assert back.sheetnames == ["GPU Specs", "First"]
    assert back["GPU Specs"]["A1"].value == "new" and back["First"]["B2"].value == 1
    assert back["First"]["A1"].value is None


@pytest.mark.parametrize(("edits", "error"), [
    ({("Nope", "A1"): 1}, KeyError),
    ({("Inputs", "A1:B2"): 1}, ValueError),
    ({("Inputs", "A1"): float("nan")}, ValueError),
    ({("Inputs", "A1"): "bell\x07"}, ValueError),
    ({("Inputs", "A1"): [1]}, TypeError),
])
def test_what_a_cell_cannot_take_is_refused(book: Path, tmp_path: Path, edits, error):
    with pytest.raises(error):
        edit_cells(book, tmp_path / "x.xlsx", edits)
    assert not any(tmp_path.iterdir())  # nothing half-written left behind


def _handmade(path: Path, sheet_data: str) -> Path:
    """A one-sheet package written by hand: column C styled (style 1), so a cell typed into
    an empty place of it takes that style, as in Excel."""
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    pkg = "http://schemas.openxmlformats.org/package/2006"
    parts = {
        "[Content_Types].xml":
            f'<Types xmlns="{pkg}/content-types"><Default Extension="rels" ContentType='
            '"application/vnd.openxmlformats-package.relationships+xml"/><Override PartName='
            '"/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'spreadsheetml.sheet.main+xml"/><Override PartName="/xl/data/s.xml" ContentType='
            '"application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-'
            'officedocument.spreadsheetml.styles+xml"/></Types>',
        "_rels/.rels": f'<Relationships xmlns="{pkg}/relationships"><Relationship Id="r1" '
                       f'Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<workbook {ns} xmlns:r="{rel}"><sheets><sheet name="Hand made" '
                           'sheetId="1" r:id="rX"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels":  # an absolute target, in a folder of its own
            f'<Relationships xmlns="{pkg}/relationships"><Relationship Id="rX" '
            f'Type="{rel}/worksheet" Target="/xl/data/s.xml"/><Relationship Id="rS" '
            f'Type="{rel}/styles" Target="styles.xml"/></Relationships>',
        "xl/styles.xml":
            f'<styleSheet {ns}><numFmts count="1"><numFmt numFmtId="164" formatCode="0.000"/>'
            '</numFmts><fonts count="1"><font/></fonts><fills count="1"><fill><patternFill '
            'patternType="none"/></fill></fills><borders count="1"><border/></borders>'
            '<cellStyleXfs count="1"><xf/></cellStyleXfs><cellXfs count="2"><xf numFmtId="0"/>'
            '<xf numFmtId="164" applyNumberFormat="1"/></cellXfs><cellStyles count="1">'
            '<cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>',
        "xl/data/s.xml": f'<worksheet {ns}><dimension ref="A1:B3"/><cols><col min="3" max="3" '
                         f'width="9" style="1" customWidth="1"/></cols>{sheet_data}</worksheet>',
    }
    with zipfile.ZipFile(path, "w") as z:
        for name, text in parts.items():
            z.writestr(name, text)
    return path


def test_self_closing_rows_and_styles_of_new_cells(tmp_path: Path):
    src = _handmade(tmp_path / "h.xlsx", '<sheetData><row r="1"><c r="A1"><v>1</v></c></row>'
                                         '<row r="2" spans="1:2" ht="30" customHeight="1"/>'
                                         '<row r="3"><c r="B3" t="b"><v>1</v></c></row>'
                                         "</sheetData>")
    out = edit_cells(src, tmp_path / "o.xlsx", {("Hand made", "C2"): 0.25,
                                                ("Hand made", "A2"): "x",
                                                ("Hand made", "C1"): 2,
                                                ("Hand made", "B3"): None})
    with zipfile.ZipFile(out) as z:
        sheet = z.read("xl/data/s.xml").decode()
    assert '<row r="2" spans="1:3" ht="30" customHeight="1"><c r="A2" t="inlineStr">' in sheet
    assert '<c r="C2" s="1"><v>0.25</v></c></row>' in sheet  # the column's style
    assert '<c r="B3"/>' in sheet  # blank, no t="b" left behind
    _order_ok(sheet)
    ws = openpyxl.load_workbook(out)["Hand made"]
    assert (ws["A2"].value, ws["C2"].value, ws["C1"].value, ws["B3"].value) == ("x", 0.25, 2,
                                                                                None)
    assert ws["C2"].number_format == "0.000" and ws["A1"].value == 1
    assert ws.row_dimensions[2].height == 30


def test_replace_parts_changes_only_the_named_parts(tmp_path):
    """The package copy every XML edit goes through: named parts replaced, every other part,
    the order and each part's compression as they were; a part the file lacks is refused;
    writing over the source leaves no temporary file behind."""
    src = tmp_path / "a.xlsx"
    with zipfile.ZipFile(src, "w") as z:
        z.writestr("one.xml", b"<a/>", compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("two.xml", b"<b/>", compress_type=zipfile.ZIP_STORED)
    out = replace_parts(src, tmp_path / "b.xlsx", {"two.xml": b"<c/>"})
    with zipfile.ZipFile(out) as z:
        assert [(i.filename, i.compress_type) for i in z.infolist()] == [
            ("one.xml", zipfile.ZIP_DEFLATED), ("two.xml", zipfile.ZIP_STORED)]
        assert z.read("one.xml") == b"<a/>" and z.read("two.xml") == b"<c/>"
    with pytest.raises(KeyError, match=r"three\.xml"):
        replace_parts(src, src, {"three.xml": b""})
    replace_parts(src, src, {"one.xml": b"<d/>"})
    with zipfile.ZipFile(src) as z:
        assert z.read("one.xml") == b"<d/>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.xlsx", "b.xlsx"]
