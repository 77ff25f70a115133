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

from sheetgen.atomic import atomic_write
from sheetgen.errors import OutputError, SheetgenError
from sheetgen.hardware import DEFAULT_DTYPE
from sheetgen.sheets import matmul
from sheetgen.styles import COMPUTE_BOUND, MEMORY_BOUND

INSTALL_HINT = "plotting needs matplotlib: pip install 'sheetgen[plot]'"
FORMATS = (".png", ".svg", ".pdf")
COLORS = {COMPUTE_BOUND: "#C55A11", MEMORY_BOUND: "#2F5597"}
CEILING_COLOR = "#C00000"
LABELLED_POINTS_MAX = 60  # beyond this many points, labels only clutter


def _figure_class() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise SheetgenError(INSTALL_HINT) from None
    return Figure


def _analysed(data: Any, gpu: str | None, dtype: str, gpu_file: Any,
              refined: dict[str, Any]) -> pd.DataFrame:
    """A frame from `analyze`: reuse one that already is, else analyse the shapes given."""
    from sheetgen.api import analyze

    if isinstance(data, pd.DataFrame) and "gpu" in data.attrs and gpu is None \
            and not any(v is not None for v in refined.values()) \
            and {"intensity", "attained_flops"} <= set(data.columns):
        return data
    return analyze(data, gpu=gpu, dtype=dtype, gpu_file=gpu_file, **refined)


def check_plot_path(path: str | os.PathLike[str], force: bool) -> Path:
    """A .png/.svg/.pdf destination that exists only when force allows overwriting it."""
    out = Path(path)
    if out.suffix.lower() not in FORMATS:
        raise OutputError(f"{out}: the plot file name must end in {', '.join(FORMATS)}")
    if out.is_dir():
        raise OutputError(f"{out} is a directory")
    if not out.parent.exists():
        raise OutputError(f"{out.parent} does not exist")
    if out.exists() and not force:
        raise OutputError(f"{out} already exists; pass --force to overwrite it")
    return out


def save_figure(fig: Any, path: str | os.PathLike[str], *, force: bool = True) -> Path:
    """Write fig atomically (temporary file beside path, then rename)."""
    out = check_plot_path(path, force)
    with atomic_write(out, out.suffix, replace=force) as tmp:
        fig.savefig(tmp, format=out.suffix.lstrip(".").lower(), dpi=fig.dpi)
    return out


def plot_roofline(data: Any = None, *, gpu: str | None = None, dtype: str = DEFAULT_DTYPE,
                  gpu_file: str | os.PathLike[str] | None = None,
                  path: str | os.PathLike[str] | None = None, ax: Any = None,
                  force: bool = True, launch_overhead: float | None = None,
                  tile: tuple[int, int] | None = None, waves: bool | None = None) -> Any:
    """The roofline plot as a matplotlib Figure (shown inline in a notebook).

    `data`: a frame from `sheetgen.analyze` (its GPU figures are reused), or anything
    `analyze` takes (shapes path, DataFrame with m/k/n, (m, k, n) tuples, None for the
    built-in dozen). `ax`: draw into an existing Axes. `path`: also save it (.png/.svg/.pdf).
    Each shape also gets a hollow marker at FLOPs / refined time (launch floor and, when on,
    wave quantization: `launch_overhead`, `tile`, `waves` as for `analyze`).
    """
    frame = _analysed(data, gpu, dtype, gpu_file,
                      {"launch_overhead": launch_overhead, "tile": tile, "waves": waves})
    g = frame.attrs["gpu"]
    if ax is None:
        fig = _figure_class()(figsize=(8, 5), dpi=100, layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    x = np.asarray(frame["intensity"], dtype=float)
    y = np.asarray(frame["attained_flops"], dtype=float)
    ridge = float(g["attainable_ridge"])
    lo = min([ridge / 100, *(x / 3)]) if len(x) else ridge / 100
    hi = max([ridge * 100, *(x * 3)]) if len(x) else ridge * 100
    xs = np.logspace(np.log10(lo), np.log10(hi), 200)
    ceiling = matmul.ROOF_Y.reference(attainable_flops=g["attainable_flops"], roof_x=xs,
                                      attainable_bw=g["attainable_bw"])
    ax.plot(xs, ceiling, color=CEILING_COLOR, lw=2, label="attainable roof (efficiency-adjusted)")
    if (g["compute_eff"], g["memory_eff"]) != (1.0, 1.0):
        spec = matmul.ROOF_Y.reference(attainable_flops=g["peak_flops"], roof_x=xs,
                                       attainable_bw=g["hbm_bw"])
        ax.plot(xs, spec, color="#7F7F7F", lw=1, ls="--", label="spec roof (peak)")
    ax.axvline(ridge, color="#7F7F7F", lw=1, ls=":")
    ax.annotate(f"ridge {ridge:.4g} FLOP/B", (ridge, float(g["attainable_flops"])),
                xytext=(-4, 8), textcoords="offset points", fontsize=8, color="#404040",
                ha="right")
    regimes = frame["regime"].astype(str).to_numpy() if len(frame) else np.array([])
    for regime, color in COLORS.items():
        mask = regimes == regime
        if mask.any():
            ax.scatter(x[mask], y[mask], s=28, color=color, zorder=3, label=regime)
    if "refined_time" in frame.columns and len(frame):
        y_refined = np.asarray(frame["flops"], dtype=float) / np.asarray(frame["refined_time"],
                                                                          dtype=float)
        ax.scatter(x, y_refined, s=28, facecolors="none", edgecolors="#404040", lw=0.8,
                   zorder=2, label="refined time (launch floor, waves)")
        y = np.concatenate([y, y_refined])
    if len(frame) <= LABELLED_POINTS_MAX:
        for xi, yi, label, regime in zip(x, y[:len(x)], frame["shape_label"], regimes,
                                         strict=True):
            if regime == COMPUTE_BOUND:  # on the flat roof: hang the labels below it
                ax.annotate(str(label), (xi, yi), xytext=(2, -5), textcoords="offset points",
                            fontsize=7, rotation=-50, rotation_mode="anchor", ha="left",
                            va="top")
            else:
                ax.annotate(str(label), (xi, yi), xytext=(-4, 4), textcoords="offset points",
                            fontsize=7, ha="right")
    floor = min([float(np.min(ceiling)), *y]) if len(y) else float(np.min(ceiling))
    ax.set_ylim(floor / 2, float(g["attainable_flops"]) * 3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/B)")
    ax.set_ylabel("attained FLOP/s")
    ax.set_title(f"Roofline: {g['gpu']}, {g['dtype']}")
    ax.grid(True, which="major", color="#D9D9D9", lw=0.6)
    ax.legend(loc="lower right", fontsize=8)
    if path is not None:
        save_figure(fig, path, force=force)
    return fig
