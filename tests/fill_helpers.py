"""A user's own small shapes workbook, filled by `sheetgen fill`: what the fill tests start from."""

from __future__ import annotations

from pathlib import Path

import openpyxl


def filled_workbook(tmp_path: Path, shape: tuple[int, int, int] = (1, 4096, 4096)) -> Path:
    """Write a one-shape m/k/n sheet as a user would, fill it, and return the filled file."""
    from sheetgen.writers.fill import fill_workbook

    theirs = tmp_path / "plan.xlsx"
    wb = openpyxl.Workbook()
    wb.active.append(["m", "k", "n"])
    wb.active.append(list(shape))
    wb.save(theirs)
    return fill_workbook(theirs, tmp_path / "out.xlsx").path
