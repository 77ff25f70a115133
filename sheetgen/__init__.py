"""sheetgen: roofline models of GPU matmuls as live-formula spreadsheets.

The public API is the names in __all__; everything else is internal. Every name is imported
on first use (PEP 562), so `import sheetgen` and the CLI's `--help`, `--version` and `gpus`
start without pandas, NumPy, xlsxwriter or the Google clients.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Libraries the workbook side needs and `sheetgen.measure` does not: a bare GPU machine with
#: only NumPy (and PyTorch) can still run `python -m sheetgen.measure` (see sheetgen/measure);
#: lazy imports keep `import sheetgen` working there, and a public name that needs one of
#: these says so.
_WORKBOOK_LIBRARIES = {"pandas", "xlsxwriter", "openpyxl", "click", "matplotlib", "scipy"}

#: public name -> the module that defines it
_LAZY = {
    "analyze": "sheetgen.api", "build": "sheetgen.api", "gpu_figures": "sheetgen.api",
    "parallelism": "sheetgen.api", "pipeline": "sheetgen.api", "plan": "sheetgen.api",
    "table_frame": "sheetgen.api", "transformer": "sheetgen.api",
    "InputError": "sheetgen.errors", "OutputError": "sheetgen.errors",
    "PresetError": "sheetgen.errors", "SheetgenError": "sheetgen.errors",
    "SheetsError": "sheetgen.errors", "WorkbookError": "sheetgen.errors",
    "fill": "sheetgen.writers.fill",
    "GPU": "sheetgen.inputs.presets", "Presets": "sheetgen.inputs.presets",
    "load_presets": "sheetgen.inputs.presets",
    "plot_roofline": "sheetgen.writers.plot",
    "Shape": "sheetgen.inputs.shapes", "read_shapes": "sheetgen.inputs.shapes",
    "check_spreadsheet": "sheetgen.writers.google.sheets", "push": "sheetgen.writers.google.sheets",
    "read": "sheetgen.writers.google.sheets",
}

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ imports on demand
    from sheetgen.api import (
        analyze,
        build,
        gpu_figures,
        parallelism,
        pipeline,
        plan,
        table_frame,
        transformer,
    )
    from sheetgen.errors import (
        InputError,
        OutputError,
        PresetError,
        SheetgenError,
        SheetsError,
        WorkbookError,
    )
    from sheetgen.inputs.presets import GPU, Presets, load_presets
    from sheetgen.inputs.shapes import Shape, read_shapes
    from sheetgen.writers.fill import fill
    from sheetgen.writers.google.sheets import check_spreadsheet, push, read
    from sheetgen.writers.plot import plot_roofline


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sheetgen' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in _WORKBOOK_LIBRARIES:
            raise
        raise ImportError(f"sheetgen.{name} needs {exc.name}, which is not installed: "
                          f"pip install sheetgen (only sheetgen.measure works without it)"
                          ) from None
    if callable(value) and not isinstance(value, type):
        from sheetgen.errors import api_words

        value = api_words(value)  # its errors name `force=True`, not the CLI's --force
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


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
    "transformer",
]

