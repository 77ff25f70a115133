"""The roofline as a matplotlib figure: the efficiency-adjusted ceiling, one labelled point
per shape coloured by regime, and the ridge marked.

Every number comes from the reference model (`sheetgen.analyze`); the ceiling is the Matmul
sheet's own `roof_y` quantity evaluated at many intensities, so the plot and the workbook's
chart draw the same line. matplotlib is an optional extra: `pip install 'sheetgen[plot]'`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sheetgen.core.units import TERA, rate_unit
from sheetgen.errors import SheetgenError
from sheetgen.files.atomic import atomic_write, check_destination
from sheetgen.inputs.presets import DEFAULT_DTYPE
from sheetgen.layout import palette
from sheetgen.layout.styles import REGIME_COLORS
from sheetgen.model.vocabulary import COMPUTE_BOUND
from sheetgen.sheets import matmul

INSTALL_HINT = ("plotting needs matplotlib: pip install 'sheetgen[plot]' (from a clone of "
                "the repository: pip install '.[plot]')")
FORMATS = (".png", ".svg", ".pdf")
COLORS = {regime: strong for regime, (strong, _) in REGIME_COLORS.items()}
LABELLED_POINTS_MAX = 60  # beyond this many points, labels only clutter
LABEL_GAP = 0.08  # decades: about a label's height at the default size


def _figure_class() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise SheetgenError(INSTALL_HINT) from None
    return Figure


def _analysed(data: Any, gpu: str | None, dtype: str, gpu_file: Any,
              options: dict[str, Any]) -> pd.DataFrame:
    """A frame from `analyze`: reuse one that already is, else analyse the shapes given."""
    from sheetgen.api import analyze

    if isinstance(data, pd.DataFrame) and "gpu" in data.attrs and gpu is None \
            and not any(v is not None for v in options.values()) \
            and {"intensity", "attained_flops"} <= set(data.columns):
        return data
    return analyze(data, gpu=gpu, dtype=dtype, gpu_file=gpu_file, **options)


def check_plot_path(path: str | os.PathLike[str], force: bool) -> Path:
    """A .png/.svg/.pdf destination that exists only when force allows overwriting it."""
    return check_destination(path, force, suffixes=FORMATS, example="roofline.png",
                             kind="plot")


def save_figure(fig: Any, path: str | os.PathLike[str], *, force: bool = True) -> Path:
    """Write fig atomically (temporary file beside path, then rename)."""
    out = check_plot_path(path, force)
    with atomic_write(out, out.suffix, replace=force) as tmp:
        fig.savefig(tmp, format=out.suffix.lstrip(".").lower(), dpi=fig.dpi)
    return out


def _label_points(ax: Any, x: np.ndarray, y: np.ndarray, labels: list[str],
                  regimes: np.ndarray) -> None:
    """One label per point. On the flat roof (compute-bound) labels run vertically below the
    point; a point closer than LABEL_GAP decades to the previous one puts its label above the
    roof instead, so neighbours such as 8192³ and 4096×8192×28672 never print over each other.
    On the slope (memory-bound) labels sit to the upper left, clear of the line."""
    last_below = -np.inf  # log10 x of the last label hung below the roof
    for i in np.argsort(x, kind="stable"):
        if regimes[i] != COMPUTE_BOUND:
            ax.annotate(labels[i], (x[i], y[i]), xytext=(-5, 3), textcoords="offset points",
                        fontsize=7, ha="right", va="bottom")
            continue
        lx = float(np.log10(x[i]))
        if lx - last_below >= LABEL_GAP:
            last_below = lx
            ax.annotate(labels[i], (x[i], y[i]), xytext=(0, -6), textcoords="offset points",
                        fontsize=7, rotation=-90, ha="center", va="top")
        else:
            ax.annotate(labels[i], (x[i], y[i]), xytext=(0, 6), textcoords="offset points",
                        fontsize=7, rotation=90, ha="center", va="bottom")


def plot_roofline(data: Any = None, *, gpu: str | None = None, dtype: str = DEFAULT_DTYPE,
                  gpu_file: str | os.PathLike[str] | None = None,
                  path: str | os.PathLike[str] | None = None, ax: Any = None,
                  force: bool = True, **options: Any) -> Any:
    """The roofline plot as a matplotlib Figure (shown inline in a notebook).

    `data`: a frame from `sheetgen.analyze` (its GPU figures are reused), or anything
    `analyze` takes (shapes path, DataFrame with m/k/n, (m, k, n) tuples, None for the
    built-in dozen). `ax`: draw into an existing Axes. `path`: also save it (.png/.svg/.pdf).
    Each shape also gets a hollow marker at FLOPs / refined time (launch floor and, where the
    preset or options have them, waves, the compute ramp, the overlap and the kernel terms).
    `options`: model options for `analyze` (`compute_eff=0.8`, `memory_eff`,
    `launch_overhead`, `tile`, `waves`, ...).
    """
    frame = _analysed(data, gpu, dtype, gpu_file, options)
    g = frame.attrs["gpu"]
    if ax is None:
        fig = _figure_class()(figsize=(8, 5), dpi=100, layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    unit = rate_unit(str(g["dtype"]))
    x = np.asarray(frame["intensity"], dtype=float)
    y = np.asarray(frame["attained_flops"], dtype=float) / TERA  # plotted in TFLOP/s
    ridge = float(g["attainable_ridge"])
    lo = min([ridge / 100, *(x / 3)]) if len(x) else ridge / 100
    hi = max([ridge * 100, *(x * 3)]) if len(x) else ridge * 100
    xs = np.logspace(np.log10(lo), np.log10(hi), 200)
    ceiling = matmul.ROOF_Y.reference(attainable_flops=g["attainable_flops"], roof_x=xs,
                                      attainable_bw=g["attainable_bw"])
    ceiling = ceiling / TERA
    adjusted = (g["compute_eff"], g["memory_eff"]) != (1.0, 1.0)
    ax.plot(xs, ceiling, color=palette.CEILING, lw=2,
            label=(f"attainable roof (compute ×{g['compute_eff']:g}, memory "
                   f"×{g['memory_eff']:g})" if adjusted else "roof (spec peak and bandwidth)"))
    if adjusted:
        spec = matmul.ROOF_Y.reference(attainable_flops=g["peak_flops"], roof_x=xs,
                                       attainable_bw=g["hbm_bw"]) / TERA
        ax.plot(xs, spec, color=palette.SPEC_ROOF, lw=1, ls="--", label="spec roof (peak)")
    top = float(g["attainable_flops"]) / TERA
    ax.axvline(ridge, color=palette.SPEC_ROOF, lw=1, ls=":")
    ax.plot([ridge], [top], marker="D", ms=6, color=palette.CEILING, zorder=4)
    ax.annotate(f"ridge {ridge:.4g} {unit.removesuffix('/s')}/B", (ridge, 0),
                xycoords=("data", "axes fraction"), xytext=(4, 4), textcoords="offset points",
                fontsize=8, color=palette.POINT, ha="left", va="bottom")
    regimes = frame["regime"].astype(str).to_numpy() if len(frame) else np.array([])
    for regime, color in COLORS.items():
        mask = regimes == regime
        if mask.any():
            ax.scatter(x[mask], y[mask], s=28, color=color, zorder=3, label=regime)
    if "refined_time" in frame.columns and len(frame):
        y_refined = np.asarray(frame["flops"], dtype=float) / np.asarray(
            frame["refined_time"], dtype=float) / TERA
        ax.scatter(x, y_refined, s=28, facecolors="none", edgecolors=palette.POINT, lw=0.8,
                   zorder=2, label="refined time (floor, waves, fitted terms)")
        y = np.concatenate([y, y_refined])
    if len(frame) <= LABELLED_POINTS_MAX:
        _label_points(ax, x, y[:len(x)], [str(s) for s in frame["shape_label"]], regimes)
    floor = min([float(np.min(ceiling)), *y]) if len(y) else float(np.min(ceiling))
    ax.set_ylim(floor / 2, top * 8)  # room above the roof for labels moved up
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"arithmetic intensity ({unit.removesuffix('/s')}/B)")
    ax.set_ylabel(f"attained T{unit}")
    ax.set_title(f"Roofline: {g['gpu']}, {g['dtype']}")
    ax.grid(True, which="major", color=palette.GRID, lw=0.6)
    ax.legend(loc="upper left", fontsize=8)  # above the memory slope: clear of every label
    if path is not None:
        save_figure(fig, path, force=force)
    return fig
