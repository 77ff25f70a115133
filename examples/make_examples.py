"""Regenerate the example workbooks the README's commands use (run from the repository root).

    python examples/make_examples.py

- plan.xlsx: someone's own planning workbook (a title, a merged note, a table whose header
  names m, k, n among other columns), for `sheetgen fill` and `--shapes`.
- my_roofline.xlsx: a hand-made roofline sheet ("Homework", with its GPU figures on an
  "Inputs" sheet) for `sheetgen check` to grade: formulas for FLOPs, bytes, intensity and a
  time in ms, all correct for an A100 40GB SXM in bf16.
"""

from __future__ import annotations

from pathlib import Path

from openpyxl import Workbook
from openpyxl.styles import Font

HERE = Path(__file__).resolve().parent
SHAPES = [(1, 4096, 4096), (8, 4096, 4096), (128, 4096, 4096), (4096, 4096, 4096),
          (8192, 8192, 8192), (4096, 8192, 28672)]


def plan(path: Path) -> None:
    wb = Workbook()
    ws = wb.active
    ws.title = "Model plan"
    ws["A1"] = "Layer shapes for the serving plan"
    ws["A1"].font = Font(bold=True, size=14)
    ws.merge_cells("A2:E2")
    ws["A2"] = "One row per matmul; m is tokens per batch."
    ws.append([])
    ws.append(["layer", "M (rows)", "K", "N", "owner"])
    for i, (m, k, n) in enumerate(SHAPES, start=1):
        ws.append([f"layer {i}", m, k, n, "team A"])
    wb.save(path)


def roofline(path: Path) -> None:
    wb = Workbook()
    hw = wb.active
    hw.title = "Homework"
    inputs = wb.create_sheet("Inputs")
    inputs["A1"], inputs["B1"] = "figure", "value"
    inputs["A2"], inputs["B2"] = "Peak (FLOP/s)", 312e12  # A100 40GB SXM bf16 dense
    inputs["A3"], inputs["B3"] = "HBM (B/s)", 1.555e12
    inputs["A4"], inputs["B4"] = "bytes per element", 2
    hw.append(["m", "k", "n", "FLOPs", "Bytes", "Intensity (FLOP/B)", "Time (ms)"])
    for r, (m, k, n) in enumerate(SHAPES, start=2):
        hw.append([m, k, n, f"=2*A{r}*B{r}*C{r}",
                   f"=Inputs!$B$4*(A{r}*B{r}+B{r}*C{r}+A{r}*C{r})", f"=D{r}/E{r}",
                   f"=MAX(D{r}/Inputs!$B$2,E{r}/Inputs!$B$3)*1000"])
    wb.save(path)


if __name__ == "__main__":
    plan(HERE / "plan.xlsx")
    roofline(HERE / "my_roofline.xlsx")
    print("wrote examples/plan.xlsx, examples/my_roofline.xlsx")
