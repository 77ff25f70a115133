"""What every command shares: the click group, one-line errors, progress bars and options.

Library errors (SheetgenError) become one `Error: ...` line and exit status 2; no traceback.
Ctrl-C prints `Error: interrupted` (exit 130, the shell's 128 + SIGINT); SIGTERM and SIGHUP
are turned into the same clean exit (`Error: terminated`, 128 + the signal), so temporary
files are removed on the way out.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from sheetgen import __version__
from sheetgen.core import defaults
from sheetgen.core.defaults import MEASURED
from sheetgen.errors import INTERRUPTED_EXIT, USER_ERROR_EXIT, SheetgenError
from sheetgen.inputs import precision
from sheetgen.inputs.presets import DTYPES


class UserError(click.ClickException):
    """A SheetgenError as click shows it: `Error: message`, exit status 2."""

    exit_code = USER_ERROR_EXIT


@contextmanager
def user_errors() -> Iterator[None]:
    try:
        yield
    except SheetgenError as exc:
        raise UserError(str(exc)) from None


@contextmanager
def progress_bar(total: int, label: str) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on a terminal for long jobs; on a pipe (a log, CI), a line on stderr
    at each tenth at most every PIPE_SECONDS, and one when the rows are done; silent for
    small or quick jobs."""
    if total < 5_000:
        yield None
        return
    if not sys.stderr.isatty():
        report = _PipeProgress(total, label)
        yield report
        report.done()
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update


#: Least seconds between two progress lines on a pipe.
PIPE_SECONDS = 5.0


class _PipeProgress:
    """Progress as plain lines, for a log rather than a terminal."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label = total, label
        self.count = 0
        self.start = self.last = time.monotonic()
        self.next_tenth = 1

    def __call__(self, n: int) -> None:
        self.count += n
        tenth = self.count * 10 // self.total
        now = time.monotonic()
        if tenth >= self.next_tenth and now - self.last >= PIPE_SECONDS and tenth < 10:
            self.next_tenth = tenth + 1
            self.last = now
            click.echo(f"{self.label}: {tenth * 10}% ({self.count:,} of {self.total:,} rows, "
                       f"{now - self.start:.0f} s)", err=True)

    def done(self) -> None:
        took = time.monotonic() - self.start
        if self.next_tenth > 1 or took >= PIPE_SECONDS:
            click.echo(f"{self.label}: all {self.total:,} rows in {took:.0f} s; packaging "
                       "the file", err=True)




class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised like Ctrl-C so every `finally` (temporary files) runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Stopped(click.ClickException):
    """Ctrl-C or a termination signal, as one Error line with the shell's 128 + N status."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _stopped(exc: KeyboardInterrupt) -> _Stopped:
    if isinstance(exc, Terminated):
        return _Stopped("terminated", 128 + exc.signum)
    return _Stopped("interrupted", INTERRUPTED_EXIT)


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


@contextmanager
def _termination_as_exception() -> Iterator[None]:
    """While a command runs, SIGTERM/SIGHUP raise Terminated (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = [getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n)]
    old = {s: signal.signal(s, _raise_terminated) for s in wanted}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


class _OneLineErrors(click.Group):
    """Usage errors as one `Error: ...` line and exit 2, like every other user error; an
    interrupt as `Error: interrupted` (exit 130) instead of click's `Aborted!` (exit 1)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """`sheetgen` alone is a request for help, not a mistake: the help, exit 0."""
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise _stopped(exc) from None

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            with _termination_as_exception():
                rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            click.echo(f"Error: {exc.format_message()}", err=True)
            sys.exit(USER_ERROR_EXIT)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except (click.Abort, KeyboardInterrupt) as exc:  # before a command started
            stop = _stopped(exc.__cause__ if isinstance(exc.__cause__, KeyboardInterrupt)
                            else exc if isinstance(exc, KeyboardInterrupt) else
                            KeyboardInterrupt())
            stop.show()
            sys.exit(stop.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)


class DescribedDefault(click.Option):
    """An option whose default is said in words, `show_default="the GPU preset's"`: the
    help shows it as `[default: the GPU preset's]`, the one way every default is written
    (click itself would put the words in parentheses)."""

    def get_help_extra(self, ctx: click.Context) -> Any:
        extra = super().get_help_extra(ctx)
        if isinstance(self.show_default, str):
            extra["default"] = self.show_default
        return extra


def shapes_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--shapes FILE and --shapes-sheet NAME, shared by every command that reads shapes."""
    command = click.option(
        "--shapes-sheet", metavar="NAME", cls=DescribedDefault,
        show_default="the first with an m/k/n header", help="Sheet of an xlsx --shapes file.",
    )(command)
    return click.option(
        "--shapes", type=click.Path(path_type=Path), cls=DescribedDefault,
        show_default="a built-in dozen",
        help="CSV or xlsx with a header row naming m, k, n (M, 'm (rows)', 'K dim'... "
             "count; other columns and blank rows are ignored).",
    )(command)


def _announce_shadowing(ctx: click.Context, param: click.Parameter,
                        value: Path | None) -> Path | None:
    """A user preset may replace a built-in one of the same name (by design); say so, once,
    on stderr, so a figure that differs from the shipped one is never a surprise."""
    if value is None:
        return value
    from sheetgen.inputs.presets import load_presets

    with user_errors():
        presets = load_presets(value)
    if presets.shadowed:
        names = ", ".join(repr(n) for n in presets.shadowed)
        click.echo(f"note: {value} replaces the built-in preset{'s' * (len(presets.shadowed) > 1)}"
                   f" {names}", err=True)
    return value


gpu_file_option = click.option(
    "--gpu-file", type=click.Path(dir_okay=False, path_type=Path),
    callback=_announce_shadowing, expose_value=True,
    help="A TOML file of extra GPU presets (same fields as templates/gpus.toml); a preset "
         "named like a built-in one replaces it (announced on stderr).")


def nonblank(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise click.BadParameter("is empty; give a preset name (see `sheetgen gpus`) or leave "
                                 "the option out for the default")
    return value


class MicroBatches(click.ParamType):
    """`auto` (None: PP's best M) or a whole number of micro-batches."""

    name = "auto|N"

    def convert(self, value: Any, param: Any, ctx: Any) -> int | None:
        if value is None or isinstance(value, int):
            return value
        text = str(value).strip().lower()
        if text == "auto":
            return None
        try:
            return int(text)
        except ValueError:
            self.fail(f"{value!r} is neither auto nor a whole number", param, ctx)


class Efficiency(click.ParamType):
    """A fraction, or `measured`: the GPU preset's measured figure for the dtype."""

    name = "FRACTION|measured"

    def convert(self, value: Any, param: Any, ctx: Any) -> float | str:
        if isinstance(value, float | int) and not isinstance(value, bool):
            return float(value)
        text = str(value).strip().lower()
        if text == MEASURED:
            return MEASURED
        try:
            return float(text)
        except ValueError:
            self.fail(f"{value!r} is neither a fraction nor {MEASURED}", param, ctx)


_MODEL_OPTIONS = [
    click.option("--layers", type=int, default=defaults.DEFAULT_LAYERS, show_default=True,
                 help="Layers in the Pipeline sheet (alternating types 1 and 2)."),
    click.option("--pipeline-shape", type=int, nargs=3, metavar="M K N",
                 default=(defaults.DEFAULT_M, defaults.DEFAULT_K, defaults.DEFAULT_N),
                 show_default=True,
                 help="The pipeline's m, k, n (type 1: [m×n]·[n×k]; type 2: [m×k]·[k×n])."),
    click.option("--gpus", type=int, default=defaults.DEFAULT_GPUS, show_default=True,
                 help="GPU count G for the Parallelism sheet."),
    click.option("--micro-batches", type=MicroBatches(), default="auto",
                 show_default=True, help="Pipeline micro-batches M: auto (the M with the least "
                 "one-batch latency) or a whole number."),
    click.option("--link-bw", type=float, cls=DescribedDefault,
                 show_default="the GPU preset's",
                 help="GPU link bandwidth per direction, B/s."),
    click.option("--link-latency", type=float, cls=DescribedDefault,
                 show_default="the GPU preset's", help="GPU link latency, s."),
    click.option("--link-over", type=click.Choice(["gpu", "host"]), default="gpu",
                 show_default=True, help="GPU-to-GPU traffic over the GPU link (NVLink) or "
                 "the host link (the preset's PCIe bandwidth)."),
    click.option("--host-link-latency", type=float, default=10e-6, show_default=True,
                 help="Latency of the host link, s (used with --link-over host)."),
    click.option("--tp-pairing", type=click.Choice(["narrow", "wide"]), default="narrow",
                 show_default=True, help="Tensor-parallel all-reduce carries the narrower "
                 "activation m·min(k,n) (Megatron-LM) or, forced, the wider one."),
    click.option("--tp-allreduce", type=click.Choice(defaults.ALLREDUCES), default="auto",
                 show_default=True, help="Tensor-parallel all-reduce algorithm (Parallelism "
                 "sheet): auto = the fastest of ring, one-shot and two-shot."),
    click.option("--tp-gather/--no-tp-gather", default=False, show_default=True,
                 help="All-gather a sharded tensor-parallel final output."),
    click.option("--tie-margin", type=float, default=defaults.DEFAULT_TIE_MARGIN,
                 show_default=True, help="PP and TP closer than this fraction (|a - b| / the "
                 "worse side) tie."),
    click.option("--tp-overlap", type=float, default=0.0, show_default=True,
                 help="Share of TP's all-reduce time hidden behind compute (0 to 1; an upper "
                 "bound: assumes compute keeps full speed)."),
    click.option("--whatif-shape", type=int, nargs=3, metavar="M K N",
                 default=defaults.DEFAULT_WHATIF_SHAPE, show_default=True,
                 help="Base shape of the What-if sheet."),
    click.option("--practice", type=int, default=0, metavar="N",
                 help="Add a Practice sheet of N seeded random shapes to estimate by hand."),
    click.option("--practice-seed", type=int, default=defaults.DEFAULT_PRACTICE_SEED,
                 show_default=True,
                 help="Seed of the practice shapes."),
]


_CAPACITY_OPTIONS = [
    click.option("--capacity-as", type=click.Choice(["GiB", "GB"], case_sensitive=False),
                 default="GiB", show_default=True,
                 help="The fit's GPU memory: GiB = the card's bytes (the vendor's '40 GB' is "
                      "40 GiB) less --memory-reserve; GB = the advertised figure in decimal "
                      "bytes, nothing reserved (the interview's 40 GB = 40e9)."),
    click.option("--memory-reserve", type=float, metavar="BYTES", default=2 * 2**30,
                 show_default=True,
                 help="Bytes kept from the fit for the CUDA context, NCCL buffers and "
                      "workspaces (2 GiB; used with --capacity-as GiB)."),
]


def storage_options(command: Callable[..., Any] | None = None, *, grading: bool = False
                    ) -> Any:
    """--activation-dtype, --weight-dtype, --output-dtype: each operand's storage precision
    (the Inputs sheet's ACT_DTYPE, WEIGHT_DTYPE, OUT_DTYPE; sheetgen.inputs.precision).
    `grading=True` (as `storage_options(grading=True)`): check's wording, no default."""

    def decorate(cmd: Callable[..., Any]) -> Callable[..., Any]:
        for field, flag, what in reversed(precision.OPERANDS):
            cmd = click.option(
                flag, field, type=click.Choice(precision.CHOICES, case_sensitive=False),
                default=None if grading else precision.AUTO, show_default=not grading,
                help=("Grading: " if grading else "")
                + f"storage of {what}: auto = the --dtype's (fp8 and int8 write bf16 outputs; "
                  "tf32 stores fp32), or int4/fp4 (0.5 B), nvfp4 (0.5625 B, block scales "
                  "counted), int32 (raw cuBLASLt int8 output), ...")(cmd)
        return cmd

    return decorate(command) if command is not None else decorate


def efficiency_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--compute-eff, --memory-eff, --link-eff: the Inputs sheet's efficiency cells."""
    for flag, what in reversed((("--compute-eff", "peak FLOP/s a matmul reaches"),
                                ("--memory-eff", "HBM bandwidth reached"),
                                ("--link-eff", "GPU-to-GPU link bandwidth reached"))):
        command = click.option(flag, type=Efficiency(), default=1.0, show_default=True,
                               help=f"Fraction of {what}, in (0, 1]; 1 = pure roofline; "
                                    f"{MEASURED} = the GPU preset's figure for the dtype "
                                    "(`sheetgen gpus` lists them).")(command)
    return command


_REFINED_OPTIONS = [
    click.option("--launch-overhead", type=float, metavar="S", cls=DescribedDefault,
                 show_default="the GPU preset's, e.g. 5e-6",
                 help="Launch floor of the refined time, seconds per matmul."),
    click.option("--tile", type=int, nargs=2, metavar="M N", cls=DescribedDefault,
                 show_default="the GPU preset's, 128 128",
                 help="Output tile one SM computes, for tiles and waves."),
    click.option("--waves/--no-waves", default=None, cls=DescribedDefault,
                 show_default="the GPU preset's, off",
                 help="Wave quantization in the refined time: a partial last wave costs a "
                      "whole one."),
    click.option("--overlap", type=float, metavar="P", cls=DescribedDefault,
                 show_default="the GPU preset's, 0",
                 help="Overlap exponent of the refined time, (compute^P + memory^P)^(1/P): "
                      "0 = the hard max, 1 = the sum."),
]


def refined_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--launch-overhead, --tile, --waves and --overlap: the refined time beside the pure
    roofline."""
    for option in reversed(_REFINED_OPTIONS):
        command = option(command)
    return command


def model_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The workbook's model options (pipeline, parallelism, what-if, practice, refined time),
    shared by every command that plans a workbook; they arrive as keyword arguments."""
    for option in reversed([*_MODEL_OPTIONS, *_REFINED_OPTIONS, *_CAPACITY_OPTIONS]):
        command = option(command)
    return storage_options(efficiency_options(command))


#: --gpu and --dtype of every command that models one GPU (grading and calibrate word theirs).
#: the shipped presets' default (templates/gpus.toml), said here so that --help reads no TOML;
#: tests/test_cli_help.py holds it to the file
DEFAULT_GPU_NAME = "A100 40GB SXM"
gpu_option = click.option("--gpu", callback=nonblank, cls=DescribedDefault,
                          show_default=DEFAULT_GPU_NAME,
                          help="GPU preset name (see `sheetgen gpus`).")
dtype_option = click.option("--dtype", default="bf16", show_default=True,
                            help=f"Element type: {', '.join(DTYPES)}.")


def workbook_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Everything that decides a workbook: GPU, dtype, shapes, spare rows, presets, model."""
    for option in reversed((
        gpu_option,
        dtype_option,
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

