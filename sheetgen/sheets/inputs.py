"""The "Inputs" sheet: the GPU and dtype dropdowns, efficiency inputs and the named figures
(`PEAK_FLOPS`, `HBM_BW`, `DTYPE_BYTES`, `VRAM_BYTES`, `RIDGE`, ...) every other sheet reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sheetgen.core.excel import is_number
from sheetgen.core.units import INTEGER_DTYPES
from sheetgen.inputs import precision
from sheetgen.inputs.presets import (
    MAX_K_LATENCY,
    MAX_OVERLAP_EXPONENT,
    MAX_RAMP_EXPONENT,
    MAX_RAMP_FLOPS,
    MAX_SPLIT_K_MIN_K,
    MAX_TILE,
    MAX_TILE_LATENCY,
    MAX_WRITE_COST,
    MIN_RAMP_EXPONENT,
)
from sheetgen.model import factories
from sheetgen.model.vocabulary import (
    Block,
    BlockRow,
    FormatSwitch,
    Input,
    Quantity,
    SheetSpec,
    Text,
    Validation,
)
from sheetgen.sheets.gpu_specs import MISSING, OFF, ON, lookup, match, number

SHEET = "Inputs"

GPU_NAME = Input(
    "gpu_name", "GPU", fmt="text", defined_name="GPU_NAME",
    validation=Validation("list", source="spec_name", message="Pick a GPU (GPU Specs sheet)"),
    doc="Choose from the dropdown; the figures below follow.",
)
DTYPE = Input(
    "dtype", "Data type", fmt="text", defined_name="DTYPE",
    validation=Validation("list", source="dtype_name", message="Pick a dtype"),
    doc="Sets bytes per element and which peak applies.",
)


def _storage_input(name: str, label: str, defined: str, operand: str) -> Input:
    return Input(
        name, label, fmt="text", defined_name=defined,
        validation=Validation("choices", choices=precision.CHOICES,
                              message="auto, or a storage dtype (GPU Specs sheet)"),
        doc=f"Storage of {operand}; auto: the compute dtype's (fp8 and int8 write bf16).",
    )


ACT_DTYPE = _storage_input("activation_dtype", "Activations (A) stored as", "ACT_DTYPE",
                           "A, the m×k activations")
WEIGHT_DTYPE = _storage_input("weight_dtype", "Weights (B) stored as", "WEIGHT_DTYPE",
                              "B, the k×n weights")
OUT_DTYPE = _storage_input("output_dtype", "Outputs (C) stored as", "OUT_DTYPE",
                           "C, the m×n outputs")


def _storage_used(name: str, choice: str, auto_column: str, label: str, defined: str,
                  attr: str) -> Quantity:
    """The storage an operand uses: its choice, or the compute dtype's "auto" storage (the
    GPU Specs sheet's dtype table says which)."""

    def reference(**a: Any) -> str:
        chosen = a[choice]
        if str(chosen).strip().lower() != precision.AUTO:
            return chosen
        i = match(a["dtype_name"], a["dtype"])
        return "" if i is None else np.asarray(a[auto_column], dtype=object).ravel()[i]

    return Quantity(
        name, label, "",
        f'IF({{{choice}}}="{precision.AUTO}",INDEX({{{auto_column}[]}},'
        f"MATCH({{dtype}},{{dtype_name[]}},0)),{{{choice}}})",
        reference, fmt="text", defined_name=defined,
        doc=f"What {attr} is stored in, after auto.")


def _storage_bytes(name: str, used: str, label: str, defined: str, attr: str) -> Quantity:
    return Quantity(
        name, label, "B", f"INDEX({{storage_bytes[]}},MATCH({{{used}}},{{storage_name[]}},0))",
        lambda **a: lookup(a["storage_bytes"], a["storage_name"], a[used]),
        fmt="general", defined_name=defined,
        doc=f"Bytes per element of {attr} in every bytes-moved formula.")


ACT_STORAGE = _storage_used("act_storage", "activation_dtype", "dtype_auto_act",
                            "A stored as (after auto)", "ACT_STORAGE", "A")
WEIGHT_STORAGE = _storage_used("weight_storage", "weight_dtype", "dtype_auto_weight",
                               "B stored as (after auto)", "WEIGHT_STORAGE", "B")
OUT_STORAGE = _storage_used("out_storage", "output_dtype", "dtype_auto_out",
                            "C stored as (after auto)", "OUT_STORAGE", "C")
ACT_BYTES = _storage_bytes(factories.ACT_BYTES, "act_storage", "A bytes per element (a)",
                           "ACT_BYTES", "A")
WEIGHT_BYTES = _storage_bytes(factories.WEIGHT_BYTES, "weight_storage",
                              "B bytes per element (w)", "WEIGHT_BYTES", "B")
OUT_BYTES = _storage_bytes(factories.OUT_BYTES, "out_storage", "C bytes per element (o)",
                           "OUT_BYTES", "C")

EFF_MIN = 0.0001  # the smallest efficiency the sheet's validation (and the CLI) accepts


def _efficiency(name: str, label: str, defined: str, doc: str) -> Input:
    return Input(
        name, label, "fraction", fmt="fraction", defined_name=defined, doc=doc,
        validation=Validation("decimal_range", minimum=EFF_MIN, maximum=1.0,
                              message="A fraction in (0, 1]; 1 = pure roofline"),
    )


COMPUTE_EFF = _efficiency("compute_eff", "Compute efficiency", "COMPUTE_EFF",
                          "Share of peak FLOP/s a matmul reaches; 1.0 = pure roofline.")
MEMORY_EFF = _efficiency("memory_eff", "Memory efficiency", "MEMORY_EFF",
                         "Share of HBM bandwidth reached; 1.0 = pure roofline.")
LINK_EFF = _efficiency("link_eff", "Link efficiency", "LINK_EFF",
                       "Share of GPU-to-GPU link bandwidth reached (parallelism sheet).")


LAUNCH_OVERHEAD = Input(
    "launch_overhead", "Launch overhead", "s", fmt="sci", defined_name="LAUNCH_OVERHEAD",
    validation=Validation("decimal_range", minimum=0.0, maximum=1.0,
                          message="µs per matmul call, 0 to 1,000,000 (0 = no floor)"),
    doc="Fixed cost of one matmul call (launch, first tile's latency): the refined time's floor.",
)
_TILE_RULE = Validation("whole_min", minimum=1, maximum=MAX_TILE,
                        message=f"A whole number of rows/cols, 1 to {MAX_TILE}")
TILE_M = Input("tile_m", "Tile m", "rows", fmt="int", defined_name="TILE_M",
               validation=_TILE_RULE, doc="Rows of C one thread block computes.")
TILE_N = Input("tile_n", "Tile n", "cols", fmt="int", defined_name="TILE_N",
               validation=_TILE_RULE, doc="Columns of C one thread block computes.")
OVERLAP = Input(
    "overlap", "Overlap exponent", "exponent", fmt="ratio", defined_name="OVERLAP",
    validation=Validation("decimal_range", minimum=0.0, maximum=MAX_OVERLAP_EXPONENT,
                          message="0 = the hard max; 1 = compute and memory times add; "
                                  f"up to {MAX_OVERLAP_EXPONENT:g}"),
    doc="p of the refined time's (compute^p + memory^p)^(1/p); 0 = max(compute, memory), "
        "the roofline's perfect overlap.",
)
#: The compute ramp's three figures, as the Inputs sheet and the Measured sheet validate them.
RAMP_FLOPS_RULE = Validation("decimal_range", minimum=0, maximum=MAX_RAMP_FLOPS,
                             message="FLOPs at half the efficiency; 0 turns the ramp off")
RAMP_H_RULE = Validation("decimal_range", minimum=MIN_RAMP_EXPONENT, maximum=MAX_RAMP_EXPONENT,
                         message=f"{MIN_RAMP_EXPONENT:g} to {MAX_RAMP_EXPONENT:g}: how "
                                 "steeply the efficiency ramps with FLOPs")
RAMP_END_RULE = Validation("decimal_range", minimum=0, maximum=MAX_RAMP_FLOPS,
                           message="FLOPs of the largest matmul measured: the efficiency is "
                                   "the one there, held beyond; 0: it is the asymptote")
RAMP_FLOPS = Input(
    "compute_ramp_flops", "Compute ramp F_half", "FLOP", fmt="sci",
    defined_name="COMPUTE_RAMP_FLOPS", validation=RAMP_FLOPS_RULE,
    doc="A matmul of F FLOPs reaches (1 + (F_half/end)^h)/(1 + (F_half/F)^h), at most 1, "
        "of the compute efficiency (the refined time's compute ramp: small matmuls do not "
        "fill the GPU); 0 = off, every matmul at the efficiency. `sheetgen calibrate "
        "--preset-out` fits it.",
)
RAMP_H = Input("compute_ramp_h", "Compute ramp exponent h", "exponent", fmt="ratio",
               defined_name="COMPUTE_RAMP_H", validation=RAMP_H_RULE,
               doc="How steeply the efficiency climbs with FLOPs around F_half.")
RAMP_END = Input(
    "compute_ramp_end", "Compute ramp end", "FLOP", fmt="sci", defined_name="COMPUTE_RAMP_END",
    validation=RAMP_END_RULE,
    doc="The largest matmul the fit measured: the compute efficiency is the one reached "
        "there, and held beyond it (no extrapolation); 0 = the efficiency is the asymptote.",
)
WRITE_COST_RULE = Validation("decimal_range", minimum=1, maximum=MAX_WRITE_COST,
                             message=f"1 (off) to {MAX_WRITE_COST:g} bytes read per byte "
                                     "written")
WRITE_COST = Input(
    "write_cost", "Write cost", "reads a byte", fmt="ratio", defined_name="WRITE_COST",
    validation=WRITE_COST_RULE,
    doc="A byte of C written costs this many bytes read: the refined time's memory side is "
        "memory time + (this − 1) · C's bytes / attainable bandwidth; 1 = off. `sheetgen "
        "calibrate --preset-out` fits it (1.1–1.6 on NVIDIA's bf16 GEMMs).",
)
#: The kernel terms after the GEMM (sheetgen.model.kernel_terms), as the Inputs sheet and the
#: Measured sheet validate them.
K_LATENCY_RULE = Validation("decimal_range", minimum=0, maximum=MAX_K_LATENCY,
                            message="Seconds per unit of k, 0 or more (0 = off)")
SWITCH_RULE = Validation("choices", choices=(ON, OFF), message="on or off")
TILE_LATENCY_RULE = Validation("decimal_range", minimum=0, maximum=MAX_TILE_LATENCY,
                               message="Seconds per tile, 0 or more")
SPLIT_FLOOR_RULE = Validation("decimal_range", minimum=0, maximum=1,
                              message="Seconds, 0 or more")
SPLIT_MIN_K_RULE = Validation("decimal_range", minimum=0, maximum=float(MAX_SPLIT_K_MIN_K),
                              message="0 turns the split-K floor off")
K_LATENCY = Input(
    "k_latency", "K-loop latency per unit of k", "s", fmt="latency",
    defined_name="K_LOOP_LATENCY", validation=K_LATENCY_RULE,
    doc="A GEMM whose few output tiles cannot hide its K loop's loads takes k · this more "
        "(0 where it runs split-K); 0 = off. `sheetgen calibrate --preset-out` fits it.",
)
K_TILE = Input(
    "k_tile_growth", "K loop grows with the tile", "on/off", fmt="text",
    defined_name="K_LOOP_TILE_GROWTH", validation=SWITCH_RULE,
    doc="on: the K loop's latency scales 1, 2, 4 with the library's tile (m ≤ 64, ≤ 128, "
        "more) and bounds the time: max(refined, floor + waves of tiles · (latency per tile + "
        "K loop)) instead of adding to it.",
)
TILE_LATENCY = Input(
    "tile_latency", "Latency per tile", "s", fmt="latency", defined_name="TILE_LATENCY",
    validation=TILE_LATENCY_RULE,
    doc="Each tile's own cost beside its K loop (prologue, epilogue), per wave of the "
        "library's tiles; used while the K loop grows with the tile.",
)
SPLIT_FLOOR = Input(
    "split_k_floor", "Split-K kernel floor", "s", fmt="sci", defined_name="SPLIT_K_FLOOR",
    validation=SPLIT_FLOOR_RULE,
    doc="A second (reduction) kernel's launch floor, added where the GEMM runs split-K.",
)
SPLIT_MIN_K = Input(
    "split_k_min_k", "Split-K from k", "k", fmt="int", defined_name="SPLIT_K_MIN_K",
    validation=SPLIT_MIN_K_RULE,
    doc="A GEMM runs split-K where its tiles under-fill the SMs and k ≥ this; 0 = never.",
)
WAVE_QUANT = Input(
    "wave_quant", "Wave quantization", "on/off", fmt="text", defined_name="WAVE_QUANT",
    validation=SWITCH_RULE,
    doc="on: the refined time pays for a partial last wave of tiles; off: plain compute time.",
)


def _gpu_lookup(name: str, label: str, unit: str, column: str, defined: str | None,
                fmt: str = "sci", doc: str = "") -> Quantity:
    """A per-GPU figure looked up in the preset table by the selected GPU."""

    def reference(**a: Any) -> float:
        return lookup(a[column], a["spec_name"], a["gpu_name"])

    return Quantity(
        name, label, unit,
        template=f"INDEX({{{column}[]}},MATCH({{gpu_name}},{{spec_name[]}},0))",
        reference=reference, fmt=fmt, defined_name=defined, doc=doc,
    )


def _peak(gpu_name: Any, dtype: Any, spec_name: Any, spec_peaks: Any, dtype_name: Any,
          dtype_gap: Any = None) -> float:
    """The peak, or NaN for a gap (the model then shows dtype_gap, as the sheet does)."""
    row, col = match(spec_name, gpu_name), match(dtype_name, dtype)
    if row is None or col is None:
        return float("nan")
    return number(spec_peaks[row][col])


_PEAK_LOOKUP = ("INDEX({spec_peaks[]},MATCH({gpu_name},{spec_name[]},0),"
                "MATCH({dtype},{dtype_name[]},0))")
PEAK_FLOPS = Quantity(
    "peak_flops", "Peak FLOP/s (dense)", "FLOP/s",
    "IF(ISNUMBER(" + _PEAK_LOOKUP + ")," + _PEAK_LOOKUP + ",{dtype_gap})",
    _peak, fmt="sci", defined_name="PEAK_FLOPS",
    doc="Dense peak of the GPU for the dtype: the tensor-core rate, except fp32's, which is "
        "the CUDA-core FMA rate (the DTYPE_GAP marker when the GPU lacks the dtype).",
    gap_marker="dtype_gap",
)
#: What every time, rate and regime shows when the GPU lacks the dtype (the GPU dropdown
#: allows any pair): a short marker, never #VALUE!, reaching every downstream cell.
DTYPE_GAP = Quantity(
    "dtype_gap", "Marker when the GPU lacks the dtype", "",
    '"n/a: no "&{dtype}&" on this GPU"', lambda dtype: f"n/a: no {dtype} on this GPU",
    fmt="text", defined_name="DTYPE_GAP", handles_gaps=True,
    doc="Shown instead of a number in every cell computed from the missing peak.",
)
HBM_BW = _gpu_lookup("hbm_bw", "HBM bandwidth", "B/s", "spec_hbm_bw", "HBM_BW")
DTYPE_BYTES = Quantity(
    "dtype_bytes_sel", "Bytes per element (compute dtype)", "B",
    "INDEX({dtype_bytes[]},MATCH({dtype},{dtype_name[]},0))",
    lambda dtype, dtype_bytes, dtype_name: lookup(dtype_bytes, dtype_name, dtype),
    fmt="int", defined_name="DTYPE_BYTES",
    doc="The compute dtype's own size; bytes moved use each operand's storage (a, w, o).",
)
#: How the fit reads the card's capacity: "GiB", as the card has it (NVIDIA's and AMD's
#: "40 GB" of HBM is 40 GiB), less the reserve; "GB", the interview's arithmetic (40 GB =
#: 40e9 B, nothing reserved).
GIB, GB = "GiB", "GB"
BYTES_PER_GIB = 1073741824  # 2**30
#: CUDA context with its libraries' kernels (about 0.8 GB: pytorch/pytorch#34323), NCCL's
#: buffers (NCCL_BUFFSIZE, 4 MiB per channel and peer), cuBLAS workspaces, and the half GiB
#: the driver keeps from CUDA (an A100 40GB reports 42,405,855,232 of 42,949,672,960 B).
DEFAULT_RESERVE = 2 * BYTES_PER_GIB
CAPACITY_AS = Input(
    "capacity_as", "Capacity as", "GiB/GB", fmt="text", defined_name="CAPACITY_AS",
    validation=Validation("choices", choices=(GIB, GB), message="GiB or GB"),
    doc="GiB: the card's bytes (the vendor's GB are GiB) less the reserve; GB: the "
        "advertised figure in decimal bytes, nothing reserved (the interview's 40 GB = 40e9).",
)
MEMORY_RESERVE = Input(
    "memory_reserve", "Memory reserve", "B", fmt="gb", defined_name="MEMORY_RESERVE",
    validation=Validation("decimal_range", minimum=0.0, maximum=1e15,
                          message="Bytes kept from the fit, 0 or more"),
    doc="Kept from the fit when capacity is GiB: CUDA context and kernels, NCCL buffers, "
        "library workspaces, driver-held memory. Default 2 GiB; vLLM keeps 10 % "
        "(gpu_memory_utilization 0.9) for these and its own activation peaks.",
)
CARD_BYTES = _gpu_lookup("card_bytes", "GPU memory (as the card has it)", "B", "spec_memory",
                         "CARD_BYTES",
                         doc="The GPU Specs figure: the advertised GB as the vendor means "
                             "them (GiB).")


def _capacity(capacity_as: Any, card_bytes: float) -> float:
    return card_bytes / BYTES_PER_GIB * 1e9 if _as_gb(capacity_as) else card_bytes


def _as_gb(capacity_as: Any) -> bool:
    return str(capacity_as).strip().lower() == GB.lower()


CAPACITY_BYTES = Quantity(
    "capacity_bytes", "GPU memory (capacity as chosen)", "B",
    f'IF({{capacity_as}}="{GB}",{{card_bytes}}/{BYTES_PER_GIB}*1E+09,{{card_bytes}})',
    _capacity, fmt="sci", defined_name="CAPACITY_BYTES",
    doc="CARD_BYTES (capacity as GiB), or the advertised GB in decimal bytes (as GB). "
        "Before any reserve (the Transformer sheet takes its own share off this).",
)
VRAM_BYTES = Quantity(
    "vram_bytes", "GPU memory the fit uses", "B",
    f'{{capacity_bytes}}-IF({{capacity_as}}="{GB}",0,{{memory_reserve}})',
    lambda capacity_bytes, capacity_as, memory_reserve:
        capacity_bytes - (0.0 if _as_gb(capacity_as) else memory_reserve),
    fmt="sci", defined_name="VRAM_BYTES",
    doc="Every fit check on the Pipeline and Parallelism sheets reads this: CAPACITY_BYTES "
        "less MEMORY_RESERVE (capacity as GiB), or the advertised GB in decimal bytes with "
        "nothing reserved (capacity as GB).",
)
RIDGE = Quantity(
    "ridge", "Ridge point (peak / bandwidth)", "FLOP/B", "{peak_flops}/{hbm_bw}",
    lambda peak_flops, hbm_bw: peak_flops / hbm_bw, fmt="ratio", defined_name="RIDGE",
    doc="Intensity above which a matmul is compute-bound at spec figures.",
)
ATTAINABLE_FLOPS = Quantity(
    "attainable_flops", "Attainable FLOP/s", "FLOP/s", "{peak_flops}*{compute_eff}",
    lambda peak_flops, compute_eff: peak_flops * compute_eff, fmt="sci",
    defined_name="ATTAINABLE_FLOPS", doc="Peak times compute efficiency: the flat roof.",
)
ATTAINABLE_BW = Quantity(
    "attainable_bw", "Attainable bandwidth", "B/s", "{hbm_bw}*{memory_eff}",
    lambda hbm_bw, memory_eff: hbm_bw * memory_eff, fmt="sci",
    defined_name="ATTAINABLE_BW", doc="Bandwidth times memory efficiency: the slope.",
)
ATTAINABLE_RIDGE = Quantity(
    "attainable_ridge", "Attainable ridge point", "FLOP/B",
    "{attainable_flops}/{attainable_bw}",
    lambda attainable_flops, attainable_bw: attainable_flops / attainable_bw,
    fmt="ratio", defined_name="ATTAINABLE_RIDGE",
    doc="Where the efficiency-adjusted roofs meet; decides the bound regime.",
)
LINK_BW = _gpu_lookup("link_bw", "GPU link bandwidth per direction", "B/s", "spec_link_bw",
                      "LINK_BW")
LINK_LATENCY = _gpu_lookup("link_latency", "GPU link latency", "s", "spec_link_latency",
                           "LINK_LATENCY")
HOST_BW = _gpu_lookup("host_bw", "Host link (PCIe) bandwidth per direction", "B/s",
                      "spec_host_bw", "HOST_BW")
_EFF_LOOKUP = ("INDEX({spec_effs[]},MATCH({gpu_name},{spec_name[]},0),"
               "MATCH({dtype},{dtype_name[]},0))")


def _suggest_compute(gpu_name: Any, dtype: Any, spec_name: Any, dtype_name: Any,
                     spec_effs: Any, spec_meas_compute: Any) -> float:
    """The GPU's efficiency for the dtype where the preset gives one, else its one figure."""
    row, col = match(spec_name, gpu_name), match(dtype_name, dtype)
    if row is not None and col is not None:
        value = number(np.asarray(spec_effs, dtype=object).reshape(
            len(np.asarray(spec_name, dtype=object).ravel()), -1)[row][col])
        if value == value:  # not a blank (NaN)
            return value
    return lookup(spec_meas_compute, spec_name, gpu_name)


SUGGEST_COMPUTE = Quantity(
    "suggest_compute_eff", "measured compute efficiency", "fraction",
    f"IF(ISNUMBER({_EFF_LOOKUP}),{_EFF_LOOKUP},"
    "INDEX({spec_meas_compute[]},MATCH({gpu_name},{spec_name[]},0)))",
    _suggest_compute, fmt="fraction",
    doc="The selected GPU's measured efficiency for the selected dtype (GPU Specs' per-dtype "
        "column), else its one measured matmul efficiency: changing the dtype changes it.")
SUGGEST_MEMORY = _gpu_lookup("suggest_memory_eff", "measured memory efficiency",
                             "fraction", "spec_meas_memory", None, fmt="fraction")
SUGGEST_LINK = _gpu_lookup("suggest_link_eff", "measured link efficiency",
                           "fraction", "spec_meas_link", None, fmt="fraction")


def _sm_count(spec_sms: Any, spec_name: Any, gpu_name: Any) -> Any:
    """The GPU's SM count, or MISSING ("n/a") where its cell holds no number: the preset
    gave none, or the cell was cleared (a blank would read 0 and divide the waves by it)."""
    i = match(spec_name, gpu_name)
    if i is None:
        return float("nan")
    value = np.asarray(spec_sms, dtype=object).ravel()[i]
    return value if is_number(value) else MISSING


_SMS_LOOKUP = "INDEX({spec_sms[]},MATCH({gpu_name},{spec_name[]},0))"
SM_COUNT = Quantity(
    "sm_count", "SMs (CUs)", "SMs", f'IF(ISNUMBER({_SMS_LOOKUP}),{_SMS_LOOKUP},"{MISSING}")',
    _sm_count, fmt="int", defined_name="SM_COUNT",
    doc="Streaming multiprocessors (AMD: compute units) tiles spread over; n/a when the "
        "preset gives none (then waves stay off).")
SUGGEST_LAUNCH = _gpu_lookup("suggest_launch_overhead", "preset launch overhead", "s",
                             "spec_launch", None)
SUGGEST_TILE_M = _gpu_lookup("suggest_tile_m", "preset tile m", "rows", "spec_tile_m", None,
                             fmt="int")
SUGGEST_OVERLAP = _gpu_lookup("suggest_overlap", "preset overlap exponent", "exponent",
                              "spec_overlap", None, fmt="ratio")
SUGGEST_RAMP_FLOPS = _gpu_lookup("suggest_ramp_flops", "preset compute ramp F_half", "FLOP",
                                 "spec_ramp_flops", None)
SUGGEST_RAMP_H = _gpu_lookup("suggest_ramp_h", "preset compute ramp exponent", "exponent",
                             "spec_ramp_h", None, fmt="ratio")
SUGGEST_RAMP_END = _gpu_lookup("suggest_ramp_end", "preset compute ramp end", "FLOP",
                               "spec_ramp_end", None)


def _suggest(i: Input, column: str) -> Quantity:
    """The selected GPU's preset value of input `i`, from GPU Specs' `column`."""
    label = i.label[0].lower() + i.label[1:] if i.label[1:2].islower() else i.label
    return _gpu_lookup(f"suggest_{i.name}", f"preset {label}", i.unit, column, None, fmt=i.fmt)


SUGGEST_K_LATENCY = _suggest(K_LATENCY, "spec_k_latency")
SUGGEST_WRITE_COST = _suggest(WRITE_COST, "spec_write_cost")
SUGGEST_TILE_LATENCY = _suggest(TILE_LATENCY, "spec_tile_latency")
SUGGEST_SPLIT_FLOOR = _suggest(SPLIT_FLOOR, "spec_split_floor")
SUGGEST_SPLIT_MIN_K = _suggest(SPLIT_MIN_K, "spec_split_min_k")
SUGGEST_TILE_N = _gpu_lookup("suggest_tile_n", "preset tile n", "cols", "spec_tile_n", None,
                             fmt="int")


def _text_lookup(column: Any, spec_name: Any, gpu_name: Any) -> Any:
    i = match(spec_name, gpu_name)
    return "" if i is None else np.asarray(column, dtype=object).ravel()[i]


def _switch_lookup(name: str, label: str, column: str) -> Quantity:
    """A per-GPU on/off switch looked up in the preset table by the selected GPU."""
    return Quantity(
        name, label, "on/off", f"INDEX({{{column}[]}},MATCH({{gpu_name}},{{spec_name[]}},0))",
        lambda **a: _text_lookup(a[column], a["spec_name"], a["gpu_name"]), fmt="text")


SUGGEST_WAVES = _switch_lookup("suggest_wave_quant", "preset wave quantization", "spec_waves")
SUGGEST_K_TILE = _switch_lookup("suggest_k_tile_growth", "preset K-loop tile growth",
                                "spec_k_tile")


_NO_PEAK = "the selected GPU has no peak for this dtype: pick another dtype"

STATUS = Quantity(
    "input_status", "Status", "",
    f'IF(ISNUMBER({{peak_flops}}),"ok","{_NO_PEAK}")',
    lambda peak_flops: "ok" if peak_flops == peak_flops else _NO_PEAK,  # NaN marks a gap
    fmt="status", handles_gaps=True,
    doc="Flags a GPU/dtype pair the preset table has no figure for.",
)

#: int8 peaks count integer operations: every rate computed from the peak reads TOP/s (GOP/s)
#: while an integer dtype is chosen, in the dropdown as at build time. Google Sheets'
#: conditional formats cannot set a number format, so a pushed sheet keeps the unit of the
#: dtype it was pushed with (docs/google-sheets.md).
INTEGER_RATES = FormatSwitch(
    "peak_flops",
    "OR(" + ",".join(f'{{dtype}}="{d}"' for d in sorted(INTEGER_DTYPES)) + ")"
    if len(INTEGER_DTYPES) > 1 else f'{{dtype}}="{min(INTEGER_DTYPES)}"',
    lambda dtype: dtype in INTEGER_DTYPES,
    {"rate": "rate_ops"},
)

BLOCK = Block(
    row=4, col=0,
    header=("Input", "Value", "Unit", "Suggested (measured)", "Notes"),
    rows=(
        "Choose",
        BlockRow(GPU_NAME.label, [GPU_NAME], note=GPU_NAME.doc),
        BlockRow(DTYPE.label, [DTYPE], note=DTYPE.doc),
        BlockRow(COMPUTE_EFF.label, [COMPUTE_EFF], "fraction", COMPUTE_EFF.doc, SUGGEST_COMPUTE),
        BlockRow(MEMORY_EFF.label, [MEMORY_EFF], "fraction", MEMORY_EFF.doc, SUGGEST_MEMORY),
        BlockRow(LINK_EFF.label, [LINK_EFF], "fraction", LINK_EFF.doc, SUGGEST_LINK),
        "Derived (named cells used by every sheet)",
        *(BlockRow(q.label, [q], q.unit, f"{q.defined_name}. {q.doc}".strip())
          for q in (PEAK_FLOPS, HBM_BW, DTYPE_BYTES, VRAM_BYTES, RIDGE, ATTAINABLE_FLOPS,
                    ATTAINABLE_BW, ATTAINABLE_RIDGE, LINK_BW, LINK_LATENCY, HOST_BW)),
        BlockRow(STATUS.label, [STATUS], note=STATUS.doc),
        "Refined time (beside the pure roofline; suggested = the GPU preset's)",
        *(BlockRow(i.label, [i], i.unit, f"{i.defined_name}. {i.doc}", sug)
          for i, sug in ((LAUNCH_OVERHEAD, SUGGEST_LAUNCH), (TILE_M, SUGGEST_TILE_M),
                         (TILE_N, SUGGEST_TILE_N), (WAVE_QUANT, SUGGEST_WAVES),
                         (OVERLAP, SUGGEST_OVERLAP), (RAMP_FLOPS, SUGGEST_RAMP_FLOPS),
                         (RAMP_H, SUGGEST_RAMP_H), (RAMP_END, SUGGEST_RAMP_END),
                         (WRITE_COST, SUGGEST_WRITE_COST))),
        BlockRow(SM_COUNT.label, [SM_COUNT], SM_COUNT.unit,
                 f"{SM_COUNT.defined_name}. {SM_COUNT.doc}"),
        BlockRow(DTYPE_GAP.label, [DTYPE_GAP], note=f"{DTYPE_GAP.defined_name}. {DTYPE_GAP.doc}"),
        "Kernel terms after the GEMM (refined time; suggested = the GPU preset's)",
        *(BlockRow(i.label, [i], i.unit, f"{i.defined_name}. {i.doc}", sug)
          for i, sug in ((K_LATENCY, SUGGEST_K_LATENCY), (K_TILE, SUGGEST_K_TILE),
                         (TILE_LATENCY, SUGGEST_TILE_LATENCY), (SPLIT_FLOOR, SUGGEST_SPLIT_FLOOR),
                         (SPLIT_MIN_K, SUGGEST_SPLIT_MIN_K))),
        "Storage per operand (bytes moved = a·m·k + w·k·n + o·m·n)",
        *(BlockRow(i.label, [i], note=f"{i.defined_name}. {i.doc}")
          for i in (ACT_DTYPE, WEIGHT_DTYPE, OUT_DTYPE)),
        *(BlockRow(q.label, [q], q.unit, f"{q.defined_name}. {q.doc}")
          for q in (ACT_STORAGE, WEIGHT_STORAGE, OUT_STORAGE, ACT_BYTES, WEIGHT_BYTES,
                    OUT_BYTES)),
        "Capacity (which figure the fit uses: VRAM_BYTES above)",
        *(BlockRow(i.label, [i], i.unit, f"{i.defined_name}. {i.doc}")
          for i in (CAPACITY_AS, MEMORY_RESERVE)),
        *(BlockRow(q.label, [q], q.unit, f"{q.defined_name}. {q.doc}")
          for q in (CARD_BYTES, CAPACITY_BYTES)),
    ),
)


def sheet() -> SheetSpec:
    return SheetSpec(
        name=SHEET,
        time_unit="µs",
        texts=(
            Text(0, 0, "sheetgen: roofline model inputs", "title"),
            Text(1, 0, "Yellow cells are inputs (dropdowns for GPU and dtype); grey cells are "
                 "formulas. Change an input and every sheet recomputes."),
            Text(2, 0, "Efficiencies of 1.0 give the pure roofline; the measured column "
                 "suggests what real kernels reach on the selected GPU."),
        ),
        blocks=(BLOCK,),
        column_widths={0: 34.0, 1: 18.0, 2: 10.0, 3: 20.0, 4: 60.0},
        format_switches=(INTEGER_RATES,),
    )


@dataclass(frozen=True)
class KernelTerms:
    """The kernel terms' input values (a preset's k_latency, k_loop_tile_growth,
    k_loop_tile_latency, split_k_floor, split_k_min_k): all off by default."""

    k_latency: float = 0.0
    tile_growth: bool = False
    tile_latency: float = 0.0
    split_floor: float = 0.0
    split_min_k: int = 0

    def values(self) -> dict[str, Any]:
        return {K_LATENCY.name: self.k_latency, K_TILE.name: ON if self.tile_growth else OFF,
                TILE_LATENCY.name: self.tile_latency, SPLIT_FLOOR.name: self.split_floor,
                SPLIT_MIN_K.name: self.split_min_k}


def input_values(gpu: str, dtype: str, *, launch_overhead: float = 0.0,
                 tile: tuple[int, int] = (128, 128), waves: bool = False,
                 overlap: float = 0.0, ramp: tuple[float, float, float] = (0.0, 1.0, 0.0),
                 kernel: KernelTerms | None = None, write_cost: float = 1.0,
                 storage: tuple[str, str, str] = (precision.AUTO,) * 3,
                 capacity_as: str = GIB, reserve: float = DEFAULT_RESERVE) -> dict[str, Any]:
    """`ramp`: the compute ramp's F_half (0: off), exponent h and end (0: none); `write_cost`:
    a byte of C written in bytes read (1: off); `kernel`:
    the kernel terms after the GEMM (None: all off);
    `storage`: the A, B, C storage choices ("auto" or a storage dtype); `capacity_as`
    and `reserve`: how the fit reads the card's memory (GiB less the reserve, or GB)."""
    return {"gpu_name": gpu, "dtype": dtype, "compute_eff": 1.0, "memory_eff": 1.0,
            "link_eff": 1.0, "launch_overhead": launch_overhead, "tile_m": tile[0],
            "tile_n": tile[1], "wave_quant": ON if waves else OFF, "overlap": overlap,
            "compute_ramp_flops": ramp[0], "compute_ramp_h": ramp[1],
            "compute_ramp_end": ramp[2], WRITE_COST.name: write_cost,
            **(kernel or KernelTerms()).values(),
            "activation_dtype": storage[0], "weight_dtype": storage[1],
            "output_dtype": storage[2], "capacity_as": capacity_as, "memory_reserve": reserve}
