"""sheetgen: roofline models of GPU matmuls as live-formula spreadsheets.

The public API is the names in __all__; everything else is internal.
"""

from __future__ import annotations

__version__ = "0.1.0"

from sheetgen.api import analyze, build, parallelism, pipeline, plan, table_frame
from sheetgen.errors import (
    InputError,
    OutputError,
    PresetError,
    SheetgenError,
    SheetsError,
    WorkbookError,
)
from sheetgen.hardware import GPU, Presets, load_presets

__all__ = [
    "GPU",
    "InputError",
    "OutputError",
    "PresetError",
    "Presets",
    "SheetgenError",
    "SheetsError",
    "WorkbookError",
    "__version__",
    "analyze",
    "build",
    "load_presets",
    "parallelism",
    "pipeline",
    "plan",
    "table_frame",
]
