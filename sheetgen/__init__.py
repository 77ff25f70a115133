"""sheetgen: roofline models of GPU matmuls as live-formula spreadsheets.

The public API is the names in __all__; everything else is internal.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: Libraries the workbook side needs and `sheetgen.measure` does not: a bare GPU machine with
#: only NumPy (and PyTorch) can still run `python -m sheetgen.measure` (see sheetgen/measure).
_WORKBOOK_LIBRARIES = {"pandas", "xlsxwriter", "openpyxl", "click", "matplotlib", "scipy"}
_missing_library: str | None = None

try:
    from sheetgen.api import (
        analyze,
        build,
        gpu_figures,
        parallelism,
        pipeline,
        plan,
        table_frame,
    )
    from sheetgen.errors import (
        InputError,
        OutputError,
        PresetError,
        SheetgenError,
        SheetsError,
        WorkbookError,
    )
    from sheetgen.fill import fill
    from sheetgen.hardware import GPU, Presets, load_presets
    from sheetgen.plot import plot_roofline
    from sheetgen.shapes import Shape, read_shapes
except ModuleNotFoundError as _exc:  # pragma: no cover - exercised in a subprocess test
    if (_exc.name or "").split(".")[0] not in _WORKBOOK_LIBRARIES:
        raise
    _missing_library = _exc.name

#: Google Sheets functions, imported on first use (gspread and google-auth take ~0.5 s).
_LAZY = {"check_spreadsheet": "sheetgen.gsheets", "push": "sheetgen.gsheets",
         "read": "sheetgen.gsheets"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if _missing_library is not None and name in __all__:
        raise ImportError(f"sheetgen.{name} needs {_missing_library}, which is not installed: "
                          f"pip install sheetgen (only sheetgen.measure works without it)")
    raise AttributeError(f"module 'sheetgen' has no attribute {name!r}")


__all__ = [
    "GPU",
    "InputError",
    "OutputError",
    "PresetError",
    "Presets",
    "Shape",
    "SheetgenError",
    "SheetsError",
    "WorkbookError",
    "__version__",
    "analyze",
    "build",
    "check_spreadsheet",
    "fill",
    "gpu_figures",
    "load_presets",
    "parallelism",
    "pipeline",
    "plan",
    "plot_roofline",
    "push",
    "read",
    "read_shapes",
    "table_frame",
]
