"""Write a WorkbookPlan into an existing openpyxl workbook: the writer behind `sheetgen fill`.

sheetgen's sheets are added after the user's own; their sheets are never written to. What
openpyxl cannot carry through a load and save is checked first (`losses`), so a fill refuses
rather than silently dropping part of someone's workbook. openpyxl stores no cached formula
results, so every formula in the saved file (theirs and ours) is computed when Excel or
LibreOffice opens it; the file asks for a full calculation on load.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.formatting.rule import CellIsRule, FormulaRule, Rule
from openpyxl.styles import Alignment, Border, Font, PatternFill, Side
from openpyxl.styles.differential import DifferentialStyle
from openpyxl.styles.numbers import NumberFormat
from openpyxl.utils import get_column_letter
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.workbook.workbook import Workbook
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.page import PageMargins
from openpyxl.worksheet.worksheet import Worksheet
from xlsxwriter.utility import quote_sheetname, xl_rowcol_to_cell

from sheetgen.layout import page as layout_rules
from sheetgen.layout import palette
from sheetgen.layout.planner import Cell, ChartPlan, SheetPlan, ValidationPlan, WorkbookPlan
from sheetgen.layout.styles import (
    CellStyle,
    cell_style,
    dim_style,
    highlight_style,
    number_style,
)
from sheetgen.writers.openpyxl_compat import Merger, StyleStamp, put_cells

Progress = Callable[[int], None]

#: Package contents openpyxl drops on load and save, as (what, part-name pattern, content
#: pattern or None). A fill refuses when THEIRS holds any of them (unless told to accept).
_LOSSY: list[tuple[str, str, str | None]] = [
    ("drawn shapes or text boxes", r"xl/drawings/drawing\d+\.xml", r"<xdr:(sp|grpSp|cxnSp)\b"),
    ("Excel 2016+ charts (chartex)", r"xl/charts/chartEx\d*\.xml", None),
    ("slicers", r"xl/slicers/", None),
    ("timelines", r"xl/timelines/", None),
    ("form or ActiveX controls", r"xl/(ctrlProps|activeX)/", None),
    ("threaded comments", r"xl/threadedComments/", None),
    ("sparklines", r"xl/worksheets/sheet\d+\.xml", r"sparklineGroups"),
    ("Excel 2010+ extended conditional formats or validations",
     r"xl/worksheets/sheet\d+\.xml", r"<x14:(conditionalFormattings|dataValidations)\b"),
    ("macros (VBA)", r"xl/vbaProject\.bin", None),
]


def losses(path: str | Path) -> list[str]:
    """What of the workbook at path openpyxl would drop (empty: nothing known)."""
    found = []
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        for what, part, content in _LOSSY:
            for name in names:
                if not re.match(part, name):
                    continue
                # the patterns are ASCII: searched in the bytes, as in the text they decode
                # to (a worksheet of a filled workbook is megabytes: no decoding)
                if content is None or re.search(content.encode(), z.read(name)):
                    found.append(what)
                    break
    return found


def _color(hex_color: str) -> str:
    return hex_color.lstrip("#").upper()


def openpyxl_style(style: CellStyle) -> dict[str, Any]:
    """A neutral CellStyle as openpyxl cell attributes (font, fill, border, alignment,
    number_format): the only styling decision made here is how to spell it."""
    out: dict[str, Any] = {}
    font: dict[str, Any] = {}
    if style.font_name is not None:
        font["name"] = style.font_name
    if style.font_size is not None:
        font["size"] = style.font_size
    if style.bold:
        font["bold"] = True
    if style.italic:
        font["italic"] = True
    if style.font_color is not None:
        font["color"] = _color(style.font_color)
    if font:
        out["font"] = Font(**font)
    if style.fill is not None:
        out["fill"] = PatternFill("solid", start_color=_color(style.fill),
                                  end_color=_color(style.fill))
    side = Side("thin", color=_color(style.border_color) if style.border_color else None)
    if style.border == "box":
        out["border"] = Border(left=side, right=side, top=side, bottom=side)
    elif style.border == "bottom":
        out["border"] = Border(bottom=side)
    if style.wrap or style.align or style.valign or style.indent:
        out["alignment"] = Alignment(wrap_text=style.wrap or None, horizontal=style.align,
                                     vertical=style.valign, indent=style.indent)
    if style.number_format is not None:
        out["number_format"] = style.number_format
    return out


class _Styles:
    """openpyxl styles by neutral style, translated once each; one per workbook written (a
    stamp holds style indices of that workbook)."""

    def __init__(self) -> None:
        self.cache: dict[CellStyle, StyleStamp] = {}
        self.merger = Merger()  # merged ranges' cell styles, like the stamps

    def get(self, role: str, fmt: str = "general", wrap: bool = False) -> StyleStamp:
        style = cell_style(role, fmt, wrap)
        if style not in self.cache:
            self.cache[style] = StyleStamp(openpyxl_style(style))
        return self.cache[style]


def _cell_value(value: Any) -> Any:
    """What a cell holds for a plan value: a Python scalar; NaN left blank."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def _put(ws: Worksheet, row: int, col: int, value: Any, style: StyleStamp,
         formula: bool = False) -> None:
    """One cell; text that is not ours to evaluate stays text even if it starts with '='."""
    put_cells(ws, [(row + 1, col + 1, _cell_value(value), not formula)], style)


def _write_cells(ws: Worksheet, sheet: SheetPlan, styles: _Styles,
                 progress: Progress | None) -> None:
    for cell in sheet.cells:
        _write_cell(ws, cell, styles)
    for table in sheet.tables:
        for col in table.columns:  # a column at once, in two styles: typed in and computed
            typed: list[tuple[int, int, Any, bool]] = []
            computed: list[tuple[int, int, Any, bool]] = []
            for i in range(table.n_rows):
                row = table.first_row + i
                link = col.link_at(i) if col.is_input else None
                if link is not None:
                    computed.append((row + 1, col.col + 1, link, False))
                elif col.is_input:
                    typed.append((row + 1, col.col + 1, _cell_value(col.values[i]), True))
                else:
                    computed.append((row + 1, col.col + 1, col.formula_at(row), False))
            if typed:
                put_cells(ws, typed, styles.get(col.style, col.fmt))
            if computed:
                put_cells(ws, computed, styles.get("linked" if col.is_input else "derived",
                                                   col.fmt))
        if progress is not None:
            progress(table.n_rows)


def _write_cell(ws: Worksheet, cell: Cell, styles: _Styles) -> None:
    if cell.span > 1:  # a plan's merges never overlap (the xlsx writer would refuse them)
        styles.merger.merge(ws, f"{xl_rowcol_to_cell(cell.row, cell.col)}:"
                                f"{xl_rowcol_to_cell(cell.row, cell.col + cell.span - 1)}")
    if cell.role == "formula":
        _put(ws, cell.row, cell.col, cell.formula, styles.get("formula", cell.fmt, cell.wrap),
             True)
    elif cell.role == "input":
        _put(ws, cell.row, cell.col, cell.value, styles.get("input", cell.fmt, cell.wrap))
    else:
        _put(ws, cell.row, cell.col, str(cell.value), styles.get(cell.role, wrap=cell.wrap))


def _validation(ws: Worksheet, v: ValidationPlan) -> None:
    rule = v.rule
    if rule.kind == "list":
        dv = DataValidation(type="list", formula1=v.source_name or v.source, allow_blank=True)
    elif rule.kind == "choices":
        dv = DataValidation(type="list", formula1='"' + ",".join(rule.choices) + '"',
                            allow_blank=True)
    elif rule.kind == "whole_min":
        dv = DataValidation(type="whole", operator="between", allow_blank=True,
                            formula1=str(int(rule.minimum or 1)),
                            formula2=str(int(rule.maximum or 2**31 - 1)))
    else:
        dv = DataValidation(type="decimal", operator="between", allow_blank=True,
                            formula1=repr(rule.minimum), formula2=repr(rule.maximum))
    if rule.message:
        dv.prompt = dv.error = rule.message
        dv.showInputMessage = dv.showErrorMessage = True
    dv.add(f"{xl_rowcol_to_cell(v.first_row, v.first_col)}:"
           f"{xl_rowcol_to_cell(v.last_row, v.last_col)}")
    ws.add_data_validation(dv)


def _chart(ws: Worksheet, chart: ChartPlan) -> None:
    """An XY chart as the built workbook draws it (the roofline: the ceiling a line, each
    group markers only (no line, no smoothing: openpyxl's scatter otherwise joins and smooths
    them), the ridge a diamond), whole-decade log axes in plain numbers. openpyxl
    cannot label points from cells; the groups' legend (compute-/memory-bound) reads
    without labels."""
    from openpyxl.chart.axis import ChartLines
    from openpyxl.chart.shapes import GraphicalProperties
    from openpyxl.drawing.spreadsheet_drawing import AnchorMarker, OneCellAnchor
    from openpyxl.drawing.xdr import XDRPositiveSize2D
    from openpyxl.utils.units import cm_to_EMU, pixels_to_EMU

    ch = ScatterChart()
    ch.title = _title(chart)
    ch.style = 13
    ch.scatterStyle = "lineMarker"
    ch.visible_cells_only = False  # <c:plotVisOnly val="0"/>: its data are in hidden columns
    for s in chart.series:
        x = Reference(ws, min_col=s.x[0] + 1, min_row=s.x[1] + 1, max_row=s.x[2] + 1)
        y = Reference(ws, min_col=s.y[0] + 1, min_row=s.y[1] + 1, max_row=s.y[2] + 1)
        series = Series(y, x, title=s.name)
        series.smooth = False
        color = _hex(s.color or (palette.CEILING if s.line else palette.POINT))
        series.marker.symbol = s.marker
        if s.marker != "none":
            series.marker.size = s.marker_size
            series.marker.graphicalProperties = GraphicalProperties(solidFill=color)
            series.marker.graphicalProperties.line.solidFill = color
        if s.line:
            series.graphicalProperties.line.solidFill = color
            series.graphicalProperties.line.width = 28575  # 2.25 pt in EMU
        else:
            series.graphicalProperties.line.noFill = True
        ch.series.append(series)
    for axis, title, bounds, log in ((ch.x_axis, chart.x_title, chart.x_range, chart.x_log),
                                     (ch.y_axis, chart.y_title, chart.y_range, chart.y_log)):
        axis.title = title
        if log:
            axis.scaling.logBase = 10
        if bounds is not None:
            axis.scaling.min, axis.scaling.max = bounds
        axis.number_format = "General"
        axis.numFmt.sourceLinked = False
        axis.majorGridlines = ChartLines()
        axis.delete = False
    ch.legend.position = "b"
    inset = layout_rules.CHART_INSET  # placed and sized as in the built workbook
    ch.width = (chart.width_cols * 64 - inset) / 37.8  # cm at 96 dpi
    ch.height = (chart.height_rows * 20 - inset) / 37.8
    ws.add_chart(ch, OneCellAnchor(
        _from=AnchorMarker(col=chart.col, colOff=pixels_to_EMU(inset),
                           row=chart.row, rowOff=pixels_to_EMU(inset)),
        ext=XDRPositiveSize2D(cm_to_EMU(ch.width), cm_to_EMU(ch.height))))


def _title(chart: ChartPlan) -> Any:
    """The chart's title: a live one reads its cell, with the build's text as the cache
    (openpyxl writes no formula results; a reader shows the cache until it recalculates)."""
    if chart.title_cell is None:
        return chart.title
    from openpyxl.chart.data_source import StrData, StrRef, StrVal
    from openpyxl.chart.text import Text
    from openpyxl.chart.title import Title

    sheet, row, col = chart.title_cell
    ref = f"{quote_sheetname(sheet)}!{xl_rowcol_to_cell(row, col, True, True)}"
    cache = StrData(ptCount=1, pt=[StrVal(idx=0, v=chart.title)])
    return Title(tx=Text(strRef=StrRef(f=ref, strCache=cache)), overlay=False)


def _number_format_rule(condition: str, code: str) -> Rule:
    """A formula rule whose style is only a number format (openpyxl's FormulaRule takes
    fonts, fills and borders but no number format)."""
    dxf = DifferentialStyle(numFmt=NumberFormat(numFmtId=_CUSTOM_FORMAT_ID, formatCode=code))
    return Rule(type="expression", formula=[condition], dxf=dxf)


#: the first id of a custom number format (0-163 are built in); openpyxl renumbers a
#: differential style's format when it writes the styles part
_CUSTOM_FORMAT_ID = 164


def _hex(color: str) -> str:
    return color.lstrip("#").upper()


def write_into(plan: WorkbookPlan, wb: Workbook, *, progress: Progress | None = None) -> None:
    """Add the plan's sheets, names and metadata to wb (after its own sheets)."""
    from openpyxl.packaging.custom import StringProperty

    clash = [s.name for s in plan.sheets if s.name in wb.sheetnames]
    if clash:
        raise ValueError(f"sheets already exist: {clash}")
    styles = _Styles()
    for sheet in plan.sheets:
        ws = wb.create_sheet(sheet.name)
        for col, width in sheet.widths.items():
            ws.column_dimensions[get_column_letter(col + 1)].width = width
        for col in sheet.hidden:
            ws.column_dimensions[get_column_letter(col + 1)].hidden = True
        frozen = layout_rules.freeze(sheet)
        if frozen:
            ws.freeze_panes = xl_rowcol_to_cell(*frozen)
        for row, height in layout_rules.row_heights(sheet).items():
            ws.row_dimensions[row + 1].height = height
        _page_setup(ws, sheet)
        _write_cells(ws, sheet, styles, progress)
        for v in sheet.validations:
            _validation(ws, v)
        for c in sheet.conditionals:
            look = openpyxl_style(highlight_style(c.color, c.font))
            ws.conditional_formatting.add(
                f"{xl_rowcol_to_cell(c.first_row, c.col)}:{xl_rowcol_to_cell(c.last_row, c.col)}",
                CellIsRule(operator="notEqual" if c.negate else "equal", formula=[c.literal],
                           fill=look["fill"], font=look.get("font")))
        for r in sheet.format_rules:
            ws.conditional_formatting.add(
                f"{xl_rowcol_to_cell(r.first_row, r.col)}:{xl_rowcol_to_cell(r.last_row, r.col)}",
                _number_format_rule(r.condition, number_style(r.fmt).number_format or "General"))
        for d in sheet.dim_rules:
            look = openpyxl_style(dim_style())
            ws.conditional_formatting.add(
                f"{xl_rowcol_to_cell(d.first_row, d.col)}:{xl_rowcol_to_cell(d.last_row, d.col)}",
                FormulaRule(formula=[d.condition], font=look["font"]))
        for chart in sheet.charts:
            _chart(ws, chart)
    for name, ref in plan.defined_names.items():
        wb.defined_names[name] = DefinedName(name, attr_text=ref)
    for key, value in plan.metadata.items():
        if key in wb.custom_doc_props.names:
            del wb.custom_doc_props[key]
        wb.custom_doc_props.append(StringProperty(name=key, value=value))
    if wb.calculation is None:  # a workbook saved without <calcPr>
        from openpyxl.workbook.properties import CalcProperties

        wb.calculation = CalcProperties()
    wb.calculation.fullCalcOnLoad = True


def _page_setup(ws: Worksheet, sheet: SheetPlan) -> None:
    """The xlsx writer's print setup (layout.page.print_setup), through openpyxl."""
    from openpyxl.worksheet.pagebreak import Break

    setup = layout_rules.print_setup(sheet)
    ws.page_setup.orientation = "portrait" if setup.portrait else "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    if setup.fit_width:
        ws.page_setup.fitToWidth = 1
        ws.page_setup.fitToHeight = 1 if setup.fit_height else 0
        ws.sheet_properties.pageSetUpPr.fitToPage = True
    else:
        ws.page_setup.scale = setup.scale
        for col in setup.col_breaks:
            ws.col_breaks.append(Break(id=col))
    for row in setup.row_breaks:
        ws.row_breaks.append(Break(id=row))
    ws.print_area = f"A1:{xl_rowcol_to_cell(setup.last_row, setup.last_col)}"
    if setup.repeat_rows is not None:
        ws.print_title_rows = f"{setup.repeat_rows[0] + 1}:{setup.repeat_rows[1] + 1}"
    if setup.repeat_cols is not None:
        ws.print_title_cols = (f"{get_column_letter(setup.repeat_cols[0] + 1)}:"
                               f"{get_column_letter(setup.repeat_cols[1] + 1)}")
    left, right, top, bottom = layout_rules.MARGINS
    ws.page_margins = PageMargins(left=left, right=right, top=top, bottom=bottom)
    ws.oddFooter.left.text = layout_rules.FOOTER_LEFT
    ws.oddFooter.right.text = layout_rules.FOOTER_RIGHT
