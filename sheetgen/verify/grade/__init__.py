"""Grading a hand-made roofline sheet: `sheetgen check` on a workbook sheetgen did not build.

The sheet needs a header row naming m, k and n (found as `sheetgen build --shapes` finds it);
its other columns are recognised by their header text (`FLOPs`, `Bytes moved`,
`AI (FLOP/byte)`, `Bound`, `Time (ms)`, ... see ALIASES), with units in brackets read for the
scale. Every formula is evaluated in pure Python (cached values are ignored; typed values
are taken as they are) and each recognised column is compared, row by row, with the
reference model (`sheetgen.analyze`) of the same shapes on the chosen GPU. A failing column
gets its first failing rows and, when the error has a classic pattern, a hint.
"""


from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

from xlsxwriter.utility import xl_col_to_name

from sheetgen.core.excel import looks_blank
from sheetgen.core.units import MEGA
from sheetgen.errors import InputError
from sheetgen.evaluate import evaluate_workbook
from sheetgen.inputs.presets import DEFAULT_DTYPE, check_dtype
from sheetgen.inputs.shapes import DIMS, Shape, header_key, parse_dim
from sheetgen.verify.compare import validate_rtol

from .against_model import grade_column, reference, regime_of
from .headers import ALIASES, KINDS, bracket_units, normalise, recognise, unit_scale
from .report import SHOWN_FAILURES, ColumnGrade, GradeReport, RowFailure
from .table import find_table, gpu_figure

DEFAULT_GRADE_RTOL = 1e-6  # hand-made sheets: typed constants are often rounded a little


def grade_workbook(path: str | os.PathLike[str], *, gpu: str | None = None,
                   dtype: str | None = None, peak: str | None = None, bw: str | None = None,
                   sheet: str | None = None, time_unit: str | None = None,
                   rtol: float = DEFAULT_GRADE_RTOL,
                   gpu_file: str | os.PathLike[str] | None = None,
                   progress: Callable[[int, int], None] | None = None,
                   activation_dtype: str | None = None, weight_dtype: str | None = None,
                   output_dtype: str | None = None) -> GradeReport:
    """Grade a hand-made roofline sheet against the reference model (see the module doc).

    `peak`/`bw`: a number (FLOP/s, B/s) or a cell such as `B2` (on the graded sheet) or
    `Inputs!B2`; `time_unit` (s, ms, us, ns) overrides the units in the time headers.
    `activation_dtype`, `weight_dtype`, `output_dtype`: each operand's storage (None: auto).
    """
    rtol = validate_rtol(rtol)
    p = Path(path)
    dtype = check_dtype(dtype or DEFAULT_DTYPE)
    time_scale = None
    if time_unit is not None:
        time_scale = unit_scale(time_unit, "time")
        if time_scale is None:
            raise InputError(f"--time-unit {time_unit!r}: choose one of s, ms, us, ns")
    ev = evaluate_workbook(p, progress=progress, lenient=True)
    name, header_row, header = find_table(ev, p.name, sheet)

    dims: dict[str, int] = {}
    columns: list[ColumnGrade] = []
    unrecognised: list[tuple[str, str]] = []
    for i, cell in enumerate(header):
        if looks_blank(cell):
            continue
        letter = xl_col_to_name(i)
        key = header_key(cell)
        if key is not None and key not in dims:
            dims[key] = i
            continue
        found = recognise(cell)
        if found is None:
            unrecognised.append((letter, str(cell).strip()))
            continue
        quantity, unit, scale = found
        if KINDS[quantity] == "time" and time_scale is not None:
            unit, scale = time_unit, time_scale
        columns.append(ColumnGrade(letter, str(cell).strip(), quantity, unit,
                                   1.0 if scale is None else scale))
    if not columns:
        known = ", ".join(spellings[0] for _k, spellings in ALIASES.values())
        heads = ", ".join(repr(str(c)) for c in header if not looks_blank(c))
        raise InputError(f"{p.name} sheet {name!r}: no column to grade besides m, k, n in the "
                         f"header on row {header_row} ({heads}); name columns such as {known}")

    last_row, _ = ev.extent(name)
    rows: list[int] = []
    shapes: list[Shape] = []
    skipped: list[tuple[int, str]] = []
    if last_row > header_row:
        cols = {d: ev.column(name, xl_col_to_name(dims[d]), header_row + 1, last_row)
                for d in DIMS}
        for j in range(last_row - header_row):
            row = header_row + 1 + j
            cells = {d: cols[d][j] for d in DIMS}
            cells = {d: None if isinstance(v, float) and math.isnan(v) else v
                     for d, v in cells.items()}
            if all(looks_blank(v) for v in cells.values()):
                continue
            try:
                shape = Shape(*(parse_dim(cells[d], f"{d}") for d in DIMS))
            except InputError as exc:
                skipped.append((row, f"not a shape ({exc})"))
                continue
            rows.append(row)
            shapes.append(shape)
    if not shapes:
        raise InputError(f"{p.name} sheet {name!r}: no shapes below the header on row "
                         f"{header_row}")

    peak_value = None if peak is None else gpu_figure(ev, name, peak, "--peak", "rate", "FLOP/s",
                                                   MEGA)
    bw_value = None if bw is None else gpu_figure(ev, name, bw, "--bw", "bw", "B/s", MEGA)
    ref, figures = reference(shapes, gpu=gpu, dtype=dtype, peak=peak_value, bw=bw_value,
                             gpu_file=gpu_file,
                             storage=(activation_dtype, weight_dtype, output_dtype))
    report = GradeReport(str(p), name, header_row, rows, figures, columns, unrecognised,
                         skipped)
    for col in columns:
        grade_column(ev, name, col, rows, ref.reset_index(drop=True), figures, dtype, rtol)
    graded = {(name, f"{c.column}{r}") for c in columns for r in rows}
    report.not_evaluated = [(f"{s}!{cell}", why) for (s, cell), why in ev.not_evaluated.items()
                            if (s, cell) not in graded]
    return report



__all__ = ["ALIASES", "DEFAULT_GRADE_RTOL", "KINDS", "SHOWN_FAILURES", "ColumnGrade",
           "GradeReport", "RowFailure", "bracket_units", "grade_workbook", "normalise",
           "recognise", "reference", "regime_of", "unit_scale"]
