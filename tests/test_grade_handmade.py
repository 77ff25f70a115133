"""Three hand-made roofline sheets written the way different people write them (issue 12),
and grading that goes on past a cell the evaluator cannot compute.

Hand computation for the 4096^3 bf16 matmul on an A100 40GB SXM (312 TFLOP/s bf16 dense,
1555 GB/s; NVIDIA A100 datasheet): FLOPs 2*4096^3 = 137,438,953,472; bytes 2*3*4096^2 =
100,663,296; intensity 1365.33 FLOP/B > ridge 312e12/1555e9 = 200.64, so compute-bound; time
137,438,953,472 / 312e12 = 0.44051 ms.
"""

from __future__ import annotations

import math

import openpyxl
import pytest
from helpers import load_workbook, run
from openpyxl.workbook.defined_name import DefinedName

from sheetgen.errors import WorkbookError
from sheetgen.evaluate import NotEvaluated, evaluate_workbook
from sheetgen.verify.grade import grade_workbook

SHAPES = [(1, 4096, 4096), (4096, 4096, 4096), (128, 4096, 4096), (300, 70, 5)]
BIG = 3  # the sheet row of the 4096^3 shape


def _name(wb: openpyxl.Workbook, name: str, target: str) -> None:
    wb.defined_names[name] = DefinedName(name, attr_text=target)


def power_and_names(path):
    """POWER for the units and named cells for the GPU (issue 12, sheet 1)."""
    wb = openpyxl.Workbook()
    inputs = wb.active
    inputs.title = "GPU"
    inputs["A1"], inputs["B1"] = "peak", "=312*POWER(10,12)"
    inputs["A2"], inputs["B2"] = "bw", "=1555*POWER(10,9)"
    _name(wb, "Peak", "GPU!$B$1")
    _name(wb, "BW", "GPU!$B$2")
    ws = wb.create_sheet("Roofline")
    ws.append(["m", "k", "n", "FLOPs", "Bytes", "AI", "Bound", "Time (us)"])
    for r, (m, k, n) in enumerate(SHAPES, start=2):
        ws.append([m, k, n, f"=2*A{r}*B{r}*C{r}", f"=2*(A{r}*B{r}+B{r}*C{r}+A{r}*C{r})",
                   f"=D{r}/E{r}", f'=IF(F{r}>=Peak/BW,"compute","memory")',
                   f"=MAX(D{r}/Peak,E{r}/BW)*POWER(10,6)"])
    wb.save(path)
    return path


def ifs_and_summary(path):
    """IFS for the regime and a CONCATENATE(TEXT()) summary column (issue 12, sheet 2)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Mine"
    ws.append(["M", "K", "N", "FLOPs", "Bytes moved", "AI (FLOP/byte)", "Bound", "Time (ms)",
               "Summary"])
    for r, (m, k, n) in enumerate(SHAPES, start=2):
        ridge = "($L$1*1E12)/($L$2*1E9)"
        ws.append([m, k, n, f"=2*A{r}*B{r}*C{r}", f"=2*(A{r}*B{r}+B{r}*C{r}+A{r}*C{r})",
                   f"=D{r}/E{r}", f'=_xlfn.IFS(F{r}>={ridge},"Compute",F{r}<{ridge},"Memory")',
                   f"=MAX(D{r}/($L$1*1E12),E{r}/($L$2*1E9))*1000",
                   f'=CONCATENATE(G{r}," bound, ",TEXT(H{r},"0.000")," ms, AI ",'
                   f'TEXT(F{r},"0.0E+00"))'])
    ws["K1"], ws["L1"] = "Peak (TFLOP/s)", 312
    ws["K2"], ws["L2"] = "HBM (GB/s)", 1555
    wb.save(path)
    return path


def ms_units_with_efficiencies(path, unrelated="=PI()"):
    """ms units, =100% efficiencies, and an unrelated cell (issue 12, sheet 3)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Model"
    ws.append(["m", "k", "n", "FLOPs", "Bytes", "Intensity", "Regime", "Compute time (ms)",
               "Memory time (ms)", "Predicted time (ms)"])
    for r, (m, k, n) in enumerate(SHAPES, start=2):
        ws.append([m, k, n, f"=2*A{r}*B{r}*C{r}", f"=2*(A{r}*B{r}+B{r}*C{r}+A{r}*C{r})",
                   f"=D{r}/E{r}", f'=IF(F{r}>=$N$1*$N$3/($N$2*$N$4),"compute","memory")',
                   f"=D{r}/($N$1*$N$3)*1000", f"=E{r}/($N$2*$N$4)*1000", f"=MAX(H{r},I{r})"])
    ws["M1"], ws["N1"] = "Peak FLOP/s", 312e12
    ws["M2"], ws["N2"] = "HBM B/s", 1555e9
    ws["M3"], ws["N3"] = "compute efficiency", "=100%"
    ws["M4"], ws["N4"] = "memory efficiency", "=100%"
    ws["M6"], ws["N6"] = "a circle", unrelated
    wb.save(path)
    return path


@pytest.mark.parametrize("make", [power_and_names, ifs_and_summary, ms_units_with_efficiencies])
def test_hand_made_sheets_grade(tmp_path, make):
    path = make(tmp_path / f"{make.__name__}.xlsx")
    report = grade_workbook(path, gpu="A100 40GB SXM", dtype="bf16")
    assert report.ok, report.summary()
    assert not report.not_evaluated
    quantities = {c.quantity for c in report.columns}
    assert {"flops", "bytes_moved", "intensity", "regime", "predicted_time"} <= quantities
    result = run("check", str(path))
    assert result.exit_code == 0, result.output


def test_the_sheets_hold_the_hand_computed_numbers(tmp_path):
    ev = evaluate_workbook(ifs_and_summary(tmp_path / "s.xlsx"))
    assert ev.value("Mine", f"D{BIG}") == 137_438_953_472
    assert ev.value("Mine", f"E{BIG}") == 100_663_296
    assert math.isclose(ev.value("Mine", f"F{BIG}"), 1365.3333333333333, rel_tol=1e-12)
    assert ev.value("Mine", f"G{BIG}") == "Compute"
    assert math.isclose(ev.value("Mine", f"H{BIG}"), 0.4405094662564103, rel_tol=1e-12)
    assert ev.value("Mine", f"I{BIG}") == "Compute bound, 0.441 ms, AI 1.4E+03"
    ev3 = evaluate_workbook(ms_units_with_efficiencies(tmp_path / "m.xlsx"))
    assert ev3.value("Model", "N3") == 1.0 and ev3.value("Model", "N6") == math.pi


def test_an_unknown_function_outside_the_graded_columns_is_reported(tmp_path):
    path = ms_units_with_efficiencies(tmp_path / "x.xlsx",
                                      unrelated="=FORECAST.ETS(1,N1:N2,N3:N4)")
    with pytest.raises(WorkbookError, match=r"unsupported function FORECAST\.ETS"):
        evaluate_workbook(path, lenient=False)  # strict, as `check` is for sheetgen's own workbooks
    report = grade_workbook(path)
    assert report.ok, report.summary()
    assert report.not_evaluated == [("Model!N6", "unsupported function FORECAST.ETS")]
    result = run("check", str(path))
    assert result.exit_code == 0, result.output
    assert "not evaluated (not graded, 1 cell(s)): Model!N6 (unsupported function " \
           "FORECAST.ETS)" in result.output


def test_an_unknown_function_in_a_graded_column_fails_those_cells(tmp_path):
    path = ms_units_with_efficiencies(tmp_path / "g.xlsx")
    wb = load_workbook(path)
    ws = wb["Model"]
    ws["H3"] = "=WEIRDTIME(D3)"  # the compute time of one row; the predicted time reads it
    wb.save(path)
    report = grade_workbook(path)
    cols = {c.quantity: c for c in report.columns}
    assert not report.ok
    compute = cols["compute_time"]
    assert compute.failed == 1 and compute.failures[0].cell == "H3"
    assert isinstance(compute.failures[0].got, NotEvaluated)
    assert "unsupported function WEIRDTIME" in compute.hint
    predicted = cols["predicted_time"]
    assert predicted.failed == 1 and "reads Model!H3" in str(predicted.failures[0].got)
    for q in ("flops", "bytes_moved", "intensity", "regime", "memory_time"):
        assert cols[q].ok, q
    result = run("check", str(path))
    assert result.exit_code == 1
    assert "row 3 (H3): got not evaluated: unsupported function WEIRDTIME" in result.output


def fp8_everywhere(path):
    """fp8 on an H100 with every operand at 1 byte: the model writes C in bf16 (2 B)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Mine"
    ws.append(["m", "k", "n", "FLOPs", "Bytes"])
    for r, (m, k, n) in enumerate(SHAPES, start=2):
        ws.append([m, k, n, f"=2*A{r}*B{r}*C{r}", f"=1*(A{r}*B{r}+B{r}*C{r}+A{r}*C{r})"])
    wb.save(path)
    return path


def test_grading_uses_each_operands_storage(tmp_path):
    """4096^3 in fp8 writing bf16: 1·4096² + 1·4096² + 2·4096² = 67,108,864 B, not 3·4096²."""
    path = fp8_everywhere(tmp_path / "fp8.xlsx")
    report = grade_workbook(path, gpu="H100 SXM", dtype="fp8")
    cols = {c.quantity: c for c in report.columns}
    assert cols["flops"].ok and not cols["bytes_moved"].ok
    big = next(f for f in cols["bytes_moved"].failures if f.row == BIG)
    assert big.got == 3 * 4096**2 and big.expected == 67_108_864
    assert "every operand at 1 B (fp8)" in cols["bytes_moved"].hint
    # told that the sheet writes fp8 outputs, the grade passes
    same = grade_workbook(path, gpu="H100 SXM", dtype="fp8", output_dtype="fp8")
    assert all(c.ok for c in same.columns)
    result = run("check", str(path), "--gpu", "H100 SXM", "--dtype", "fp8",
                 "--output-dtype", "fp8")
    assert result.exit_code == 0, result.output
