"""The workbook sheetgen builds: which sheets, in which order, fed with which input values.

`plan_build` is the one entry point the writers, the CLI and the Python API share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from sheetgen import __version__
from sheetgen.definitions import SheetSpec
from sheetgen.errors import InputError
from sheetgen.hardware import DEFAULT_DTYPE, Presets, check_dtype, load_presets
from sheetgen.plan import Source, WorkbookPlan, plan_workbook
from sheetgen.shapes import Shape, default_shapes, parse_dim
from sheetgen.sheets import (
    chart_helpers,
    inputs,
    matmul,
    parallel,
    parallel_inputs,
    pipeline,
    specs,
    whatif,
)
from sheetgen.sheets import practice as practice_sheet

DEFAULT_SPARE_ROWS = 200


@dataclass
class BuildConfig:
    """Everything a build depends on. Defaults give the README's workbook."""

    gpu: str | None = None
    dtype: str = DEFAULT_DTYPE
    shapes: Sequence[Shape] | None = None
    spare_rows: int = DEFAULT_SPARE_ROWS
    presets: Presets = field(default_factory=load_presets)
    layers: int = pipeline.DEFAULT_LAYERS
    pipeline_shape: tuple[int, int, int] = (pipeline.DEFAULT_M, pipeline.DEFAULT_K,
                                            pipeline.DEFAULT_N)
    gpus: int = parallel.DEFAULT_GPUS
    micro_batches: int = parallel.DEFAULT_MICRO_BATCHES
    link_bw: float | None = None  # per direction, B/s; None = the preset's
    link_latency: float | None = None  # s; None = the preset's
    link_over: str = "gpu"  # gpu: the GPU link (NVLink); host: the PCIe host link
    host_link_latency: float = parallel_inputs.DEFAULT_HOST_LATENCY  # s, over the host link
    tp_pairing: str = parallel_inputs.NARROW  # narrow (Megatron) or wide (the other pairing)
    tp_gather: bool = False  # all-gather a sharded final output
    whatif_shape: tuple[int, int, int] = whatif.DEFAULT_SHAPE
    practice: int = 0  # rows of the Practice sheet; 0 leaves the sheet out
    practice_seed: int = practice_sheet.DEFAULT_SEED

    def resolved(self) -> BuildConfig:
        """Validate everything up front, with errors naming the option."""
        gpu = self.presets.get(self.gpu or self.presets.default)
        dtype = check_dtype(self.dtype)
        gpu.peak(dtype)
        _whole("--spare-rows", self.spare_rows, 0)
        _whole("--layers", self.layers, 1, 100_000)
        _whole("--gpus", self.gpus, 1, 100_000)
        _whole("--micro-batches", self.micro_batches, 1)
        _whole("--practice", self.practice, 0, 100_000)
        whatif_shape = tuple(parse_dim(v, f"--whatif-shape {d}")
                             for v, d in zip(self.whatif_shape, "mkn", strict=True))
        m, k, n = (parse_dim(v, f"--pipeline-shape {d}")
                   for v, d in zip(self.pipeline_shape, "mkn", strict=True))
        if self.micro_batches > m:
            raise InputError(f"--micro-batches {self.micro_batches} is more than the "
                             f"pipeline's m = {m} rows")
        if self.link_bw is not None and not (math.isfinite(self.link_bw) and self.link_bw > 0):
            raise InputError(f"--link-bw must be a positive number of bytes/s, got "
                             f"{self.link_bw!r}")
        if self.link_latency is not None and not (math.isfinite(self.link_latency)
                                                  and self.link_latency >= 0):
            raise InputError(f"--link-latency must be 0 or more seconds, got "
                             f"{self.link_latency!r}")
        if self.link_over not in ("gpu", "host"):
            raise InputError(f"--link-over must be gpu or host, got {self.link_over!r}")
        if self.tp_pairing not in (parallel_inputs.NARROW, parallel_inputs.WIDE):
            raise InputError(f"--tp-pairing must be narrow or wide, got {self.tp_pairing!r}")
        if not (math.isfinite(self.host_link_latency) and self.host_link_latency >= 0):
            raise InputError(f"--host-link-latency must be 0 or more seconds, got "
                             f"{self.host_link_latency!r}")
        shapes = list(self.shapes) if self.shapes is not None else default_shapes()
        return replace(self, gpu=gpu.name, dtype=dtype, shapes=shapes, pipeline_shape=(m, k, n),
                       whatif_shape=whatif_shape)


def _whole(option: str, value: object, low: int, high: int | None = None) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
    if ok and high is not None:
        ok = value <= high  # type: ignore[operator]
    if not ok:
        span = f"from {low} to {high:,}" if high is not None else f"{low} or more"
        raise InputError(f"{option} must be a whole number {span}, got {value!r}")


def sheet_specs(config: BuildConfig | None = None, prefix: str = "", *,
                chart_helpers: bool = False) -> list[SheetSpec]:
    """The sheets in workbook order: inputs first, presets last.

    `prefix` goes before each name (to sit beside a user's own sheets of the same names).
    `chart_helpers`: the Matmul sheet with its LOG10 chart helper columns (Google Sheets,
    whose charts have no log axis); every other cell is the same.
    """
    optional = [practice_sheet.sheet()] if config is not None and config.practice else []
    mat = chart_helpers_sheet() if chart_helpers else matmul.sheet()
    sheets = [inputs.sheet(), mat, pipeline.sheet(), parallel.sheet(), whatif.sheet(),
              *optional, specs.sheet()]
    return [replace(s, name=prefix + s.name) for s in sheets] if prefix else sheets


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
    values.update(pipeline.input_values(config.layers, *config.pipeline_shape))
    values.update(parallel.input_values(config.layers, config.gpus, config.micro_batches,
                                        config.link_bw, config.link_latency,
                                        link=parallel_inputs.HOST_LINK
                                        if config.link_over == "host"
                                        else parallel_inputs.GPU_LINK,
                                        host_latency=config.host_link_latency,
                                        pairing=config.tp_pairing, gather=config.tp_gather))
    values.update(whatif.input_values(config.whatif_shape))
    if config.practice:
        values.update(practice_sheet.input_values(config.practice, config.practice_seed))
    return values


def plan_build(config: BuildConfig | None = None, *, prefix: str = "",
               links: Mapping[str, Sequence[Source]] | None = None,
               chart_helpers: bool = False) -> WorkbookPlan:
    """Validate the config and plan the whole workbook (no I/O). `prefix` and `links`: see
    sheet_specs and plan_workbook (used by `fill`); `chart_helpers`: plan the Google Sheets
    variant (see `sheet_specs`)."""
    cfg = (config or BuildConfig()).resolved()
    metadata = {
        "sheetgen.version": __version__,
        "sheetgen.gpu": cfg.gpu or "",
        "sheetgen.dtype": cfg.dtype,
        "sheetgen.shapes": str(len(cfg.shapes or [])),
        "sheetgen.spare_rows": str(cfg.spare_rows),
        "sheetgen.layers": str(cfg.layers),
        "sheetgen.practice": str(cfg.practice),
    }
    return plan_workbook(sheet_specs(cfg, prefix, chart_helpers=chart_helpers),
                         input_values(cfg), metadata, links)
