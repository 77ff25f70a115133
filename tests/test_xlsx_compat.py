"""writers/xlsx_compat.py, the one use of XlsxWriter's private chart methods: if an XlsxWriter
upgrade renames or changes them, this fails, naming the shim to update."""

from __future__ import annotations

import zipfile

import pytest
import xlsxwriter
from xlsxwriter.chart import Chart

from sheetgen.writers import xlsx_compat


def test_the_private_methods_the_shim_replaces_still_exist():
    for name in xlsx_compat.PRIVATE_METHODS:
        assert callable(getattr(Chart, name, None)), (
            f"XlsxWriter {xlsxwriter.__version__} changed Chart.{name}: update "
            "sheetgen/writers/xlsx_compat.py")


def _chart_xml(tmp_path, shim: bool) -> str:
    path = tmp_path / f"c{int(shim)}.xlsx"
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet()
    ws.write_column("A1", [1, 2, 3])
    ws.write_column("B1", [1, 4, 9])
    ch = wb.add_chart({"type": "scatter"})
    ch.add_series({"categories": "=Sheet1!$A$1:$A$3", "values": "=Sheet1!$B$1:$B$3"})
    if shim:
        xlsx_compat.plot_hidden_cells(ch)
    ws.insert_chart("D2", ch)
    wb.close()
    with zipfile.ZipFile(path) as z:
        return z.read("xl/charts/chart1.xml").decode()


def test_the_shim_writes_plot_vis_only_false_once(tmp_path):
    plain = _chart_xml(tmp_path, shim=False)
    shimmed = _chart_xml(tmp_path, shim=True)
    assert '<c:plotVisOnly val="1"/>' in plain  # XlsxWriter's own default
    assert shimmed.count("<c:plotVisOnly") == 1
    assert '<c:plotVisOnly val="0"/>' in shimmed


def test_a_missing_private_method_fails_loudly(monkeypatch):
    monkeypatch.delattr(Chart, "_write_plot_vis_only")
    with pytest.raises(RuntimeError, match=r"xlsx_compat\.py needs updating"):
        xlsx_compat.plot_hidden_cells(object())


#: formulas as sheetgen writes them (the portable dialect), and one of a user's sheet names
FORMULAS = ["=A1*2", "=IF(B1>0,B1/C1,\"\")", "=SUM(Matmul!$E$7:$E$9)",
            "=IFERROR(INDEX(A1:A9,MATCH(MIN(B1:B9),B1:B9,0)),\"n/a\")",
            "='Model SORT(plan'!$B$8*1",  # a user's sheet name is text, never a function
            "{=SUM(A1:A3*B1:B3)}"]


def _sheet_xml(tmp_path, worksheet_class, write: str) -> str:
    path = tmp_path / f"{write}.xlsx"
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet(worksheet_class=worksheet_class)
    for row, formula in enumerate(FORMULAS):
        getattr(ws, write)(row, 0, formula, None, 7)
    wb.close()
    with zipfile.ZipFile(path) as z:
        return z.read("xl/worksheets/sheet1.xml").decode()


def test_portable_formulas_are_stored_as_xlsxwriter_stores_them(tmp_path):
    from xlsxwriter.worksheet import Worksheet

    xlsx_compat.check_worksheet()
    stock = _sheet_xml(tmp_path, Worksheet, "write_formula").split("<row ")
    fast = _sheet_xml(tmp_path, xlsx_compat.PortableFormulaWorksheet,
                      "portable_formula").split("<row ")
    quoted = 1 + FORMULAS.index("='Model SORT(plan'!$B$8*1")
    # identical, except that XlsxWriter's scan mistakes the text of a quoted sheet name for a
    # function and makes that cell a dynamic-array formula; the shim stores it as typed
    assert [r for i, r in enumerate(stock) if i != quoted] == \
           [r for i, r in enumerate(fast) if i != quoted]
    assert "_xlfn" in stock[quoted]
    assert "<f>'Model SORT(plan'!$B$8*1</f>" in fast[quoted]
    assert '<f t="array" ref="A6">SUM(A1:A3*B1:B3)</f>' in fast[-1]  # braces: library path


def test_a_workbook_with_future_functions_takes_the_librarys_path(tmp_path):
    path = tmp_path / "future.xlsx"
    wb = xlsxwriter.Workbook(str(path), {"use_future_functions": True})
    ws = wb.add_worksheet(worksheet_class=xlsx_compat.PortableFormulaWorksheet)
    ws.portable_formula(0, 0, "=STDEV.S(B1:B3)")
    wb.close()
    with zipfile.ZipFile(path) as z:
        assert "<f>_xlfn.STDEV.S(B1:B3)</f>" in z.read("xl/worksheets/sheet1.xml").decode()


def test_a_missing_worksheet_internal_fails_loudly(monkeypatch):
    from xlsxwriter.worksheet import Worksheet

    xlsx_compat.check_worksheet.cache_clear()
    monkeypatch.delattr(Worksheet, "_write_single_row")
    with pytest.raises(RuntimeError, match=r"xlsx_compat\.py needs updating"):
        xlsx_compat.check_worksheet()
    monkeypatch.undo()
    xlsx_compat.check_worksheet.cache_clear()
    xlsx_compat.check_worksheet()


def test_a_written_cell_lands_in_its_row_and_feeds_chart_caches(tmp_path):
    path = tmp_path / "w.xlsx"
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet(worksheet_class=xlsx_compat.PortableFormulaWorksheet)
    ws.write_number(0, 0, 1)
    ws._check_dimensions(1, 1)  # as shared_rows does for a run it stores
    ws.written_cell(1, 1, '<c r="B2"><f>A1*2</f><v>2</v></c>', 2.0)
    assert ws._get_range_data(1, 1, 1, 1) == [2.0]  # a chart over B2 caches its value
    wb.close()
    with zipfile.ZipFile(path) as z:
        sheet = z.read("xl/worksheets/sheet1.xml").decode()
    assert '<row r="2" spans="1:2"><c r="B2"><f>A1*2</f><v>2</v></c></row>' in sheet
