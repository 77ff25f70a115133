"""How well the model predicts measured matmul times, on shapes it was not fitted to.

For each dataset the rows are split into two halves (alternating in order of roofline time, so
both halves span small, memory-bound and compute-bound shapes); the fit sees one half and the
median and p90 |error| are reported on the other, for three models:

    pure roofline          max(FLOPs / peak, bytes / bandwidth): no floor, efficiencies 1.0
    calibrated             fitted launch floor + compute and memory efficiency
    calibrated + waves     the same with 128×128-tile wave quantization

Datasets:
    cpu       this machine's CPU, measured now by `sheetgen measure` (the built-in sweep of
              ~40 shapes, --cpu-seconds budget); the "peak" and "bandwidth" are the measured
              achievable ones (best large square matmul, large copy), so the pure roofline
              already has measured figures
    xla       XLA's published H100 table (benchmarks/data/xla_h100_sm90.csv) against the
              H100 SXM spec preset: bf16 single-batch (125 shapes), bf16 b ∈ {1,2,4} (375),
              f32 run as TF32 against the tf32 peak (375)
    gpu       with --gpu on a machine with an NVIDIA GPU and PyTorch: bf16 and fp8 measured
              now (--gpu-seconds, at most 8 minutes), written to benchmarks/data/

    python benchmarks/bench_accuracy.py                   # cpu + xla (about 2 minutes)
    python benchmarks/bench_accuracy.py --skip-cpu        # xla only (seconds)
    python benchmarks/bench_accuracy.py --gpu --gpu-seconds 420 --out accuracy.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from sheetgen.calibrate import fit
from sheetgen.calibrate.data import Measurements, read_measurements
from sheetgen.calibrate.report import device_for
from sheetgen.inputs.presets import GPU, load_presets

DATA = Path(__file__).resolve().parent / "data"
XLA = DATA / "xla_h100_sm90.csv"
TILES = ((128, 128),)


def held_out_rows(name: str, device: fit.Device, data: Measurements) -> list[str]:
    """Markdown rows: the three models scored on the half they were not fitted to."""
    scores = fit.held_out(device, data, TILES)
    flagged = int(fit.faster_than_roof(device, data).sum())
    n_fit = len(data) - scores[0].rows
    out = []
    for s in scores:
        model = s.model.replace(" (128x128 tiles)", "")
        p = s.params
        fitted = (f"{p.compute_efficiency:.3f} / {p.memory_efficiency:.3f} / "
                  f"{p.launch_overhead * 1e6:.2f} µs" if s.model != "pure roofline" else "")
        out.append(f"| {name} | {n_fit} / {s.rows} | {flagged} | {model} | "
                   f"{s.median_abs_error:.1%} | {s.p90_abs_error:.1%} | {fitted} |")
    return out


HEADER = ["| dataset | rows fit / test | faster than roof | model | median abs error "
          "| p90 abs error | fitted compute eff / memory eff / floor |",
          "|---|---:|---:|---|---:|---:|---|"]


def xla_rows(h100: GPU) -> list[str]:
    bf16 = read_measurements(XLA, dtype="bf16")
    tf32 = read_measurements(XLA, dtype="tf32")
    return [*held_out_rows("XLA H100 bf16, b = 1", device_for(h100, "bf16"),
                           bf16.subset(bf16.b == 1)),
            *held_out_rows("XLA H100 bf16, b = 1, 2, 4", device_for(h100, "bf16"), bf16),
            *held_out_rows("XLA H100 f32 as TF32", device_for(h100, "tf32"), tf32)]


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def measured_rows(device: str, dtypes: list[str], seconds: float, keep: Path | None,
                  label: str, threads: int | None = None) -> tuple[list[str], str]:
    """Measure now (`python -m sheetgen.measure` in a subprocess, so BLAS thread variables
    apply), then score; returns the rows and a line describing the device."""
    with tempfile.TemporaryDirectory() as tmp:
        out = keep or Path(tmp) / "measured.csv"
        preset_path = Path(tmp) / "device.toml"
        env = dict(os.environ)
        if threads is not None:
            env.update({v: str(threads) for v in THREAD_VARS})
        subprocess.run([sys.executable, "-m", "sheetgen.measure", str(out), "--device", device,
                        "--dtype", ",".join(dtypes), "--max-seconds", str(seconds),
                        "--preset-out", str(preset_path), "--name", "measured", "--force"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        gpu = load_presets(preset_path).get("measured")
        rows = []
        for dtype in dtypes:
            data = read_measurements(out, dtype=dtype)
            rows += held_out_rows(f"{label} {dtype}", device_for(gpu, dtype), data)
        meta = data.metadata
        n_rows = sum(1 for ln in out.read_text().splitlines()
                     if ln and not ln.startswith(("#", "m,")))
    peaks = ", ".join(f"measured peak {d} {float(meta[f'peak_flops.{d}']) / 1e12:.3g} TFLOP/s"
                      for d in dtypes if f"peak_flops.{d}" in meta)
    about = (f"{label}: {meta.get('device_name')}, {meta.get('thread_env', '')} "
             f"({meta.get('cpu_threads', meta.get('sm_count'))} threads/SMs available), "
             f"{n_rows} timings in {meta.get('seconds_taken')} s, {peaks}, copy bandwidth "
             f"{float(meta.get('copy_bandwidth', 0)) / 1e9:.3g} GB/s, {meta.get('date')}"
             + (f", load average {meta['load_average_1_5_15min']} at the start"
                if "load_average_1_5_15min" in meta else ""))
    return rows, about


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-cpu", action="store_true", help="only the XLA (and GPU) data")
    ap.add_argument("--cpu-seconds", type=float, default=100.0,
                    help="measure budget on the CPU (the whole run stays under 2 minutes)")
    ap.add_argument("--cpu-threads", type=int, default=1,
                    help="BLAS threads on the CPU (1: steadier on a machine shared with "
                         "other jobs, where a descheduled thread stalls the others)")
    ap.add_argument("--gpu", action="store_true", help="also measure bf16 and fp8 on CUDA")
    ap.add_argument("--gpu-seconds", type=float, default=420.0)
    ap.add_argument("--out", type=Path, help="also write the markdown table here")
    args = ap.parse_args(argv)
    h100 = load_presets().get("H100 SXM")
    lines = list(HEADER)
    notes = []
    if not args.skip_cpu:
        rows, about = measured_rows("cpu", ["fp32"], args.cpu_seconds, None,
                                    f"this CPU, {args.cpu_threads} BLAS thread(s),",
                                    threads=args.cpu_threads)
        lines += rows
        notes.append(about)
    lines += xla_rows(h100)
    notes.append(f"XLA: {XLA.name} against the {h100.name} spec preset (see data/NOTICE)")
    if args.gpu:
        keep = DATA / "cuda_measured.csv"
        rows, about = measured_rows("cuda", ["bf16", "fp8"], args.gpu_seconds, keep, "GPU")
        lines += rows
        notes.append(about + f"; CSV: {keep}")
    text = "\n".join(lines + [""] + [f"- {n}" for n in notes]) + "\n"
    sys.stdout.write(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
