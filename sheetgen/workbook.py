"""The workbook sheetgen builds: which sheets, in which order, fed with which input values.

`plan_build` is the one entry point the writers, the CLI and the Python API share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sheetgen import __version__
from sheetgen.definitions import SheetSpec
from sheetgen.hardware import DEFAULT_DTYPE, Presets, check_dtype, load_presets
from sheetgen.plan import WorkbookPlan, plan_workbook
from sheetgen.shapes import Shape, default_shapes
from sheetgen.sheets import chart_helpers, inputs, matmul, specs

DEFAULT_SPARE_ROWS = 200


@dataclass
class BuildConfig:
    """Everything a build depends on. Defaults give the README's workbook."""

    gpu: str | None = None
    dtype: str = DEFAULT_DTYPE
    shapes: Sequence[Shape] | None = None
    spare_rows: int = DEFAULT_SPARE_ROWS
    presets: Presets = field(default_factory=load_presets)

    def resolved(self) -> BuildConfig:
        """Validate names (clear errors for unknown GPU/dtype or a dtype the GPU lacks)."""
        from sheetgen.errors import InputError

        gpu = self.presets.get(self.gpu or self.presets.default)
        dtype = check_dtype(self.dtype)
        gpu.peak(dtype)
        if self.spare_rows < 0:
            raise InputError(f"--spare-rows must be 0 or more, got {self.spare_rows}")
        shapes = list(self.shapes) if self.shapes is not None else default_shapes()
        return BuildConfig(gpu.name, dtype, shapes, self.spare_rows, self.presets)


def sheet_specs(*, chart_helpers: bool = False) -> list[SheetSpec]:
    """The sheets in workbook order: inputs first, presets last.

    `chart_helpers`: the Matmul sheet with its LOG10 chart helper columns (Google Sheets,
    whose charts have no log axis); every other cell is the same.
    """
    mat = chart_helpers_sheet() if chart_helpers else matmul.sheet()
    return [inputs.sheet(), mat, specs.sheet()]


def chart_helpers_sheet() -> SheetSpec:
    return chart_helpers.matmul_sheet()


def input_values(config: BuildConfig) -> dict[str, list | object]:
    shapes = list(config.shapes or [])
    pad = [None] * config.spare_rows
    values: dict[str, list | object] = {}
    values.update(specs.input_values(config.presets))
    values.update(inputs.input_values(config.gpu or config.presets.default, config.dtype))
    values["m"] = [s.m for s in shapes] + pad
    values["k"] = [s.k for s in shapes] + pad
    values["n"] = [s.n for s in shapes] + pad
    values["roof_decade"] = list(matmul.ROOF_DECADES)
    return values


def plan_build(config: BuildConfig | None = None, *,
               chart_helpers: bool = False) -> WorkbookPlan:
    """Validate the config and plan the whole workbook (no I/O).

    `chart_helpers`: plan the Google Sheets variant (see `sheet_specs`).
    """
    cfg = (config or BuildConfig()).resolved()
    metadata = {
        "sheetgen.version": __version__,
        "sheetgen.gpu": cfg.gpu or "",
        "sheetgen.dtype": cfg.dtype,
        "sheetgen.shapes": str(len(cfg.shapes or [])),
        "sheetgen.spare_rows": str(cfg.spare_rows),
    }
    return plan_workbook(sheet_specs(chart_helpers=chart_helpers), input_values(cfg), metadata)
