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
