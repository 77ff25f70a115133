"""GPU presets: loaded from TOML data files (templates/gpus.toml or a user's file) and validated.

Every figure is SI (FLOP/s, byte/s, bytes, seconds) and carries its source, so a reader can
audit a number without leaving the workbook. Validation happens once, on load, and names the
file and field, because a wrong preset silently poisons every formula downstream.
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from sheetgen.errors import InputError, PresetError

#: Bytes per element of each dtype the model knows, in the order sheets list them.
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
DTYPES: tuple[str, ...] = tuple(DTYPE_BYTES)
DEFAULT_DTYPE = "bf16"

#: Scalar figures each preset must give (besides peak_flops), with their units.
FIGURES: dict[str, str] = {
    "hbm_bandwidth": "B/s",
    "memory_bytes": "B",
    "link_bandwidth": "B/s",
    "link_latency": "s",
    "host_bandwidth": "B/s",
}
#: Figures a preset may leave out, with their units and the value used then. The defaults
#: change nothing: efficiencies of 1.0 are the pure roofline, no launch floor, waves off. A
#: datasheet rarely gives the SM count, so it may be left out too (None): the tile/wave cells
#: then show "n/a" and the refined time keeps waves off, whatever the switch says.
OPTIONAL: dict[str, tuple[str, float | int | bool | None]] = {
    "measured_compute_efficiency": ("fraction", 1.0),
    "measured_memory_efficiency": ("fraction", 1.0),
    "measured_link_efficiency": ("fraction", 1.0),
    "launch_overhead": ("s", 0.0),
    "tile_m": ("rows", 128),
    "tile_n": ("cols", 128),
    "wave_quantization": ("on/off", False),
    "overlap_exponent": ("p (0 = hard max)", 0.0),
    "sm_count": ("SMs, or CUs on AMD", None),
}
#: The note a preset without an SM count shows as that figure's source.
NO_SM_COUNT_NOTE = ("not given in the preset: the tile/wave cells show n/a and the refined "
                    "time keeps waves off")
#: The kernel terms after the refined time (sheetgen.model.kernel_terms), which `calibrate
#: --preset-out` writes and `calibrate --no-fit` (the Measured sheet) uses: optional, 0 = off.
#: The Measured sheet uses them all; the main sheets' refined time all but the quantize pass.
#: A preset without them lists no source for them.
KERNEL_TERMS: dict[str, tuple[str, float | int | bool]] = {
    "k_latency": ("s per unit of k", 0.0),
    # a byte of C written costs this many bytes read (kernel_terms.write_memory_time)
    "write_cost": ("bytes read per byte of C written (1 = off)", 1.0),
    # the K loop's latency grows with the library's tile for m (kernel_terms.k_tile_scale)
    "k_loop_tile_growth": ("on/off", False),
    "k_loop_tile_latency": ("s per tile (with the growth)", 0.0),
    "split_k_floor": ("s", 0.0),
    "split_k_min_k": ("k (0 = off)", 0),
    "activation_quantize_bytes": ("B per element of A", 0.0),
    "compute_ramp_flops": ("FLOPs (F_half; 0 = off)", 0.0),
    "compute_ramp_exponent": ("h", 1.0),
    # where the ramp ends: the compute efficiency is the one reached there (the largest
    # matmul measured) and held beyond (kernel_terms.compute_ramp); 0 = it is the asymptote
    "compute_ramp_end_flops": ("FLOPs (the largest matmul measured; 0 = none)", 0.0),
    # the quantize pass's own roofline (kernel_terms.quantize_time), where it has one
    "activation_quantize_efficiency": ("fraction of HBM bandwidth (0 = memory efficiency)", 0.0),
    "activation_quantize_row_latency": ("s per row of A", 0.0),
    "activation_quantize_k_latency": ("s per element of a row", 0.0),
}
#: A table of dtype = bytes per element: the activation-quantize pass of those dtypes' code
#: paths (a dynamic FP8 GEMM quantizes its bf16 activation first; a bf16 GEMM does not), where
#: it differs from activation_quantize_bytes.
QUANTIZE_BY_DTYPE = "activation_quantize_bytes_by_dtype"
#: A table of dtype = fraction: the compute efficiency for those dtypes (others use
#: measured_compute_efficiency), e.g. an fp8 matmul reaches a lower share of its peak.
BY_DTYPE = "measured_compute_efficiency_by_dtype"
UNITS: dict[str, str] = FIGURES | {k: unit for k, (unit, _) in (OPTIONAL | KERNEL_TERMS).items()}
#: A table of dtype = { field = value }: the refined model and kernel terms `calibrate`
#: fitted to that dtype's times, where a file timed several. Each dtype runs other kernels:
#: XLA's H100 tf32 fit has another overlap exponent, floor, K loop and ramp than its bf16
#: fit, and checked with the bf16 fit's terms its rows miss by a median 23.6 % instead of
#: 5.7 %. `calibrate --no-fit`, the Measured sheet and the main workbook's Inputs use a
#: dtype's own.
REFINED_BY_DTYPE = "refined_by_dtype"
#: the fields it may hold: every refined-model and kernel-term figure but the quantize bytes
#: (activation_quantize_bytes_by_dtype has them) and the compute efficiency (BY_DTYPE)
REFINED_FIELDS = ("measured_memory_efficiency", "launch_overhead", "tile_m", "tile_n",
                  "wave_quantization", "overlap_exponent",
                  *(k for k in KERNEL_TERMS if k != "activation_quantize_bytes"))
#: The largest overlap exponent a preset may give (the p-norm is the hard max within 1.1 %).
MAX_OVERLAP_EXPONENT = 64.0
#: The write cost's bound: a byte of C written costs 1 (the roofline's) to 4 bytes read.
MAX_WRITE_COST = 4.0
#: Limits of the kernel terms after the refined time (sheetgen.model.kernel_terms), shared with
#: the Measured sheet's input cells: a K-loop latency per unit of k above 1 µs would make a
#: k = 4,096 loop take 4 ms; no quantize pass moves 64 bytes per element; k beyond 10^9.
MAX_K_LATENCY = 1e-6
#: a tile's own cost (prologue and epilogue) beside its K loop: up to 1 ms
MAX_TILE_LATENCY = 1e-3
MAX_QUANTIZE_BYTES = 64.0
MAX_SPLIT_K_MIN_K = 1_000_000_000
#: The compute ramp's F_half (FLOPs) is 0 (off) up to 10^18 (a matmul of 10^18 FLOPs runs for
#: minutes); its exponent h from 1/4 (a ramp over a dozen decades) to 4 (nearly a step).
MAX_RAMP_FLOPS = 1e18
MIN_RAMP_EXPONENT, MAX_RAMP_EXPONENT = 0.25, 4.0
#: Figures that are 0 or more up to a limit, with the unit their error message names.
_BOUNDED: dict[str, tuple[float, str]] = {
    "launch_overhead": (1.0, "seconds"),
    "k_latency": (MAX_K_LATENCY, "seconds per unit of k"),
    "k_loop_tile_latency": (MAX_TILE_LATENCY, "seconds per tile"),
    "split_k_floor": (1.0, "seconds"),
    "activation_quantize_bytes": (MAX_QUANTIZE_BYTES, "bytes per element"),
    "compute_ramp_flops": (MAX_RAMP_FLOPS, "FLOPs"),
    "compute_ramp_end_flops": (MAX_RAMP_FLOPS, "FLOPs"),
    "activation_quantize_efficiency": (1.0, "(a fraction of the HBM bandwidth; 0 means the "
                                            "memory efficiency)"),
    "activation_quantize_row_latency": (MAX_K_LATENCY, "seconds per row of A"),
    "activation_quantize_k_latency": (MAX_K_LATENCY, "seconds per element of a row"),
}
_WHOLE = {"sm_count", "tile_m", "tile_n"}
_SWITCHES = {"wave_quantization", "k_loop_tile_growth"}  # true or false
_FRACTIONS = {k for k, unit in UNITS.items() if unit == "fraction"}
MAX_TILE = 4096  # larger than any GEMM kernel's thread-block tile


@dataclass(frozen=True)
class GPU:
    """One GPU preset: dense peaks per dtype plus memory and interconnect figures."""

    name: str
    peak_flops: dict[str, float]
    hbm_bandwidth: float
    memory_bytes: float
    link_bandwidth: float
    link_latency: float
    host_bandwidth: float
    sm_count: int | None = None  # None: not in the preset (waves off, wave cells n/a)
    measured_compute_efficiency: float = 1.0
    measured_memory_efficiency: float = 1.0
    measured_link_efficiency: float = 1.0
    launch_overhead: float = 0.0
    tile_m: int = 128
    tile_n: int = 128
    wave_quantization: bool = False
    overlap_exponent: float = 0.0
    #: the kernel terms after the refined time (sheetgen.model.kernel_terms); 0 = off
    k_latency: float = 0.0
    write_cost: float = 1.0  # a byte of C written in bytes read; 1 = off
    k_loop_tile_growth: bool = False
    k_loop_tile_latency: float = 0.0
    split_k_floor: float = 0.0
    split_k_min_k: int = 0
    activation_quantize_bytes: float = 0.0
    compute_ramp_flops: float = 0.0  # the compute-efficiency ramp's F_half; 0 = off
    compute_ramp_exponent: float = 1.0  # its exponent h
    #: the FLOPs where it ends, the efficiency held beyond; 0 = the efficiency is its asymptote
    compute_ramp_end_flops: float = 0.0
    #: the quantize pass's own roofline: its bandwidth efficiency (0: the memory efficiency's),
    #: s per row of A, s per element of one row (kernel_terms.quantize_time); 0 = none
    activation_quantize_efficiency: float = 0.0
    activation_quantize_row_latency: float = 0.0
    activation_quantize_k_latency: float = 0.0
    compute_efficiency_by_dtype: dict[str, float] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    quantize_bytes_by_dtype: dict[str, float] = field(default_factory=dict)
    #: each dtype's own refined model and kernel terms (REFINED_BY_DTYPE), where given
    refined_by_dtype: dict[str, dict[str, float | int | bool]] = field(default_factory=dict)

    def for_dtype(self, dtype: str) -> GPU:
        """This GPU with dtype's own refined model and kernel terms where the preset gives
        them (refined_by_dtype), else itself."""
        own = self.refined_by_dtype.get(dtype)
        return replace(self, **own) if own else self

    def compute_efficiency(self, dtype: str) -> float:
        """The measured compute efficiency for dtype: its own where the preset gives one."""
        return self.compute_efficiency_by_dtype.get(dtype, self.measured_compute_efficiency)

    def quantize_bytes(self, dtype: str) -> float:
        """The activation-quantize bytes per element of dtype's code path: its own where the
        preset gives one, else activation_quantize_bytes."""
        return self.quantize_bytes_by_dtype.get(dtype, self.activation_quantize_bytes)

    def supports(self, dtype: str) -> bool:
        return dtype in self.peak_flops

    def peak(self, dtype: str) -> float:
        """Dense peak for dtype; a clear error when the GPU lacks it."""
        if dtype not in self.peak_flops:
            have = ", ".join(d for d in DTYPES if d in self.peak_flops)
            raise InputError(f"GPU {self.name!r} has no {dtype} support (it has: {have})")
        return self.peak_flops[dtype]


@dataclass(frozen=True)
class Presets:
    """An ordered set of GPU presets and the default one."""

    gpus: tuple[GPU, ...]
    default: str
    #: names of the presets a user's --gpu-file gave, by the file they came from
    origins: dict[str, str] = field(default_factory=dict, compare=False)
    #: built-in preset names a user's file redefined (theirs replaced them)
    shadowed: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [g.name for g in self.gpus]

    def get(self, name: str) -> GPU:
        """Look a GPU up by name, ignoring case, spaces, hyphens and underscores ("a100 40 GB
        sxm" is "A100 40GB SXM"); the start of one name is enough when no other name starts
        so ("MI300" is "MI300X"); an old name (ALIASES) is the preset renamed since. A name that
        fits several presets is refused, naming them."""
        want = _norm(name)
        if not want:
            raise InputError("the GPU name is empty; choose one of: " + ", ".join(self.names))
        if want not in {_norm(g.name) for g in self.gpus}:
            want = _norm(ALIASES.get(want, want))  # an old name, exactly
        exact = [g for g in self.gpus if _norm(g.name) == want]
        found = exact or [g for g in self.gpus if _norm(g.name).startswith(want)]
        if len(found) == 1:
            return found[0]
        if found:
            raise InputError(f"GPU {name!r} is ambiguous: it could be "
                             f"{' or '.join(repr(g.name) for g in found)}; give more of the name")
        raise InputError(f"unknown GPU {name!r}; choose one of: {', '.join(self.names)}")

    def merged(self, other: Presets, origin: str = "") -> Presets:
        """These presets plus other's (from the file `origin`); other's win on a name clash,
        and the names they replace are kept in `shadowed` so the CLI can say so."""
        theirs = {_norm(g.name) for g in other.gpus}
        kept = tuple(g for g in self.gpus if _norm(g.name) not in theirs)
        shadowed = tuple(g.name for g in self.gpus if _norm(g.name) in theirs)
        origins = self.origins | {g.name: origin for g in other.gpus}
        return Presets(gpus=kept + other.gpus, default=self.default, origins=origins,
                       shadowed=self.shadowed + shadowed)

    def replaces_builtin(self, name: str) -> bool:
        """Whether the preset `name` came from a user's file and replaced a built-in one."""
        return _norm(name) in {_norm(n) for n in self.shadowed}


#: Old built-in names still accepted, exactly (after _norm), for the preset renamed since:
#: "H200" is the H200 SXM, so it cannot be mistaken for the "H200 NVL".
ALIASES: dict[str, str] = {"h200": "H200 SXM"}


def _norm(name: str) -> str:
    """A GPU name as names are compared: lower case, without spaces, hyphens or underscores."""
    return re.sub(r"[\s_-]+", "", name.lower())


def check_dtype(dtype: str) -> str:
    """Normalise a dtype name, or raise listing the valid ones."""
    d = dtype.strip().lower()
    if d not in DTYPE_BYTES:
        raise InputError(f"unknown dtype {dtype!r}; choose one of: {', '.join(DTYPES)}")
    return d


def _positive(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PresetError(f"{where}: expected a positive number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise PresetError(f"{where}: expected a positive number, got {value!r}")
    return v


def _whole_number(value: Any, where: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise PresetError(f"{where}: expected a whole number from 1 to {high:,}, got {value!r}")
    return int(value)


def _figure(key: str, value: Any, where: str) -> float | int | bool:
    """One scalar figure, validated for its kind (whole, fraction, seconds, switch)."""
    field_where = f"{where}: field '{key}'"
    if key in _SWITCHES:
        if not isinstance(value, bool):
            raise PresetError(f"{field_where}: expected true or false, got {value!r}")
        return value
    if key in _WHOLE:
        return _whole_number(value, field_where, MAX_TILE if key != "sm_count" else 100_000)
    if key in _BOUNDED:
        high, unit = _BOUNDED[key]
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or not 0 <= value <= high:
            raise PresetError(f"{field_where}: expected 0 to {high:g} {unit}, got {value!r}")
        return float(value)
    if key == "split_k_min_k":
        if isinstance(value, bool) or not isinstance(value, int) \
                or not 0 <= value <= MAX_SPLIT_K_MIN_K:
            raise PresetError(f"{field_where}: expected a whole number of k from 0 (off) to "
                              f"{MAX_SPLIT_K_MIN_K:,}, got {value!r}")
        return int(value)
    if key == "compute_ramp_exponent":
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                MIN_RAMP_EXPONENT <= value <= MAX_RAMP_EXPONENT):
            raise PresetError(f"{field_where}: expected {MIN_RAMP_EXPONENT:g} to "
                              f"{MAX_RAMP_EXPONENT:g}, got {value!r}")
        return float(value)
    if key == "write_cost":
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                1 <= value <= MAX_WRITE_COST):
            raise PresetError(f"{field_where}: expected 1 (off) to "
                              f"{MAX_WRITE_COST:g} bytes read per byte written, "
                              f"got {value!r}")
        return float(value)
    if key == "overlap_exponent":
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                value == 0 or 1 <= value <= MAX_OVERLAP_EXPONENT):
            raise PresetError(f"{field_where}: expected 0 (the hard max) or 1 to "
                              f"{MAX_OVERLAP_EXPONENT:g}, got {value!r}")
        return float(value)
    v = _positive(value, field_where)
    if key in _FRACTIONS and v > 1:
        raise PresetError(f"{field_where} is a fraction and must be at most 1")
    return v


def _parse_gpu(raw: Any, origin: str, index: int) -> GPU:
    if not isinstance(raw, dict):
        raise PresetError(f"{origin}: gpu #{index + 1} is not a table")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise PresetError(f"{origin}: gpu #{index + 1}: field 'name' must be a non-empty string")
    where = f"{origin}: gpu {name!r}"
    peaks_raw = raw.get("peak_flops")
    if not isinstance(peaks_raw, dict) or not peaks_raw:
        raise PresetError(f"{where}: field 'peak_flops' must be a table of dtype = FLOP/s")
    peaks: dict[str, float] = {}
    for dtype, value in peaks_raw.items():
        if dtype not in DTYPE_BYTES:
            raise PresetError(
                f"{where}: field 'peak_flops.{dtype}': unknown dtype (known: {', '.join(DTYPES)})"
            )
        peaks[dtype] = _positive(value, f"{where}: field 'peak_flops.{dtype}'")
    figures: dict[str, Any] = {}
    for key in FIGURES:
        if key not in raw:
            raise PresetError(f"{where}: missing field '{key}' ({FIGURES[key]})")
        figures[key] = _figure(key, raw[key], where)
    defaulted: dict[str, str] = {}
    for key, (_unit, default) in OPTIONAL.items():
        if key in raw:
            figures[key] = _figure(key, raw[key], where)
        else:
            figures[key] = default
            defaulted[key] = NO_SM_COUNT_NOTE if default is None else \
                f"not given in the preset: {_show(default)} (the default)"
    for key, (_unit, default) in KERNEL_TERMS.items():
        figures[key] = _figure(key, raw[key], where) if key in raw else default
    if figures["split_k_floor"] > 0 and not figures["split_k_min_k"]:
        raise PresetError(f"{where}: field 'split_k_floor' needs 'split_k_min_k', the k from "
                          "which an under-filled GEMM runs split-K (calibrate writes 2048)")
    by_dtype_raw = raw.get(BY_DTYPE, {})
    if not isinstance(by_dtype_raw, dict):
        raise PresetError(f"{where}: field '{BY_DTYPE}' must be a table of dtype = fraction")
    by_dtype: dict[str, float] = {}
    for dtype, value in by_dtype_raw.items():
        if dtype not in peaks:
            raise PresetError(f"{where}: field '{BY_DTYPE}.{dtype}': the GPU has no {dtype} "
                              f"peak (it has: {', '.join(peaks)})")
        v = _positive(value, f"{where}: field '{BY_DTYPE}.{dtype}'")
        if v > 1:
            raise PresetError(f"{where}: field '{BY_DTYPE}.{dtype}' is a fraction and must "
                              "be at most 1")
        by_dtype[dtype] = v
    quantize_raw = raw.get(QUANTIZE_BY_DTYPE, {})
    if not isinstance(quantize_raw, dict):
        raise PresetError(f"{where}: field '{QUANTIZE_BY_DTYPE}' must be a table of dtype = "
                          "bytes per element")
    quantize_by_dtype: dict[str, float] = {}
    for dtype, value in quantize_raw.items():
        if dtype not in peaks:
            raise PresetError(f"{where}: field '{QUANTIZE_BY_DTYPE}.{dtype}': the GPU has no "
                              f"{dtype} peak (it has: {', '.join(peaks)})")
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or not 0 <= value <= MAX_QUANTIZE_BYTES:
            raise PresetError(f"{where}: field '{QUANTIZE_BY_DTYPE}.{dtype}': expected 0 to "
                              f"{MAX_QUANTIZE_BYTES:g} bytes per element, got {value!r}")
        quantize_by_dtype[dtype] = float(value)
    refined_by_dtype = _refined_by_dtype(raw.get(REFINED_BY_DTYPE, {}), peaks, figures, where)
    known = {"name", "peak_flops", BY_DTYPE, QUANTIZE_BY_DTYPE, REFINED_BY_DTYPE, *UNITS}
    sources: dict[str, str] = {}
    for key, value in raw.items():
        if key.endswith("_source"):
            if key[: -len("_source")] not in known:
                raise PresetError(f"{where}: field '{key}' is the source of an unknown field")
            sources[key[: -len("_source")]] = str(value)
        elif key not in known:
            raise PresetError(f"{where}: unknown field '{key}'")
    for key, note in defaulted.items():
        sources.setdefault(key, note)
    return GPU(name=name.strip(), peak_flops=peaks, sources=sources,
               compute_efficiency_by_dtype=by_dtype, quantize_bytes_by_dtype=quantize_by_dtype,
               refined_by_dtype=refined_by_dtype, **figures)


def _refined_by_dtype(raw: Any, peaks: dict[str, float], figures: dict[str, Any],
                      where: str) -> dict[str, dict[str, float | int | bool]]:
    """REFINED_BY_DTYPE, validated: a dtype the GPU has a peak for, fields of
    REFINED_FIELDS, each value as the field itself is checked (and a split-K floor with the
    k it starts from, counting the preset's own where the dtype gives none)."""
    shape = f"must be a table of dtype = {{ field = value }} (fields: {', '.join(REFINED_FIELDS)})"
    if not isinstance(raw, dict):
        raise PresetError(f"{where}: field '{REFINED_BY_DTYPE}' {shape}")
    out: dict[str, dict[str, float | int | bool]] = {}
    for dtype, table in raw.items():
        here = f"{where}: field '{REFINED_BY_DTYPE}.{dtype}'"
        if dtype not in peaks:
            raise PresetError(f"{here}: the GPU has no {dtype} peak (it has: "
                              f"{', '.join(peaks)})")
        if not isinstance(table, dict):
            raise PresetError(f"{where}: field '{REFINED_BY_DTYPE}' {shape}")
        for key in table:
            if key not in REFINED_FIELDS:
                raise PresetError(f"{here}: unknown field '{key}' (fields: "
                                  f"{', '.join(REFINED_FIELDS)})")
        own = {key: _figure(key, value, f"{where}, {REFINED_BY_DTYPE}.{dtype}")
               for key, value in table.items()}
        merged = figures | own
        if merged["split_k_floor"] > 0 and not merged["split_k_min_k"]:
            raise PresetError(f"{here}: a split_k_floor needs split_k_min_k, the k from which "
                              "an under-filled GEMM runs split-K (calibrate writes 2048)")
        out[dtype] = own
    return out


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}"


def parse_presets(data: dict[str, Any], origin: str) -> Presets:
    """Validate a decoded preset document; origin names it in errors."""
    gpus_raw = data.get("gpu")
    if not isinstance(gpus_raw, list) or not gpus_raw:
        raise PresetError(f"{origin}: expected at least one [[gpu]] table")
    gpus = tuple(_parse_gpu(raw, origin, i) for i, raw in enumerate(gpus_raw))
    seen: set[str] = set()
    for gpu in gpus:
        if _norm(gpu.name) in seen:
            raise PresetError(f"{origin}: GPU {gpu.name!r} is defined twice")
        seen.add(_norm(gpu.name))
    default = data.get("default", gpus[0].name)
    if not isinstance(default, str) or _norm(default) not in seen:
        raise PresetError(f"{origin}: field 'default' must name one of the GPUs in the file")
    return Presets(gpus=gpus, default=default)


#: A preset file is a few KB; reading stops past this (`--gpu-file /dev/zero` must not hang).
MAX_PRESET_FILE_BYTES = 1_000_000


def load_preset_file(path: str | Path) -> Presets:
    """Load a user's preset TOML file, with errors naming the file."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            text = fh.read(MAX_PRESET_FILE_BYTES + 1)
    except OSError as exc:
        raise PresetError(f"cannot read GPU preset file {p}: {exc.strerror or exc}") from None
    if len(text) > MAX_PRESET_FILE_BYTES:
        raise PresetError(f"{p} is larger than {MAX_PRESET_FILE_BYTES // 1000} KB, the limit "
                          "for a GPU preset file (one preset is about 2 KB)")
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PresetError(f"{p}: not valid TOML: {exc}") from None
    return parse_presets(data, str(p))


@functools.cache
def builtin_presets() -> Presets:
    """The presets shipped in templates/gpus.toml, parsed once per process (frozen: every
    BuildConfig, plan and analyze call asked for them anew, 8 ms each)."""
    text = resources.files("sheetgen.templates").joinpath("gpus.toml").read_text("utf-8")
    return parse_presets(tomllib.loads(text), "templates/gpus.toml")


def load_presets(gpu_file: str | Path | None = None) -> Presets:
    """Built-in presets, plus a user's file when given (theirs win on name clashes)."""
    presets = builtin_presets()
    if gpu_file is not None:
        presets = presets.merged(load_preset_file(gpu_file), str(gpu_file))
    return presets
