"""Fast pure-Python evaluator for the xlsx workbooks sheetgen writes (and similar ones).

Every formula is evaluated from scratch -- cached results in the file are ignored -- by
grouping each column's shifted copies of one formula and evaluating them with NumPy in one
go, with Excel's semantics (15-digit comparisons, text read as numbers, number-to-text).
Supported: arithmetic, ``&``, comparisons, array constants, defined names, cross-sheet and
whole-column references, and the functions registered in ``functions/`` (docs/checking.md,
"What check evaluates"). Anything else is never approximated: evaluate_workbook leaves the
cell and those reading it "not evaluated" (a NotEvaluated value naming why) and evaluates the
rest, or with ``lenient=False`` (checking a sheetgen workbook) raises WorkbookError naming
the cell.
"""

from __future__ import annotations

from .values import ExcelError, NotEvaluated
from .workbook import EvaluatedWorkbook, evaluate_cells, evaluate_workbook

__all__ = ["EvaluatedWorkbook", "ExcelError", "NotEvaluated", "evaluate_cells",
           "evaluate_workbook"]
