"""The one place sheetgen reaches into XlsxWriter's private methods, kept apart so an
XlsxWriter upgrade that changes them fails here, loudly, and in tests/test_xlsx_compat.py.

Charts: a chart whose data sit in hidden columns needs <c:plotVisOnly val="0"/>, and XlsxWriter
has no public way to write it: `show_hidden_data()` omits the element instead (XlsxWriter's
chart.py, `_write_plot_vis_only`), and LibreOffice's importer reads an absent element as
"visible cells only" unless the file says it is from MS Office 2007
(oox/source/drawingml/chart/chartspacemodel.cxx, mbPlotVisOnly(!bMSO2007Doc)): then it
draws nothing from hidden columns.

Formulas: XlsxWriter scans every formula with about 30 regular expressions, for the
dynamic-array functions it must prefix with `_xlfn.` (worksheet.py, `_write_formula` and
`_prepare_formula`). Over the default workbook's 27,912 formulas of ~300 characters that was
1.0 of a build's 2.2 s of CPU (cProfile). sheetgen's formulas keep to the functions Excel,
Google Sheets and LibreOffice 7.4 all have (tests/test_dialect.py), none of them
dynamic-array functions, so `PortableFormulaWorksheet` stores them as written; anything else
(an array formula, a workbook with future functions, a formula naming one of those functions)
takes the library's own path. (The scan also mistakes the text of a quoted sheet name, a
user's `'MAP(x'!B2`, for a function call; stored as written, such a link stays a link.)
"""

from __future__ import annotations

import functools
import re
from collections import namedtuple
from typing import Any

import xlsxwriter
from xlsxwriter.chart import Chart
from xlsxwriter.worksheet import CellFormulaTuple, Worksheet

#: The private names the shim relies on (checked when it is used and by the test).
PRIVATE_METHODS = ("_write_plot_vis_only", "_xml_empty_tag")
#: The worksheet's private methods and attributes the formula path relies on.
PRIVATE_WORKSHEET = ("_write_formula", "_prepare_formula", "_check_dimensions",
                     "_write_single_row", "_write_cell", "_get_range_data")
PRIVATE_WORKSHEET_STATE = ("table", "previous_row", "constant_memory", "use_future_functions",
                           "fh")

#: A cell whose <c> element is already written out (a shared formula of a big table, see
#: writers/shared_rows.py). Named "Formula" as XlsxWriter's own formula cell is, so the
#: library's chart caches (`Worksheet._get_range_data`, by class name) read its `value`.
WrittenCell = namedtuple("Formula", ["formula", "format", "value", "xml"])

#: Excel 365's dynamic-array functions, which XlsxWriter prefixes with _xlfn. (a superset:
#: no word boundary, so anything that might be one takes the library's own path).
DYNAMIC = re.compile(r"(ANCHORARRAY|BYCOL|BYROW|CHOOSECOLS|CHOOSEROWS|DROP|EXPAND|FILTER|"
                     r"HSTACK|LAMBDA|MAKEARRAY|MAP|RANDARRAY|REDUCE|SCAN|INGLE|SEQUENCE|SORT|"
                     r"SWITCH|TAKE|TEXTSPLIT|TOCOL|TOROW|UNIQUE|VSTACK|WRAPCOLS|WRAPROWS|"
                     r"XLOOKUP)\(")


def plot_hidden_cells(chart: Any) -> None:
    """Make `chart` write <c:plotVisOnly val="0"/>: plot cells in hidden rows and columns."""
    missing = [m for m in PRIVATE_METHODS if not callable(getattr(Chart, m, None))]
    if missing:
        raise RuntimeError(f"XlsxWriter {xlsxwriter.__version__} has no Chart."
                           f"{', Chart.'.join(missing)}: sheetgen/writers/xlsx_compat.py needs "
                           "updating for this version")

    def write() -> None:
        chart._xml_empty_tag("c:plotVisOnly", [("val", 0)])

    chart._write_plot_vis_only = write


class PortableFormulaWorksheet(Worksheet):
    """XlsxWriter's worksheet, writing portable formulas without the library's rewriting
    passes (see the module's docstring); `portable_formula` is the fast path's entry."""

    def portable_formula(self, row: int, col: int, formula: str, cell_format: Any = None,
                         value: Any = 0) -> int:
        """write_formula for a formula sheetgen wrote in the portable dialect (no array
        braces, no dynamic-array function): stored as it is."""
        if self.use_future_functions or not formula or formula[0] == "{":
            return self.write_formula(row, col, formula, cell_format, value)
        if self._check_dimensions(row, col):
            return -1
        if self.constant_memory and row > self.previous_row:
            self._write_single_row(row)
        self.table[row][col] = CellFormulaTuple(formula.removeprefix("="), cell_format, value)
        return 0

    def written_cell(self, row: int, col: int, xml: str, value: Any) -> None:
        """Store a cell whose <c> element `xml` is already written (in-memory mode: the
        worksheet writes it out, in its row, when the workbook closes)."""
        self.table[row][col] = WrittenCell("", None, value, xml)

    def _write_cell(self, row: int, col: int, cell: Any) -> None:
        if type(cell) is WrittenCell:
            self.fh.write(cell.xml)
        else:
            super()._write_cell(row, col, cell)

    def _prepare_formula(self, formula: str, expand_future_functions: bool = False) -> str:
        if self.use_future_functions or expand_future_functions or DYNAMIC.search(formula):
            return super()._prepare_formula(formula, expand_future_functions)
        formula = formula.removeprefix("{").removeprefix("=")
        return formula.removesuffix("}")


@functools.cache
def check_worksheet() -> None:
    """Fail loudly, naming this shim, if XlsxWriter no longer has what it relies on."""
    probe = Worksheet()
    missing = [m for m in PRIVATE_WORKSHEET if not callable(getattr(Worksheet, m, None))]
    missing += [a for a in PRIVATE_WORKSHEET_STATE if not hasattr(probe, a)]
    if missing:
        raise RuntimeError(f"XlsxWriter {xlsxwriter.__version__} has no Worksheet."
                           f"{', Worksheet.'.join(missing)}: sheetgen/writers/xlsx_compat.py "
                           "needs updating for this version")
