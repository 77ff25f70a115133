"""Fast pure-Python evaluator for the xlsx workbooks sheetgen writes (and similar ones).

Every formula is evaluated from scratch -- cached results in the file are ignored -- by
grouping each column's shifted copies of one formula and evaluating them with NumPy in one
go. Supported: arithmetic, ``&``, comparisons, and MAX MIN SUM SUMPRODUCT AVERAGE IF AND OR
NOT INDEX MATCH VLOOKUP ROUNDUP ROUNDDOWN ROUND INT MOD LOG10 ABS SQRT ISNUMBER ISBLANK ISTEXT
ISERROR ISLOGICAL IFERROR COUNT COUNTA COUNTBLANK; defined names; cross-sheet references.
Anything else raises WorkbookError naming the cell rather than giving a wrong answer.
"""

from __future__ import annotations

from .values import ExcelError, NotEvaluated
from .workbook import EvaluatedWorkbook, evaluate_cells, evaluate_workbook

__all__ = ["EvaluatedWorkbook", "ExcelError", "NotEvaluated", "evaluate_cells",
           "evaluate_workbook"]
