"""A user's own small shapes workbook, filled by `sheetgen fill`: what the fill tests start from."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import openpyxl

#: the filled workbook of each shape, made once per test process (a fill takes a second)
_FILLED: dict[tuple[int, int, int], Path] = {}


def filled_workbook(tmp_path: Path, shape: tuple[int, int, int] = (1, 4096, 4096)) -> Path:
    """Write a one-shape m/k/n sheet as a user would (`tmp_path/plan.xlsx`), fill it, and
    return the filled file (`tmp_path/out.xlsx`): each shape is filled once per test
    process and copied after that, as helpers.built_workbook does for builds."""
    from sheetgen.writers.fill import fill_workbook

    theirs = tmp_path / "plan.xlsx"
    wb = openpyxl.Workbook()
    wb.active.append(["m", "k", "n"])
    wb.active.append(list(shape))
    wb.save(theirs)
    key = tuple(int(v) for v in shape)
    if key not in _FILLED:
        folder = Path(tempfile.mkdtemp(prefix="sheetgen-filled-"))
        atexit.register(shutil.rmtree, folder, True)
        _FILLED[key] = fill_workbook(theirs, folder / "out.xlsx").path
    out = tmp_path / "out.xlsx"
    shutil.copyfile(_FILLED[key], out)
    return out
