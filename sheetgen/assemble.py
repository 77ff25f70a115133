"""The workbook sheetgen builds: which sheets, in which order, fed with which input values.

`plan_build` is the one entry point the writers, the CLI and the Python API share.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from sheetgen import __version__
from sheetgen.core import defaults
from sheetgen.core.defaults import DEFAULT_SPARE_ROWS, MEASURED
from sheetgen.errors import InputError
from sheetgen.inputs import precision
from sheetgen.inputs.model_config import ModelConfig
from sheetgen.inputs.presets import (
    DEFAULT_DTYPE,
    MAX_OVERLAP_EXPONENT,
    MAX_TILE,
    Presets,
    builtin_presets,
    check_dtype,
    load_presets,
)
from sheetgen.inputs.shapes import Shape, default_shapes, parse_dim
from sheetgen.layout.planner import Source, WorkbookPlan, plan_workbook
from sheetgen.model.vocabulary import SheetSpec
from sheetgen.sheets import chart_helpers, gpu_specs, inputs, matmul, pipeline, whatif
from sheetgen.sheets import measured as measured_sheet
from sheetgen.sheets import practice as practice_sheet
from sheetgen.sheets import transformer as transformer_sheet
from sheetgen.sheets.parallel import inputs as parallel_inputs
from sheetgen.sheets.parallel import sheet as parallel

#: Excel's grid (and so every xlsx reader's): rows per sheet ("Excel specifications and
#: limits", https://support.microsoft.com/en-us/office/excel-specifications-and-limits-1672b34d-7043-467e-8e27-269d656771c3).
XLSX_MAX_ROWS = 1_048_576
#: Excel's sheet-name rules: at most 31 characters, none of [ ] : * ? / \, not starting or
#: ending with an apostrophe (the Excel error text when renaming a tab says the same).
SHEET_NAME_MAX = 31
SHEET_NAME_FORBIDDEN = "[]:*?/\\"


@dataclass(frozen=True)
class SheetLayout:
    """Which sheets a workbook has, in which variant: everything that decides where cells go
    apart from table row counts, and no input value. A read-back (`check`, Google's `read`)
    builds one from a workbook's properties or tabs; a build takes it from `BuildConfig`.
    """

    practice: bool = False  # the Practice sheet is present
    measured: bool = False  # the Measured sheet is present
    measured_source: str = ""  # the Measured sheet's note names it (text, not an input)
    #: GPU Specs lists these presets' sources below its table (text, not inputs); None omits it
    presets: Presets | None = None
    prefix: str = ""  # before each sheet name (`fill`, beside a user's own sheets)
    chart_helpers: bool = False  # Google's variant: LOG10 helper columns for its charts
    #: the Transformer sheet, laid out for this model's structure; None: no such sheet
    model: ModelConfig | None = None


@dataclass
class BuildConfig:
    """The user's choices: every input value of a build (and so, through `layout`, which
    sheets it has). Defaults give the README's workbook."""

    gpu: str | None = None
    dtype: str = DEFAULT_DTYPE
    shapes: Sequence[Shape] | None = None
    spare_rows: int = DEFAULT_SPARE_ROWS
    presets: Presets = field(default_factory=load_presets)
    layers: int = pipeline.DEFAULT_LAYERS
    pipeline_shape: tuple[int, int, int] = (pipeline.DEFAULT_M, pipeline.DEFAULT_K,
                                            pipeline.DEFAULT_N)
    gpus: int = parallel.DEFAULT_GPUS
    micro_batches: int | None = None  # None: auto, PP's best M
    link_bw: float | None = None  # per direction, B/s; None = the preset's
    link_latency: float | None = None  # s; None = the preset's
    link_over: str = "gpu"  # gpu: the GPU link (NVLink); host: the PCIe host link
    host_link_latency: float = parallel_inputs.DEFAULT_HOST_LATENCY  # s, over the host link
    tp_pairing: str = parallel_inputs.NARROW  # narrow (Megatron) or wide (the other pairing)
    tp_gather: bool = False  # all-gather a sharded final output
    #: TP's all-reduce: auto (the fastest of ring, one-shot, two-shot) or one of them
    tp_allreduce: str = defaults.ALLREDUCES[0]
    whatif_shape: tuple[int, int, int] = whatif.DEFAULT_SHAPE
    practice: int = 0  # rows of the Practice sheet; 0 leaves the sheet out
    practice_seed: int = practice_sheet.DEFAULT_SEED
    #: the Inputs sheet's efficiencies (fractions in (0, 1]); 1.0 = the pure roofline,
    #: "measured" = the GPU preset's figure for the dtype (its Suggested column)
    compute_eff: float | str = 1.0
    memory_eff: float | str = 1.0
    link_eff: float | str = 1.0
    launch_overhead: float | None = None  # s per matmul call; None = the preset's
    tile: tuple[int, int] | None = None  # (tile m, tile n); None = the preset's
    waves: bool | None = None  # wave quantization in the refined time; None = the preset's
    overlap: float | None = None  # the refined time's overlap exponent; None = the preset's
    measured: measured_sheet.MeasuredInputs | None = None  # rows of the Measured sheet, if any
    #: storage of A (activations), B (weights), C (outputs): "auto" (the compute dtype's,
    #: fp8/int8 writing bf16) or a storage dtype (sheetgen.inputs.precision); None = auto
    activation_dtype: str | None = None
    weight_dtype: str | None = None
    output_dtype: str | None = None
    #: the fit's capacity: "GiB" (the card's bytes less memory_reserve) or "GB" (advertised
    #: decimal bytes, nothing reserved: the interview's arithmetic)
    capacity_as: str = inputs.GIB
    memory_reserve: float | None = None  # bytes kept from the fit; None = inputs.DEFAULT_RESERVE
    #: the Transformer sheet's model and workload (--model / --model-config); None: no sheet
    transformer: transformer_sheet.TransformerInputs | None = None
    #: PP and TP closer than this (|a - b| / the worse side) tie in every comparison row
    tie_margin: float = parallel_inputs.DEFAULT_TIE_MARGIN
    #: share of TP's all-reduce time hidden behind compute (0: none, the default)
    tp_overlap: float = 0.0

    def resolved(self) -> BuildConfig:
        """Validate everything up front, with errors naming the option."""
        if self.gpu is not None and not self.gpu.strip():
            raise InputError("--gpu is empty; give a preset name (see `sheetgen gpus`) or "
                             "leave the option out for the default")
        gpu = self.presets.get(self.gpu or self.presets.default)
        dtype = check_dtype(self.dtype)
        gpu.peak(dtype)
        _whole("--spare-rows", self.spare_rows, 0)
        _whole("--layers", self.layers, 1, 100_000)
        _whole("--gpus", self.gpus, 1, 100_000)
        if self.micro_batches is not None:
            _whole("--micro-batches", self.micro_batches, 1)
        if isinstance(self.tie_margin, bool) or not isinstance(self.tie_margin, int | float) \
                or not (math.isfinite(self.tie_margin) and 0 <= self.tie_margin <= 1):
            raise InputError(f"--tie-margin must be a fraction from 0 to 1 (0.05 = 5 %), got "
                             f"{self.tie_margin!r}")
        if isinstance(self.tp_overlap, bool) or not isinstance(self.tp_overlap, int | float) \
                or not (math.isfinite(self.tp_overlap) and 0 <= self.tp_overlap <= 1):
            raise InputError(f"--tp-overlap must be a fraction from 0 to 1, got "
                             f"{self.tp_overlap!r}")
        _whole("--practice", self.practice, 0, 100_000)
        whatif_shape = tuple(parse_dim(v, f"--whatif-shape {d}")
                             for v, d in zip(self.whatif_shape, "mkn", strict=True))
        m, k, n = (parse_dim(v, f"--pipeline-shape {d}")
                   for v, d in zip(self.pipeline_shape, "mkn", strict=True))
        if self.micro_batches is not None and self.micro_batches > m:
            raise InputError(f"--micro-batches {self.micro_batches} is more than the "
                             f"pipeline's m = {m} rows")
        if self.link_bw is not None and not (math.isfinite(self.link_bw) and self.link_bw > 0):
            raise InputError(f"--link-bw must be a positive number of bytes/s, got "
                             f"{self.link_bw!r}")
        if self.link_latency is not None and not (math.isfinite(self.link_latency)
                                                  and self.link_latency >= 0):
            raise InputError(f"--link-latency must be 0 or more seconds, got "
                             f"{self.link_latency!r}")
        own = gpu.for_dtype(dtype)  # the dtype's own refined model, where the preset has one
        effs = {}
        for option, name, measured in (
                ("--compute-eff", "compute_eff", own.compute_efficiency(dtype)),
                ("--memory-eff", "memory_eff", own.measured_memory_efficiency),
                ("--link-eff", "link_eff", own.measured_link_efficiency)):
            value = getattr(self, name)
            if isinstance(value, str) and value.strip().lower() == MEASURED:
                value = measured
            _fraction(option, value)
            effs[name] = float(value)
        if self.link_over not in ("gpu", "host"):
            raise InputError(f"--link-over must be gpu or host, got {self.link_over!r}")
        if self.tp_pairing not in (parallel_inputs.NARROW, parallel_inputs.WIDE):
            raise InputError(f"--tp-pairing must be narrow or wide, got {self.tp_pairing!r}")
        if self.tp_allreduce not in defaults.ALLREDUCES:
            raise InputError(f"--tp-allreduce must be {', '.join(defaults.ALLREDUCES)}, got "
                             f"{self.tp_allreduce!r}")
        if not (math.isfinite(self.host_link_latency) and self.host_link_latency >= 0):
            raise InputError(f"--host-link-latency must be 0 or more seconds, got "
                             f"{self.host_link_latency!r}")
        launch = own.launch_overhead if self.launch_overhead is None else self.launch_overhead
        if isinstance(launch, bool) or not isinstance(launch, int | float) \
                or not (math.isfinite(launch) and 0 <= launch <= 1):
            raise InputError(f"--launch-overhead must be 0 to 1 seconds, got {launch!r}")
        tile = (own.tile_m, own.tile_n) if not self.tile else tuple(self.tile)
        if len(tile) != 2:
            raise InputError(f"--tile takes two whole numbers M N, got {self.tile!r}")
        for value, dim in zip(tile, "MN", strict=True):
            _whole(f"--tile {dim}", value, 1, MAX_TILE)
        waves = own.wave_quantization if self.waves is None else self.waves
        if not isinstance(waves, bool):
            raise InputError(f"--waves must be on or off (True or False), got {waves!r}")
        overlap = own.overlap_exponent if self.overlap is None else self.overlap
        if isinstance(overlap, bool) or not isinstance(overlap, int | float) or not (
                overlap == 0 or 1 <= overlap <= MAX_OVERLAP_EXPONENT):
            raise InputError(f"--overlap must be 0 (the hard max) or 1 to "
                             f"{MAX_OVERLAP_EXPONENT:g}, got {overlap!r}")
        storage = {field: precision.check_storage(getattr(self, field), option)
                   for field, option, _ in precision.OPERANDS}
        capacity_as = {c.lower(): c for c in (inputs.GIB, inputs.GB)}.get(
            str(self.capacity_as).strip().lower())
        if capacity_as is None:
            raise InputError(f"--capacity-as must be GiB or GB, got {self.capacity_as!r}")
        reserve = inputs.DEFAULT_RESERVE if self.memory_reserve is None else self.memory_reserve
        if isinstance(reserve, bool) or not isinstance(reserve, int | float) \
                or not (math.isfinite(reserve) and 0 <= reserve <= 1e15):
            raise InputError(f"--memory-reserve must be 0 or more bytes, got {reserve!r}")
        shapes = list(self.shapes) if self.shapes is not None else default_shapes()
        self._check_rows(len(shapes))
        if self.transformer is not None:
            transformer_sheet.check_inputs(self.transformer)
        return replace(self, gpu=gpu.name, dtype=dtype, shapes=shapes, pipeline_shape=(m, k, n),
                       whatif_shape=whatif_shape, launch_overhead=float(launch),
                       tile=(int(tile[0]), int(tile[1])), waves=waves, overlap=float(overlap),
                       **storage, **effs, capacity_as=capacity_as,
                       memory_reserve=float(reserve))

    def layout(self, prefix: str = "", *, chart_helpers: bool = False) -> SheetLayout:
        """The sheets this build writes and their variant (see `SheetLayout`)."""
        return SheetLayout(practice=bool(self.practice), measured=self.measured is not None,
                           measured_source=self.measured.source if self.measured else "",
                           presets=self.presets, prefix=prefix, chart_helpers=chart_helpers,
                           model=self.transformer.model if self.transformer else None)

    def _check_rows(self, n_shapes: int) -> None:
        """Refuse, before any work, a table that would run past the last row of a sheet."""
        why = {
            matmul.TABLE.name: (n_shapes + self.spare_rows,
                                f"{n_shapes:,} shape rows and --spare-rows {self.spare_rows:,}"),
            pipeline.TABLE.name: (self.layers, f"--layers {self.layers:,}"),
            parallel.TABLE.name: (self.layers, f"--layers {self.layers:,}"),
            practice_sheet.TABLE.name: (self.practice, f"--practice {self.practice:,}"),
        }
        for spec in sheet_specs(self.layout()):
            for table in spec.tables:
                rows, what = why.get(table.name, (0, ""))
                needed = table.first_row + rows
                if needed > XLSX_MAX_ROWS:
                    raise InputError(
                        f"{what} need {needed:,} rows on the {spec.name} sheet "
                        f"({table.first_row} above the table); an xlsx sheet holds at most "
                        f"{XLSX_MAX_ROWS:,} rows")


def check_prefix(prefix: str) -> str:
    """A --prefix that gives valid Excel sheet names for every sheet sheetgen writes."""
    if not prefix:
        return prefix
    bad = sorted({c for c in prefix if c in SHEET_NAME_FORBIDDEN})
    if bad:
        raise InputError(f"--prefix {prefix!r}: sheet names cannot contain "
                         f"{' '.join(bad)} (Excel forbids {' '.join(SHEET_NAME_FORBIDDEN)})")
    if any(ord(c) < 32 or ord(c) == 127 for c in prefix):
        raise InputError(f"--prefix {prefix!r}: sheet names cannot contain control characters")
    if prefix.startswith("'"):
        raise InputError(f"--prefix {prefix!r}: a sheet name cannot begin with an apostrophe")
    longest = max((s.name for s in all_sheet_specs()), key=len)
    room = SHEET_NAME_MAX - len(longest)
    if len(prefix) > room:
        raise InputError(f"--prefix {prefix!r} is {len(prefix)} characters; at most {room} fit, "
                         f"since {longest!r} ({len(longest)}) is sheetgen's longest sheet name "
                         f"and Excel's limit is {SHEET_NAME_MAX}")
    return prefix


def all_sheet_specs() -> list[SheetSpec]:
    """Every sheet sheetgen can write (the optional Practice sheet included)."""
    return sheet_specs(SheetLayout(practice=True, presets=builtin_presets()))


def _fraction(option: str, value: object) -> None:
    """An efficiency: a number in (0, 1], as the Inputs sheet's validation allows it."""
    low = inputs.EFF_MIN
    ok = (isinstance(value, int | float) and not isinstance(value, bool)
          and math.isfinite(value) and low <= value <= 1.0)
    if not ok:
        raise InputError(f"{option} must be a fraction from {low:g} to 1 (1 = pure roofline) "
                         f"or {MEASURED}, got {value!r}")


def _whole(option: str, value: object, low: int, high: int | None = None) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
    if ok and high is not None:
        ok = value <= high  # type: ignore[operator]
    if not ok:
        span = f"from {low} to {high:,}" if high is not None else f"{low} or more"
        raise InputError(f"{option} must be a whole number {span}, got {value!r}")


def sheet_specs(layout: SheetLayout | None = None) -> list[SheetSpec]:
    """The sheets in workbook order: inputs first, presets last (default: the default build's
    sheets, GPU Specs without its sources list).

    `layout.prefix` goes before each name (to sit beside a user's own sheets of the same
    names); `layout.chart_helpers`: the Matmul and Parallelism sheets with their LOG10 chart
    helper columns (Google Sheets, whose charts have no log axis); every other cell is the same.
    """
    lay = layout or SheetLayout()
    optional = [practice_sheet.sheet()] if lay.practice else []
    if lay.measured:
        optional.append(measured_sheet.sheet(lay.measured_source, google=lay.chart_helpers))
    if lay.model is not None:
        optional.insert(0, transformer_sheet.sheet(lay.model, google=lay.chart_helpers))
    mat = chart_helpers_sheet() if lay.chart_helpers else matmul.sheet()
    sheets = [inputs.sheet(), mat, pipeline.sheet(), parallel.sheet(google=lay.chart_helpers),
              whatif.sheet(), *optional, gpu_specs.sheet(lay.presets)]
    return [replace(s, name=lay.prefix + s.name) for s in sheets] if lay.prefix else sheets


def chart_helpers_sheet() -> SheetSpec:
    return chart_helpers.matmul_sheet()


def input_values(config: BuildConfig) -> dict[str, list | object]:
    shapes = list(config.shapes or [])
    pad = [None] * config.spare_rows
    values: dict[str, list | object] = {}
    values.update(gpu_specs.input_values(config.presets, config.dtype))
    # the refined time's terms: the dtype's own where the preset has them (refined_by_dtype)
    gpu = config.presets.get(config.gpu or config.presets.default).for_dtype(config.dtype)
    values.update(inputs.input_values(
        gpu.name, config.dtype,
        launch_overhead=gpu.launch_overhead if config.launch_overhead is None
        else config.launch_overhead,
        tile=(gpu.tile_m, gpu.tile_n) if not config.tile else config.tile,
        waves=gpu.wave_quantization if config.waves is None else config.waves,
        overlap=gpu.overlap_exponent if config.overlap is None else config.overlap,
        ramp=(gpu.compute_ramp_flops, gpu.compute_ramp_exponent, gpu.compute_ramp_end_flops),
        kernel=inputs.KernelTerms(gpu.k_latency, gpu.k_loop_tile_growth, gpu.k_loop_tile_latency,
                                  gpu.split_k_floor, gpu.split_k_min_k),
        write_cost=gpu.write_cost,
        storage=(config.activation_dtype or precision.AUTO, config.weight_dtype or precision.AUTO,
                 config.output_dtype or precision.AUTO),
        capacity_as=config.capacity_as,
        reserve=inputs.DEFAULT_RESERVE if config.memory_reserve is None
        else config.memory_reserve))
    values.update(compute_eff=float(config.compute_eff), memory_eff=float(config.memory_eff),
                  link_eff=float(config.link_eff))
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
                                        pairing=config.tp_pairing, gather=config.tp_gather,
                                        tie_margin=float(config.tie_margin),
                                        tp_overlap=float(config.tp_overlap),
                                        allreduce=config.tp_allreduce))
    values.update(whatif.input_values(config.whatif_shape))
    if config.practice:
        values.update(practice_sheet.input_values(config.practice, config.practice_seed))
    if config.measured is not None:
        values.update(measured_sheet.input_values(config.measured))
    if config.transformer is not None:
        values.update(transformer_sheet.input_values(config.transformer))
    return values


def plan_build(config: BuildConfig | None = None, *, prefix: str = "",
               links: Mapping[str, Sequence[Source]] | None = None,
               chart_helpers: bool = False) -> WorkbookPlan:
    """Validate the config and plan the whole workbook (no I/O). `prefix` and `links`: see
    sheet_specs and plan_workbook (used by `fill`); `chart_helpers`: plan the Google Sheets
    variant (see `sheet_specs`)."""
    check_prefix(prefix)
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
    if cfg.transformer is not None:
        metadata["sheetgen.model"] = cfg.transformer.model.to_json()
    return plan_workbook(sheet_specs(cfg.layout(prefix, chart_helpers=chart_helpers)),
                         input_values(cfg), metadata, links)
