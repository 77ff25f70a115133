"""Commands that answer in the terminal or a picture: show, plot and gpus."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from sheetgen.cli.common import (
    cli,
    gpu_file_option,
    nonblank,
    refined_options,
    shapes_options,
    user_errors,
)
from sheetgen.hardware import DTYPES, load_presets
from sheetgen.styles import COMPUTE_BOUND, MEMORY_BOUND
from sheetgen.units import TERA, seconds, si


@cli.command()
@shapes_options
@click.option("--gpu", callback=nonblank,
              help="GPU preset name (see `sheetgen gpus`). Default: A100 40GB SXM.")
@click.option("--dtype", default="bf16", show_default=True,
              help=f"Element type: {', '.join(DTYPES)}.")
@gpu_file_option
@refined_options
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (SI numbers) for scripts instead of the table.")
def show(shapes: Path | None, shapes_sheet: str | None, gpu: str | None, dtype: str,
         gpu_file: Path | None, as_json: bool, **refined: Any) -> None:
    """Print the Matmul table (Part 1) in the terminal, regimes coloured.

    \b
    Example:
      sheetgen show --gpu "H100 SXM" --dtype fp8
      sheetgen show --shapes my_shapes.xlsx --json | jq '.rows[].predicted_time'
    """
    from sheetgen.api import analyze

    with user_errors():
        frame = analyze(shapes, gpu=gpu, dtype=dtype, gpu_file=gpu_file,
                        shapes_sheet=shapes_sheet, **_refined(refined))
    if as_json:
        click.echo(json.dumps(show_json(frame), indent=2))
        return
    for line in show_table(frame):
        click.echo(line)


#: (header, width, column, formatter) of each `show` column
_SHOW_COLUMNS: list[tuple[str, int, str, Callable[[Any], str]]] = [
    ("m", 7, "m", lambda v: f"{int(v)}"),
    ("k", 7, "k", lambda v: f"{int(v)}"),
    ("n", 7, "n", lambda v: f"{int(v)}"),
    ("FLOP/B", 8, "intensity", lambda v: f"{v:.4g}"),
    ("regime", 13, "regime", str),
    ("compute", 9, "compute_time", seconds),
    ("memory", 9, "memory_time", seconds),
    ("predicted", 9, "predicted_time", seconds),
    ("waves", 5, "waves", lambda v: f"{int(v)}"),
    ("refined", 9, "refined_time", seconds),
    ("TFLOP/s", 8, "attained_flops", lambda v: f"{v / TERA:.4g}"),
    ("of peak", 7, "peak_fraction", lambda v: f"{v:.1%}"),
]
_REGIME_COLORS = {COMPUTE_BOUND: "green", MEMORY_BOUND: "red"}


def show_table(frame: Any) -> list[str]:
    """The lines `sheetgen show` prints: a GPU header, then one aligned row per shape."""
    g = frame.attrs["gpu"]
    eff = ""
    if (g["compute_eff"], g["memory_eff"]) != (1.0, 1.0):
        eff = (f"; attainable {si(g['attainable_flops'], 'FLOP/s')}, "
               f"{si(g['attainable_bw'], 'B/s')}, ridge {g['attainable_ridge']:.4g} FLOP/B")
    lines = [
        click.style(f"{g['gpu']}, {g['dtype']}", bold=True)
        + f": peak {si(g['peak_flops'], 'FLOP/s')}, HBM {si(g['hbm_bw'], 'B/s')}, "
          f"ridge {g['ridge']:.4g} FLOP/B{eff}; refined: floor "
          f"{seconds(g['launch_overhead'])}, {g['tile_m']:.0f}x{g['tile_n']:.0f} tiles on "
          f"{g['sm_count']:.0f} SMs, waves {g['wave_quantization']}",
        "  ".join(f"{h:>{w}}" for h, w, _, _ in _SHOW_COLUMNS),
    ]
    for row in frame.to_dict("records"):
        cells = []
        for _, width, col, fmt in _SHOW_COLUMNS:
            text = f"{fmt(row[col]):>{width}}"
            if col == "regime":
                text = click.style(text, fg=_REGIME_COLORS.get(row[col]))
            cells.append(text)
        lines.append("  ".join(cells))
    return lines


def show_json(frame: Any) -> dict[str, Any]:
    """`sheetgen show --json`: the GPU figures and one object per row, SI numbers."""

    def plain(value: Any) -> Any:
        return value.item() if hasattr(value, "item") else value

    rows = [{k: plain(v) for k, v in row.items()} for row in frame.to_dict("records")]
    for row in rows:
        for dim in "mkn":
            row[dim] = int(row[dim])
    return {"gpu": {k: plain(v) for k, v in frame.attrs["gpu"].items()}, "rows": rows}


@cli.command()
@click.argument("out", type=click.Path(path_type=Path))
@shapes_options
@click.option("--gpu", callback=nonblank,
              help="GPU preset name (see `sheetgen gpus`). Default: A100 40GB SXM.")
@click.option("--dtype", default="bf16", show_default=True,
              help=f"Element type: {', '.join(DTYPES)}.")
@gpu_file_option
@refined_options
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def plot(out: Path, shapes: Path | None, shapes_sheet: str | None, gpu: str | None,
         dtype: str, gpu_file: Path | None, force: bool, **refined: Any) -> None:
    """Draw the roofline to OUT.png, OUT.svg or OUT.pdf (needs matplotlib).

    \b
    Example:
      sheetgen plot roofline.png --gpu "H100 SXM" --shapes my_shapes.csv
    """
    with user_errors():
        from sheetgen.plot import check_plot_path, plot_roofline

        check_plot_path(out, force)
        plot_roofline(shapes_frame(shapes, shapes_sheet), gpu=gpu, dtype=dtype,
                      gpu_file=gpu_file, path=out, force=force, **_refined(refined))
    click.echo(f"wrote {out}")


def _refined(options: dict[str, Any]) -> dict[str, Any]:
    """The refined-time options as the API takes them (an unset --tile arrives empty)."""
    return {**options, "tile": options.get("tile") or None}


def shapes_frame(shapes: Path | None, sheet: str | None) -> Any:
    """--shapes/--shapes-sheet as what the API takes (a path is read with its sheet)."""
    from sheetgen.api import to_shapes

    return None if shapes is None else to_shapes(shapes, sheet)


@cli.command()
@gpu_file_option
def gpus(gpu_file: Path | None) -> None:
    """List the GPU presets with their figures and sources.

    \b
    Example:
      sheetgen gpus
    """
    with user_errors():
        presets = load_presets(gpu_file)
    for g in presets.gpus:
        star = " (default)" if g.name == presets.default else ""
        if g.name in presets.origins:
            star += f" (from {presets.origins[g.name]}" + (
                ", replaces the built-in preset)" if presets.replaces_builtin(g.name) else ")")
        click.secho(f"{g.name}{star}", bold=True)
        peaks = ", ".join(f"{d} {si(g.peak_flops[d], 'FLOP/s')}" if d in g.peak_flops
                          else f"{d} n/a" for d in DTYPES)
        rows: list[tuple[str, Any]] = [
            ("dense peak", peaks),
            ("HBM bandwidth", si(g.hbm_bandwidth, "B/s")),
            ("memory", si(g.memory_bytes, "B")),
            ("GPU link per direction", f"{si(g.link_bandwidth, 'B/s')}, "
                                       f"latency {seconds(g.link_latency)}"),
            ("host link per direction", si(g.host_bandwidth, "B/s")),
            ("measured efficiency", f"compute {g.measured_compute_efficiency:g}, memory "
                                    f"{g.measured_memory_efficiency:g}, link "
                                    f"{g.measured_link_efficiency:g}"),
            ("refined time", f"{g.sm_count} SMs, {g.tile_m}x{g.tile_n} tiles, launch "
                             f"{seconds(g.launch_overhead)}, wave quantization "
                             f"{'on' if g.wave_quantization else 'off'}"),
        ]
        for label, value in rows:
            click.echo(f"  {label:<24} {value}")
        for key, src in g.sources.items():
            click.echo(f"    source {key}: {src}")

