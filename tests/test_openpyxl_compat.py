"""writers/openpyxl_compat.py, the one use of openpyxl's private style array: if an openpyxl
upgrade drops it, these fail loudly, and a stamped cell must look exactly as one styled
through the public attributes. Also the tests' own copies of loaded workbooks
(helpers.load_workbook): each must be the workbook openpyxl itself loads."""

from __future__ import annotations

import re
import zipfile
from copy import copy
from pathlib import Path

import openpyxl
import pytest
from helpers import load_workbook
from openpyxl.styles import Alignment, Border, Font, PatternFill, Side

from sheetgen.writers import openpyxl_compat
from sheetgen.writers.openpyxl_compat import StyleStamp

LOOK = {"font": Font(name="Arial", size=9, bold=True, color="FF1F4E79"),
        "fill": PatternFill("solid", start_color="FFFFF2CC", end_color="FFFFF2CC"),
        "border": Border(bottom=Side("thin", color="FF999999")),
        "alignment": Alignment(horizontal="right", indent=1),
        "number_format": "0.000"}


def test_openpyxl_still_keeps_the_private_style_array():
    cell = openpyxl.Workbook().active["A1"]
    assert hasattr(cell, openpyxl_compat.PRIVATE_ATTRIBUTE), openpyxl.__version__


def test_a_stamped_cell_looks_as_one_styled_in_public(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    stamp = StyleStamp(LOOK)
    for row in range(1, 4):
        stamp.apply(ws.cell(row=row, column=1, value=row))
    for attr, piece in LOOK.items():  # column B: the public way
        for row in range(1, 4):
            setattr(ws.cell(row=row, column=2, value=row), attr, piece)
    wb.save(tmp_path / "s.xlsx")
    back = openpyxl.load_workbook(tmp_path / "s.xlsx").active
    for row in range(1, 4):
        stamped, public = back.cell(row=row, column=1), back.cell(row=row, column=2)
        assert copy(stamped.font) == copy(public.font)
        assert stamped.font.bold and stamped.font.size == 9
        assert copy(stamped.fill) == copy(public.fill) and stamped.fill.fgColor.rgb == "FFFFF2CC"
        assert copy(stamped.border) == copy(public.border) and stamped.border.bottom.style == "thin"
        assert copy(stamped.alignment) == copy(public.alignment) and stamped.alignment.indent == 1
        assert stamped.number_format == public.number_format == "0.000"


def test_a_missing_array_fails_loudly(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(openpyxl_compat, "PRIVATE_ATTRIBUTE", "_no_such_array")
    cell = openpyxl.Workbook().active["A1"]
    with pytest.raises(RuntimeError, match=r"openpyxl_compat\.py needs updating"):
        StyleStamp(LOOK).apply(cell)


def _saved_parts(wb: openpyxl.Workbook, path: Path) -> dict[str, bytes]:
    """The workbook as openpyxl saves it, each cell's style index replaced by the style's own
    XML (a fresh load saves duplicate styles that a copy merges, same looks, other indices)
    and merged ranges in order (openpyxl keeps them in a set)."""
    wb.save(path)
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist() if n != "docProps/core.xml"}
    styles = parts.pop("xl/styles.xml").decode()
    head, rest = styles.split("<cellXfs", 1)
    xfs, tail = rest.split("</cellXfs>", 1)
    looks = re.findall(r"<xf [^>]*?(?:/>|>.*?</xf>)", xfs)
    parts["styles less cellXfs"] = (head + tail).encode()
    for name in [n for n in parts if n.startswith("xl/worksheets/")]:
        xml = re.sub(rb' s="(\d+)"', lambda m: b" s='" + looks[int(m[1])].encode() + b"'",
                     parts[name])
        parts[name] = re.sub(rb"(?:<mergeCell [^>]*/>)+",
                             lambda m: b"".join(sorted(re.findall(rb"<mergeCell [^>]*/>", m[0]))),
                             xml)
    return parts


def _every_feature(path: Path) -> Path:
    """A small workbook, written by XlsxWriter as sheetgen's are, with what a copy must keep:
    styles (several alike), row heights and column widths, merges, a validation, conditional
    formats, a defined name, a table, a chart, frozen panes, print settings, shared formulas."""
    import xlsxwriter

    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("Inputs")
    bold, money = wb.add_format({"bold": True, "bg_color": "#FFF2CC"}), wb.add_format(
        {"num_format": '#,##0.00" GB"', "border": 1})
    ws.write_row(0, 0, ["name", "value", "note"], bold)
    for row in range(1, 40):
        ws.write_number(row, 1, row * 1.5, money)
        ws.write_formula(row, 2, f"=B{row + 1}*2", money)
    ws.merge_range("E2:G3", "merged", bold)
    ws.set_row(4, 30)
    ws.set_column("A:A", 24)
    ws.data_validation("B2:B40", {"validate": "decimal", "criteria": ">", "value": 0})
    ws.conditional_format("C2:C40", {"type": "cell", "criteria": ">", "value": 10,
                                     "format": bold})
    ws.freeze_panes(1, 0)
    ws.print_area("A1:G40")
    ws.repeat_rows(0)
    ws.set_landscape()
    wb.define_name("VALUES", "=Inputs!$B$2:$B$40")
    table = wb.add_worksheet("Table")
    table.add_table("A1:B4", {"data": [[1, 2], [3, 4], [5, 6]], "name": "Pairs"})
    chart = wb.add_chart({"type": "line"})
    chart.add_series({"values": "=Inputs!$B$2:$B$40"})
    ws.insert_chart("I2", chart)
    wb.close()
    return path


def test_a_copied_workbook_is_the_one_openpyxl_loads(tmp_path):
    """helpers.load_workbook parses a file once and copies it after (pickle, with two
    openpyxl containers reduced by hand): two copies, saved, hold every cell, style, size,
    merge, rule, print setting, name and table that openpyxl's own load saves; an edit stays
    in its copy; sizes are still made on demand."""
    path = _every_feature(tmp_path / "features.xlsx")
    fresh = _saved_parts(openpyxl.load_workbook(path), tmp_path / "fresh.xlsx")
    assert b"<mergeCell " in fresh["xl/worksheets/sheet1.xml"]
    assert any(n.startswith("xl/tables/") for n in fresh)
    first, second = load_workbook(path), load_workbook(path)
    assert second["Inputs"].row_dimensions[9999].index == 9999
    del second["Inputs"].row_dimensions[9999]
    second["Inputs"]["B2"] = 0.5
    assert first["Inputs"]["B2"].value == 1.5
    assert list(first["Table"].tables.items()) == [("Pairs", "A1:B4")]
    assert _saved_parts(first, tmp_path / "first.xlsx") == fresh
    edited = openpyxl.load_workbook(path)
    edited["Inputs"]["B2"] = 0.5
    assert _saved_parts(second, tmp_path / "second.xlsx") == _saved_parts(
        edited, tmp_path / "edited.xlsx") != fresh


def _parts(path: Path) -> dict[str, bytes]:
    """Every part of a saved xlsx but its times (docProps/core.xml's created, modified)."""
    with zipfile.ZipFile(path) as z:
        return {n: re.sub(rb"<dcterms:(created|modified)[^<]*</dcterms:\1>", b"", z.read(n))
                for n in z.namelist()}


def _every_kind_of_cell() -> openpyxl.Workbook:
    """Cells of every kind openpyxl writes: formulas (escaped), numbers (inf, -0.0, 1e20),
    texts (edge spaces, tabs, newlines, '=' kept as text), blanks with and without style,
    a boolean, a date, an error, rich text, an array formula, a comment, a hyperlink,
    merged ranges; and a second sheet with a chart."""
    from datetime import datetime

    from openpyxl.cell.rich_text import CellRichText, TextBlock
    from openpyxl.cell.text import InlineFont
    from openpyxl.chart import BarChart, Reference
    from openpyxl.comments import Comment
    from openpyxl.worksheet.formula import ArrayFormula

    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = '=SUM(B1:B2)&"<&>"'
    ws["B1"], ws["B2"], ws["B3"], ws["B4"], ws["B5"] = 4096, 1.5e-7, float("inf"), -0.0, 1e20
    ws["C1"] = " lead & <x> \"q\" "
    ws["C2"], ws["C3"], ws["C4"] = "plain", "tab\tnew\nline", "   "
    ws["C5"] = "=not a formula"
    ws["C5"].data_type = "s"
    ws["D1"].font = Font(bold=True)
    ws["D2"] = True
    ws["D3"] = datetime(2024, 5, 6, 7, 8, 9)
    ws["D4"] = "#N/A"
    ws["D5"] = CellRichText(["a ", TextBlock(InlineFont(b=True), "bold")])
    ws["E1"] = ArrayFormula("E1:E2", "=B1:B2*2")
    ws["E3"] = "noted"
    ws["E3"].comment = Comment("a note", "me")
    ws["E4"] = "link"
    ws["E4"].hyperlink = "https://example.com/"
    for i, look in enumerate(LOOK.items()):
        cell = ws.cell(row=7 + i, column=1, value=i * 1.25)
        setattr(cell, *look)
    ws.merge_cells("A12:C12")
    ws["A12"] = "merged"
    ws["A12"].border = Border(bottom=Side("thin"))
    ws.merge_cells("A13:B14")
    ws.row_dimensions[20].height = 30
    chart_sheet = wb.create_sheet("Chart")
    chart = BarChart()
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=5))
    chart_sheet.add_chart(chart, "A1")
    return wb


def test_save_workbook_writes_the_bytes_openpyxl_writes(tmp_path):
    """The fast row writer: every part of the file byte for byte as openpyxl's own save,
    for every kind of cell (the plain ones written in one piece, the rest by the library),
    and for a whole filled workbook reloaded."""
    from fill_helpers import filled_workbook

    wb = _every_kind_of_cell()
    wb.save(tmp_path / "library.xlsx")
    openpyxl_compat.save_workbook(_every_kind_of_cell(), tmp_path / "fast.xlsx")
    library = _parts(tmp_path / "library.xlsx")
    assert b'<t xml:space="preserve"> lead &amp; &lt;x&gt; "q" </t>' in library[
        "xl/worksheets/sheet1.xml"]
    assert _parts(tmp_path / "fast.xlsx") == library
    filled = filled_workbook(tmp_path)  # two loads: a save changes a workbook's charts
    openpyxl.load_workbook(filled, rich_text=True).save(tmp_path / "filled_library.xlsx")
    openpyxl_compat.save_workbook(openpyxl.load_workbook(filled, rich_text=True),
                                  tmp_path / "filled_fast.xlsx")
    assert _parts(tmp_path / "filled_fast.xlsx") == _parts(tmp_path / "filled_library.xlsx")


def test_cell_xml_leaves_other_cells_to_the_library():
    ws = _every_kind_of_cell().active
    assert openpyxl_compat.cell_xml(ws["B1"]) == '<c r="B1" t="n"><v>4096</v></c>'
    assert openpyxl_compat.cell_xml(ws["A1"]) == (
        '<c r="A1"><f>SUM(B1:B2)&amp;"&lt;&amp;&gt;"</f><v /></c>')
    for ref in ("D2", "D3", "D4", "D5", "E1", "E3", "E4"):
        assert openpyxl_compat.cell_xml(ws[ref]) is None, ref
    assert openpyxl_compat.cell_xml(ws["Z99"]) == ""


def test_put_cells_and_merger_make_the_cells_openpyxl_makes(tmp_path):
    """put_cells and Merger against ws.cell + StyleStamp.apply and ws.merge_cells (ranges of
    one shape again and again, start cells styled or not, one over a cell already there):
    the same saved bytes; a string openpyxl refuses is refused the same way."""
    from openpyxl.utils.exceptions import IllegalCharacterError

    cells = [(2, 1, "=A1*2", False), (3, 1, "=A1&\"=\"", False), (4, 1, "=x", True),
             (5, 1, 7, True), (6, 1, 2.5, False), (7, 1, None, True), (8, 1, "text", True),
             (9, 1, True, False), (10, 1, "#N/A", True)]
    ranges = ["C1:E1", "C3:D4", "C5:E5", "C6:E6", "C8:D9", "C10:D11", "C20:F20", "C21:F21",
              "C22:F22", "C24:F24", "C30:E30", "C31:E31"]
    books = []
    for fast in (False, True):
        wb = openpyxl.Workbook()
        ws = wb.active
        stamp = StyleStamp(LOOK)
        ws["D30"] = "there before its merge"
        for row in (20, 22, 24):
            ws.cell(row=row, column=3).border = Border(bottom=Side("thin"), right=Side("thin"))
        if fast:
            openpyxl_compat.put_cells(ws, cells, stamp)
            merger = openpyxl_compat.Merger()
            for ref in ranges:
                merger.merge(ws, ref)
        else:
            for row, column, value, text in cells:
                cell = ws.cell(row=row, column=column, value=value)
                if text and isinstance(value, str):
                    cell.data_type = "s"
                stamp.apply(cell)
            for ref in ranges:
                ws.merge_cells(ref)
        wb.save(tmp_path / f"{fast}.xlsx")
        books.append(_parts(tmp_path / f"{fast}.xlsx"))
        assert [ws.cell(row=r, column=1).data_type for r in (2, 4, 5, 7, 9, 10)] == [
            "f", "s", "n", "n", "b", "s"]
    assert books[0] == books[1]
    with pytest.raises(IllegalCharacterError):
        openpyxl_compat.put_cells(openpyxl.Workbook().active, [(1, 1, "=A\x01", False)],
                                  StyleStamp(LOOK))


def test_the_private_parts_the_fast_paths_use_are_still_there():
    from openpyxl.cell._writer import etree_write_cell

    wb = openpyxl.Workbook()
    ws = wb.active
    cell = ws["A1"]
    for name in (*openpyxl_compat.PRIVATE_CELL, openpyxl_compat.PRIVATE_ATTRIBUTE):
        assert hasattr(cell, name), (openpyxl.__version__, name)
    for name in (*openpyxl_compat.PRIVATE_CELLS, openpyxl_compat.PRIVATE_MERGE, "_charts",
                 "_images"):
        assert hasattr(ws, name), (openpyxl.__version__, name)
    assert callable(etree_write_cell)


# ---- the tests' template translator (tests/openpyxl_fast.py) ------------------------------
#: formulas with every kind of reference openpyxl's Translator handles, and destinations that
#: move them down, up, right, left and off the sheet
TRANSLATED = [
    "=A1+$B$2+C$3+$D4", "=SUM(Sheet1!A1:B2)*'My sheet'!$C$3", "=SUM(A:B)+SUM($C:D)",
    "=SUM(1:3)+SUM($4:5)", "=SUM(A1:B2:C3)", "=MY_NAME+A1:MY_NAME", "=a1+b$2",
    '="A1 stays text"&B2', "=IF(ISNUMBER(Z9),Z9,#N/A)", "=XFD1+XFC2", "=A1048576",
    "=SUMPRODUCT((A2:A9>0)*B2:B9)", "=-A1%",
]
DESTINATIONS = ["C5", "B2", "A1", "A7", "F1", "XFD9", "D1048576"]


def test_the_template_translator_is_openpyxls_translator_cell_for_cell():
    from openpyxl.formula.translate import Translator, TranslatorError
    from openpyxl_fast import TemplateTranslator

    compared = errors = 0
    for formula in TRANSLATED:
        for origin in ("B2", "C5"):
            ours, theirs = TemplateTranslator(formula, origin), Translator(formula, origin)
            for dest in DESTINATIONS:
                try:
                    want = theirs.translate_formula(dest)
                except TranslatorError:
                    with pytest.raises(TranslatorError):
                        ours.translate_formula(dest)
                    errors += 1
                    continue
                assert ours.translate_formula(dest) == want, (formula, origin, dest)
                compared += 1
    assert compared > 100 and errors > 10  # both paths taken


def test_the_session_loads_with_the_template_translator_as_openpyxl_loads(tmp_path):
    """Installed by conftest, and a default workbook loads with every cell (the 21,312
    shared-formula copies among them) equal to openpyxl's own load."""
    import openpyxl.worksheet._reader as reader
    from helpers import built_workbook
    from openpyxl_fast import TemplateTranslator, library_translator

    assert reader.Translator is TemplateTranslator
    path, _ = built_workbook(tmp_path / "d.xlsx")
    fast = openpyxl.load_workbook(path)
    with library_translator():
        assert reader.Translator is not TemplateTranslator
        library = openpyxl.load_workbook(path)
    assert reader.Translator is TemplateTranslator
    cells = shared = 0
    for ws in library:
        for want_row, got_row in zip(ws.iter_rows(), fast[ws.title].iter_rows(), strict=True):
            for want, got in zip(want_row, got_row, strict=True):
                assert got.value == want.value, (ws.title, want.coordinate)
                cells += 1
    with zipfile.ZipFile(path) as z:
        shared = sum(z.read(n).count(b't="shared"') for n in z.namelist()
                     if n.startswith("xl/worksheets/sheet"))
    assert cells > 50_000 and shared > 20_000
