"""The Python API: analyse shapes into a DataFrame, or build the workbook, from a notebook.

    >>> import sheetgen
    >>> df = sheetgen.analyze([(1, 4096, 4096), (4096, 4096, 4096)], gpu="H100 SXM")
    >>> sheetgen.build("roofline.xlsx", shapes=df[["m", "k", "n"]])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pandas as pd

from sheetgen.errors import InputError
from sheetgen.hardware import DEFAULT_DTYPE, load_presets
from sheetgen.plan import WorkbookPlan
from sheetgen.shapes import Shape, parse_dim, read_shapes
from sheetgen.sheets import matmul
from sheetgen.workbook import DEFAULT_SPARE_ROWS, BuildConfig, plan_build
from sheetgen.xlsx import check_output_path, write_xlsx

ShapesLike = str | os.PathLike[str] | pd.DataFrame | Iterable[Sequence[int]] | None


def to_shapes(shapes: ShapesLike) -> list[Shape] | None:
    """Shapes from a CSV path, a DataFrame with m/k/n columns, or (m, k, n) tuples."""
    if shapes is None:
        return None
    if isinstance(shapes, str | os.PathLike):
        return read_shapes(shapes)
    if isinstance(shapes, pd.DataFrame):
        cols = {str(c).strip().lower(): c for c in shapes.columns}
        missing = [d for d in "mkn" if d not in cols]
        if missing:
            raise InputError(f"DataFrame is missing column(s) {', '.join(missing)}")
        rows: Iterable[Sequence[Any]] = shapes[[cols["m"], cols["k"], cols["n"]]].itertuples(
            index=False, name=None)
    else:
        rows = shapes
    out = []
    for i, row in enumerate(rows, start=1):
        if len(row) != 3:
            raise InputError(f"shape #{i}: expected (m, k, n), got {row!r}")
        m, k, n = (parse_dim(v, f"shape #{i}, {d}") for v, d in zip(row, "mkn", strict=True))
        out.append(Shape(m, k, n))
    return out


def plan(*, gpu: str | None = None, dtype: str = DEFAULT_DTYPE, shapes: ShapesLike = None,
         spare_rows: int = DEFAULT_SPARE_ROWS,
         gpu_file: str | os.PathLike[str] | None = None,
         chart_helpers: bool = False) -> WorkbookPlan:
    """The planned workbook (cells, formulas and reference values), without writing it.

    `chart_helpers`: the Google Sheets variant, with LOG10 chart helper columns.
    """
    config = BuildConfig(gpu=gpu, dtype=dtype, shapes=to_shapes(shapes), spare_rows=spare_rows,
                         presets=load_presets(gpu_file))
    return plan_build(config, chart_helpers=chart_helpers)


def analyze(shapes: ShapesLike = None, *, gpu: str | None = None,
            dtype: str = DEFAULT_DTYPE,
            gpu_file: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """The Part 1 roofline table as a DataFrame: one row per shape, one column per quantity."""
    p = plan(gpu=gpu, dtype=dtype, shapes=shapes, spare_rows=0, gpu_file=gpu_file)
    return table_frame(p, matmul.TABLE.name)


def table_frame(p: WorkbookPlan, table: str) -> pd.DataFrame:
    """A planned table's reference values (rows its guard accepts), columns by name."""
    t = p.table(table)
    ok = p.model.ok[table]
    data = {c.name: c.values[ok] for c in t.columns if c.name != matmul.ROW_CHECK.name}
    frame = pd.DataFrame(data)
    return frame.infer_objects()


def build_workbook(out: str | os.PathLike[str], *, gpu: str | None = None,
                   dtype: str = DEFAULT_DTYPE, shapes: ShapesLike = None,
                   spare_rows: int = DEFAULT_SPARE_ROWS,
                   gpu_file: str | os.PathLike[str] | None = None, force: bool = False,
                   progress_factory: Callable[[int, str], AbstractContextManager[Any]]
                   | None = None) -> tuple[Path, int]:
    """Build the workbook at `out`; returns the path and the number of shape rows."""
    check_output_path(out, force)  # fail before any work
    p = plan(gpu=gpu, dtype=dtype, shapes=shapes, spare_rows=spare_rows, gpu_file=gpu_file)
    total = sum(t.last_row + 1 for s in p.sheets for t in s.tables)
    ctx = progress_factory(total, "writing") if progress_factory else nullcontext(None)
    with ctx as progress:
        path = write_xlsx(p, out, force=force, progress=progress)
    return path, int(p.model.ok[matmul.TABLE.name].sum())


def build(out: str | os.PathLike[str], **kwargs: Any) -> Path:
    """Build the workbook at `out` (see build_workbook for the keyword arguments)."""
    return build_workbook(out, **kwargs)[0]
