"""The `sheetgen` command: a thin click layer over the library.

Library errors (SheetgenError) become one `Error: ...` line and exit status 2; no traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from sheetgen import __version__
from sheetgen.errors import SheetgenError
from sheetgen.hardware import DTYPES, load_presets
from sheetgen.units import seconds, si


class UserError(click.ClickException):
    """A SheetgenError as click shows it: `Error: message`, exit status 2."""

    exit_code = 2


@contextmanager
def user_errors() -> Iterator[None]:
    try:
        yield
    except SheetgenError as exc:
        raise UserError(str(exc)) from None


@contextmanager
def progress_bar(total: int, label: str) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on a terminal for long jobs; silent when piped or small."""
    if total < 5_000 or not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update


def shapes_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--shapes FILE and --shapes-sheet NAME, shared by every command that reads shapes."""
    command = click.option(
        "--shapes-sheet", metavar="NAME",
        help="Sheet of an xlsx --shapes file (default: the first with an m/k/n header).",
    )(command)
    return click.option(
        "--shapes", type=click.Path(path_type=Path),
        help="CSV or xlsx with a header row naming m, k, n (M, 'm (rows)', 'K dim'... "
             "count; other columns and blank rows are ignored). Default: a built-in dozen.",
    )(command)


gpu_file_option = click.option(
    "--gpu-file", type=click.Path(dir_okay=False, path_type=Path),
    help="A TOML file of extra GPU presets (same fields as templates/gpus.toml).")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sheetgen")
def cli() -> None:
    """Roofline models of GPU matmuls as live-formula spreadsheets.

    \b
    Example:
      sheetgen build roofline.xlsx
      sheetgen build h100.xlsx --gpu "H100 SXM" --dtype fp8 --shapes my_shapes.csv
    """


@cli.command()
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--gpu", help="GPU preset name (see `sheetgen gpus`). Default: A100 40GB SXM.")
@click.option("--dtype", default="bf16", show_default=True,
              help=f"Element type: {', '.join(DTYPES)}.")
@shapes_options
@click.option("--spare-rows", type=click.IntRange(min=0), default=200, show_default=True,
              help="Empty formula rows below the shapes, to type new shapes into.")
@gpu_file_option
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def build(out: Path, gpu: str | None, dtype: str, shapes: Path | None,
          shapes_sheet: str | None, spare_rows: int, gpu_file: Path | None,
          force: bool) -> None:
    """Write the roofline workbook OUT.xlsx (live formulas, cached values, chart).

    \b
    Example:
      sheetgen build roofline.xlsx --gpu "H100 SXM" --dtype bf16
    """
    from sheetgen.api import build_workbook

    with user_errors():
        path, n_rows = build_workbook(out, gpu=gpu, dtype=dtype, shapes=shapes,
                                      spare_rows=spare_rows, gpu_file=gpu_file, force=force,
                                      shapes_sheet=shapes_sheet, progress_factory=progress_bar)
    click.echo(f"wrote {path} ({n_rows} shape rows)")


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
        ]
        for label, value in rows:
            click.echo(f"  {label:<24} {value}")
        for key, src in g.sources.items():
            click.echo(f"    source {key}: {src}")


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
