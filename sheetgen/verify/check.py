"""`sheetgen check`: evaluate every formula of a workbook in pure Python and compare it with
the reference model, recomputed from the workbook's own input cells.

Because the reference follows the workbook's inputs (a flipped GPU dropdown, typed shapes,
edited presets), only a formula that computes something else is reported, at its cell.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
from xlsxwriter.utility import xl_col_to_name, xl_rowcol_to_cell

from sheetgen.assemble import BuildConfig, sheet_specs
from sheetgen.core.time_cells import scaled
from sheetgen.errors import SheetgenError, WorkbookError
from sheetgen.evaluate import EvaluatedWorkbook, evaluate_workbook
from sheetgen.layout.planner import WorkbookPlan, input_addresses, plan_workbook
from sheetgen.sheets.measured import MeasuredInputs
from sheetgen.verify.compare import DEFAULT_RTOL, validate_rtol, values_match

_CUSTOM = "{http://schemas.openxmlformats.org/officeDocument/2006/custom-properties}"


@dataclass(frozen=True)
class Mismatch:
    sheet: str
    cell: str
    quantity: str
    got: Any
    expected: Any
    formula: str | None
    note: str = ""  # e.g. "formula changed"

    def line(self) -> str:
        note = f"{self.note}: " if self.note else ""
        return (f"{self.sheet}!{self.cell}  {self.quantity}  {note}got {_show(self.got)}  "
                f"expected {_show(self.expected)}  ({self.formula or 'no formula'})")

    def as_dict(self) -> dict[str, Any]:
        return {"sheet": self.sheet, "cell": self.cell, "quantity": self.quantity,
                "got": _jsonable(self.got), "expected": _jsonable(self.expected),
                "formula": self.formula, "note": self.note}


@dataclass
class CheckReport:
    """The outcome of checking a workbook (xlsx) or a spreadsheet (Google Sheets)."""

    path: str
    checked: dict[str, int] = field(default_factory=dict)  # formula cells per sheet
    mismatches: list[Mismatch] = field(default_factory=list)
    shape_rows: int = 0  # Matmul rows with a valid shape

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def cells(self) -> int:
        return sum(self.checked.values())

    def summary(self) -> list[str]:
        lines = [f"{self.path}: {self.cells} formula cells checked, "
                 f"{self.shape_rows} shape rows"]
        for sheet, n in self.checked.items():
            bad = sum(1 for m in self.mismatches if m.sheet == sheet)
            lines.append(f"  {sheet:<12} {n:>8} cells  {bad} mismatch{'es' if bad != 1 else ''}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.path, "ok": self.ok, "checked": self.checked,
                "mismatches": [m.as_dict() for m in self.mismatches]}


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.10g}"
    return repr(value) if isinstance(value, str) else str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if np.isfinite(value) else str(value)
    return str(value)


def read_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """sheetgen's custom document properties (docProps/custom.xml); {} if there are none."""
    from sheetgen.files.untrusted import open_package

    with open_package(path) as z:  # budget checked before docProps is read
        if "docProps/custom.xml" not in z.namelist():
            return {}
        try:
            root = ElementTree.fromstring(z.read("docProps/custom.xml"))
        except ElementTree.ParseError:
            return {}  # unreadable properties: judged as a workbook sheetgen did not write
    out = {}
    for prop in root.iter(f"{_CUSTOM}property"):
        name = prop.get("name", "")
        if name.startswith("sheetgen."):
            out[name] = "".join(prop.itertext())
    return out


def _rows(meta: dict[str, str]) -> dict[str, int]:
    prefix = "sheetgen.rows."
    return {k[len(prefix):]: int(v) for k, v in meta.items() if k.startswith(prefix)}


def _cell_value(value: Any) -> Any:
    """An input cell's value as the reference model takes it (errors become text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def rebuild_plan(ev: EvaluatedWorkbook, meta: dict[str, str]) -> WorkbookPlan:
    """The plan of this workbook with the reference model run on its own input cells."""
    rows = _rows(meta)
    practice = rows.get("practice", 0)
    # The Measured sheet's notes name its source; any placeholder gives the same cells.
    meas = MeasuredInputs((), (), (), (), ()) if rows.get("measured") else None
    xf = None
    if meta.get("sheetgen.model"):
        from sheetgen.inputs.model_config import ModelConfig
        from sheetgen.sheets.transformer import TransformerInputs

        xf = TransformerInputs(ModelConfig.from_json(meta["sheetgen.model"]))
    specs = sheet_specs(BuildConfig(practice=practice, presets=None,  # type: ignore[arg-type]
                                    measured=meas, transformer=xf),
                        meta.get("sheetgen.prefix", ""))
    missing = [s.name for s in specs if s.name not in ev.sheet_names]
    if missing:
        raise WorkbookError(f"missing sheet(s) {', '.join(missing)}: not a complete sheetgen "
                            "workbook")
    values: dict[str, Any] = {}
    for name, (sheet, row, col, n) in input_addresses(specs, rows).items():
        if n == 0:
            values[name] = _cell_value(ev.value(sheet, xl_rowcol_to_cell(row, col)))
        else:
            arr = ev.column(sheet, xl_col_to_name(col), row + 1, row + n)  # 1-based rows
            values[name] = [_cell_value(v) for v in arr.tolist()]
    try:
        return plan_workbook(specs, values, meta, from_cells=True)
    except SheetgenError:
        raise
    except (TypeError, ValueError, ZeroDivisionError, KeyError, IndexError) as exc:
        raise WorkbookError(f"cannot run the reference model on this workbook's inputs "
                            f"(an input cell holds something unexpected): {exc}") from None


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
    ev = evaluate_workbook(p, lenient=False)
    if not meta:
        raise WorkbookError(f"{p.name} was not built by sheetgen (no sheetgen properties)")
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
