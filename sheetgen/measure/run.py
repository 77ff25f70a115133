"""The measure command: device peak and bandwidth first, then the shapes, within the budget.

Shared by `sheetgen measure` (click) and `python -m sheetgen.measure` (argparse, for machines
with only NumPy and PyTorch).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sheetgen.core.defaults import DEFAULT_MEASURE_REPEATS, DEFAULT_MEASURE_SECONDS
from sheetgen.errors import InputError
from sheetgen.inputs.preset_toml import check_preset_path, write_preset
from sheetgen.inputs.presets import DTYPE_BYTES, check_dtype
from sheetgen.measure import csvio, sweep, timing

DEFAULT_MAX_SECONDS = DEFAULT_MEASURE_SECONDS
DEFAULT_REPEATS = DEFAULT_MEASURE_REPEATS
PEAK_SHARE = 0.15  # of the budget for the peak sweep
COPY_SHARE = 0.10  # and for the bandwidth copy
PEAK_SIZES = {"cpu": (256, 512, 1024, 2048, 4096), "cuda": (2048, 4096, 8192, 12288, 16384)}
COPY_BYTES = {"cpu": (2**24, 2**28), "cuda": (2**26, 2**31)}  # smallest, largest copy


@dataclass
class MeasureResult:
    rows: list[csvio.Row]
    metadata: dict[str, str]
    peaks: dict[str, float]  # dtype -> best FLOP/s of the large squares
    bandwidth: float  # B/s of the largest copy
    skipped: list[str] = field(default_factory=list)

    def summary(self) -> str:
        peaks = ", ".join(f"{d} {p / 1e12:.3g} TFLOP/s" for d, p in self.peaks.items())
        skipped = f"; {len(self.skipped)} skipped" if self.skipped else ""
        return (f"{len(self.rows)} timings on {self.metadata.get('device_name', '?')}: "
                f"peak {peaks}, copy bandwidth {self.bandwidth / 1e9:.3g} GB/s{skipped}")


def parse_dtypes(text: str | None, backend: timing.Backend) -> list[str]:
    """--dtype: a comma list, "all", or None for the device's defaults."""
    if text is None:
        return backend.default_dtypes()
    if text.strip().lower() == "all":
        return backend.dtypes()
    out = []
    for part in text.split(","):
        d = check_dtype(part)
        if d not in backend.dtypes():
            raise InputError(f"--dtype {d}: the {backend.device} backend times "
                             f"{', '.join(backend.dtypes())}")
        out.append(d)
    return list(dict.fromkeys(out))


def _deadline_left(deadline: float) -> float:
    return deadline - time.perf_counter()


def measure_peak(backend: timing.Backend, dtype: str, seconds: float, repeats: int) -> float:
    """Best FLOP/s over large square matmuls, growing the size while the share allows."""
    deadline = time.perf_counter() + seconds
    best, last_cost, last_size = 0.0, 0.0, 0
    for size in PEAK_SIZES[backend.device]:
        if backend.skip_reason(size, size, size, dtype):
            continue
        if last_size and last_cost * (size / last_size) ** 3 > _deadline_left(deadline):
            break
        t0 = time.perf_counter()
        t = backend.time_matmul(size, size, size, dtype, repeats)
        last_cost, last_size = time.perf_counter() - t0, size
        best = max(best, 2.0 * size**3 / t.median)
    return best


def measure_bandwidth(backend: timing.Backend, seconds: float, repeats: int,
                      memory_bytes: float) -> tuple[float, int]:
    """(B/s, bytes) of the largest copy the share allows: read + write = 2 × its bytes."""
    smallest, largest = COPY_BYTES[backend.device]
    largest = int(min(largest, memory_bytes / 8))
    deadline = time.perf_counter() + seconds
    nbytes, result = smallest, (0.0, 0)
    while nbytes <= largest:
        t0 = time.perf_counter()
        t = backend.time_copy(nbytes, repeats)
        result = (2.0 * nbytes / t.median, nbytes)
        if 2.5 * (time.perf_counter() - t0) > _deadline_left(deadline):
            break
        nbytes *= 2
    return result


def measure(backend: timing.Backend, shapes: Sequence[tuple[int, int, int]],
            dtypes: Sequence[str], *, max_seconds: float = DEFAULT_MAX_SECONDS,
            repeats: int = DEFAULT_REPEATS, show_progress: bool = False) -> MeasureResult:
    """Time every (shape, dtype) that fits the budget; the device figures first."""
    if not (math.isfinite(max_seconds) and max_seconds > 0):
        raise InputError(f"--max-seconds must be a positive number, got {max_seconds!r}")
    if repeats < 1:
        raise InputError(f"--repeats must be at least 1, got {repeats!r}")
    start = time.perf_counter()
    deadline = start + max_seconds
    meta = backend.metadata()
    peak_repeats = max(3, min(repeats, 5))
    peaks = {d: measure_peak(backend, d, max_seconds * PEAK_SHARE / len(dtypes), peak_repeats)
             for d in dtypes}
    bw, copy_bytes = measure_bandwidth(backend, max_seconds * COPY_SHARE, peak_repeats,
                                       backend.memory_bytes())
    runs = [(s, d) for s in shapes for d in dtypes]
    progress = sweep.Progress(len(runs), enabled=show_progress)
    rows: list[csvio.Row] = []
    skipped: list[str] = []
    for (m, k, n), dtype in runs:
        label = f"{m}x{k}x{n} {dtype}"
        reason = backend.skip_reason(m, k, n, dtype)
        cost = sweep.estimated_seconds(m, k, n, DTYPE_BYTES[dtype], peaks[dtype] or 1e9,
                                       bw or 1e9, repeats, timing.WARMUP)
        if reason is None and cost > _deadline_left(deadline):
            reason = f"over the --max-seconds budget (about {cost:.2g} s)"
        if reason is not None:
            skipped.append(f"{label}: {reason}")
        else:
            t = backend.time_matmul(m, k, n, dtype, repeats)
            rows.append(csvio.Row(m, k, n, dtype, backend.device, t.median, t.minimum,
                                  t.maximum, t.repeats))
        progress.step(label)
    progress.close()
    for d in dtypes:  # anything attained is achievable: a noisy square sweep never undercuts it
        attained = [2.0 * r.m * r.k * r.n / r.time_s for r in rows if r.dtype == d]
        if attained and max(attained) > peaks[d]:
            peaks[d] = max(attained)
            meta[f"peak_note.{d}"] = "best attained FLOP/s of the timed shapes (above the sweep)"
    meta.update({f"peak_flops.{d}": f"{p:.6e}" for d, p in peaks.items()})
    meta["peak_method"] = (f"best of square matmuls up to {max(PEAK_SIZES[backend.device])}, "
                           f"median of {peak_repeats}")
    meta["copy_bandwidth"] = f"{bw:.6e}"
    meta["copy_bytes"] = str(copy_bytes)
    meta["warmup_calls"] = str(timing.WARMUP)
    meta["cache"] = ("cold: L2 flushed before every repeat" if backend.device == "cuda"
                     else "warm: operands stay in the CPU caches between repeats")
    meta["seconds_taken"] = f"{time.perf_counter() - start:.1f}"
    return MeasureResult(rows, meta, peaks, bw, skipped)


def device_preset(result: MeasureResult, backend: timing.Backend,
                  name: str | None = None) -> dict[str, object]:
    """The measured device as a preset: its achievable peak and copy bandwidth as the peak
    and bandwidth (so the efficiencies are 1.0), placeholders where nothing was measured."""
    meta = result.metadata
    device = name or f"{meta.get('device_name', backend.device)} (measured)"
    when = meta.get("date", "")
    how = f"sheetgen measure on {meta.get('device_name', '?')}, {when}"
    return {
        "name": device,
        "peak_flops": {d: float(f"{p:.6g}") for d, p in result.peaks.items() if p > 0},
        "peak_flops_source": f"{how}: {meta['peak_method']} (achievable, not the spec sheet)",
        "hbm_bandwidth": float(f"{result.bandwidth:.6g}"),
        "hbm_bandwidth_source": f"{how}: device copy of {int(meta['copy_bytes']):,} bytes, "
                                "read + write",
        "memory_bytes": backend.memory_bytes(),
        "memory_bytes_source": "as the device reports it",
        "link_bandwidth": 1e9,
        "link_bandwidth_source": "not measured (placeholder: set it for the Parallelism sheet)",
        "link_latency": 1e-5,
        "link_latency_source": "not measured (placeholder)",
        "host_bandwidth": 1e9,
        "host_bandwidth_source": "not measured (placeholder)",
        "sm_count": backend.sm_count(),
        "sm_count_source": ("as the device reports it" if backend.device == "cuda"
                            else "CPU threads available to the process"),
        "measured_compute_efficiency": 1.0,
        "measured_compute_efficiency_source": "the peak above is already the measured one",
        "measured_memory_efficiency": 1.0,
        "measured_memory_efficiency_source": "the bandwidth above is already the measured one",
        "measured_link_efficiency": 1.0,
        "measured_link_efficiency_source": "not measured",
    }


def run(out: str | Path, *, device: str = "cpu", shapes: Sequence[tuple[int, int, int]] | None
        = None, dtype: str | None = None, max_seconds: float = DEFAULT_MAX_SECONDS,
        repeats: int = DEFAULT_REPEATS, preset_out: str | Path | None = None,
        name: str | None = None, force: bool = False,
        show_progress: bool = False) -> MeasureResult:
    """Measure and write OUT.csv (and the device preset); every check before any timing."""
    path = csvio.check_csv_path(out, force)
    if preset_out is not None:
        check_preset_path(preset_out, force)
    backend = timing.backend(device)
    dtypes = parse_dtypes(dtype, backend)
    result = measure(backend, shapes or sweep.builtin_sweep(backend.device), dtypes,
                     max_seconds=max_seconds, repeats=repeats, show_progress=show_progress)
    if not result.rows:
        raise InputError(f"nothing was timed within --max-seconds {max_seconds:g} "
                         f"({len(result.skipped)} skipped: {result.skipped[0]})")
    csvio.write_csv(path, result.rows, result.metadata, force=force)
    if preset_out is not None:
        write_preset(preset_out, [device_preset(result, backend, name)],
                     header=[f"Measured by sheetgen measure, {result.metadata.get('date')}.",
                             "Load it with --gpu-file FILE --gpu NAME."], force=True)
    return result
