"""The Python API: analyse shapes into a DataFrame, or build the workbook, from a notebook.

    >>> import sheetgen
    >>> df = sheetgen.analyze([(1, 4096, 4096), (4096, 4096, 4096)], gpu="H100 SXM")
    >>> sheetgen.build("roofline.xlsx", shapes=df[["m", "k", "n"]])
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sheetgen.assemble import (
    DEFAULT_SPARE_ROWS,
    BuildConfig,
    input_values,
    plan_build,
    sheet_specs,
)
from sheetgen.errors import InputError
from sheetgen.inputs.presets import DEFAULT_DTYPE, load_presets
from sheetgen.inputs.shapes import (
    Shape,
    ShapeSource,
    header_key,
    open_shapes,
    parse_dim,
    read_shapes,
)
from sheetgen.layout.planner import WorkbookPlan
from sheetgen.model.reference import Registry, evaluate
from sheetgen.model.vocabulary import Quantity, SheetSpec
from sheetgen.sheets import inputs, matmul
from sheetgen.writers.xlsx import check_output_path, write_xlsx

if TYPE_CHECKING:  # pandas is imported where a frame is made: a build needs none (~0.3 s)
    import pandas as pd

    ShapesLike = (str | os.PathLike[str] | pd.DataFrame | Iterable[Sequence[int]]
                  | Iterable[Shape] | ShapeSource | None)


def to_shapes(shapes: ShapesLike, sheet: str | None = None) -> list[Shape] | None:
    """Shapes from a CSV or xlsx path (`sheet`: which sheet of an xlsx), a DataFrame with
    m/k/n columns (headers such as "M" or "m (rows)" count), or (m, k, n) tuples."""
    if shapes is None:
        return None
    if isinstance(shapes, ShapeSource):
        return list(itertools.chain.from_iterable(shapes.pieces(max(shapes.count, 1))))
    if isinstance(shapes, str | os.PathLike):
        return read_shapes(shapes, sheet)
    pandas = sys.modules.get("pandas")  # a DataFrame means pandas is already imported
    if pandas is not None and isinstance(shapes, pandas.DataFrame):
        cols: dict[str, Any] = {}
        for c in shapes.columns:
            key = header_key(c)
            if key is not None:
                cols.setdefault(key, c)
        missing = [d for d in "mkn" if d not in cols]
        if missing:
            raise InputError(f"DataFrame is missing column(s) {', '.join(missing)}")
        rows: Iterable[Sequence[Any]] = shapes[[cols["m"], cols["k"], cols["n"]]].itertuples(
            index=False, name=None)
    else:
        rows = shapes
    out = []
    for i, row in enumerate(rows, start=1):
        if isinstance(row, Shape):
            out.append(row)
            continue
        if len(row) != 3:
            raise InputError(f"shape #{i}: expected (m, k, n), got {row!r}")
        m, k, n = (parse_dim(v, f"shape #{i}, {d}") for v, d in zip(row, "mkn", strict=True))
        out.append(Shape(m, k, n))
    return out


def plan(*, gpu: str | None = None, dtype: str = DEFAULT_DTYPE, shapes: ShapesLike = None,
         spare_rows: int = DEFAULT_SPARE_ROWS,
         gpu_file: str | os.PathLike[str] | None = None,
         shapes_sheet: str | None = None, chart_helpers: bool = False,
         **options: Any) -> WorkbookPlan:
    """The planned workbook (cells, formulas and reference values), without writing it.

    `options` are the other BuildConfig fields: layers, pipeline_shape, gpus, micro_batches
    (None: auto, PP's best M), link_bw, link_latency, link_over ("gpu" or "host"),
    host_link_latency, tp_pairing ("narrow" or "wide"), tp_gather, tie_margin (0.05: PP and
    TP within 5 % tie), tp_overlap (share of TP's all-reduce hidden behind compute),
    tp_allreduce ("auto": the fastest of "ring", "one-shot", "two-shot"; or one of them),
    whatif_shape, practice, practice_seed, launch_overhead, tile, waves, overlap,
    compute_eff, memory_eff, link_eff, activation_dtype, weight_dtype,
    output_dtype (each operand's storage: "auto" or None follows `dtype`, fp8/int8 writing
    bf16; else a storage dtype of sheetgen.inputs.precision, e.g. weight_dtype="int4").
    `chart_helpers`: the Google Sheets variant, with LOG10 chart helper columns.
    """
    config = BuildConfig(gpu=gpu, dtype=dtype, shapes=to_shapes(shapes, shapes_sheet),
                         spare_rows=spare_rows, presets=load_presets(gpu_file), **options)
    return plan_build(config, chart_helpers=chart_helpers)


def analyze(shapes: ShapesLike = None, *, gpu: str | None = None,
            dtype: str = DEFAULT_DTYPE,
            gpu_file: str | os.PathLike[str] | None = None,
            shapes_sheet: str | None = None, **options: Any) -> pd.DataFrame:
    """The Part 1 roofline table as a DataFrame: one row per shape, one column per quantity.

    `shapes`: a CSV or xlsx path, a DataFrame with m/k/n columns, or (m, k, n) tuples;
    None for the built-in dozen. Times in seconds, rates in FLOP/s and B/s (SI).
    The refined time (columns tiles, waves, wave_efficiency, compute_ramp,
    quantized_compute_time, then the kernel terms gemm_time (the time before them), split,
    k_tile, library_waves, k_loop, split_k, and refined_time) uses `launch_overhead` (s),
    `tile` (m, n), `waves` (wave quantization on/off) and `overlap` (the exponent p, 0 = hard
    max); None takes the GPU preset's, as the ramp and kernel terms always do.
    Other `options`: BuildConfig fields such as compute_eff=0.8, memory_eff=0.9.
    """
    everything = to_shapes(shapes, shapes_sheet)
    return next(analyze_pieces(everything, gpu=gpu, dtype=dtype, gpu_file=gpu_file,
                               piece_rows=max(len(everything or ()), 1), **options))


def shape_source(shapes: ShapesLike, sheet: str | None = None) -> ShapeSource | None:
    """`to_shapes`'s shapes, checked now and given a piece at a time: a CSV path is read
    again for the pieces rather than held (`sheetgen.inputs.shapes.open_shapes`)."""
    if shapes is None or isinstance(shapes, ShapeSource):
        return shapes
    if isinstance(shapes, str | os.PathLike):
        return open_shapes(shapes, sheet)
    return ShapeSource(to_shapes(shapes))


#: Shapes per frame of `analyze_pieces`: a piece's frame and model take some tens of MB,
#: and the model's fixed work per piece (the Inputs sheet) is a few milliseconds.
PIECE_ROWS = 20_000


def analyze_pieces(shapes: ShapesLike = None, *, gpu: str | None = None,
                   dtype: str = DEFAULT_DTYPE,
                   gpu_file: str | os.PathLike[str] | None = None,
                   shapes_sheet: str | None = None, piece_rows: int | None = None,
                   **options: Any) -> Iterator[pd.DataFrame]:
    """`analyze`'s table, `piece_rows` (default PIECE_ROWS) shapes at a time: the same rows,
    columns, values and `attrs["gpu"]`, each frame's index continuing the last one's. Only
    one piece is held at a time, so printing the table of a million shapes (`sheetgen
    show`) takes about one piece's memory, not the table's; a CSV path (or `shape_source`'s
    result for one) is checked in full first, then read again a piece at a time, so the
    shapes are not held either.

    Each row of the Matmul table depends on its own shape and the workbook's scalars only,
    so a piece is modelled on its own; and only the sheets the table reads are modelled (no
    cells, formulas or other sheets are planned, as `analyze` also does not need them).
    """
    import pandas as pd
    piece_rows = PIECE_ROWS if piece_rows is None else piece_rows
    if piece_rows < 1:
        raise InputError(f"piece_rows must be at least 1 (got {piece_rows})")
    presets = load_presets(gpu_file)
    source = shape_source(shapes, shapes_sheet)
    done = 0
    for piece in [None] if source is None else source.pieces(piece_rows):
        cfg = BuildConfig(gpu=gpu, dtype=dtype, shapes=piece, spare_rows=0, presets=presets,
                          **options).resolved()
        frame = _table_model_frame(cfg, matmul.TABLE.name)
        frame.index = pd.RangeIndex(done, done + len(frame))
        done += len(frame)
        yield frame


def _table_model_frame(cfg: BuildConfig, table: str) -> pd.DataFrame:
    """`table_frame` and `gpu_figures` of a resolved config, from the reference model of the
    sheets `table` reads alone."""
    registry = Registry(_sheets_read_by(sheet_specs(cfg.layout()), table))
    model = evaluate(registry, input_values(cfg))
    frame = _model_frame(model, [c.name for c in registry.tables[table].all_columns()], table)
    frame.attrs["gpu"] = _figures(model.scalars)
    return frame


def _model_frame(model: Any, names: Sequence[str], table: str) -> pd.DataFrame:
    """A table's reference values (rows its guard accepts, SI units), by name."""
    ok = model.ok[table]
    import pandas as pd
    return pd.DataFrame({n: model.columns[n][ok] for n in names
                         if n != matmul.ROW_CHECK.name}).infer_objects()


def _figures(scalars: dict[str, Any]) -> dict[str, Any]:
    return {key: scalars[name] for key, name in FIGURES.items()}


def _sheets_read_by(specs: Sequence[SheetSpec], table: str) -> list[SheetSpec]:
    """The sheets holding `table`, the figures `analyze` reports and everything they depend
    on (in workbook order)."""
    registry = Registry(specs)
    todo = [c.name for c in registry.tables[table].all_columns()] + list(FIGURES.values())
    seen: set[str] = set()
    sheets: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        sheets.add(registry.sheet_of[name])
        owner = registry.table_of.get(name)
        if owner is not None and owner.rows_of:
            todo.extend(c.name for c in registry.tables[owner.rows_of].all_columns())
        if name in registry.spans:
            todo.extend(registry.spans[name][1])
        item = registry.items.get(name)
        if isinstance(item, Quantity):
            todo.extend(item.dependencies())
            if owner is not None and owner.guard:
                todo.append(owner.guard)
    return [s for s in specs if s.name in sheets]


#: The scalars that describe the roofline a table was computed against, by output key.
FIGURES = {
    "gpu": inputs.GPU_NAME.name,
    "dtype": inputs.DTYPE.name,
    "peak_flops": inputs.PEAK_FLOPS.name,
    "hbm_bw": inputs.HBM_BW.name,
    "ridge": inputs.RIDGE.name,
    "compute_eff": inputs.COMPUTE_EFF.name,
    "memory_eff": inputs.MEMORY_EFF.name,
    "attainable_flops": inputs.ATTAINABLE_FLOPS.name,
    "attainable_bw": inputs.ATTAINABLE_BW.name,
    "attainable_ridge": inputs.ATTAINABLE_RIDGE.name,
    "sm_count": inputs.SM_COUNT.name,
    "launch_overhead": inputs.LAUNCH_OVERHEAD.name,
    "tile_m": inputs.TILE_M.name,
    "tile_n": inputs.TILE_N.name,
    "wave_quantization": inputs.WAVE_QUANT.name,
    "overlap_exponent": inputs.OVERLAP.name,
    "compute_ramp_flops": inputs.RAMP_FLOPS.name,
    "compute_ramp_exponent": inputs.RAMP_H.name,
    "compute_ramp_end_flops": inputs.RAMP_END.name,
    "write_cost": inputs.WRITE_COST.name,
    "k_latency": inputs.K_LATENCY.name,
    "k_loop_tile_growth": inputs.K_TILE.name,
    "k_loop_tile_latency": inputs.TILE_LATENCY.name,
    "split_k_floor": inputs.SPLIT_FLOOR.name,
    "split_k_min_k": inputs.SPLIT_MIN_K.name,
    # each operand's storage after "auto", and its bytes per element (a, w, o)
    "act_storage": inputs.ACT_STORAGE.name,
    "weight_storage": inputs.WEIGHT_STORAGE.name,
    "out_storage": inputs.OUT_STORAGE.name,
    "act_bytes": inputs.ACT_BYTES.name,
    "weight_bytes": inputs.WEIGHT_BYTES.name,
    "out_bytes": inputs.OUT_BYTES.name,
}


def gpu_figures(p: WorkbookPlan) -> dict[str, Any]:
    """The GPU figures a plan's table was computed against (SI numbers; names as text).

    `analyze` puts them in `DataFrame.attrs["gpu"]`, so a frame carries its roofline.
    """
    return _figures(p.model.scalars)


def pipeline(*, gpu: str | None = None, dtype: str = DEFAULT_DTYPE,
             gpu_file: str | os.PathLike[str] | None = None,
             **options: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The Pipeline sheet's per-layer table and its totals, as DataFrames."""
    p = plan(gpu=gpu, dtype=dtype, spare_rows=0, gpu_file=gpu_file, **options)
    return table_frame(p, "layers"), block_frame(p, "Pipeline")


def parallelism(*, gpu: str | None = None, dtype: str = DEFAULT_DTYPE,
                gpu_file: str | os.PathLike[str] | None = None, **options: Any) -> pd.DataFrame:
    """The Parallelism sheet's comparison: rows of metrics, columns single/pipeline/tensor."""
    from sheetgen.sheets.parallel import sheet as parallel
    p = plan(gpu=gpu, dtype=dtype, spare_rows=0, gpu_file=gpu_file, **options)
    rows = []
    for row in parallel.COMPARISON.rows:
        if isinstance(row, str):
            continue
        vals = [p.model.scalars[c.name] if c is not None else None for c in row.cells]
        rows.append({"metric": row.label, "unit": row.unit, "single": vals[0],
                     "pipeline": vals[1], "tensor": vals[2], "better": vals[3]})
    import pandas as pd
    return pd.DataFrame(rows).set_index("metric")


def block_frame(p: WorkbookPlan, sheet: str) -> pd.DataFrame:
    """A sheet's one-value block rows (totals and the like) as name, label, value, unit."""
    spec = next(s for s in p.registry.sheets if s.name == sheet)
    rows = []
    for block in spec.blocks:
        for row in block.rows:
            if isinstance(row, str) or len(row.cells) != 1 or row.cells[0] is None:
                continue
            item = row.cells[0]
            rows.append({"name": item.name, "label": row.label,
                         "value": p.model.scalars[item.name], "unit": row.unit})
    import pandas as pd
    return pd.DataFrame(rows).set_index("name")


def table_frame(p: WorkbookPlan, table: str) -> pd.DataFrame:
    """A planned table's reference values (rows its guard accepts, SI units), by name."""
    return _model_frame(p.model, [c.name for c in p.table(table).columns], table)


def build_workbook(out: str | os.PathLike[str], *, gpu: str | None = None,
                   dtype: str = DEFAULT_DTYPE, shapes: ShapesLike = None,
                   spare_rows: int = DEFAULT_SPARE_ROWS,
                   gpu_file: str | os.PathLike[str] | None = None, force: bool = False,
                   shapes_sheet: str | None = None,
                   progress_factory: Callable[[int, str], AbstractContextManager[Any]]
                   | None = None, **options: Any) -> tuple[Path, int]:
    """Build the workbook at `out`; returns the path and the number of shape rows."""
    check_output_path(out, force)  # fail before any work
    p = plan(gpu=gpu, dtype=dtype, shapes=shapes, spare_rows=spare_rows, gpu_file=gpu_file,
             shapes_sheet=shapes_sheet, **options)
    # the writer reports sheet rows: tables side by side share theirs
    total = sum(max([t.last_row + 1 for t in s.tables], default=0) for s in p.sheets)
    ctx = progress_factory(total, "writing") if progress_factory else nullcontext(None)
    with ctx as progress:
        path = write_xlsx(p, out, force=force, progress=progress)
    return path, int(p.model.ok[matmul.TABLE.name].sum())


def build(out: str | os.PathLike[str], **kwargs: Any) -> Path:
    """Build the workbook at `out` (see build_workbook for the keyword arguments)."""
    return build_workbook(out, **kwargs)[0]


#: transformer()'s summary keys: the Transformer sheet's totals of the same names (SI)
TRANSFORMER_SUMMARY = ("ttft", "tpot", "ttft_bound", "tpot_bound", "tokens_per_s",
                       "weights_bytes", "kv_bytes_per_token", "kv_bytes", "memory_per_gpu",
                       "fits", "max_batch", "critical_batch")


def transformer(config: Any, *, gpu: str | None = None,
                gpu_file: str | os.PathLike[str] | None = None, dtype: str = DEFAULT_DTYPE,
                batch: int = 1, prompt_tokens: int = 512, generate: int = 128, tp: int = 1,
                weight_dtype: str | None = None, activation_dtype: str | None = None,
                output_dtype: str | None = None, kv_dtype: str | None = None,
                embedding_dtype: str | None = None, reserve: float = 0.10,
                allreduce: str = "auto", attention_dtype: str | None = None,
                attention_eff: float | None = None, prefill_chunk: int = 0,
                layer_kernels: int | None = None, attention_quantize: bool = False,
                **options: Any) -> pd.DataFrame:
    """A transformer's serving estimate: one row per operation per phase (prefill, decode).

    `config`: a bundled model name (as `--model`), a path to a Hugging Face config.json
    (as `--model-config`), or a dict of its fields. `tp`: the tensor-parallel degree (the
    Parallelism sheet's `gpus` is separate). `weight_dtype`, `activation_dtype`,
    `output_dtype`: every sheet's operand storage (as `plan`; None follows `dtype`);
    `kv_dtype` and `embedding_dtype` (None: the activations' and the weights' storage).
    `attention_dtype` and `attention_eff`: the realistic estimate's attention rate, that
    dtype's peak times flash attention's efficiency (None: the compute dtype, fp16 under
    fp8/int8 compute; None: 0.35, FlashAttention-2 on an H100). `prefill_chunk`: chunked
    prefill, tokens per step and sequence (0: the whole prompt in one step). `layer_kernels`:
    kernels per layer, each paying the launch floor (None: 9, a fused build; 15: unfused).
    `attention_quantize`: the attention output is quantized by a kernel of its own where the
    activations are narrower than the GEMM outputs (fp8; TensorRT-LLM v0.5's FP8 engines).
    Columns: phase, op, m, k, n, count, flops, bytes_moved, intensity, regime, time (the
    bound), compute_ramp (a GEMM's share of the measured efficiency; NaN where none applies),
    k_loop and split_k (a GEMM row's kernel terms, summed over its kernels; NaN elsewhere),
    realistic_time. attrs["gpu"]: the GPU figures; attrs["summary"]: ttft, tpot,
    ttft_bound, tpot_bound, tokens_per_s (whole batch), weights_bytes (one GPU's),
    kv_bytes_per_token (all layers), kv_bytes, memory_per_gpu, fits, max_batch,
    critical_batch, in SI. `options`: other BuildConfig fields (compute_eff, launch_overhead,
    ...).
    """
    from sheetgen.inputs.model_config import resolve
    from sheetgen.sheets import transformer as xf

    ti = xf.TransformerInputs(resolve(config), batch=batch, prompt_tokens=prompt_tokens,
                              generate=generate, tp=tp, kv_dtype=kv_dtype,
                              embedding_dtype=embedding_dtype, reserve=reserve,
                              allreduce=allreduce, attention_dtype=attention_dtype,
                              prefill_chunk=prefill_chunk,
                              attention_quantize=attention_quantize,
                              **({} if layer_kernels is None
                                 else {"layer_kernels": layer_kernels}),
                              **({} if attention_eff is None
                                 else {"attention_eff": attention_eff}))
    # the reference model of `plan`'s sheets, without planning their cells (4x the work)
    cfg = BuildConfig(gpu=gpu, dtype=dtype, spare_rows=0, presets=load_presets(gpu_file),
                      transformer=ti, weight_dtype=weight_dtype,
                      activation_dtype=activation_dtype, output_dtype=output_dtype,
                      **options).resolved()
    scalars = evaluate(Registry(sheet_specs(cfg.layout())), input_values(cfg)).scalars
    import pandas as pd
    frame = pd.DataFrame(xf.op_records(ti.model, scalars))
    frame.attrs["gpu"] = _figures(scalars)
    frame.attrs["summary"] = {k: scalars[k] for k in TRANSFORMER_SUMMARY}
    frame.attrs["model"] = ti.model.name
    frame.attrs["assumptions"] = list(ti.model.assumptions)
    return frame
