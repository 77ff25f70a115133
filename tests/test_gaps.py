"""An unsupported GPU/dtype pair picked in the dropdowns (fp8 on an A100, which has no fp8
tensor cores: NVIDIA A100 datasheet) shows a short marker, never an error value.

The marker reaches every cell computed from the missing peak (a SUM or MAX must not quietly
drop it), the reference model gives the same marker, `check` agrees, and LibreOffice
recalculates the workbook with no error value anywhere but the charts' data columns (the
roofline's, the Parallelism sweep's latencies), whose #N/A is by design (charts skip it; the
marker text would plot as 0).
"""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from helpers import built_workbook, load_workbook
from lo_helpers import libreoffice_job, needs_libreoffice, read_values
from xlsx_edit import cell_of, defined_names, edit_cells

from sheetgen.sheets import matmul
from sheetgen.sheets.parallel import chart as parallel_chart
from sheetgen.sheets.parallel import sheet as parallel
from sheetgen.verify.check import check_workbook, read_workbook

MARKER = "n/a: no fp8 on this GPU"
ERRORS = ("#VALUE!", "#N/A", "#DIV/0!", "#REF!", "#NAME?", "#NUM!", "Err:")


def make_fp8_on_a100(tmp: Path) -> Path:
    """The default (A100 40GB SXM, bf16) workbook with the dtype dropdown set to fp8 (typed
    into its XML: `check` evaluates the formulas, LibreOffice recalculates them)."""
    path, _ = built_workbook(tmp / "a100.xlsx", spare_rows=2)
    dtype = cell_of(defined_names(path)["DTYPE"])
    assert openpyxl.load_workbook(path, read_only=True)[dtype[0]][dtype[1]].value == "bf16"
    return edit_cells(path, tmp / "fp8.xlsx", {dtype: "fp8"})


@pytest.fixture(scope="module")
def fp8_on_a100(tmp_path_factory) -> Path:
    return make_fp8_on_a100(tmp_path_factory.mktemp("gap"))


def test_check_agrees_and_the_marker_reaches_every_dependent(fp8_on_a100: Path):
    report = check_workbook(fp8_on_a100)
    assert report.ok, [m.line() for m in report.mismatches[:5]]
    matmul = read_workbook(fp8_on_a100, "Matmul")
    for col in ("compute_time", "predicted_time", "attained_flops", "regime", "refined_time"):
        assert set(matmul[col]) == {MARKER}, col
    # what does not depend on the peak stays a number: bytes, and the memory time
    # (1×4096×4096 in fp8 writing bf16 moves 4096 + 4096² + 2·4096 bytes at 1,555 GB/s)
    assert matmul["memory_time"].iloc[0] == pytest.approx((3 * 4096 + 4096**2) / 1.555e12)
    totals = read_workbook(fp8_on_a100, "Pipeline", block=True)["value"]
    assert totals["pipe_predicted"] == MARKER and totals["total_compute_time"] == MARKER
    assert totals["total_weight_bytes"] == 72 * 8192 * 32768  # 1 byte per element
    inputs = read_workbook(fp8_on_a100, "Inputs")["value"]
    assert inputs["peak_flops"] == MARKER and inputs["input_status"] != "ok"


def test_status_cell_is_highlighted(fp8_on_a100: Path):
    ws = load_workbook(fp8_on_a100)["Inputs"]
    status = next(c for row in ws.iter_rows() for c in row if c.value == "Status")
    target = ws.cell(status.row, status.column + 1).coordinate
    rules = [r for rng in ws.conditional_formatting for r in rng.rules
             if target in str(rng.sqref)]
    assert any(r.operator == "notEqual" and r.formula == ['"ok"'] for r in rules)


@libreoffice_job("gaps-fp8-on-a100")
def _fp8_on_a100(tmp: Path) -> dict[str, Path]:
    return {"fp8": make_fp8_on_a100(tmp)}


@needs_libreoffice
def test_libreoffice_recalculates_without_error_values(libreoffice):
    recalculated = libreoffice.outputs("gaps-fp8-on-a100")["fp8"]
    values = read_values(recalculated)
    chart_data = {("Matmul", t.col + i) for t in (matmul.POINTS, matmul.CEILING)
                  for i, c in enumerate(t.all_columns()) if "NA()" in getattr(c, "template", "")}
    sweep = parallel.SWEEP  # the Parallelism sweep chart's latencies (its m is a number)
    data_col = parallel_chart.chart_col((sweep, parallel.TABLE)) + parallel_chart.CHART_COLS + 1
    lines = range(data_col + 1, data_col + 1 + len(parallel_chart.LINES))
    chart_data |= {("Parallelism", c) for c in lines}
    errors = [(sheet, cell, v) for sheet, cells in values.items() for cell, v in cells.items()
              if isinstance(v, str) and v.startswith(ERRORS)]
    assert errors and {(sheet, cell[1]) for sheet, cell, _ in errors} <= chart_data, [
        e for e in errors if (e[0], e[1][1]) not in chart_data][:10]
    assert {v for _, _, v in errors} == {"#N/A"}
    # every chart-data column is numbers or #N/A only, no marker text (text x makes Excel
    # number a series' points 1, 2, 3): the ceiling needs the missing peak, so its x, y and
    # TFLOP/s are #N/A on all 7 decade rows; of the points only the intensity is a number
    mat = values["Matmul"]
    rows = {matmul.POINTS.name: range(matmul.TABLE.first_row, matmul.TABLE.first_row + 14),
            matmul.CEILING.name: range(matmul.CEILING.first_row, matmul.CEILING.first_row + 7)}
    for t in (matmul.POINTS, matmul.CEILING):
        for i, c in enumerate(t.columns, start=len(t.inputs)):
            got = [mat.get((r, t.col + i)) for r in rows[t.name]]
            if c.name == "plot_intensity":  # 12 shapes, then the 2 spare rows
                numbers = [isinstance(v, int | float) and not isinstance(v, bool) for v in got]
                assert all(numbers[:12]) and got[12:] == ["#N/A"] * 2
            else:
                assert got == ["#N/A"] * len(got), (c.name, got)
    par = values["Parallelism"]
    sweep_rows = range(sweep.first_row, sweep.first_row + 8)
    assert [par.get((r, data_col)) for r in sweep_rows] == [1, 8, 64, 512, 1024, 2048, 4096,
                                                              16384]
    assert {par.get((r, c)) for r in sweep_rows for c in lines} == {"#N/A"}
    markers = sum(1 for cells in values.values() for v in cells.values() if v == MARKER)
    assert markers > 100
    assert check_workbook(recalculated).ok
