"""How well the model predicts measured matmul times, on shapes it was not fitted to.

For each dataset the rows are split into two halves (alternating in order of roofline time, so
both halves span small, memory-bound and compute-bound shapes); the fit sees one half and the
median and p90 |error| are reported on the other (and, for the model, on the fit half too),
for these models:

    pure roofline          max(FLOPs / peak, bytes / bandwidth): no floor, efficiencies 1.0
    calibrated             fitted launch floor + compute and memory efficiency
    calibrated + smooth max            the same with the p-norm of compute and memory time
    calibrated + smooth max + K loop   and the serial K loop's latency
    ... + split-K                      and a second kernel's floor where the output tiles
                                       under-fill the SMs and k ≥ 2048 (no K loop there)
    ... + ramp                         and a Hill-type ramp of the compute efficiency in
                                       FLOPs, F^h / (F^h + F_half^h) (the model)
    calibrated + waves     the hard max with 128×128-tile wave quantization

Datasets:
    cpu       this machine's CPU, measured now by `sheetgen measure` (the built-in sweep of
              ~40 shapes, --cpu-seconds budget); the "peak" and "bandwidth" are the measured
              achievable ones (best large square matmul, large copy), so the pure roofline
              already has measured figures
    published every table in benchmarks/data/tables.toml (XLA's H100, MI300X and B200
              tables, NVIDIA aiconfigurator's A100/H100/H200/B200/B300/GB200/GB300/L40S
              tables through TensorRT-LLM, its A100/H100/H200/B200/B300/GB200/GB300
              tables through vLLM and SGLang (no B300 SGLang table of its own), its RTX
              PRO 6000 Server tables through all three and its Intel Arc Pro B60 table,
              AMD aiter's MI300X int8 and MI355X bf16, int8 and fp8 tables, DeepSeek
              DeepGEMM's H800 fp8 table; sources in
              benchmarks/data/NOTICE),
              each against its spec preset, reported separately:
              rows, median and p90 |error| of the pure roofline and of the calibrated model
              on the held-out half, and the fitted values; where a table has a twin (the
              same collector and framework version on the same GPU silicon in another
              board: B200 and GB200, B300 and GB300), also the model on the held-out rows
              the twin repeats within 1.5x (the fit is the same)
    gpu       with --gpu on a machine with an NVIDIA GPU and PyTorch: bf16 and fp8 measured
              now (--gpu-seconds, at most 8 minutes), written to benchmarks/data/

    python benchmarks/bench_accuracy.py                   # cpu + published (about 2 minutes)
    python benchmarks/bench_accuracy.py --skip-cpu        # published tables only (a minute)
    python benchmarks/bench_accuracy.py --skip-cpu --chart docs/accuracy.png   # and a chart
    python benchmarks/bench_accuracy.py --gpu --gpu-seconds 420 --out accuracy.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sheetgen.calibrate import fit
from sheetgen.calibrate.data import Measurements, not_repeated, read_measurements, repeat_ratio
from sheetgen.calibrate.report import AUTO_STORAGE, calibrate, device_for
from sheetgen.core.defaults import REPEAT_FACTOR
from sheetgen.inputs import precision
from sheetgen.inputs.presets import load_presets

DATA = Path(__file__).resolve().parent / "data"
TABLES = DATA / "tables.toml"
TILES = ((128, 128),)


@dataclass(frozen=True)
class Table:
    """One published measured-matmul table (a row of data/tables.toml)."""

    name: str
    file: str
    gpu: str
    dtype: str
    url: str
    #: False for a table that does not measure what the model describes, such as rates a
    #: dense GEMM at the spec peak cannot reach or rows served from cache faster than the
    #: memory's spec allows (scored and shown, not counted for the goal); `why` says which
    goal: bool = True
    why: str = ""
    #: C's storage where the kernels write another than the dtype's auto (aiter's bf16
    #: GEMMs on gfx950 write fp32), as `calibrate --output-dtype` takes it
    output_dtype: str = precision.AUTO
    #: the table of the same collector, framework version and GPU silicon on another board
    #: (a B200 in an HGX board and in a GB200 rack), whose rows say which of this one's repeat
    twin: str = ""


def published_tables(path: Path = TABLES) -> list[Table]:
    return [Table(**t) for t in tomllib.loads(path.read_text("utf-8"))["table"]]


def repeated_rows(data: Measurements, twin: Measurements) -> np.ndarray:
    """True for each row of `data` whose shape (b, m, k, n) the twin also timed, within
    REPEAT_FACTOR of this row's time either way (sheetgen.calibrate.data, as `calibrate
    --repeat` leaves rows out); False where the twin lacks the shape."""
    ratio = repeat_ratio(data, twin)
    return np.isfinite(ratio) & ~not_repeated(ratio)


@dataclass(frozen=True)
class Repeated:
    """The model's held-out errors on the rows of the test half that the twin table repeats
    (repeated_rows): what the model does where the measurement itself holds."""

    twin: str
    rows: int
    of: int
    median_abs_error: float
    p90_abs_error: float

    def goals(self) -> tuple[bool, bool]:
        """(median goal met, p90 goal met) on those rows."""
        return self.median_abs_error <= GOAL_MEDIAN, self.p90_abs_error <= GOAL_P90


#: the held-out goal of issue #22: median and p90 |error| at most these on every table
GOAL_MEDIAN, GOAL_P90 = 0.10, 0.25


@dataclass(frozen=True)
class TableScore:
    """One table's held-out half: the pure roofline, the calibrated hard max, the smooth max,
    the smooth max + K loop + split-K floor (`split_k`) and the model, each fitted on the
    other half. The model is the form chosen on NVIDIA's tables, in one of two kernel
    families, whichever fits the fit half better (lower median |error| there: the test half
    plays no part in the choice):
    - split-K: the smooth max + K loop + split-K floor + compute ramp, where a library splits
      k when the output tiles under-fill the SMs (cuBLAS, hipBLASLt);
    - tile growth: the smooth max + K loop growing with the tile + compute ramp, where it
      never splits k and picks a larger tile for a larger m (CUTLASS in vLLM and SGLang),
      the GEMM the larger of its refined time and floor + its waves of the library's tiles,
      each a fitted latency per tile and its K loop.
    Every calibrated form includes the activation-quantize pass where the table's file states
    one (the aiconfigurator fp8 tables), and there the model gives the pass a roofline of its
    own (kernel_terms.quantize_time). On the chosen family the model then fits the cost of a
    byte of C written in bytes read (kernel_terms.write_memory_time)."""

    table: Table
    rows: int
    fit_rows: int
    flagged: int
    roofline: fit.HeldOut
    hard_max: fit.HeldOut
    smooth_max: fit.HeldOut
    split_k: fit.HeldOut
    model: fit.HeldOut
    quantize_bytes: float
    #: the split-K family's model without the quantize kernel (that model where the file
    #: states no pass)
    ramp: fit.HeldOut
    #: the two families' models (split_family, tile_family): `model` is one of them
    split_family: fit.HeldOut | None = None
    tile_family: fit.HeldOut | None = None
    #: the model on the held-out rows the twin table repeats, where the table has a twin
    repeated: Repeated | None = None
    #: the chosen family's last form (split_family or tile_family): the model is it with the
    #: write cost fitted on top
    family: fit.HeldOut | None = None

    def goals(self) -> tuple[bool, bool]:
        """(median goal met, p90 goal met) by the model on the held-out half."""
        return (self.model.median_abs_error <= GOAL_MEDIAN,
                self.model.p90_abs_error <= GOAL_P90)


def score_table(table: Table) -> TableScore:
    data = read_measurements(DATA / table.file, dtype=table.dtype)
    device = device_for(load_presets().get(table.gpu), table.dtype,
                        (*AUTO_STORAGE[:2], table.output_dtype))
    by_model = {h.model: h for h in fit.held_out(device, data, ())}
    pure = by_model["pure roofline"]
    split = by_model.get(fit.SMOOTH_K_SPLIT_RAMP_QUANT, by_model[fit.SMOOTH_K_SPLIT_RAMP])
    tile = by_model.get(fit.SMOOTH_K_TILE_RAMP_QUANT, by_model[fit.SMOOTH_K_TILE_RAMP])
    # the family whose last form fits the fit half better, with the write cost on top
    family = min((split, tile), key=lambda h: h.train_median_abs_error)
    model = by_model[family.model + fit.WRITE]
    return TableScore(table, len(data), len(data) - pure.rows,
                      int(fit.faster_than_roof(device, data).sum()), pure,
                      by_model["calibrated"], by_model["calibrated + smooth max"],
                      by_model[fit.SMOOTH_K_SPLIT], model, data.quantize_bytes,
                      by_model[fit.SMOOTH_K_SPLIT_RAMP], split, tile,
                      repeated_score(table, device, data, model.params), family)


def repeated_score(table: Table, device: fit.Device, data: Measurements,
                   params: fit.Params) -> Repeated | None:
    """The model (fitted on the fit half, as scored) on the held-out rows its twin table
    repeats; None without a twin. Only the scoring leaves rows out: the fit saw them all."""
    if not table.twin:
        return None
    twin = next(t for t in published_tables() if t.name == table.twin)
    test = data.subset(fit.split_halves(device, data)[1])
    keep = repeated_rows(test, read_measurements(DATA / twin.file, dtype=twin.dtype))
    errors = fit.relative_error(fit.predict(device, params, test), test.measured)[keep]
    return Repeated(twin.name, int(keep.sum()), len(test), *fit.stats(errors))


TABLE_HEADER = ["| table | preset | rows fit / test | faster than roof | roofline | hard max "
                "| smooth max | + K loop + split-K | model: train | **model: held-out** "
                "| goal (median / p90) "
                "| compute eff / memory eff / floor / p / K-loop latency / split-K floor or "
                "tile growth and latency "
                "/ ramp F_half, h / write cost / quantize |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]


def _pair(h: fit.HeldOut) -> str:
    return f"{h.median_abs_error:.1%} / {h.p90_abs_error:.1%}"


def _yes(met: bool) -> str:
    return "yes" if met else "**no**"


def published_rows(scores: list[TableScore], link: bool = True) -> list[str]:
    """Markdown rows: each published table scored on the half it was not fitted to (median /
    p90 |error|), the model's errors on its own fit half beside them."""
    out = []
    for s in scores:
        t = s.table
        p = s.model.params
        name = f"[{t.name}]({t.url})" if link else t.name
        median_ok, p90_ok = s.goals()
        goal = (f"{_yes(median_ok)} / {_yes(p90_ok)}" if t.goal
                else f"not counted: {t.why}")
        quantize = (f"{s.quantize_bytes:g} B/elt at {p.quantize_efficiency:.2f}, "
                    f"{p.quantize_row_latency * 1e9:.2f} ns/row, "
                    f"{p.quantize_k_latency * 1e9:.2f} ns/elt" if s.quantize_bytes
                    else "none")
        split_or_tile = (f"tile, {p.tile_latency * 1e6:.2f} µs a tile" if p.k_tile_growth
                         else f"split-K, {p.split_floor * 1e6:.2f} µs")
        out.append(f"| {name} | {t.gpu} | {s.fit_rows} / {s.roofline.rows} | {s.flagged} | "
                   f"{_pair(s.roofline)} | {_pair(s.hard_max)} | {_pair(s.smooth_max)} | "
                   f"{_pair(s.split_k)} | "
                   f"{s.model.train_median_abs_error:.1%} / {s.model.train_p90_abs_error:.1%} "
                   f"| **{_pair(s.model)}** | {goal} | "
                   f"{p.compute_efficiency:.3f} / {p.memory_efficiency:.3f} / "
                   f"{p.launch_overhead * 1e6:.2f} µs / {p.overlap:.2f} / "
                   f"{p.k_latency * 1e12:.0f} ps / {split_or_tile} / "
                   f"{p.ramp_flops / 1e9:.3g} GFLOP, {p.ramp_exponent:.2f} / "
                   f"{p.write_cost:.2f} / {quantize} |")
    return out


def goal_summary(scores: list[TableScore]) -> str:
    """Which tables meet the held-out goal, in one sentence."""
    scores = [s for s in scores if s.table.goal]
    median = [s.table.name for s in scores if not s.goals()[0]]
    p90 = [s.table.name for s in scores if not s.goals()[1]]
    n = len(scores)
    held = [s.table.name for s in scores
            if not all(s.goals()) and s.repeated is not None and all(s.repeated.goals())]
    return ("counting the tables that time what the model describes (not those whose rates "
            "beat the spec peak or the DRAM roof): "
            f"held-out median ≤ {GOAL_MEDIAN:.0%} on {n - len(median)} of {n} tables"
            + (f" (not: {', '.join(median)})" if median else "")
            + f"; p90 ≤ {GOAL_P90:.0%} on {n - len(p90)} of {n}"
            + (f" (not: {', '.join(p90)})" if p90 else "")
            + (f"; of those that miss, {len(held)} meet both on the held-out rows their twin "
               f"table repeats within {REPEAT_FACTOR:g}x ({', '.join(held)})" if held else ""))


REPEAT_HEADER = ["| table | twin | held-out rows the twin repeats within "
                 f"{REPEAT_FACTOR:g}x | model: held-out on all rows | **model: held-out on "
                 "the rows the twin repeats** | goal on them (median / p90) |",
                 "|---|---|---:|---:|---:|---|"]


def repeated_rows_table(scores: list[TableScore]) -> list[str]:
    """Markdown rows: each table with a twin, scored on all its held-out rows and on those
    the twin repeats (the same fit)."""
    out = []
    for s in scores:
        r = s.repeated
        if r is None:
            continue
        median_ok, p90_ok = r.goals()
        out.append(f"| {s.table.name} | {r.twin} | {r.rows} of {r.of} | {_pair(s.model)} | "
                   f"**{r.median_abs_error:.1%} / {r.p90_abs_error:.1%}** | "
                   f"{_yes(median_ok)} / {_yes(p90_ok)} |")
    return REPEAT_HEADER + out if out else []


def chart_group(table: Table) -> str:
    """The chart's legend entry for a table: its vendor, vLLM's and SGLang's fp8 tables
    (their own activation-quantize kernels) apart, and whether it is counted."""
    if not table.goal:
        return "not counted (rows beat the spec peak or the DRAM roof)"
    if table.dtype == "fp8" and table.name.endswith((", vLLM", ", SGLang")):
        return "NVIDIA, vLLM and SGLang fp8 (their quantize kernels)"
    gpu = table.gpu
    return "AMD" if gpu.startswith("MI") else "Intel" if gpu.startswith("Arc") else "NVIDIA"


#: legend entry -> (marker, colour, filled)
CHART_STYLE = {"NVIDIA": ("o", "#4C8C2B", True),
               "NVIDIA, vLLM and SGLang fp8 (their quantize kernels)": ("^", "#4C8C2B", True),
               "AMD": ("s", "#C8102E", True), "Intel": ("D", "#0068B5", True),
               "not counted (rows beat the spec peak or the DRAM roof)": ("o", "#777777",
                                                                           False)}


def accuracy_chart(scores: list[TableScore], path: Path) -> None:
    """Each published table's held-out median against its p90 |error|, with the goal's box
    (median ≤ 10 %, p90 ≤ 25 %) shaded: a table inside it meets the goal. Needs matplotlib
    (the plot extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots(figsize=(9, 6), dpi=150)
    ax.add_patch(Rectangle((0, 0), GOAL_MEDIAN * 100, GOAL_P90 * 100, color="#E8F3E0",
                           zorder=0, label="the goal: median ≤ 10 %, p90 ≤ 25 %"))
    for group, (marker, colour, filled) in CHART_STYLE.items():
        mine = [s for s in scores if chart_group(s.table) == group]
        if not mine:
            continue
        ax.scatter([s.model.median_abs_error * 100 for s in mine],
                   [s.model.p90_abs_error * 100 for s in mine], marker=marker, s=40,
                   edgecolors=colour, facecolors=colour if filled else "none",
                   linewidths=1.2, zorder=3, label=f"{group} ({len(mine)})")
    moved = [s for s in scores if s.table.goal and not all(s.goals()) and s.repeated]
    for s in moved:  # where a table misses the goal: the same fit on the rows its twin repeats
        ax.annotate("", xy=(s.repeated.median_abs_error * 100, s.repeated.p90_abs_error * 100),
                    xytext=(s.model.median_abs_error * 100, s.model.p90_abs_error * 100),
                    arrowprops={"arrowstyle": "->", "color": "#555555", "lw": 0.8}, zorder=2)
    if moved:
        ax.scatter([s.repeated.median_abs_error * 100 for s in moved],
                   [s.repeated.p90_abs_error * 100 for s in moved], marker="x", s=40,
                   color="#555555", zorder=3,
                   label=f"the same fit on the rows its twin table repeats ({len(moved)})")
    ax.set_xlim(0, max(16.0, max(s.model.median_abs_error for s in scores) * 105))
    ax.set_ylim(0, 102)
    ax.set_xlabel("held-out median |error| (%)")
    ax.set_ylabel("held-out p90 |error| (%)")
    met = sum(all(s.goals()) for s in scores if s.table.goal)
    ax.set_title(f"The model on {len(scores)} published matmul tables, scored on rows it was "
                 f"not fitted to: the goal met on {met} of "
                 f"{sum(s.table.goal for s in scores)} counted", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


#: TensorRT-LLM's bf16 table of each GPU aiconfigurator times (one collector, one library):
#: the share of the peak by size (docs/measuring.md, "The longest GEMMs")
SHARE_TABLES = ("aiconfigurator A100 SXM bf16", "aiconfigurator H100 SXM bf16",
                "aiconfigurator H200 bf16", "aiconfigurator B200 bf16",
                "aiconfigurator GB200 bf16", "aiconfigurator B300 SXM bf16",
                "aiconfigurator GB300 bf16")


def shares_by_size(names: tuple[str, ...] = SHARE_TABLES) -> dict[str, list[dict]]:
    """Each table's compute-bound rows' median share of the peak per decade of FLOPs, as
    `calibrate` reports it (Calibration.share_by_size; the measured medians need no fit),
    by the table's GPU."""
    tables = {t.name: t for t in published_tables()}
    out = {}
    for name in names:
        t = tables[name]
        data = read_measurements(DATA / t.file, dtype=t.dtype)
        cal = calibrate(data, load_presets().get(t.gpu), no_fit=True,
                        storage=(*AUTO_STORAGE[:2], t.output_dtype))
        out[t.gpu] = cal.share_by_size()
    return out


def share_chart(path: Path, shares: dict[str, list[dict]] | None = None) -> None:
    """The median share of the bf16 peak TensorRT-LLM's compute-bound GEMMs reach per decade
    of FLOPs, one line per GPU, the decade of 1e13 FLOPs (GEMMs of 10 ms and more) shaded: a
    picture of the compute ramp and of where it stops holding. Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shares = shares_by_size() if shares is None else shares
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=150)
    ax.axvspan(1e13, 1e14, color="#F3E6E0", zorder=0,
               label="1e13 FLOPs and more: GEMMs of 10 to 70 ms")
    for gpu, sizes in shares.items():
        x = [np.sqrt(b["flops_from"] * b["flops_to"]) for b in sizes]
        ax.plot(x, [100 * b["measured_median_share"] for b in sizes], marker="o", lw=1.4,
                label=gpu)
    ax.set_xscale("log")
    ax.set_xlim(1e8, 1e14)
    ax.set_ylim(0, 100)
    ax.set_xlabel("FLOPs of the GEMM (2·m·k·n), per decade")
    ax.set_ylabel("median share of the bf16 peak (%)")
    ax.set_title("TensorRT-LLM's compute-bound bf16 GEMMs (aiconfigurator): the share of the "
                 "peak climbs with size,\nthen drops for the longest GEMMs on every GPU but "
                 "the A100", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower center")
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


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


THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


class MeasureFailed(Exception):
    """`sheetgen.measure` exited non-zero (no CUDA, no PyTorch, a bad option): it printed
    its own Error line, so the benchmark adds no traceback and exits with its status."""

    def __init__(self, returncode: int) -> None:
        super().__init__(returncode)
        self.returncode = returncode


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
        done = subprocess.run([sys.executable, "-m", "sheetgen.measure", str(out), "--device",
                               device, "--dtype", ",".join(dtypes), "--max-seconds",
                               str(seconds), "--preset-out", str(preset_path), "--name",
                               "measured", "--force"],
                              env=env, check=False, stdout=subprocess.DEVNULL)
        if done.returncode != 0:  # its one Error line is already on stderr
            raise MeasureFailed(done.returncode)
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
    ap.add_argument("--no-links", action="store_true",
                    help="name the published tables without their source links")
    ap.add_argument("--chart", type=Path,
                    help="also draw each table's held-out median against its p90 (PNG or "
                         "SVG; needs matplotlib, the plot extra)")
    ap.add_argument("--share-chart", type=Path,
                    help="also draw the share of the peak TensorRT-LLM's bf16 GEMMs reach by "
                         "size, one line per GPU (PNG or SVG; needs matplotlib)")
    args = ap.parse_args(argv)
    try:
        return _report(args)
    except MeasureFailed as failed:
        return failed.returncode


def _report(args: argparse.Namespace) -> int:
    """Measure what args ask for, score everything and print (and --out) the tables."""
    lines = list(HEADER)
    notes = []
    if not args.skip_cpu:
        rows, about = measured_rows("cpu", ["fp32"], args.cpu_seconds, None,
                                    f"this CPU, {args.cpu_threads} BLAS thread(s),",
                                    threads=args.cpu_threads)
        lines += rows
        notes.append(about)
    if args.gpu:
        keep = DATA / "cuda_measured.csv"
        rows, about = measured_rows("cuda", ["bf16", "fp8"], args.gpu_seconds, keep, "GPU")
        lines += rows
        notes.append(about + f"; CSV: {keep}")
    scores = [score_table(t) for t in published_tables()]
    published = TABLE_HEADER + published_rows(scores, link=not args.no_links)
    repeated = repeated_rows_table(scores)
    if repeated:
        published += ["", *repeated]
    notes.append("model = floor + smooth max of compute and memory time, the compute "
                 "efficiency ramped as F^h / (F^h + F_half^h) in the FLOPs F, + K-loop latency "
                 "and either (split-K) a split-K floor (tiles < SMs, k ≥ 2048; no K loop "
                 "there) or (tile) the K loop's latency ×1, ×2, ×4 for m ≤ 64, ≤ 128, more "
                 "(a tile that grows with m, never split), bounding the GEMM: max(refined, "
                 "floor + waves of the library's tiles · (latency per tile + K loop)), "
                 "whichever fits the fit half better "
                 "(+ the activation-quantize pass where the file states one, a kernel with a "
                 "roofline of its own: the slowest of its bytes at its bandwidth efficiency, a "
                 "latency per row of A and one row's time), then the cost of a byte of C "
                 "written in bytes read (1 to 4) on that family; median / p90 "
                 "|error|, fitted on one half (train) and scored on the other (held-out)")
    notes.append(goal_summary(scores))
    notes.append("published tables: benchmarks/data/tables.toml, sources and licences in "
                 "benchmarks/data/NOTICE")
    measured = [*lines, ""] if len(lines) > len(HEADER) else []
    text = "\n".join(measured + published + [""] + [f"- {n}" for n in notes]) + "\n"
    sys.stdout.write(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    if args.chart is not None:
        accuracy_chart(scores, args.chart)
    if args.share_chart is not None:
        share_chart(args.share_chart)
    return 0


if __name__ == "__main__":
    sys.exit(main())
