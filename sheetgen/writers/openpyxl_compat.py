"""The one place sheetgen reaches into openpyxl's private style array, kept apart so an
openpyxl upgrade that changes it fails here, loudly, and in tests/test_openpyxl_compat.py.

Why: each public style assignment (`cell.font = ...`, `cell.fill = ...`, five per cell)
looks its object up in the workbook's style tables by hash and equality. Two thirds of a
`sheetgen fill` of the default plan went there (cProfile: 293,000 lookups, 16 of 28 s).
Cells of one neutral style resolve to the same style array, so the first cell of each style
is styled through the public attributes and the others get a copy of its array: what
openpyxl's own worksheet copier does (openpyxl/worksheet/copier.py, `WorksheetCopy`:
`target_cell._style = copy(source_cell._style)`).
"""

from __future__ import annotations

from copy import copy
from typing import Any

import openpyxl
from openpyxl.cell.cell import Cell

#: The private attribute the shim relies on (checked when it is used and by the test).
PRIVATE_ATTRIBUTE = "_style"


class StyleStamp:
    """One style's openpyxl attributes, stamped onto fresh cells of one workbook."""

    def __init__(self, attributes: dict[str, Any]) -> None:
        self.attributes = attributes
        self._array: Any = None

    def apply(self, cell: Cell) -> None:
        """Style a freshly made cell (one that carries the default style)."""
        if self._array is None:
            for attr, piece in self.attributes.items():
                setattr(cell, attr, piece)
            array = getattr(cell, PRIVATE_ATTRIBUTE, None)
            if array is None:
                raise RuntimeError(f"openpyxl {openpyxl.__version__} keeps no cell."
                                   f"{PRIVATE_ATTRIBUTE}: sheetgen/writers/openpyxl_compat.py "
                                   "needs updating for this version")
            self._array = copy(array)
        else:
            cell._style = copy(self._array)
