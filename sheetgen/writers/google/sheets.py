"""Google Sheets: push a WorkbookPlan into a user's spreadsheet, read computed columns back.

The spreadsheet belongs to the user (service accounts cannot own files): they create it, share
it (Editor) with the service account's email and give sheetgen its URL or key.

Requests, for a push: two reads (open the spreadsheet, list its tabs and named ranges), then
the whole workbook as the batchUpdate bodies `gsheets_requests.requests_for` builds (one, up
to a few tens of thousands of rows). A batchUpdate is atomic, so a one-body push either lands
whole or not at all. If one of sheetgen's tabs or names exists, `push` refuses before writing
unless `replace=True`; so it does when the spreadsheet would exceed Google's 10,000,000 cells
(its other tabs counted), naming the options that would fit.

A lost response (the batch applied, the reply never came) makes the bounded retry answer 400
("already exists"); `push` then re-reads the tabs and, when every clash is a tab with one of
sheetgen's own ids, redoes the push as a replace: the end state is the uninterrupted one.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import gspread
import numpy as np
import pandas as pd
from gspread.exceptions import APIError
from xlsxwriter.utility import quote_sheetname

from sheetgen.assemble import DEFAULT_SPARE_ROWS, SheetLayout, sheet_specs
from sheetgen.core.time_cells import scaled
from sheetgen.errors import SheetsError
from sheetgen.inputs.presets import DEFAULT_DTYPE
from sheetgen.layout.planner import SheetPlan, TablePlan, WorkbookPlan
from sheetgen.sheets import practice as practice_sheet
from sheetgen.verify.compare import expected_cells, values_match
from sheetgen.verify.readback import CheckReport, Mismatch, replan, table_rows_present
from sheetgen.writers.google.client import (
    authorize,
    describe_api_error,
    open_spreadsheet,
    parse_spreadsheet_key,
    service_account_email,
)
from sheetgen.writers.google.requests import (
    CELL_LIMIT,
    MAX_BODY_BYTES,
    MIN_ROWS,
    Progress,
    Request,
    SpreadsheetState,
    conflicts,
    grid_cells,
    grid_size,
    own_ids,
    requests_for,
)

__all__ = [
    "MAX_BODY_BYTES",
    "CheckReport",
    "Mismatch",
    "PushResult",
    "SpreadsheetState",
    "check_spreadsheet",
    "conflicts",
    "plan_from_cells",
    "push",
    "read",
    "requests_for",
]

STATE_FIELDS = ("sheets(properties(sheetId,title,index,gridProperties(rowCount,columnCount)),"
                "charts(chartId)),namedRanges")


def fetch_state(sh: gspread.Spreadsheet) -> SpreadsheetState:
    return SpreadsheetState.from_metadata(sh.fetch_sheet_metadata({"fields": STATE_FIELDS}))



# --------------------------------------------------------------------------- push


@dataclass(frozen=True)
class PushResult:
    """What a push did."""

    url: str
    sheets: tuple[str, ...]
    shape_rows: int
    write_requests: int
    replaced: tuple[str, ...] = ()


def push_plan(plan: WorkbookPlan, spreadsheet: str, *, client: gspread.Client | None = None,
              credentials: str | os.PathLike[str] | Mapping[str, Any] | None = None,
              replace: bool = False, progress: Progress | None = None,
              max_bytes: int = MAX_BODY_BYTES) -> PushResult:
    """Write an already planned workbook (see `push`)."""
    key = parse_spreadsheet_key(spreadsheet)
    check_cell_limit(plan, SpreadsheetState(), key)  # before any request when it cannot fit
    gc = authorize(credentials, client=client)
    sh = open_spreadsheet(gc, key)
    with _api_errors(gc, key):
        state = fetch_state(sh)
        clash = conflicts(plan, state)
        if clash and not replace:
            raise SheetsError(
                f"Spreadsheet {key} already has {_join(clash)}, which sheetgen writes; pass "
                "--replace to rewrite sheetgen's tabs (other tabs are never "
                "touched).")
        check_cell_limit(plan, state, key)
        writes = 0
        for attempt in (1, 2):
            batches = requests_for(plan, state, max_bytes=max_bytes)
            try:
                for batch in batches:
                    writes += 1
                    sh.batch_update({"requests": batch})
                    if progress is not None:
                        progress(_rows_in(batch))
                break
            except APIError as err:
                if attempt == 2 or _status(err) != 400:
                    raise
                # A batch that applied but whose reply was lost comes back as a 400 on retry.
                now = fetch_state(sh)
                if not _only_own_clashes(plan, state, now):
                    if conflicts(plan, now) and not conflicts(plan, state):
                        raise SheetsError(
                            f"Spreadsheet {key} changed during the push: it now has "
                            f"{_join(conflicts(plan, now))}; run again with --replace."
                        ) from None
                    raise
                state = now
    ok = plan.model.ok.get("matmul")
    return PushResult(url=f"https://docs.google.com/spreadsheets/d/{key}/edit",
                      sheets=tuple(s.name for s in plan.sheets),
                      shape_rows=int(ok.sum()) if ok is not None else 0,
                      write_requests=writes, replaced=tuple(clash))


def check_cell_limit(plan: WorkbookPlan, state: SpreadsheetState, key: str) -> None:
    """Refuse, before writing, a push that would take the spreadsheet over Google's cell
    limit (its other tabs included), naming the options that shrink sheetgen's part."""
    ours = grid_cells(plan)
    kept = state.kept_cells(plan)
    total = kept + sum(ours.values())
    if total <= CELL_LIMIT:
        return
    over = total - CELL_LIMIT
    meta = plan.metadata
    mat = next((s for s in plan.sheets if s.tables and s.tables[0].name == "matmul"), None)
    fixes = [f for f in [_fewer_rows(mat, over, meta)] if f] if mat is not None else []
    for option, sheet_names in (("--layers", ("Pipeline", "Parallelism")),
                                ("--practice", ("Practice",))):
        big = sum(ours.get(n, 0) for n in sheet_names)
        value = meta.get(f"sheetgen.{option[2:]}", "")
        if big > CELL_LIMIT // 10 and value:
            fixes.append(f"a smaller {option} (now {value})")
    if kept:
        fixes.append(f"fewer or smaller other tabs (they hold {kept:,} cells)")
    biggest = max(ours, key=lambda n: ours[n])
    raise SheetsError(
        f"Spreadsheet {key} would hold {total:,} cells, over Google's limit of "
        f"{CELL_LIMIT:,} per spreadsheet (sheetgen's tabs {sum(ours.values()):,}, the "
        f"largest {biggest!r} {ours[biggest]:,}; other tabs {kept:,}); nothing was written. "
        f"To fit, use {' or '.join(fixes) if fixes else 'fewer rows'}.")


def _fewer_rows(mat: SheetPlan, over: int, meta: Mapping[str, str]) -> str | None:
    """The --spare-rows (or shapes) cut that removes `over` cells from Matmul, if one can."""
    rows, cols = grid_size(mat)
    fewer = -(-over // max(cols, 1))  # matmul rows to drop
    # a tab keeps Google's default 1,000 rows (and room for the chart) however few shapes
    if fewer > rows - max([MIN_ROWS, *(c.row + 26 for c in mat.charts)]):
        return None
    spare = int(meta.get("sheetgen.spare_rows", "0") or 0)
    if fewer <= spare:
        return f"--spare-rows {spare - fewer} (now {spare})"
    shapes = (f"a --shapes file with {fewer - spare:,} fewer rows (now "
              f"{meta.get('sheetgen.shapes', '?')})")
    return f"--spare-rows 0 (now {spare}) with {shapes}" if spare else shapes


def _only_own_clashes(plan: WorkbookPlan, before: SpreadsheetState,
                      now: SpreadsheetState) -> bool:
    """Every sheetgen tab now present is one sheetgen made (its id), or was there before."""
    mine = own_ids(plan)
    for s in plan.sheets:
        sid = now.sheet_id(s.name)
        if sid is not None and sid not in mine and before.sheet_id(s.name) != sid:
            return False
    return any(now.sheet_id(s.name) is not None for s in plan.sheets)


def _rows_in(batch: Sequence[Request]) -> int:
    return sum(len(r["updateCells"]["rows"]) for r in batch if "updateCells" in r)


def _status(err: APIError) -> int:
    return err.response.status_code if err.response is not None else int(err.code or 0)


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


@contextmanager
def _api_errors(client: gspread.Client, key: str) -> Iterator[None]:
    """APIError -> one-line SheetsError that says what to do (sharing, API, quota)."""
    try:
        yield
    except APIError as err:
        project = getattr(getattr(client.http_client, "auth", None), "project_id", None)
        raise describe_api_error(err, key=key, email=service_account_email(client),
                                 project=project if isinstance(project, str) else None
                                 ) from None


def push(spreadsheet: str, *, client: gspread.Client | None = None,
         credentials: str | os.PathLike[str] | Mapping[str, Any] | None = None,
         replace: bool = False, gpu: str | None = None, dtype: str = DEFAULT_DTYPE,
         shapes: Any = None, spare_rows: int = DEFAULT_SPARE_ROWS,
         gpu_file: str | os.PathLike[str] | None = None,
         progress: Progress | None = None, **options: Any) -> PushResult:
    """Write the roofline workbook into the user's spreadsheet (URL or key).

    `client`: an authorised gspread client (Colab: `gspread.authorize(creds)`); otherwise
    `credentials` is a service-account JSON key (path or dict), default
    `$GOOGLE_APPLICATION_CREDENTIALS`. Refuses if sheetgen's tabs exist, unless `replace`.
    `options`: the other build options (layers, gpus, practice, ...; see `sheetgen.plan`).
    Inputs are validated before any request is made.
    """
    from sheetgen.api import plan as make_plan

    p = make_plan(gpu=gpu, dtype=dtype, shapes=shapes, spare_rows=spare_rows, gpu_file=gpu_file,
                  chart_helpers=True, **options)
    return push_plan(p, spreadsheet, client=client, credentials=credentials, replace=replace,
                     progress=progress)


# --------------------------------------------------------------------------- read back


def _layout(practice: bool = False, model: Any = None) -> WorkbookPlan:
    """Where things are: positions do not depend on the inputs, only row counts do.

    `practice`: the spreadsheet has a Practice tab (pushed with `--practice N`); `model`: the
    structure of its Transformer tab (`_transformer`), if it has one. Callers only read it.
    """
    if model is None:
        return _plain_layout(practice)
    return _planned_layout(practice, model)


@functools.cache
def _plain_layout(practice: bool) -> WorkbookPlan:
    """_layout without a Transformer tab, planned once per process: the same default build
    each time, and planning it took 0.7 s of every `read`."""
    return _planned_layout(practice, None)


def _planned_layout(practice: bool, model: Any) -> WorkbookPlan:
    from sheetgen.assemble import BuildConfig, plan_build

    return plan_build(BuildConfig(practice=1 if practice else 0,
                                  transformer=_transformer_inputs(model)), chart_helpers=True)


def _titles(practice: bool, model: Any) -> list[str]:
    """The tabs sheetgen pushes for this variant, in order: `_layout`'s sheet names, from the
    sheet specs alone (no plan)."""
    return [s.name for s in sheet_specs(SheetLayout(practice=practice, chart_helpers=True,
                                                    model=model))]


def _transformer_inputs(model: Any) -> Any:
    if model is None:
        return None
    from sheetgen.sheets.transformer import TransformerInputs

    return TransformerInputs(model)


def _transformer(sh: gspread.Spreadsheet, state: SpreadsheetState) -> Any:
    """The structure of the spreadsheet's Transformer tab (None without one), read from its
    column A: a spreadsheet keeps no document properties."""
    from sheetgen.sheets import transformer as transformer_sheet

    if state.sheet_id(transformer_sheet.SHEET) is None:
        return None
    grid = _grid_values(sh, [transformer_sheet.SHEET], "UNFORMATTED_VALUE")
    column = [_at(grid[transformer_sheet.SHEET], r, 0)
              for r in range(len(grid[transformer_sheet.SHEET]))]
    return transformer_sheet.structure_from_labels(column)


def _grid_values(sh: gspread.Spreadsheet, titles: Sequence[str], render: str
                 ) -> dict[str, list[list[Any]]]:
    got = sh.values_batch_get([quote_sheetname(t) for t in titles],
                              params={"valueRenderOption": render})
    return {t: vr.get("values", []) for t, vr in zip(titles, got.get("valueRanges", []),
                                                     strict=True)}


def _at(grid: Sequence[Sequence[Any]], r: int, c: int) -> Any:
    if r < len(grid) and c < len(grid[r]):
        return grid[r][c]
    return ""


def _open(spreadsheet: str, client: gspread.Client | None,
          credentials: Any) -> tuple[gspread.Client, gspread.Spreadsheet, str]:
    key = parse_spreadsheet_key(spreadsheet)
    gc = authorize(credentials, client=client)
    return gc, open_spreadsheet(gc, key), key


def _need_tabs(state: SpreadsheetState, titles: Iterable[str], key: str) -> None:
    missing = [t for t in titles if state.sheet_id(t) is None]
    if missing:
        raise SheetsError(f"Spreadsheet {key} has no tab {_join([repr(m) for m in missing])}; "
                          "run `sheetgen push` into it first.")


def _frame(names: Sequence[str], rows: Sequence[Sequence[Any]], index: Sequence[int]
           ) -> pd.DataFrame:
    data: dict[str, Any] = {}
    for j, name in enumerate(names):
        col = [None if r[j] == "" else r[j] for r in rows]
        if all(v is None or (isinstance(v, int | float) and not isinstance(v, bool))
               for v in col):
            data[name] = pd.array([np.nan if v is None else float(v) for v in col],
                                  dtype="float64")
        else:
            data[name] = np.asarray(col, dtype=object)
    frame = pd.DataFrame(data, index=pd.Index(index, name="row"))
    return frame


def read(spreadsheet: str, *, client: gspread.Client | None = None,
         credentials: str | os.PathLike[str] | Mapping[str, Any] | None = None,
         sheet: str = "Matmul", block: bool = False) -> pd.DataFrame:
    """The values Google computed (UNFORMATTED_VALUE), one column per planned column, times
    in seconds whatever unit their cells hold.

    A sheet with tables gives its first table, one row per non-empty sheet row (the index is
    the sheet's 1-based row number); the Inputs sheet, or any sheet with `block` (Pipeline
    totals, Parallelism comparison), gives its named values (index: name).
    """
    layout = _layout()
    names = [s.name for s in layout.sheets]
    wants_model = sheet.lower() == "transformer"
    match = next((n for n in names if n.lower() == sheet.lower()), None)
    if match is None and not wants_model:
        raise SheetsError(f"sheetgen writes no sheet {sheet!r}; choose one of {', '.join(names)}")
    gc, sh, key = _open(spreadsheet, client, credentials)
    with _api_errors(gc, key):
        state = fetch_state(sh)
        if wants_model:
            model = _transformer(sh, state)
            if model is None:
                raise SheetsError(f"Spreadsheet {key} has no tab 'Transformer'; push with "
                                  "--model or --model-config first.")
            layout = _layout(model=model)
            match = "Transformer"
        _need_tabs(state, [match], key)
        grid = _grid_values(sh, [match], "UNFORMATTED_VALUE")[match]
    sp = layout.sheet(match)
    if block or not sp.tables:
        cells = [c for c in sp.cells if c.name and c.role in ("input", "formula")]
        f = layout.registry.factor  # times come back in seconds (cell_units)
        frame = pd.DataFrame({"value": [scaled(_at(grid, c.row, c.col), 1.0 / f(c.name))
                                        for c in cells]},
                             index=pd.Index([c.name for c in cells], name="name"), dtype=object)
        return frame
    table = sp.tables[0]
    end = _table_end(sp, table, len(grid))
    rows, index = [], []
    for r in range(table.first_row, end):
        vals = [scaled(_at(grid, r, c.col), 1.0 / layout.registry.factor(c.name))
                for c in table.columns]
        if any(v != "" for v in vals):
            rows.append(vals)
            index.append(r + 1)
    return _frame([c.name for c in table.columns], rows, index)


def _table_end(sheet: SheetPlan, table: TablePlan, grid_rows: int) -> int:
    """Exclusive end row: the row above the next table below in the same columns, else the grid."""
    cols = {c.col for c in table.columns}
    below = [t.header_row - 1 for t in sheet.tables
             if t.header_row > table.header_row and cols & {c.col for c in t.columns}]
    return min([*below, max(grid_rows, table.first_row)])


# --------------------------------------------------------------------------- check


def plan_from_cells(value_at: Callable[[str, int, int], Any],
                    formula_at: Callable[[str, int, int], str | None],
                    grid_rows: Mapping[str, int], metadata: Mapping[str, str] | None = None,
                    *, practice: bool = False, model: Any = None) -> WorkbookPlan:
    """Re-plan the workbook from a spreadsheet's own inputs (so edits are modelled).

    `value_at(sheet, row, col)`: the value of an input cell ("" or None when blank);
    `formula_at`: the formula text of a cell, or None; `grid_rows`: rows present per sheet.
    A table's rows are those of the pushed layout that still hold a formula (tables with
    formula columns) or any input value (input-only tables), from its first row down.
    `practice`: include the Practice sheet; `model`: the Transformer tab's structure.
    """
    layout = SheetLayout(practice=practice, chart_helpers=True, model=model)
    rows = table_rows_present(sheet_specs(layout), value_at, formula_at, grid_rows)
    return replan(layout, rows, value_at, metadata=metadata)


def check_spreadsheet(spreadsheet: str, *, client: gspread.Client | None = None,
                      credentials: str | os.PathLike[str] | Mapping[str, Any] | None = None,
                      rtol: float = 1e-9) -> CheckReport:
    """Compare every formula cell Google computed with the reference model of the
    spreadsheet's own inputs (GPU/dtype choice, efficiencies, preset table, shapes)."""
    gc, sh, key = _open(spreadsheet, client, credentials)
    with _api_errors(gc, key):
        state = fetch_state(sh)
        practice = state.sheet_id(practice_sheet.SHEET) is not None
        model = _transformer(sh, state)
        titles = _titles(practice, model)
        _need_tabs(state, titles, key)
        values = _grid_values(sh, titles, "UNFORMATTED_VALUE")
        formulas = _grid_values(sh, titles, "FORMULA")

    def formula_at(s: str, r: int, c: int) -> str | None:
        f = _at(formulas[s], r, c)
        return f if isinstance(f, str) and f.startswith("=") else None

    rows = {t: max(len(values[t]), len(formulas[t])) for t in titles}
    p = plan_from_cells(lambda s, r, c: _at(values[s], r, c), formula_at, rows,
                        practice=practice, model=model)
    report = CheckReport(spreadsheet, shape_rows=int(p.model.ok["matmul"].sum()))
    for e in expected_cells(p):
        report.checked[e.sheet] = report.checked.get(e.sheet, 0) + 1
        got_formula = formula_at(e.sheet, e.row, e.col)
        got = _at(values[e.sheet], e.row, e.col)
        expected = e.value
        if isinstance(expected, float) and math.isnan(expected):
            expected = ""  # the model has no figure (e.g. 'n/a'): Google shows an error/blank
            if isinstance(got, str) and got.startswith("#"):
                got = ""
        if got_formula != e.formula:
            report.mismatches.append(Mismatch(
                e.sheet, e.address, e.name, got, expected, got_formula,
                note=f"formula changed from {e.formula}"))
        elif not values_match(got, expected, rtol):
            report.mismatches.append(Mismatch(e.sheet, e.address, e.name, got, expected,
                                              got_formula))
    return report
