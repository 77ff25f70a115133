"""An experiment, not the model: the activation-quantize pass as a kernel with a roofline of
its own, scored on the published tables that state a pass (docs/measuring.md).

The model charges the pass its bytes at the GEMM's fitted bandwidth. Here it is

    quantize = max(bytes / (bandwidth · eff_q), b·m·tau_row, b·k·tau_k)

with eff_q, tau_row and tau_k fitted too: a per-row serial cost (vLLM's dynamic per-tensor
scale ends each row's block in an atomic on the one scale) and a per-element cost of one
row (SGLang reads each row with one warp). Each table's model (smooth max + K loop +
split-K floor + compute ramp) is fitted on the fit half as bench_accuracy does, then refitted
from there with the three terms, and both are scored on the held-out half.

    python benchmarks/quantize_kernel_experiment.py            # every table with a pass
    python benchmarks/quantize_kernel_experiment.py --table "aiconfigurator H100 SXM fp8, vLLM"
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
from bench_accuracy import DATA, device_for, published_tables
from scipy.optimize import least_squares

from sheetgen.calibrate import fit
from sheetgen.calibrate.data import Measurements, read_measurements
from sheetgen.inputs.presets import MAX_RAMP_EXPONENT, MIN_RAMP_EXPONENT, load_presets

#: (tau_row, tau_k) starting points, in units of the fastest time over the largest b·m or k
STARTS = ((0.0, 0.0), (1.0, 1.0), (10.0, 10.0), (10.0, 0.0), (0.0, 10.0))


def predicted(device: fit.Device, p: fit.Params, rows: Measurements, fixed: fit.Fixed,
              terms: tuple[float, float, float]) -> np.ndarray:
    """The model's time with its quantize pass replaced by the pass's own roofline (`fixed`:
    fit.fixed_terms of these rows, computed once per fit as fit.fit does)."""
    tau_row, tau_k, eff_q = terms
    bytes_time = fixed.quantize_moved / (device.bandwidth * p.memory_efficiency)
    own = np.maximum.reduce([fixed.quantize_moved / (device.bandwidth * eff_q),
                             rows.b * rows.m * tau_row, rows.b * rows.k * tau_k])
    return fit.timed(device, p, fixed) - bytes_time + np.where(fixed.quantize_moved > 0,
                                                               own, 0.0)


def refit(device: fit.Device, rows: Measurements, base: fit.Params
          ) -> tuple[fit.Params, tuple[float, float, float]]:
    """Every parameter of `base` and the three terms, fitted as fit.fit fits (soft-L1 on the
    relative error, rows faster than the roof left out), from base."""
    rows = rows.subset(~fit.faster_than_roof(device, rows))
    scale = float(np.min(rows.measured))
    row_scale = scale / float(np.max(rows.b * rows.m))
    k_scale = scale / float(np.max(rows.k))
    log_flops = np.log10(fit.b_flops(rows))
    fixed = fit.fixed_terms(device, base, rows)  # no refitted field changes these

    def unpack(x: np.ndarray) -> tuple[fit.Params, tuple[float, float, float]]:
        p = replace(base, compute_efficiency=x[0], memory_efficiency=x[1],
                    launch_overhead=x[2] * scale, overlap=x[3], k_latency=x[4] * k_scale,
                    split_floor=x[5] * scale, ramp_exponent=x[6], ramp_flops=10.0 ** x[7])
        return p, (x[8] * row_scale, x[9] * k_scale, x[10])

    def residuals(x: np.ndarray) -> np.ndarray:
        p, terms = unpack(x)
        return fit.relative_error(predicted(device, p, rows, fixed, terms),
                                  rows.measured)

    lower = np.array([fit.MIN_EFFICIENCY, fit.MIN_EFFICIENCY, 0.0, 1.0, 0.0, 0.0,
                      MIN_RAMP_EXPONENT, log_flops.min() - 3.0, 0.0, 0.0, fit.MIN_EFFICIENCY])
    upper = np.array([1.0, 1.0, np.inf, fit.MAX_OVERLAP_EXPONENT, np.inf, np.inf,
                      MAX_RAMP_EXPONENT, log_flops.max() + 1.0, np.inf, np.inf, 1.0])
    x_base = np.clip([base.compute_efficiency, base.memory_efficiency,
                      base.launch_overhead / scale, base.overlap, base.k_latency / k_scale,
                      base.split_floor / scale, base.ramp_exponent,
                      np.log10(max(base.ramp_flops, 1e-30))], lower[:8] + 1e-9, upper[:8] - 1e-9)
    best = None
    for tau_row, tau_k in STARTS:
        x0 = [*x_base, tau_row, tau_k, min(base.memory_efficiency, 0.99)]
        result = least_squares(residuals, x0=x0, bounds=(lower, upper), loss="soft_l1",
                               f_scale=fit.ROBUST_SCALE, method="trf")
        if best is None or result.cost < best.cost:
            best = result
    assert best is not None
    return unpack(best.x)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", action="append", help="only this table (repeatable)")
    args = ap.parse_args(argv)
    print("| table | model | + quantize kernel roofline | fitted τ_row / τ_k / its efficiency |")
    print("|---|---:|---:|---|")
    for table in published_tables():
        if args.table and table.name not in args.table:
            continue
        data = read_measurements(DATA / table.file, dtype=table.dtype)
        if not data.quantize_bytes:
            continue
        device = device_for(load_presets().get(table.gpu), table.dtype)
        train, test = fit.split_halves(device, data)
        fit_rows, test_rows = data.subset(train), data.subset(test)
        split = fit.fit(device, fit_rows, overlap=True, k_loop=True, split_k=True)
        model = fit.fit(device, fit_rows, overlap=True, k_loop=True, split_k=True, ramp=True,
                        base=split)
        before = fit.stats(fit.relative_error(fit.predict(device, model, test_rows),
                                              test_rows.measured))
        p, terms = refit(device, fit_rows, model)
        after = fit.stats(fit.relative_error(predicted(device, p, test_rows,
                                                       fit.fixed_terms(device, p, test_rows),
                                                       terms),
                                             test_rows.measured))
        print(f"| {table.name} | {before[0]:.1%} / {before[1]:.1%} | {after[0]:.1%} / "
              f"{after[1]:.1%} | {terms[0] * 1e9:.2f} ns / {terms[1] * 1e9:.2f} ns / "
              f"{terms[2]:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
