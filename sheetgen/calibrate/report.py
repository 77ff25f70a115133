"""The calibration of one GPU and dtype against measured times, and how it is reported:
per-row errors before and after, held-out scores, flagged rows, JSON and the fitted preset.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sheetgen.calibrate import fit
from sheetgen.calibrate.data import (
    QUANTIZE_KEY,
    Measurements,
    SeveralDtypes,
    not_repeated,
    read_measurements,
    repeat_ratio,
)
from sheetgen.core.defaults import REPEAT_FACTOR
from sheetgen.core.units import seconds
from sheetgen.errors import InputError
from sheetgen.inputs import precision
from sheetgen.inputs import presets as hardware
from sheetgen.inputs.preset_toml import write_preset
from sheetgen.inputs.presets import DTYPE_BYTES, GPU
from sheetgen.model.refined import NO_SMS_NOTE
from sheetgen.sheets import matmul
from sheetgen.sheets.measured import MeasuredInputs

SHOWN_ROWS = 60  # rows the text report prints, the worst-predicted of a longer file (--json: all)

FASTER_ON_GPU = (
    "On a GPU timed with a cold L2 (as `sheetgen measure` does) no matmul can beat the spec "
    "roofline: suspect the timing (missing synchronize, async launch measured) or the preset "
    "(wrong peak, bandwidth or dtype; fp32 that ran as TF32). With operands resident in L2 "
    "(a warm cache), small shapes legitimately beat the HBM roof.")
FASTER_ON_CPU = (
    "On a CPU the operands of a small matmul stay in L1/L2/L3 between calls, and the caches "
    "are faster than the DRAM bandwidth the roofline uses: these rows show where the cache "
    "hierarchy beats the memory roof.")
FASTER_UNKNOWN = FASTER_ON_GPU + " " + FASTER_ON_CPU


#: each operand's storage as the compute dtype implies it (A, B, C: "auto" each)
AUTO_STORAGE = (precision.AUTO,) * 3


def device_for(gpu: GPU, dtype: str, storage: tuple[str, str, str] = AUTO_STORAGE
               ) -> fit.Device:
    """The model's figures for a preset: spec peak and bandwidth, the dtype's element size
    and each operand's storage (A, B, C; "auto": the dtype's, so fp8 measured by `measure`
    writes bf16, as auto does)."""
    return fit.Device(gpu.name, gpu.peak(dtype), gpu.hbm_bandwidth, DTYPE_BYTES[dtype],
                      gpu.sm_count, precision.resolve(dtype, *storage).bytes())


def preset_params(gpu: GPU, dtype: str) -> fit.Params:
    """The refined model and kernel terms a preset already describes for dtype (for
    --no-fit): the dtype's own where the preset gives them (refined_by_dtype)."""
    gpu = gpu.for_dtype(dtype)
    return fit.Params(gpu.compute_efficiency(dtype), gpu.measured_memory_efficiency,
                      gpu.launch_overhead, gpu.wave_quantization, gpu.tile_m, gpu.tile_n,
                      gpu.overlap_exponent, k_latency=gpu.k_latency,
                      k_loop=gpu.k_latency > 0,
                      k_tile_growth=gpu.k_loop_tile_growth,
                      tile_latency=gpu.k_loop_tile_latency,
                      quantize_bytes=gpu.quantize_bytes(dtype),
                      split_floor=gpu.split_k_floor,
                      split_min_k=float(gpu.split_k_min_k),
                      ramp_flops=gpu.compute_ramp_flops,
                      ramp_exponent=gpu.compute_ramp_exponent,
                      ramp_end=gpu.compute_ramp_end_flops,
                      quantize_efficiency=gpu.activation_quantize_efficiency,
                      quantize_row_latency=gpu.activation_quantize_row_latency,
                      quantize_k_latency=gpu.activation_quantize_k_latency,
                      write_cost=gpu.write_cost, write=gpu.write_cost != 1)


def share_of_peak(flops: Any, seconds: Any, peak: float) -> Any:
    """The share of the peak a matmul of `flops` FLOPs run in `seconds` attains: the Matmul
    sheet's attained FLOP/s over the peak (its quantities' references)."""
    attained = matmul.ATTAINED.reference(flops=flops, predicted_time=seconds)
    return matmul.PEAK_FRACTION.reference(attained_flops=attained, peak_flops=peak)


def preset_figure(value: Any) -> Any:
    """A figure as --preset-out writes it: floats to 6 significant digits, others as they
    are."""
    return float(f"{value:.6g}") if isinstance(value, float) else value


@dataclass(frozen=True)
class Repeat:
    """What a second timing of the same shapes said (calibrate --repeat)."""

    origin: str
    shared: int  # shapes both files timed
    left_out: list[int]  # source rows (1-based) whose two times lie beyond REPEAT_FACTOR

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.origin, "factor": REPEAT_FACTOR, "shapes_shared": self.shared,
                "rows_left_out": self.left_out}

    def line(self) -> str:
        """One sentence for the text report."""
        if not self.left_out:
            return (f"all {self.shared:,} shapes {self.origin} also timed repeat within "
                    f"{REPEAT_FACTOR:g}x")
        rows = ", ".join(str(r) for r in self.left_out[:SHOWN_LEFT_OUT])
        more = f" and {len(self.left_out) - SHOWN_LEFT_OUT} more" \
            if len(self.left_out) > SHOWN_LEFT_OUT else ""
        return (f"{len(self.left_out):,} of the {self.shared:,} shapes {self.origin} also "
                f"timed are more than {REPEAT_FACTOR:g}x apart in the two files (a timing that "
                f"did not repeat): left out of the fit and the report (source rows "
                f"{rows}{more})")


#: how many left-out source rows the text report names (--json lists them all)
SHOWN_LEFT_OUT = 12


@dataclass
class Calibration:
    gpu: GPU
    dtype: str
    data: Measurements
    params: fit.Params
    fitted: bool
    pure: np.ndarray  # pure-roofline seconds per row
    calibrated: np.ndarray  # refined-model seconds per row
    flagged: np.ndarray  # faster than the pure roofline
    held_out: list[fit.HeldOut] = field(default_factory=list)
    #: each operand's storage (A, B, C) the rows' bytes were counted in
    storage: tuple[str, str, str] = AUTO_STORAGE
    #: a second timing of the shapes (--repeat): where it came from, how many shapes it
    #: shares, and the source rows left out because the two times lie beyond REPEAT_FACTOR
    repeat: Repeat | None = None

    @property
    def error_before(self) -> np.ndarray:
        return fit.relative_error(self.pure, self.data.measured)

    @property
    def error_after(self) -> np.ndarray:
        return fit.relative_error(self.calibrated, self.data.measured)

    def faster_note(self) -> str:
        return {"cpu": FASTER_ON_CPU, "cuda": FASTER_ON_GPU}.get(self.data.device or "",
                                                                 FASTER_UNKNOWN)

    def as_dict(self) -> dict[str, Any]:
        before, after = fit.stats(self.error_before), fit.stats(self.error_after)
        d = self.data
        rows = [{"m": int(d.m[i]), "k": int(d.k[i]), "n": int(d.n[i]), "b": int(d.b[i]),
                 "measured_s": float(d.measured[i]), "predicted_s": float(self.pure[i]),
                 "calibrated_s": float(self.calibrated[i]),
                 "error": float(self.error_after[i]),
                 "error_before": float(self.error_before[i]),
                 "faster_than_roof": bool(self.flagged[i])} for i in range(len(d))]
        stored = precision.resolve(self.dtype, *self.storage)
        return {
            "gpu": self.gpu.name, "dtype": self.dtype, "source": d.origin,
            "storage": {"activation": stored.activation, "weight": stored.weight,
                        "output": stored.output},
            "time_column": d.time_header, "fitted": self.fitted,
            "compute_efficiency": self.params.compute_efficiency,
            "memory_efficiency": self.params.memory_efficiency,
            "launch_overhead_s": self.params.launch_overhead,
            "wave_quantization": self.params.waves,
            "tile_m": self.params.tile_m, "tile_n": self.params.tile_n,
            "overlap_exponent": self.params.overlap, "form": self.params.form,
            "k_latency_s": self.params.k_latency,
            "k_loop_tile_growth": self.params.k_tile_growth,
            "k_loop_tile_latency_s": self.params.tile_latency,
            "activation_quantize_bytes": self.params.quantize_bytes,
            "split_k_floor_s": self.params.split_floor,
            "split_k_min_k": self.params.split_min_k,
            "compute_ramp_flops": self.params.ramp_flops,
            "compute_ramp_exponent": self.params.ramp_exponent,
            "compute_ramp_end_flops": self.params.ramp_end,
            "compute_efficiency_asymptote": self.params.asymptote,
            "write_cost": self.params.write_cost,
            "activation_quantize_efficiency": self.params.quantize_efficiency,
            "activation_quantize_row_latency_s": self.params.quantize_row_latency,
            "activation_quantize_k_latency_s": self.params.quantize_k_latency,
            "sm_count": device_for(self.gpu, self.dtype).sm_count,
            "median_abs_error_before": before[0], "p90_abs_error_before": before[1],
            "median_abs_error_after": after[0], "p90_abs_error_after": after[1],
            "held_out": [{"model": h.model, "median_abs_error": h.median_abs_error,
                          "p90_abs_error": h.p90_abs_error, "rows": h.rows,
                          "compute_efficiency": h.params.compute_efficiency,
                          "memory_efficiency": h.params.memory_efficiency,
                          "launch_overhead_s": h.params.launch_overhead,
                          "overlap_exponent": h.params.overlap,
                          "k_latency_s": h.params.k_latency,
                          "k_loop_tile_growth": h.params.k_tile_growth,
                          "k_loop_tile_latency_s": h.params.tile_latency,
                          "split_k_floor_s": h.params.split_floor,
                          "compute_ramp_flops": h.params.ramp_flops,
                          "compute_ramp_exponent": h.params.ramp_exponent,
                          "write_cost": h.params.write_cost,
                          "activation_quantize_efficiency": h.params.quantize_efficiency,
                          "activation_quantize_row_latency_s": h.params.quantize_row_latency,
                          "activation_quantize_k_latency_s": h.params.quantize_k_latency,
                          "train_median_abs_error": h.train_median_abs_error,
                          "train_p90_abs_error": h.train_p90_abs_error}
                         for h in self.held_out],
            "rows": rows,
            "faster_than_roof": [r for r in rows if r["faster_than_roof"]],
            "faster_than_roof_note": self.faster_note() if self.flagged.any() else "",
            "repeat": self.repeat.as_dict() if self.repeat is not None else None,
            "largest_matmul": self.largest(),
            "share_by_size": self.share_by_size(),
        }

    def largest(self) -> dict[str, Any]:
        """The largest matmul measured (most FLOPs; rows faster than the roofline left out
        where others remain) and the share of the peak it reached, measured and as the
        fitted model predicts it: how far the data reaches, where a fitted compute ramp ends
        (fit.held_from)."""
        d = self.data
        flops = fit.b_flops(d)
        i = fit.largest_row(d, self.flagged)
        peak = device_for(self.gpu, self.dtype, self.storage).peak
        return {"m": int(d.m[i]), "k": int(d.k[i]), "n": int(d.n[i]), "b": int(d.b[i]),
                "measured_share_of_peak": float(share_of_peak(flops[i], d.measured[i], peak)),
                "model_share_of_peak": float(share_of_peak(flops[i], self.calibrated[i], peak))}

    def share_by_size(self) -> list[dict[str, Any]]:
        """The median share of the peak the compute-bound rows reached, measured and as the
        refined model predicts it, per decade of FLOPs: where the fit follows the data as
        matmuls grow and where it does not (a compute ramp only rises; the longest GEMMs on
        a power-limited GPU can run slower per FLOP). Compute-bound: the pure roofline's
        compute time at least its memory time; rows faster than the roofline left out, as
        from the fit."""
        d = self.data
        device = device_for(self.gpu, self.dtype, self.storage)
        terms = fit.fixed_terms(device, fit.PURE, d)
        flops = terms.flops
        keep = (flops / device.peak >= terms.moved / device.bandwidth) & ~self.flagged
        decade = np.floor(np.log10(np.where(flops > 0, flops, 1.0)))
        measured = share_of_peak(flops, d.measured, device.peak)
        model = share_of_peak(flops, self.calibrated, device.peak)
        out = []
        for e in np.unique(decade[keep]):
            rows = keep & (decade == e)
            out.append({"flops_from": float(10.0 ** e), "flops_to": float(10.0 ** (e + 1)),
                        "rows": int(rows.sum()),
                        "measured_median_share": float(np.median(measured[rows])),
                        "model_median_share": float(np.median(model[rows]))})
        return out

    def shown_rows(self) -> list[int]:
        """The rows the text report prints: all of a short file in its order; of a longer one
        the SHOWN_ROWS the refined model misses most (largest |error| first, ties in file
        order), since the first rows of a big table say nothing about where the fit fails."""
        if len(self.data) <= SHOWN_ROWS:
            return list(range(len(self.data)))
        order = np.argsort(-np.abs(self.error_after), kind="stable")
        return [int(i) for i in order[:SHOWN_ROWS]]

    def lines(self) -> list[str]:
        d, p = self.data, self.params
        before, after = fit.stats(self.error_before), fit.stats(self.error_after)
        how = "fitted to" if self.fitted else "checked (--no-fit) against"
        sms = device_for(self.gpu, self.dtype).sm_count
        waves = (f"waves on ({p.tile_m}x{p.tile_n} tiles, {sms} SMs)" if p.waves and sms
                 else NO_SMS_NOTE if p.waves else "waves off")
        if p.overlap >= 1:
            waves += f", smooth max of compute and memory time (p = {p.overlap:.3g})"
        if p.k_loop:
            waves += f", K-loop latency {seconds(p.k_latency)} per unit of k"
            if p.k_tile_growth:
                waves += (" for a 64x64 tile, x2 for m > 64 and x4 for m > 128 (the library's "
                          "tile grows with m), the GEMM at least the floor plus its waves of "
                          f"tiles, each {seconds(p.tile_latency)} and its loop")
        if p.split_min_k:
            waves += (f", split-K kernel floor {seconds(p.split_floor)} where the tiles "
                      f"under-fill the SMs and k ≥ {p.split_min_k:g}")
        if p.ramp_flops:
            waves += (f", compute ramp to half the asymptotic efficiency at "
                      f"{p.ramp_flops:.3g} FLOPs (h = {p.ramp_exponent:.3g})")
            if p.ramp_end:
                waves += (f" ending at {p.ramp_end:.3g} FLOPs (the largest matmul): the "
                          "compute efficiency is the fit's at that size, held beyond")
        if p.write_cost != 1:
            waves += f", each byte of C written costing {p.write_cost:.3g} bytes read"
        if p.quantize_bytes:
            waves += (f", activation quantize pass {p.quantize_bytes:g} B per element of A "
                      "(from the file)")
            if p.has_quantize_kernel:
                eff = p.quantize_efficiency or p.memory_efficiency
                waves += (f" as a kernel of its own: the slowest of its bytes at "
                          f"{eff:.3f} of the bandwidth, {seconds(p.quantize_row_latency)} "
                          f"per row of A and {seconds(p.quantize_k_latency)} per element "
                          "of a row")
        if self.storage != AUTO_STORAGE:
            stored = precision.resolve(self.dtype, *self.storage)
            waves += (f", operands stored A {stored.activation}, B {stored.weight}, "
                      f"C {stored.output}")
        out = [f"{self.gpu.name} {self.dtype}: refined model {how} {len(d)} measured times "
               f"({d.origin}, column {d.time_header!r})",
               f"  compute efficiency {p.compute_efficiency:.3f}, memory efficiency "
               f"{p.memory_efficiency:.3f}, launch floor {seconds(p.launch_overhead)}, {waves}",
               f"  |error| median / p90: pure roofline {before[0]:.1%} / {before[1]:.1%}  ->  "
               f"refined {after[0]:.1%} / {after[1]:.1%}"]
        big = self.largest()
        out.append(f"  largest matmul measured, {big['m']}x{big['k']}x{big['n']}"
                   + (f" x{big['b']}" if big["b"] > 1 else "")
                   + f": {big['measured_share_of_peak']:.1%} of the peak, the refined model "
                   f"{big['model_share_of_peak']:.1%}")
        sizes = self.share_by_size()
        if sizes:
            out.append("  share of the peak by size, compute-bound rows (median: measured / "
                       "refined model):")
            out += [f"    {b['flops_from']:.0e} to {b['flops_to']:.0e} FLOPs  {b['rows']:5d} rows"
                    f"  {b['measured_median_share']:6.1%} / {b['model_median_share']:6.1%}"
                    for b in sizes]
        if self.held_out:
            n_test = self.held_out[0].rows
            out.append(f"held-out: fitted on {len(d) - n_test} rows, tested on the other "
                       f"{n_test}  (median / p90 |error|)")
            width = max(len(h.model) for h in self.held_out)
            out += [f"  {h.model:<{width}} {h.median_abs_error:7.1%} / {h.p90_abs_error:7.1%}"
                    for h in self.held_out]
            out.append(f"  -> the refined model is used with the {p.form} (the lowest held-out "
                       "median)")
        shown = self.shown_rows()
        if len(shown) < len(d):
            out.append(f"the {len(shown)} of {len(d)} rows the refined model misses most, "
                       "largest |error| first (--json lists them all):")
        out.append(f"{'m':>7} {'k':>7} {'n':>7} {'b':>4} {'measured':>10} {'roofline':>10} "
                   f"{'refined':>10} {'error':>8}")
        for i in shown:
            flag = "  faster than roof" if self.flagged[i] else ""
            out.append(f"{d.m[i]:7.0f} {d.k[i]:7.0f} {d.n[i]:7.0f} {d.b[i]:4.0f} "
                       f"{seconds(d.measured[i]):>10} {seconds(self.pure[i]):>10} "
                       f"{seconds(self.calibrated[i]):>10} {self.error_after[i]:8.1%}{flag}")
        if self.flagged.any():
            out.append(f"{int(self.flagged.sum())} row(s) faster than the roofline allows, "
                       f"left out of the fit: {self.faster_note()}")
        if self.repeat is not None:
            out.append(self.repeat.line())
        return out

    def preset(self, name: str | None = None) -> dict[str, Any]:
        """The source preset with the fitted efficiencies, floor and tile settings."""
        gpu, p = self.gpu, self.params
        values = {f.name: getattr(gpu, f.name) for f in dataclasses.fields(gpu)
                  if f.name != "sources"}
        values["name"] = name or f"{gpu.name} (calibrated)"
        fitted: dict[str, Any] = {**refined_fields(p),
                                  "activation_quantize_bytes": p.quantize_bytes}
        by_dtype = dict(gpu.compute_efficiency_by_dtype)
        if self.dtype == hardware.DEFAULT_DTYPE:  # the preset's own efficiency is for bf16
            fitted["measured_compute_efficiency"] = p.compute_efficiency
            by_dtype.pop(self.dtype, None)
        else:
            by_dtype[self.dtype] = preset_figure(float(p.compute_efficiency))
        how = (f"fitted by sheetgen calibrate to {len(self.data)} {self.dtype} times in "
               f"{self.data.origin} ({self.data.metadata.get('date', 'undated')})")
        if by_dtype:
            values[hardware.BY_DTYPE] = by_dtype
            if self.dtype != hardware.DEFAULT_DTYPE:
                fitted[hardware.BY_DTYPE] = by_dtype
        others = {d: own for d, own in gpu.refined_by_dtype.items() if d != self.dtype}
        if others:  # the source preset's other dtypes keep theirs; this one is the fit's
            values[hardware.REFINED_BY_DTYPE] = others
        if gpu.quantize_bytes_by_dtype:  # the source preset's, this dtype's from the file
            values[hardware.QUANTIZE_BY_DTYPE] = dict(gpu.quantize_bytes_by_dtype) | (
                {self.dtype: p.quantize_bytes} if self.dtype in gpu.quantize_bytes_by_dtype
                else {})
        known = {"name", "peak_flops", hardware.BY_DTYPE, hardware.QUANTIZE_BY_DTYPE,
                 hardware.REFINED_BY_DTYPE, *hardware.UNITS}
        out: dict[str, Any] = {}
        for key, value in values.items():
            if key not in known:
                continue
            if key in fitted:
                value = fitted[key]
            out[key] = preset_figure(value)
            if key in fitted:
                out[f"{key}_source"] = how
            elif key in gpu.sources:
                out[f"{key}_source"] = gpu.sources[key]
        for key, value in fitted.items():  # fields this version of the presets lacks
            if key in known and key not in out:
                out[key] = value
                out[f"{key}_source"] = how
        out["activation_quantize_bytes_source"] = (  # stated by the file, never fitted
            f"the timed code path's, from '# {QUANTIZE_KEY}' in {self.data.origin} "
            "(0 without that line)")
        return out

    def write_preset(self, path: str | Path, name: str | None = None,
                     force: bool = True) -> Path:
        return write_preset(path, [self.preset(name)], header=[
            f"Calibrated by sheetgen calibrate from {self.data.origin}.",
            "Load it with --gpu-file FILE --gpu NAME."], force=force)


def refined_fields(p: fit.Params) -> dict[str, Any]:
    """The preset fields of a fit's refined model and kernel terms (REFINED_FIELDS): what
    --preset-out writes at the top level for the fitted dtype, and in refined_by_dtype for
    each other dtype of a file that timed several."""
    return {"measured_memory_efficiency": p.memory_efficiency,
            "launch_overhead": p.launch_overhead, "wave_quantization": p.waves,
            "tile_m": p.tile_m, "tile_n": p.tile_n, "overlap_exponent": p.overlap,
            "k_latency": p.k_latency, "k_loop_tile_growth": p.k_tile_growth,
            "k_loop_tile_latency": p.tile_latency, "split_k_floor": p.split_floor,
            "split_k_min_k": int(p.split_min_k), "compute_ramp_flops": p.ramp_flops,
            "compute_ramp_exponent": p.ramp_exponent,
            "compute_ramp_end_flops": round(p.ramp_end), "write_cost": p.write_cost,
            **quantize_kernel_fields(p)}


def quantize_kernel_fields(p: fit.Params) -> dict[str, float]:
    """The preset fields of the quantize pass's own roofline (all 0 without one)."""
    return {"activation_quantize_efficiency": float(p.quantize_efficiency),
            "activation_quantize_row_latency": float(p.quantize_row_latency),
            "activation_quantize_k_latency": float(p.quantize_k_latency)}


def calibrate(data: Measurements, gpu: GPU, *, no_fit: bool = False,
              storage: tuple[str, str, str] = AUTO_STORAGE) -> Calibration:
    """Fit (or, with no_fit, check the preset's refined model) against the measurements,
    their bytes counted with each operand in `storage` (A, B, C)."""
    device = device_for(gpu, data.dtype, storage)
    flagged = fit.faster_than_roof(device, data)
    if no_fit:  # the file's own quantize line (or --quantize-bytes) wins over the preset's
        params, scores = preset_params(gpu, data.dtype), []
        if QUANTIZE_KEY in data.metadata or f"{QUANTIZE_KEY}.{data.dtype}" in data.metadata:
            params = dataclasses.replace(params, quantize_bytes=data.quantize_bytes)
    else:  # the efficiency where the data ends, not the ramp's asymptote beyond it
        params, scores = fit.choose(device, data)
        end = fit.b_flops(data)[fit.largest_row(data, flagged)]
        params = fit.held_from(params, float(end))
    return Calibration(gpu, data.dtype, data, params, not no_fit,
                       fit.predict(device, fit.PURE, data), fit.predict(device, params, data),
                       flagged, scores, storage)


def measured_inputs(cal: Calibration) -> MeasuredInputs:
    """The Measured sheet's contents: the rows and the fitted (or preset) values."""
    d, p = cal.data, cal.params
    return MeasuredInputs(
        m=[int(v) for v in d.m], k=[int(v) for v in d.k], n=[int(v) for v in d.n],
        b=[int(v) for v in d.b], seconds=[float(v) for v in d.measured],
        compute_efficiency=p.compute_efficiency, memory_efficiency=p.memory_efficiency,
        launch_overhead=p.launch_overhead, waves=p.waves, tile_m=p.tile_m, tile_n=p.tile_n,
        sm_count=device_for(cal.gpu, cal.dtype).sm_count, source=d.origin, overlap=p.overlap,
        k_latency=p.k_latency, k_tile_growth=p.k_tile_growth, tile_latency=p.tile_latency,
        quantize_bytes=p.quantize_bytes, split_floor=p.split_floor,
        split_min_k=p.split_min_k, ramp_flops=p.ramp_flops, ramp_exponent=p.ramp_exponent,
        ramp_end=p.ramp_end, write_cost=p.write_cost,
        quantize_efficiency=p.quantize_efficiency,
        quantize_row_latency=p.quantize_row_latency, quantize_k_latency=p.quantize_k_latency)


def calibrate_file(path: str | Path, *, gpu: str | None = None,
                   gpu_file: str | Path | None = None, dtype: str | None = None,
                   no_fit: bool = False, sheet: str | None = None,
                   quantize_bytes: float | None = None,
                   storage: tuple[str, str, str] = AUTO_STORAGE,
                   repeat: str | Path | None = None) -> Calibration:
    """Read the measurements and calibrate the chosen preset to them; `quantize_bytes`
    overrides the file's activation-quantize bytes per element; `repeat`, a second timing
    of the shapes, leaves out the rows it contradicts (repeated)."""
    presets = hardware.load_presets(gpu_file)
    chosen = presets.get(gpu or presets.default)
    data = read_measurements(path, dtype=dtype, sheet=sheet)
    if quantize_bytes is not None:
        if not math.isfinite(quantize_bytes) or quantize_bytes < 0:
            raise InputError(f"quantize_bytes={quantize_bytes!r}: bytes per element of A "
                             "must be 0 or more")
        data.metadata = {**{k: v for k, v in data.metadata.items()
                            if not k.startswith(f"{QUANTIZE_KEY}.")},
                         QUANTIZE_KEY: repr(float(quantize_bytes))}
    if repeat is None:
        return calibrate(data, chosen, no_fit=no_fit, storage=storage)
    try:
        second = read_measurements(repeat, dtype=data.dtype)
    except InputError as bad:  # say which of the two files it is
        raise InputError(f"--repeat: {bad}") from None
    data, again = repeated(data, second)
    return dataclasses.replace(calibrate(data, chosen, no_fit=no_fit, storage=storage),
                               repeat=again)


def repeated(data: Measurements, again: Measurements) -> tuple[Measurements, Repeat]:
    """The rows of `data` that `again` does not contradict (calibrate.data.not_repeated),
    and what it said: the source rows it left out. A file that shares no shape, or
    contradicts every row, is an error."""
    ratio = repeat_ratio(data, again)
    shared = int(np.isfinite(ratio).sum())
    if not shared:
        raise InputError(f"--repeat {again.origin}: no shape (m, k, n, b) in common with "
                         f"{data.origin}")
    drop = not_repeated(ratio)
    if drop.all():
        raise InputError(f"--repeat {again.origin}: every one of the {len(data)} rows of "
                         f"{data.origin} differs from it by more than {REPEAT_FACTOR:g}x; "
                         "nothing repeats to fit")
    left_out = [data.rows[i] for i in np.flatnonzero(drop)]
    return data.subset(~drop), Repeat(again.origin, shared, left_out)


def calibrate_dtypes(path: str | Path, *, gpu: str | None = None,
                     gpu_file: str | Path | None = None, dtype: str | None = None,
                     no_fit: bool = False, sheet: str | None = None,
                     quantize_bytes: float | None = None,
                     storage: tuple[str, str, str] = AUTO_STORAGE,
                     repeat: str | Path | None = None) -> list[Calibration]:
    """One calibration per dtype of the file (just the chosen one with `dtype`); the
    preset's default dtype (bf16) first when present."""
    try:
        return [calibrate_file(path, gpu=gpu, gpu_file=gpu_file, dtype=dtype, no_fit=no_fit,
                               sheet=sheet, quantize_bytes=quantize_bytes, storage=storage,
                               repeat=repeat)]
    except SeveralDtypes as several:
        order = sorted(several.dtypes, key=lambda d: (d != hardware.DEFAULT_DTYPE, d))
        return [calibrate_file(path, gpu=gpu, gpu_file=gpu_file, dtype=d, no_fit=no_fit,
                               sheet=sheet, quantize_bytes=quantize_bytes, storage=storage,
                               repeat=repeat)
                for d in order]


def merged_preset(cals: list[Calibration], name: str | None = None) -> dict[str, Any]:
    """The first calibration's preset with every other dtype's fitted compute efficiency in
    measured_compute_efficiency_by_dtype and its whole refined model and kernel terms in
    refined_by_dtype (each dtype runs its own kernels; the top-level figures, which the main
    workbook uses, are the first calibration's)."""
    out = cals[0].preset(name)
    if len(cals) == 1:
        return out
    refined = dict(out.get(hardware.REFINED_BY_DTYPE, {}))
    for cal in cals[1:]:
        refined[cal.dtype] = {k: preset_figure(v) for k, v in refined_fields(cal.params).items()}
    out[hardware.REFINED_BY_DTYPE] = refined
    out[f"{hardware.REFINED_BY_DTYPE}_source"] = (
        "fitted by sheetgen calibrate per dtype: " + ", ".join(
            f"{c.dtype} to {len(c.data)} times" for c in cals[1:])
        + f" in {cals[0].data.origin}")
    by_dtype = dict(out.get(hardware.BY_DTYPE, {}))
    for cal in cals[1:]:
        by_dtype[cal.dtype] = preset_figure(float(cal.params.compute_efficiency))
    out[hardware.BY_DTYPE] = by_dtype
    out[f"{hardware.BY_DTYPE}_source"] = (
        "fitted by sheetgen calibrate per dtype: " + ", ".join(
            f"{c.dtype} to {len(c.data)} times" for c in cals[1:])
        + f" in {cals[0].data.origin}")
    # a dtype whose timed code path quantizes its activation differently from the first's
    # (fp8 beside bf16) keeps its own bytes per element: they belong to that code path
    quantize = {c.dtype: c.params.quantize_bytes for c in cals[1:]
                if c.params.quantize_bytes != cals[0].params.quantize_bytes}
    if quantize:
        out[hardware.QUANTIZE_BY_DTYPE] = quantize
        out[f"{hardware.QUANTIZE_BY_DTYPE}_source"] = (
            f"each dtype's timed code path, from '# {QUANTIZE_KEY}' in "
            f"{cals[0].data.origin} (0 without that line)")
    return out


def write_merged_preset(cals: list[Calibration], path: str | Path, name: str | None = None,
                        force: bool = True) -> Path:
    return write_preset(path, [merged_preset(cals, name)], header=[
        f"Calibrated by sheetgen calibrate from {cals[0].data.origin} "
        f"({', '.join(c.dtype for c in cals)}).",
        "Load it with --gpu-file FILE --gpu NAME."], force=force)
