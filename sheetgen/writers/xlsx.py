"""Write a WorkbookPlan to an .xlsx file with xlsxwriter.

Every formula cell carries the reference model's value as its cached result, so previews,
pandas and openpyxl(data_only=True) show real numbers before any recalculation. The file is
written beside its destination under a temporary name and moved into place at the end
(sheetgen.files.atomic), so an interrupted build never leaves half a file and never clobbers the
user's; xlsxwriter's own scratch files go to a private folder removed on every exit path.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import xlsxwriter
import xlsxwriter.exceptions
from xlsxwriter.utility import quote_sheetname, xl_rowcol_to_cell
from xlsxwriter.workbook import Workbook

from sheetgen.core.excel import ExcelError, is_number
from sheetgen.errors import OutputError
from sheetgen.files.atomic import (
    atomic_write,
    check_destination,
    check_writable_dir,
    describe,
    private_tempdir,
    quiet_file,
)
from sheetgen.layout import page as layout_rules
from sheetgen.layout import palette
from sheetgen.layout.charts import LABELLED_POINTS_MAX
from sheetgen.layout.planner import (
    Cell,
    ChartPlan,
    ColumnPlan,
    SheetPlan,
    TablePlan,
    ValidationPlan,
    WorkbookPlan,
)
from sheetgen.layout.styles import (
    CellStyle,
    cell_style,
    dim_style,
    highlight_style,
    number_style,
)
from sheetgen.writers.shared_rows import Cursor, FastTable, skip
from sheetgen.writers.xlsx_compat import (
    PortableFormulaWorksheet,
    check_worksheet,
    plot_hidden_cells,
)

CONSTANT_MEMORY_ROWS = 5_000  # above this many table rows, stream rows to disk
#: Points per chart series: each costs about 150 B of chart XML and a Python float while
#: writing, so a 1M-row table charts its first rows and its chart's title says so.
CHART_MAX_POINTS = 20_000
Progress = Callable[[int], None]


def check_output_path(path: str | os.PathLike[str], force: bool) -> Path:
    """The destination, after refusing directories, missing folders and existing files."""
    out = check_destination(path, force, suffixes=(".xlsx",), example="roofline.xlsx")
    check_writable_dir(out.parent)
    return out


def xlsx_format(style: CellStyle) -> dict[str, Any]:
    """A neutral CellStyle as xlsxwriter format properties (the only styling decision made
    here is how to spell it)."""
    props: dict[str, Any] = {}
    if style.number_format is not None:
        props["num_format"] = style.number_format
    if style.font_name is not None:
        props["font_name"] = style.font_name
    if style.font_size is not None:
        props["font_size"] = style.font_size
    if style.bold:
        props["bold"] = True
    if style.italic:
        props["italic"] = True
    if style.font_color is not None:
        props["font_color"] = style.font_color
    if style.fill is not None:
        props["bg_color"] = style.fill  # xlsxwriter: a solid fill's colour
    if style.wrap:
        props["text_wrap"] = True
    if style.align is not None:
        props["align"] = style.align
    if style.valign is not None:
        props["valign"] = style.valign
    if style.indent:
        props["indent"] = style.indent
    if style.border == "box":
        props["border"] = 1
        if style.border_color is not None:
            props["border_color"] = style.border_color
    elif style.border == "bottom":
        props["bottom"] = 1
        if style.border_color is not None:
            props["bottom_color"] = style.border_color
    return props


class _Formats:
    """xlsxwriter Format objects by neutral style, made once each."""

    def __init__(self, wb: Workbook) -> None:
        self.wb = wb
        self.cache: dict[CellStyle, Any] = {}

    def get(self, role: str, fmt: str = "general", wrap: bool = False) -> Any:
        return self.of(cell_style(role, fmt, wrap))

    def of(self, style: CellStyle) -> Any:
        if style not in self.cache:
            self.cache[style] = self.wb.add_format(xlsx_format(style))
        return self.cache[style]


def _cached(value: Any) -> Any:
    """A reference value as a cached formula result: NaN has no spreadsheet form, use ''."""
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, ExcelError):
        return str(value)  # "#N/A": xlsxwriter stores an error code as an error (t="e")
    return value


def _write_constant(ws: PortableFormulaWorksheet, row: int, col: int, value: Any,
                    fmt: Any) -> None:
    """User data goes in typed: text is always a string cell, never parsed as a formula."""
    kind = type(value)
    if kind is int or (kind is float and value == value):  # the common case, checked first
        ws.write_number(row, col, float(value), fmt)
    elif value is None or (isinstance(value, float) and math.isnan(value)):
        ws.write_blank(row, col, None, fmt)
    elif isinstance(value, bool):
        ws.write_boolean(row, col, value, fmt)
    elif isinstance(value, int | float) or hasattr(value, "item"):
        ws.write_number(row, col, float(value), fmt)
    else:
        ws.write_string(row, col, str(value), fmt)


def _write_cell(ws: PortableFormulaWorksheet, cell: Cell, formats: _Formats) -> None:
    value_cell = cell.role in ("formula", "input")
    fmt = formats.get(cell.role, cell.fmt if value_cell else "general", cell.wrap)
    if cell.span > 1:  # a merged range; its value goes in the first cell
        ws.merge_range(cell.row, cell.col, cell.row, cell.col + cell.span - 1, "", fmt)
    if cell.role == "formula":
        ws.portable_formula(cell.row, cell.col, cell.formula, fmt, _cached(cell.value))
    elif cell.role == "input":
        _write_constant(ws, cell.row, cell.col, cell.value, fmt)
    else:
        ws.write_string(cell.row, cell.col, str(cell.value), fmt)


#: (ws, row, col, format, value)
_Writer = Callable[[PortableFormulaWorksheet, int, int, Any, Any], None]
_Column = tuple[int, Any, Any, "list[str] | _Writer | None"]  # col, format, values, how


def _table_columns(table: TablePlan, formats: _Formats, lazy: bool = False) -> list[_Column]:
    """Per column, bound once: (column, format, iterator over the row values, how to write).

    `how` is None for typed-in constants, the formula split where the row number goes for
    the usual formula column, or a function for the rare ones (inputs linked to a user's
    cells, formulas that reach the same row of another table).
    """
    out: list[_Column] = []
    for c in table.columns:
        values = Cursor(c.values) if lazy else c.values.tolist()
        if c.is_input:
            how = _linked_writer(c, table.first_row, formats.get("linked", c.fmt)) \
                if c.links else None
            out.append((c.col, _column_format(c, formats), iter(values), how))
        else:
            assert c.parts is not None
            how = c.parts if c.offsets is None else _shifted_writer(c)
            out.append((c.col, _column_format(c, formats), iter(values), how))
    return out


def _column_format(column: ColumnPlan, formats: _Formats) -> Any:
    return formats.get(column.style if column.is_input else "derived", column.fmt)


def _fast_tables(ws: PortableFormulaWorksheet, sheet: SheetPlan, formats: _Formats,
                 cell_rows: set[int]) -> list[tuple[FastTable, list[int]]]:
    """The sheet's big tables that take the shared-formula fast path, each with the tables
    beside it (rows in common), and their indices in sheet.tables."""
    out: list[tuple[FastTable, list[int]]] = []
    taken: set[int] = set()
    for i, t in enumerate(sheet.tables):
        if i in taken:
            continue
        group = [j for j, u in enumerate(sheet.tables)
                 if u.first_row <= t.last_row and t.first_row <= u.last_row]
        fast = FastTable.make(ws, [sheet.tables[j] for j in group],
                              lambda c: _column_format(c, formats), cell_rows)
        if fast is not None:
            out.append((fast, group))
            taken.update(group)
    return out


def _linked_writer(column: ColumnPlan, first_row: int, linked: Any) -> _Writer:
    """Rows that read the user's cells are formulas in the "linked" style; the rest stay
    typed-in inputs."""
    def write(ws: PortableFormulaWorksheet, row: int, col: int, fmt: Any, value: Any) -> None:
        link = column.link_at(row - first_row)
        if link is None:
            _write_constant(ws, row, col, value, fmt)
        else:
            ws.portable_formula(row, col, link, linked, _cached(value))

    return write


def _shifted_writer(column: ColumnPlan) -> _Writer:
    def write(ws: PortableFormulaWorksheet, row: int, col: int, fmt: Any, value: Any) -> None:
        ws.portable_formula(row, col, column.formula_at(row), fmt, _cached(value))

    return write


def _write_table_row(ws: PortableFormulaWorksheet, row: int, columns: list[_Column]) -> None:
    """The next row of a table (the iterators in `columns` advance by one)."""
    number = str(row + 1)
    write_formula = ws.portable_formula
    for col, fmt, values, how in columns:
        if how is None:
            _write_constant(ws, row, col, next(values), fmt)
        elif isinstance(how, list):
            write_formula(row, col, number.join(how), fmt, _cached(next(values)))
        else:
            how(ws, row, col, fmt, next(values))


def _write_sheet(ws: PortableFormulaWorksheet, sheet: SheetPlan, formats: _Formats,
                 progress: Progress | None) -> None:
    """Rows strictly top to bottom, as constant-memory mode requires."""
    heights = layout_rules.row_heights(sheet)
    by_row: dict[int, list[Cell]] = {}
    for cell in sheet.cells:
        by_row.setdefault(cell.row, []).append(cell)
    groups = _fast_tables(ws, sheet, formats, set(by_row))
    lazy = {i for _, group in groups for i in group}  # rows mostly written by FastTable
    tables = [(t.first_row, t.last_row, _table_columns(t, formats, i in lazy))
              for i, t in enumerate(sheet.tables)]
    last = max([*by_row, *(t.last_row for t in sheet.tables)], default=-1)
    runs = {start: (stop, fast, group) for fast, group in groups for start, stop in fast.runs}
    row = reported = 0
    while row <= last:
        if row in runs:  # a run of plain table rows: shared formulas, written directly
            stop, fast, group = runs[row]
            fast.write_run(ws, row, stop)
            skip([values for k in fast.covering(row) for _, _, values, _ in tables[group[k]][2]],
                 stop - row)
            row = stop
        else:
            if row in heights:
                ws.set_row(row, heights[row])
            cells = by_row.get(row)
            if cells:
                for cell in sorted(cells, key=lambda c: c.col):
                    _write_cell(ws, cell, formats)
            for first, last_row, columns in tables:
                if first <= row <= last_row:
                    _write_table_row(ws, row, columns)
            row += 1
        if progress is not None and row - reported >= 1000:
            progress((row - reported) // 1000 * 1000)
            reported += (row - reported) // 1000 * 1000


def _validation(ws: PortableFormulaWorksheet, v: ValidationPlan) -> None:
    rule = v.rule
    opts: dict[str, Any]
    if rule.kind == "list":
        opts = {"validate": "list", "source": "=" + (v.source_name or v.source or "")}
    elif rule.kind == "choices":
        opts = {"validate": "list", "source": list(rule.choices)}
    elif rule.kind == "whole_min":
        opts = {"validate": "integer", "criteria": "between", "minimum": int(rule.minimum or 1),
                "maximum": int(rule.maximum or 2**31 - 1)}
    else:
        opts = {"validate": "decimal", "criteria": "between", "minimum": rule.minimum,
                "maximum": rule.maximum}
    if rule.message:
        opts |= {"input_message": rule.message, "error_message": rule.message}
    ws.data_validation(v.first_row, v.first_col, v.last_row, v.last_col, opts)


def _cache(sheet: SheetPlan, c: tuple[int, int, int]) -> list[float | None]:
    """A chart range's values as the chart's numeric cache (#N/A and text: no point)."""
    col, first, last = c
    for table in sheet.tables:
        for column in table.columns:
            if column.col == col and table.first_row <= first and last <= table.last_row:
                vals = column.values[first - table.first_row:last - table.first_row + 1]
                return [float(v) if is_number(v) else None for v in vals]
    return [None] * (last - first + 1)


def _chart(wb: Workbook, ws: PortableFormulaWorksheet, sheet: SheetPlan, chart: ChartPlan) -> None:
    """An XY chart: each series a line, markers or both, on log (or linear) axes.

    The numeric caches are given, not read from the cells: xlsxwriter would type a range
    holding #N/A as text (a strRef x makes Excel number the points 1, 2, 3)."""
    ch = wb.add_chart({"type": "scatter", "subtype": "straight"})
    plot_hidden_cells(ch)

    def rng(c: tuple[int, int, int]) -> list[Any]:
        return [sheet.name, c[1], c[0], c[2], c[0]]

    shown = total = 0
    for s in chart.series:
        sx, sy = _first_points(s.x), _first_points(s.y)
        shown, total = max(shown, sx[2] - sx[1] + 1), max(total, s.x[2] - s.x[1] + 1)
        opts: dict[str, Any] = {"name": s.name, "categories": rng(sx), "values": rng(sy),
                                "categories_data": _cache(sheet, sx),
                                "values_data": _cache(sheet, sy)}
        color = s.color or (palette.CEILING if s.line else palette.POINT)
        opts |= {"line": {"color": color, "width": 2.25} if s.line else {"none": True},
                 "marker": {"type": "none"} if s.marker == "none" else {
                     "type": s.marker, "size": s.marker_size, "fill": {"color": color},
                     "border": {"color": color}}}
        if s.labels is not None and s.labels[2] - s.labels[1] < LABELLED_POINTS_MAX:
            col, first, last = s.labels
            custom = [{"value": f"={quote_sheetname(sheet.name)}!"
                                f"{xl_rowcol_to_cell(r, col, True, True)}"}
                      for r in range(first, last + 1)]
            opts["data_labels"] = {"custom": custom, "position": "right", "font": {"size": 7}}
        ch.add_series(opts)
    if total > shown:  # a sample: the title says so (a title read from a cell cannot)
        ch.set_title({"name": f"{chart.title} (the first {shown:,} of {total:,} rows)"})
    else:  # a live title reads its cell (xlsxwriter caches the cell's value for the preview)
        ch.set_title({"name": list(chart.title_cell) if chart.title_cell else chart.title})
    grid = {"visible": True, "line": {"color": palette.GRID}}
    for setter, title, bounds, log in ((ch.set_x_axis, chart.x_title, chart.x_range,
                                        chart.x_log),
                                       (ch.set_y_axis, chart.y_title, chart.y_range,
                                        chart.y_log)):
        axis: dict[str, Any] = {"name": title, "num_format": "General",
                                "major_gridlines": grid}
        if log:
            axis["log_base"] = 10
        if bounds is not None:
            axis |= {"min": bounds[0], "max": bounds[1]}
        setter(axis)
    ch.set_legend({"position": "bottom"})
    inset = layout_rules.CHART_INSET  # it ends where it did, the inset taken off its size
    ch.set_size({"width": 64 * chart.width_cols - inset,
                 "height": 20 * chart.height_rows - inset})
    ws.insert_chart(chart.row, chart.col, ch, {"x_offset": inset, "y_offset": inset})


def _first_points(c: tuple[int, int, int]) -> tuple[int, int, int]:
    """A series range cut to its first CHART_MAX_POINTS rows."""
    col, first, last = c
    return col, first, min(last, first + CHART_MAX_POINTS - 1)


def _page_setup(ws: PortableFormulaWorksheet, sheet: SheetPlan) -> None:
    """layout.page.print_setup, as xlsxwriter spells it."""
    setup = layout_rules.print_setup(sheet)
    if setup.portrait:
        ws.set_portrait()
    else:
        ws.set_landscape()
    ws.set_paper(9)  # A4; Letter users' printers scale the same layout
    if setup.fit_width:
        ws.fit_to_pages(1, 1 if setup.fit_height else 0)
    else:
        ws.set_print_scale(setup.scale)
        ws.set_v_pagebreaks(list(setup.col_breaks))
    ws.set_h_pagebreaks(list(setup.row_breaks))
    ws.print_area(0, 0, setup.last_row, setup.last_col)
    if setup.repeat_rows is not None:
        ws.repeat_rows(*setup.repeat_rows)
    if setup.repeat_cols is not None:
        ws.repeat_columns(*setup.repeat_cols)
    left, right, top, bottom = layout_rules.MARGINS
    ws.set_margins(left=left, right=right, top=top, bottom=bottom)
    ws.set_footer(f"&L{layout_rules.FOOTER_LEFT}&R{layout_rules.FOOTER_RIGHT}")


def _write_worksheet(wb: Workbook, sheet: SheetPlan, formats: _Formats,
                     progress: Progress | None) -> None:
    ws = wb.add_worksheet(sheet.name, worksheet_class=PortableFormulaWorksheet)
    for col, width in sheet.widths.items():
        ws.set_column(col, col, width)
    for col in sheet.hidden:
        ws.set_column(col, col, sheet.widths.get(col, 12.0), None, {"hidden": True})
    frozen = layout_rules.freeze(sheet)
    if frozen:
        ws.freeze_panes(*frozen)
    _page_setup(ws, sheet)
    _write_sheet(ws, sheet, formats, progress)
    for v in sheet.validations:
        _validation(ws, v)
    for c in sheet.conditionals:
        ws.conditional_format(c.first_row, c.col, c.last_row, c.col, {
            "type": "cell", "criteria": "!=" if c.negate else "==", "value": c.literal,
            "format": formats.of(highlight_style(c.color, c.font))})
    for r in sheet.format_rules:  # Excel and LibreOffice both apply a rule's number format
        ws.conditional_format(r.first_row, r.col, r.last_row, r.col, {
            "type": "formula", "criteria": "=" + r.condition,
            "format": formats.of(number_style(r.fmt))})
    for d in sheet.dim_rules:
        ws.conditional_format(d.first_row, d.col, d.last_row, d.col, {
            "type": "formula", "criteria": "=" + d.condition,
            "format": formats.of(dim_style())})
    for chart in sheet.charts:
        _chart(wb, ws, sheet, chart)


def write_xlsx(plan: WorkbookPlan, path: str | os.PathLike[str], *, force: bool = False,
               progress: Progress | None = None) -> Path:
    """Write the plan to path atomically; refuses to overwrite unless force (even a file
    that appears while writing)."""
    out = check_output_path(path, force)
    big = any(t.n_rows > CONSTANT_MEMORY_ROWS for s in plan.sheets for t in s.tables)
    check_worksheet()
    with atomic_write(out, ".tmp.xlsx", replace=force) as tmp, private_tempdir() as scratch, \
            _quiet_failure(), quiet_file(tmp) as fh:
        wb = xlsxwriter.Workbook(fh, {
            "constant_memory": big,
            "in_memory": not big,  # small workbooks need no scratch files at all
            "tmpdir": str(scratch),
            "strings_to_formulas": False,
            "strings_to_numbers": False,
            "strings_to_urls": False,
        })
        if big:  # a sheet's XML past 2 GiB (zipfile.ZIP64_LIMIT; the whole grid of shapes'
            wb.use_zip64()  # Matmul is 2.07 GB) needs ZIP64 records, written only where needed
        try:
            _write_workbook(wb, plan, progress)
            wb.close()
        except BaseException as exc:
            _discard(wb)
            reason = exc.args[0] if isinstance(exc, xlsxwriter.exceptions.FileCreateError) \
                and exc.args and isinstance(exc.args[0], OSError) else exc
            if not isinstance(reason, OSError):
                raise
            if fh.error is not None:  # the output's own device failed
                raise OutputError(f"cannot write {out}: {describe(reason, out.parent)}") \
                    from None
            raise OutputError(f"cannot write {out}: in the temporary folder, "
                              f"{describe(reason, scratch.parent)}; set TMPDIR to a folder "
                              "with more room") from None
    return out


def _write_workbook(wb: Workbook, plan: WorkbookPlan, progress: Progress | None) -> None:
    formats = _Formats(wb)
    for name, ref in plan.defined_names.items():
        wb.define_name(name, "=" + ref)
    for key, value in plan.metadata.items():
        wb.set_custom_property(key, value)
    wb.set_properties({"title": "sheetgen roofline model",
                       "comments": "Generated by sheetgen; formulas are live."})
    for sheet in plan.sheets:
        _write_worksheet(wb, sheet, formats, progress)


def _discard(wb: Workbook) -> None:
    """After a failure: close the parts' scratch files (their buffers cannot be flushed to a
    full disk; left open, each would complain when garbage-collected)."""
    for part in [*wb.worksheets(), *wb.charts, wb]:
        for attr in ("row_data_fh", "fh"):
            fh = getattr(part, attr, None)
            if fh is not None and hasattr(fh, "close"):
                with contextlib.suppress(OSError, ValueError):
                    fh.close()


@contextlib.contextmanager
def _quiet_failure():  # type: ignore[no-untyped-def]
    """When the block fails, collect the writer objects it leaves behind while their
    unflushable files' complaints ("Exception ignored in ...") are swallowed: the failure
    itself is reported once, as the Error line."""
    try:
        yield
    except BaseException as exc:
        seen: BaseException | None = exc
        while seen is not None:  # the whole chain: `from None` still keeps __context__
            if seen.__traceback__ is not None:
                traceback.clear_frames(seen.__traceback__)
            seen = seen.__cause__ or seen.__context__
        hook = sys.unraisablehook

        def quiet(unraisable: Any) -> None:
            if not isinstance(unraisable.exc_value, OSError | ValueError):
                hook(unraisable)

        sys.unraisablehook = quiet
        try:
            gc.collect()
        finally:
            sys.unraisablehook = hook
        raise
