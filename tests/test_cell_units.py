"""Time cells hold µs or ms (sheetgen.core.time_cells): the formulas convert where units meet,
LibreOffice computes the same numbers as hand calculations in those units, and `read` and
the API still give seconds.

Hand figures (A100 40GB SXM, bf16: 312 TFLOP/s, 1.555 TB/s):
- 1×4096×4096 moves 2·(4096 + 4096² + 4096) = 33,570,816 B: 33,570,816 / 1.555e12 s
  = 21.589 µs (memory-bound);
- a Pipeline layer of 4096 rows, 8192 ↔ 32768: 2·4096·8192·32768 FLOP / 312e12 FLOP/s
  = 7.048 ms each, compute-bound; 72 layers = 507.47 ms.
"""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from helpers import built_workbook, load_workbook
from lo_helpers import libreoffice_job, needs_libreoffice

from sheetgen.api import plan
from sheetgen.core import time_cells as cell_units
from sheetgen.core.time_cells import Ref, plan_conversion
from sheetgen.verify.check import check_workbook, read_workbook

MEMORY_TIME_S = 33_570_816 / 1.555e12
LAYER_S = 2 * 4096 * 8192 * 32768 / 312e12
SI, US, MS = 1.0, 1e6, 1e3


def test_a_ratio_of_si_values_converts_its_result():
    # compute time (µs) = FLOPs / FLOP/s: evaluate in SI, multiply the result once
    conv = plan_conversion(1, US, [Ref(0, SI, False), Ref(-1, SI, False)], may_wrap=True)
    assert (conv.common, conv.result) == (SI, US)


def test_times_in_the_same_unit_need_no_conversion():
    conv = plan_conversion(1, US, [Ref(1, US, False), Ref(1, US, False)], may_wrap=True)
    assert (conv.common, conv.result) == (US, 1.0)
    # a rate from a µs cell (attained FLOP/s = FLOPs / predicted time): the µs reference
    # goes back to seconds, E6/(K6/1E+06); ties go to SI
    rate = plan_conversion(-1, SI, [Ref(0, SI, False), Ref(1, US, False)], may_wrap=True)
    assert rate.common == SI and rate.result == 1.0
    assert rate.ref_multiplier(Ref(1, US, False)) == pytest.approx(1e-6)


def test_a_range_is_never_converted_and_text_is_never_multiplied():
    # SUM over a µs column into an ms cell: the result is converted, not the range
    conv = plan_conversion(1, MS, [Ref(1, US, True)], may_wrap=True)
    assert conv.common == US and conv.result == pytest.approx(1e-3)
    with pytest.raises(ValueError, match="no common time unit"):
        plan_conversion(1, MS, [Ref(1, US, True)], may_wrap=False)


@pytest.mark.parametrize(("body", "bare"), [
    ("E6/ATTAINABLE_FLOPS", True), ("MAX(A1,B1)", True), ("2*1E+06/A1", True),
    ("A1+B1", False), ("-A1*B1", True), ('IF(A1>0,A1,"")', True), ('A1&"x"', False),
    ("(A1+B1)*C1", True), ("A1-B1", False),
])
def test_result_conversion_keeps_operator_precedence(body, bare):
    converted = cell_units.convert_result(body, 1e6)
    assert converted == (f"{body}*1E+06" if bare else f"({body})*1E+06")


def test_formulas_read_like_hand_arithmetic_in_the_cells_unit(tmp_path: Path):
    path, _ = built_workbook(tmp_path / "u.xlsx", spare_rows=0)
    ws = load_workbook(path)["Matmul"]
    header = {ws.cell(5, c).value: c for c in range(1, ws.max_column + 1)}
    formula = {name: ws.cell(6, header[name]).value for name in header if name}
    assert "ATTAINABLE_BW*1E+06" in formula["memory time (µs)"]
    assert "MAX(" in formula["predicted time (µs)"] and "E+" not in formula[
        "predicted time (µs)"]  # µs meets µs: no conversion
    cached = openpyxl.load_workbook(path, data_only=True)["Matmul"]
    assert cached.cell(6, header["memory time (µs)"]).value == pytest.approx(
        MEMORY_TIME_S * 1e6, rel=1e-12)


@libreoffice_job("cell-units")
def _units_workbook(tmp: Path) -> dict[str, Path]:
    return {"u": built_workbook(tmp / "u.xlsx", spare_rows=0)[0]}


@needs_libreoffice
def test_libreoffice_computes_hand_figures_in_us_and_ms(libreoffice):
    out = libreoffice.outputs("cell-units")["u"]
    wb = openpyxl.load_workbook(out, data_only=True)
    ws = wb["Matmul"]
    header = {ws.cell(5, c).value: c for c in range(1, ws.max_column + 1)}
    assert ws.cell(6, header["memory time (µs)"]).value == pytest.approx(21.589, abs=5e-4)
    # Pipeline: 72 compute-bound layers of 7.048 ms, the total in ms
    cell = next(c for c in plan(spare_rows=0).sheet("Pipeline").cells
                if c.name == "pipe_predicted")
    pipe = wb["Pipeline"]
    assert pipe.cell(cell.row + 1, cell.col + 1).value == pytest.approx(72 * LAYER_S * 1e3,
                                                                        rel=1e-9)
    assert pipe.cell(cell.row + 1, cell.col + 2).value == "ms"  # the block's unit column
    assert check_workbook(out).ok  # the checker reads the ms/µs cells back as SI


def test_read_and_the_api_give_seconds(tmp_path: Path):
    path, _ = built_workbook(tmp_path / "u.xlsx", spare_rows=0)
    frame = read_workbook(path)
    assert frame["memory_time"].iloc[0] == pytest.approx(MEMORY_TIME_S, rel=1e-12)
    totals = read_workbook(path, sheet="Pipeline", block=True)["value"]
    assert totals["pipe_predicted"] == pytest.approx(72 * LAYER_S, rel=1e-12)
