"""The "GPU Specs" sheet: the preset table every lookup on the Inputs sheet reads.

The presets are written as editable input cells, so a user can model an unlisted part by
typing its figures, and the checker rebuilds the reference model from what the sheet says.
Below the table, a "Sources" list gives the public document behind each preset figure, one
row per GPU and figure, wrapped in a cell as wide as the table so it reads on screen and
prints whole (a one-line column of every source ran off the printed page).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from sheetgen.core.units import rate_unit
from sheetgen.inputs import precision
from sheetgen.inputs.presets import DTYPE_BYTES, DTYPES, Presets
from sheetgen.model.vocabulary import Input, SheetSpec, Span, Table, Text, Validation

SHEET = "GPU Specs"
MISSING = "n/a"  # a dtype the GPU lacks, or an SM count the preset left out: never zero

#: what "auto" stores an operand in: one of the storage table's names, beside it
_STORED = Validation("list", source="storage_name", message="A storage dtype (the table beside)")
DTYPE_TABLE = Table(
    name="dtypes",
    header_row=3,
    col=0,
    inputs=(
        Input("dtype_name", "dtype", fmt="text"),
        Input("dtype_bytes", "bytes per element", "B", fmt="int",
              validation=Validation("whole_min", minimum=1, maximum=16,
                                    message="Bytes per element: a whole number, 1 or more")),
        # what "auto" stores each operand in for this compute dtype (sheetgen.inputs.precision)
        Input("dtype_auto_act", "auto: A stored as", fmt="text", validation=_STORED),
        Input("dtype_auto_weight", "auto: B stored as", fmt="text", validation=_STORED),
        Input("dtype_auto_out", "auto: C stored as", fmt="text", validation=_STORED),
    ),
    columns=(),
    range_names={"dtype_name": "DTYPE_LIST", "dtype_bytes": "DTYPE_BYTES_LIST"},
)
#: Storage precisions an operand can be kept in, beside the compute dtypes.
STORAGE_TABLE = Table(
    name="storage",
    header_row=DTYPE_TABLE.header_row,
    col=len(DTYPE_TABLE.inputs) + 1,
    inputs=(
        Input("storage_name", "storage", fmt="text"),
        Input("storage_bytes", "bytes per element", "B", fmt="general",
              validation=Validation("decimal_range", minimum=0.0625, maximum=16,
                                    message="Bytes per element, 0.0625 (half a bit) or more")),
        Input("storage_note", "counts", fmt="text"),
    ),
    columns=(),
    range_names={"storage_name": "STORAGE_LIST", "storage_bytes": "STORAGE_BYTES_LIST"},
)

PEAK_COLUMNS = tuple(f"peak_{d}" for d in DTYPES)
#: per-dtype measured matmul efficiencies (blank: the dtype uses the GPU's one efficiency)
EFF_COLUMNS = tuple(f"eff_{d}" for d in DTYPES)

#: a GPU's bandwidths and memory divide or bound everything: positive numbers; its link
#: latency may be 0 (a check on every row, a user's own GPU's included)
_RATE = Validation("decimal_range", minimum=1, maximum=1e18, message="A positive number")
_LATENCY = Validation("decimal_range", minimum=0, maximum=1e18,
                      message="A number, 0 or more")
GPU_TABLE = Table(
    name="gpus",
    header_row=DTYPE_TABLE.header_row + max(len(DTYPES), len(precision.STORAGE_DTYPES)) + 3,
    col=0,
    inputs=(
        Input("spec_name", "GPU", fmt="text"),
        *(Input(f"peak_{d}", f"{d} dense peak", rate_unit(d), fmt="sci") for d in DTYPES),
        Input("spec_hbm_bw", "HBM bandwidth", "B/s", fmt="sci", validation=_RATE),
        Input("spec_memory", "GPU memory", "B", fmt="sci", validation=_RATE),
        Input("spec_link_bw", "GPU link bandwidth per direction", "B/s", fmt="sci",
              validation=_RATE),
        Input("spec_link_latency", "GPU link latency", "s", fmt="sci",
              validation=_LATENCY),
        Input("spec_host_bw", "host link (PCIe) bandwidth per direction", "B/s", fmt="sci",
              validation=_RATE),
        Input("spec_meas_compute", "measured matmul efficiency", "fraction", fmt="fraction"),
        *(Input(f"eff_{d}", f"{d} matmul efficiency (blank: the one above)", "fraction",
                fmt="fraction") for d in DTYPES),
        Input("spec_meas_memory", "measured memory efficiency", "fraction", fmt="fraction"),
        Input("spec_meas_link", "measured link efficiency", "fraction", fmt="fraction"),
        Input("spec_sms", "SMs (AMD: CUs)", fmt="int"),
        Input("spec_launch", "launch overhead", "s", fmt="sci"),
        Input("spec_tile_m", "tile m", "rows", fmt="int"),
        Input("spec_tile_n", "tile n", "cols", fmt="int"),
        Input("spec_waves", "wave quantization", "on/off", fmt="text"),
        Input("spec_overlap", "overlap exponent p (0: hard max)", "exponent", fmt="ratio"),
        Input("spec_ramp_flops", "compute ramp F_half (0: off)", "FLOP", fmt="sci"),
        Input("spec_ramp_h", "compute ramp exponent h", "exponent", fmt="ratio"),
        Input("spec_ramp_end", "compute ramp end (0: none)", "FLOP", fmt="sci"),
        Input("spec_write_cost", "write cost (1: off)", "reads a byte", fmt="ratio"),
        Input("spec_k_latency", "K-loop latency per unit of k", "s", fmt="latency"),
        Input("spec_k_tile", "K loop grows with the tile", "on/off", fmt="text"),
        Input("spec_tile_latency", "latency per tile", "s", fmt="latency"),
        Input("spec_split_floor", "split-K kernel floor", "s", fmt="sci"),
        Input("spec_split_min_k", "split-K from k (0: off)", "k", fmt="int"),
    ),
    columns=(),
    spans=(Span("spec_peaks", PEAK_COLUMNS[0], PEAK_COLUMNS[-1], "PEAK_TABLE"),
           Span("spec_effs", EFF_COLUMNS[0], EFF_COLUMNS[-1], "EFF_TABLE")),
    range_names={"spec_name": "GPU_LIST"},
)

#: preset attribute behind each per-GPU input column
_GPU_FIELDS = {
    "spec_hbm_bw": "hbm_bandwidth",
    "spec_memory": "memory_bytes",
    "spec_link_bw": "link_bandwidth",
    "spec_link_latency": "link_latency",
    "spec_host_bw": "host_bandwidth",
    "spec_meas_compute": "measured_compute_efficiency",
    "spec_meas_memory": "measured_memory_efficiency",
    "spec_meas_link": "measured_link_efficiency",
    "spec_sms": "sm_count",
    "spec_launch": "launch_overhead",
    "spec_tile_m": "tile_m",
    "spec_tile_n": "tile_n",
    "spec_overlap": "overlap_exponent",
    "spec_ramp_flops": "compute_ramp_flops",
    "spec_ramp_h": "compute_ramp_exponent",
    "spec_ramp_end": "compute_ramp_end_flops",
    "spec_write_cost": "write_cost",
    "spec_k_latency": "k_latency",
    "spec_tile_latency": "k_loop_tile_latency",
    "spec_split_floor": "split_k_floor",
    "spec_split_min_k": "split_k_min_k",
}
ON, OFF = "on", "off"  # how the wave-quantization switch reads in a cell


def sheet(presets: Presets | None = None) -> SheetSpec:
    """The sheet; with `presets`, their sources listed below the GPU table (the checker and
    the Google reader plan without presets: the sources are text, not model inputs)."""
    n_cols = len(GPU_TABLE.all_columns())
    widths = {0: 18.0, 1: 12.0} | {i: 13.0 for i in range(2, n_cols)}
    return SheetSpec(
        name=SHEET,
        time_unit="µs",
        texts=(
            Text(0, 0, "GPU presets", "title"),
            Text(1, 0, "Dense peaks in FLOP/s (OP/s for int8); HBM bandwidth in bytes/s, "
                 "reads and writes together; GPU and host link bandwidths in bytes/s per "
                 "direction; memory in bytes as the vendor means its GB (GiB). 'n/a' marks a "
                 "dtype the GPU lacks. Yellow cells are inputs: edit a figure and every sheet "
                 "follows. Of a preset fitted per dtype (`calibrate --preset-out`), the "
                 "measured memory efficiency and the figures from the launch overhead on are "
                 "the ones of the dtype the workbook was built for."),
            Text(DTYPE_TABLE.header_row - 1, 0, "Data types (compute)", "subtitle"),
            Text(STORAGE_TABLE.header_row - 1, STORAGE_TABLE.col,
                 "Storage per operand (bytes moved = a·m·k + w·k·n + o·m·n)", "subtitle"),
            Text(GPU_TABLE.header_row - 1, 0, "GPUs", "subtitle"),
            *(source_texts(presets, n_cols) if presets is not None else ()),
        ),
        tables=(DTYPE_TABLE, STORAGE_TABLE, GPU_TABLE),
        column_widths=widths,
        freeze=None,
        keep_rows=source_groups(presets) if presets is not None else (),
    )


#: the figure each preset source key documents, as the GPU table's headers name it
_FIGURE_LABELS = {attr: next(i.label for i in GPU_TABLE.inputs if i.name == col)
                  for col, attr in _GPU_FIELDS.items()} | {
    "peak_flops": "dense peaks", "wave_quantization": "wave quantization",
    "k_loop_tile_growth": "K loop grows with the tile",
    "measured_compute_efficiency_by_dtype": "matmul efficiency by dtype"}
FIGURE_SPAN = 3  # columns B..D: the longest figure label on one line
SOURCES_TITLE = "Sources"


def _source_rows(presets: Presets) -> Iterator[tuple[int, str, str, str]]:
    """(row, GPU name, figure key, source) of each line of the Sources list: the GPUs one
    after the other from two rows below its subtitle, one row per figure."""
    row = _sources_title_row(presets) + 2
    for gpu in presets.gpus:
        for key, source in gpu.sources.items():
            yield row, gpu.name, key, source
            row += 1


def _sources_title_row(presets: Presets) -> int:
    return GPU_TABLE.header_row + len(presets.gpus) + 2  # two rows below the GPU table


def source_texts(presets: Presets, n_cols: int) -> list[Text]:
    """The Sources list: a subtitle two rows below the GPU table, then per GPU and figure
    the GPU's name (on its first row), the figure and its source, merged across the rest of
    the table's width and wrapped. Plain text cells: a source is never written as a formula."""
    row = _sources_title_row(presets)
    out = [Text(row, 0, SOURCES_TITLE, "subtitle"),
           Text(row + 1, 0, "The public document behind each preset figure (`sheetgen gpus "
                "NAME --sources` prints the same).")]
    text_col = 1 + FIGURE_SPAN
    named: set[str] = set()
    for r, name, key, source in _source_rows(presets):
        if name not in named:
            out.append(Text(r, 0, name, "label"))
            named.add(name)
        label = _FIGURE_LABELS.get(key, key.replace("_", " "))
        out += [Text(r, 1, label, "label", span=FIGURE_SPAN),
                Text(r, text_col, source, "label", span=n_cols - text_col)]
    return out


def source_groups(presets: Presets) -> tuple[tuple[int, int], ...]:
    """Each GPU's rows of the Sources list (first, last), printed on one page: its name is
    on its first row only, so a page that began inside a group would not say whose figures
    it lists (and a long list's last few rows made a page of their own)."""
    rows: dict[str, list[int]] = {}
    for r, name, _, _ in _source_rows(presets):
        rows.setdefault(name, []).append(r)
    return tuple((r[0], r[-1]) for r in rows.values())


def input_values(presets: Presets, dtype: str | None = None) -> dict[str, list[Any]]:
    """The values of this sheet's input columns, from a preset set; the refined-time figures
    (memory efficiency, floor, tiles, waves, overlap, ramp, kernel terms) are `dtype`'s own
    where a preset fitted several (`refined_by_dtype`), as the Inputs sheet's cells take them,
    so its Suggested column shows what they were built from."""
    values: dict[str, list[Any]] = {
        "dtype_name": list(DTYPES),
        "dtype_bytes": [DTYPE_BYTES[d] for d in DTYPES],
        "dtype_auto_act": [precision.AUTO_STORAGE[d].activation for d in DTYPES],
        "dtype_auto_weight": [precision.AUTO_STORAGE[d].weight for d in DTYPES],
        "dtype_auto_out": [precision.AUTO_STORAGE[d].output for d in DTYPES],
        "storage_name": list(precision.STORAGE_DTYPES),
        "storage_bytes": [precision.STORAGE_BYTES[d] for d in precision.STORAGE_DTYPES],
        "storage_note": [precision.STORAGE_NOTES.get(d, "") for d in precision.STORAGE_DTYPES],
        "spec_name": [g.name for g in presets.gpus],
    }
    for d in DTYPES:
        values[f"peak_{d}"] = [g.peak_flops.get(d, MISSING) for g in presets.gpus]
        values[f"eff_{d}"] = [g.compute_efficiency_by_dtype.get(d) for g in presets.gpus]
    own = [g.for_dtype(dtype) if dtype else g for g in presets.gpus]
    for col, attr in _GPU_FIELDS.items():  # a figure the preset left out (sm_count): "n/a"
        values[col] = [MISSING if getattr(g, attr) is None else getattr(g, attr) for g in own]
    values["spec_waves"] = [switch(g.wave_quantization) for g in own]
    values["spec_k_tile"] = [switch(g.k_loop_tile_growth) for g in own]
    return values


def switch(on: bool) -> str:
    """A boolean as the workbook's on/off text."""
    return ON if on else OFF


def match(names: Any, key: Any) -> int | None:
    """Position of key in names as MATCH(key, names, 0) finds it (case-insensitive), or None."""
    want = str(key).lower()
    for i, name in enumerate(np.asarray(names, dtype=object).ravel()):
        if str(name).lower() == want:
            return i
    return None


def number(value: Any) -> float:
    """A looked-up figure as a float; NaN for a gap such as 'n/a'."""
    if isinstance(value, bool):
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def lookup(column: Any, names: Any, key: Any) -> float:
    """INDEX(column, MATCH(key, names, 0)) as a number; NaN when key is absent. A blank cell
    is 0, as a formula that is just INDEX of a blank cell shows it in every engine."""
    i = match(names, key)
    if i is None:
        return float("nan")
    value = np.asarray(column, dtype=object).ravel()[i]
    return 0.0 if value is None else number(value)
