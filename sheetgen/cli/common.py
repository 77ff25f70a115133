"""What every command shares: the click group, one-line errors, progress bars and options.

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
from sheetgen.hardware import DTYPES
from sheetgen.sheets import parallel, pipeline, practice, whatif


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


class _OneLineErrors(click.Group):
    """Usage errors as one `Error: ...` line and exit 2, like every other user error."""

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            click.echo(f"Error: {exc.format_message()}", err=True)
            sys.exit(2)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


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


_MODEL_OPTIONS = [
    click.option("--layers", type=int, default=pipeline.DEFAULT_LAYERS, show_default=True,
                 help="Layers in the Pipeline sheet (alternating types 1 and 2)."),
    click.option("--pipeline-shape", type=int, nargs=3, metavar="M K N",
                 default=(pipeline.DEFAULT_M, pipeline.DEFAULT_K, pipeline.DEFAULT_N),
                 show_default=True,
                 help="The pipeline's m, k, n (type 1: [m×n]·[n×k]; type 2: [m×k]·[k×n])."),
    click.option("--gpus", type=int, default=parallel.DEFAULT_GPUS, show_default=True,
                 help="GPU count G for the Parallelism sheet."),
    click.option("--micro-batches", type=int, default=parallel.DEFAULT_MICRO_BATCHES,
                 show_default=True, help="Pipeline micro-batches M."),
    click.option("--link-bw", type=float,
                 help="GPU link bandwidth per direction, B/s (default: the GPU preset's)."),
    click.option("--link-latency", type=float,
                 help="GPU link latency, s (default: the preset's)."),
    click.option("--link-over", type=click.Choice(["gpu", "host"]), default="gpu",
                 show_default=True, help="GPU-to-GPU traffic over the GPU link (NVLink) or "
                 "the host link (the preset's PCIe bandwidth)."),
    click.option("--host-link-latency", type=float, default=10e-6, show_default=True,
                 help="Latency of the host link, s (used with --link-over host)."),
    click.option("--tp-pairing", type=click.Choice(["narrow", "wide"]), default="narrow",
                 show_default=True, help="Tensor-parallel all-reduce carries the narrower "
                 "activation m·min(k,n) (Megatron-LM) or, forced, the wider one."),
    click.option("--tp-gather/--no-tp-gather", default=False, show_default=True,
                 help="All-gather a sharded tensor-parallel final output."),
    click.option("--whatif-shape", type=int, nargs=3, metavar="M K N",
                 default=whatif.DEFAULT_SHAPE, show_default=True,
                 help="Base shape of the What-if sheet."),
    click.option("--practice", type=int, default=0, metavar="N",
                 help="Add a Practice sheet of N seeded random shapes to estimate by hand."),
    click.option("--practice-seed", type=int, default=practice.DEFAULT_SEED, show_default=True,
                 help="Seed of the practice shapes."),
]


def model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The workbook's model options (pipeline, parallelism, what-if, practice), shared by
    every command that plans a workbook; they arrive as keyword arguments."""
    for option in reversed(_MODEL_OPTIONS):
        command = option(command)
    return command


def workbook_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Everything that decides a workbook: GPU, dtype, shapes, spare rows, presets, model."""
    for option in reversed((
        click.option("--gpu", help="GPU preset name (see `sheetgen gpus`). "
                                   "Default: A100 40GB SXM."),
        click.option("--dtype", default="bf16", show_default=True,
                     help=f"Element type: {', '.join(DTYPES)}."),
        shapes_options,
        click.option("--spare-rows", type=click.IntRange(min=0), default=200,
                     show_default=True,
                     help="Empty formula rows below the shapes, to type new shapes into."),
        gpu_file_option,
        model_options,
    )):
        command = option(command)
    return command


@click.group(cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sheetgen")
def cli() -> None:
    """Roofline models of GPU matmuls as live-formula spreadsheets.

    \b
    Example:
      sheetgen build roofline.xlsx
      sheetgen build h100.xlsx --gpu "H100 SXM" --dtype fp8 --shapes my_shapes.csv
    """


credentials_option = click.option(
    "--credentials", type=click.Path(dir_okay=False, path_type=Path),
    envvar="GOOGLE_APPLICATION_CREDENTIALS", show_envvar=True,
    help="Service-account JSON key. Share the spreadsheet (Editor) with its client_email.")

