"""`sheetgen check`: evaluate every formula of a workbook in pure Python and compare it with
the reference model, recomputed from the workbook's own input cells.

Because the reference follows the workbook's inputs (a flipped GPU dropdown, typed shapes,
edited presets), only a formula that computes something else is reported, at its cell.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from xlsxwriter.utility import xl_col_to_name, xl_rowcol_to_cell

from sheetgen.assemble import sheet_specs
from sheetgen.core.time_cells import scaled
from sheetgen.errors import WorkbookError
from sheetgen.evaluate import EvaluatedWorkbook, evaluate_workbook
from sheetgen.layout.planner import WorkbookPlan
from sheetgen.verify.compare import DEFAULT_RTOL, validate_rtol, values_match
from sheetgen.verify.readback import (
    CheckReport,
    Mismatch,
    check_layout,
    layout_from_metadata,
    read_metadata,
    replan,
)

__all__ = ["CheckReport", "Mismatch", "check_workbook", "is_workbook_path", "read_metadata",
           "read_workbook", "rebuild_plan"]


def rebuild_plan(ev: EvaluatedWorkbook, meta: dict[str, str]) -> WorkbookPlan:
    """The plan of this workbook with the reference model run on its own input cells."""
    check_layout(meta)
    layout, rows = layout_from_metadata(meta)
    missing = [s.name for s in sheet_specs(layout) if s.name not in ev.sheet_names]
    if missing:
        raise WorkbookError(f"missing sheet(s) {', '.join(missing)}: not a complete sheetgen "
                            "workbook (sheetgen finds its sheets by name: rename a renamed "
                            "sheet back, or rebuild the workbook)")

    def value_at(sheet: str, row: int, col: int) -> Any:
        return ev.value(sheet, xl_rowcol_to_cell(row, col))

    def column_at(sheet: str, col: int, first_row: int, n: int) -> list[Any]:
        return ev.column(sheet, xl_col_to_name(col), first_row + 1, first_row + n).tolist()

    return replan(layout, rows, value_at, column_at, meta)


def _column_bad(got: np.ndarray, expected: np.ndarray, rtol: float) -> np.ndarray:
    """Row indices where a column's evaluated values differ from the model's."""
    try:
        g = np.asarray(got, dtype=float)
        e = np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        pass
    else:
        if not any(isinstance(v, bool | np.bool_) for v in expected[:1]):
            same = np.isclose(g, e, rtol=rtol, atol=0.0) | (g == e) | (np.isnan(g) & np.isnan(e))
            return np.flatnonzero(~same)
    return np.asarray([i for i, (a, b) in enumerate(zip(got, expected, strict=True))
                       if not values_match(a, b, rtol)], dtype=int)


def check_workbook(path: str | os.PathLike[str], *, rtol: float = DEFAULT_RTOL,
                   progress: Callable[[int, int], None] | None = None) -> CheckReport:
    """Evaluate every formula of a sheetgen workbook and compare with the reference model."""
    rtol = validate_rtol(rtol)
    p = Path(path)
    meta = read_metadata(p)
    if not meta:
        raise WorkbookError(f"{p.name} was not built by sheetgen (no sheetgen properties); "
                            "`sheetgen check` grades such a sheet instead (see "
                            "sheetgen.verify.grade.grade_workbook)")
    check_layout(meta, p.name)  # before the evaluation, which takes minutes on a big one
    # strict: a sheetgen workbook's own cells must all evaluate
    ev = evaluate_workbook(p, progress=progress, lenient=False)
    plan = rebuild_plan(ev, meta)
    report = CheckReport(str(p), shape_rows=int(plan.model.ok["matmul"].sum()))
    for sheet in plan.sheets:
        count = 0
        for cell in sheet.cells:
            if cell.formula is None:
                continue
            count += 1
            addr = xl_rowcol_to_cell(cell.row, cell.col)
            got = ev.value(sheet.name, addr)
            if not values_match(got, cell.value, rtol):
                report.mismatches.append(Mismatch(sheet.name, addr, cell.name or "", got,
                                                  cell.value, ev.formula(sheet.name, addr)))
        for table in sheet.tables:
            for col in table.columns:
                if col.is_input or table.n_rows == 0:
                    continue
                count += table.n_rows
                got = ev.column(sheet.name, xl_col_to_name(col.col), table.first_row + 1,
                                table.last_row + 1)  # 1-based rows
                for i in _column_bad(got, col.values, rtol):
                    addr = xl_rowcol_to_cell(table.first_row + int(i), col.col)
                    report.mismatches.append(Mismatch(
                        sheet.name, addr, col.name, got[i], col.values[i],
                        ev.formula(sheet.name, addr)))
        report.checked[sheet.name] = count
    return report


def is_workbook_path(target: str) -> bool:
    """A local workbook file (by suffix or existence) rather than a spreadsheet URL or key."""
    return Path(target).suffix.lower() in (".xlsx", ".xlsm", ".xls") or Path(target).exists()


def read_workbook(path: str | os.PathLike[str], sheet: str = "Matmul",
                  block: bool = False) -> Any:
    """A sheet's computed columns, evaluated from the formulas (never the cached values),
    times in seconds (SI) whatever unit their cells hold.

    A sheet with tables gives its first table, one row per row whose first formula column is
    not blank (index: the 1-based sheet row); a sheet of named values, or any sheet with
    `block` (the Pipeline totals, the Parallelism comparison), gives name -> value.
    """
    import pandas as pd

    p = Path(path)
    meta = read_metadata(p)
    if not meta:
        raise WorkbookError(f"{p.name} was not built by sheetgen (no sheetgen properties)")
    check_layout(meta, p.name)
    ev = evaluate_workbook(p, lenient=False)
    plan = rebuild_plan(ev, meta)
    names = [s.name for s in plan.sheets]
    match = next((n for n in names if n.lower() == sheet.lower()), None)
    if match is None:
        raise WorkbookError(f"no sheet {sheet!r}; choose one of {', '.join(names)}")
    sp = plan.sheet(match)
    if block or not sp.tables:
        cells = [c for c in sp.cells if c.name and c.role in ("input", "formula")]
        if not cells:
            raise WorkbookError(f"sheet {match!r} has no named values outside its tables")
        f = plan.registry.factor  # times come back in seconds, whatever their cells hold
        return pd.DataFrame(
            {"value": [scaled(ev.value(match, xl_rowcol_to_cell(c.row, c.col)),
                              1.0 / f(c.name)) for c in cells]},
            index=pd.Index([c.name for c in cells], name="name"), dtype=object)
    table = sp.tables[0]
    data = {c.name: scaled(ev.column(match, xl_col_to_name(c.col), table.first_row + 1,
                                     table.last_row + 1), 1.0 / plan.registry.factor(c.name))
            for c in table.columns}
    frame = pd.DataFrame(data, index=pd.Index(range(table.first_row + 1, table.last_row + 2),
                                              name="row"))
    first_formula = next((c.name for c in table.columns if not c.is_input), None)
    if first_formula is not None:
        keep = frame[first_formula].map(lambda v: v not in ("", None))
        frame = frame[keep.astype(bool)]
    return frame
