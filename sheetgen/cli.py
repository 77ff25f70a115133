"""The `sheetgen` command: a thin click layer over the library.

Library errors (SheetgenError) become one `Error: ...` line and exit status 2; no traceback.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from sheetgen import __version__
from sheetgen.errors import SheetgenError
from sheetgen.hardware import DTYPES, load_presets
from sheetgen.sheets import parallel, pipeline, practice, whatif
from sheetgen.styles import COMPUTE_BOUND, MEMORY_BOUND
from sheetgen.units import TERA, seconds, si


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


@cli.command()
@click.argument("out", type=click.Path(path_type=Path))
@workbook_options
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def build(out: Path, gpu: str | None, dtype: str, shapes: Path | None,
          shapes_sheet: str | None, spare_rows: int, gpu_file: Path | None, force: bool,
          **model: Any) -> None:
    """Write the roofline workbook OUT.xlsx (live formulas, cached values, chart).

    \b
    Example:
      sheetgen build roofline.xlsx --gpu "H100 SXM" --dtype bf16
      sheetgen build big.xlsx --layers 96 --pipeline-shape 8192 12288 49152 --gpus 4
      sheetgen build drill.xlsx --practice 20
    """
    from sheetgen.api import build_workbook

    with user_errors():
        path, n_rows = build_workbook(
            out, gpu=gpu, dtype=dtype, shapes=shapes, spare_rows=spare_rows,
            gpu_file=gpu_file, force=force, shapes_sheet=shapes_sheet,
            progress_factory=progress_bar, **model)
    click.echo(f"wrote {path} ({n_rows} shape rows)")


@cli.command()
@click.argument("theirs", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path),
              help="Where to write the result. Default: THEIRS.sheetgen.xlsx beside it.")
@click.option("--shapes-sheet", metavar="NAME",
              help="Your sheet holding m, k, n (default: the first with an m/k/n header).")
@click.option("--gpu", help="GPU preset name (see `sheetgen gpus`). Default: A100 40GB SXM.")
@click.option("--dtype", default="bf16", show_default=True,
              help=f"Element type: {', '.join(DTYPES)}.")
@gpu_file_option
@click.option("--spare-rows", type=click.IntRange(min=0), default=0, show_default=True,
              help="Empty Matmul rows below the linked ones, to type extra shapes into.")
@click.option("--prefix", default="", help="Put this before sheetgen's sheet names "
              "(when your workbook already has an 'Inputs' or 'Matmul' sheet).")
@click.option("--in-place", is_flag=True,
              help="Change THEIRS itself (a copy is kept as THEIRS.xlsx.bak).")
@click.option("--force", is_flag=True, help="Overwrite the output if it exists.")
@click.option("--replace", is_flag=True,
              help="THEIRS was filled before: rewrite sheetgen's sheets (e.g. after adding "
                   "rows), keeping the earlier prefix and linked sheet.")
@click.option("--allow-loss", is_flag=True,
              help="Fill even if THEIRS has parts openpyxl drops (shapes, slicers, ...).")
def fill(theirs: Path, out: Path | None, shapes_sheet: str | None, gpu: str | None,
         dtype: str, gpu_file: Path | None, spare_rows: int, prefix: str, in_place: bool,
         force: bool, replace: bool, allow_loss: bool) -> None:
    """Add sheetgen's sheets to your own workbook THEIRS.xlsx, linked live to your shapes.

    The Matmul sheet's m, k, n cells refer to your sheet's cells: edit them and everything
    recomputes. Your sheets are left as they are; the result is a new file unless
    --in-place. Rows you add to your table later need a re-fill (--replace).

    \b
    Example:
      sheetgen fill plan.xlsx --gpu "H100 SXM"          # writes plan.sheetgen.xlsx
      sheetgen fill plan.xlsx --in-place --prefix "sg "
      sheetgen fill plan.xlsx --in-place --replace      # after adding rows to your table
    """
    from sheetgen.fill import fill_workbook

    with user_errors():
        result = fill_workbook(theirs, out, gpu=gpu, dtype=dtype, gpu_file=gpu_file,
                               shapes_sheet=shapes_sheet, spare_rows=spare_rows,
                               prefix=prefix, in_place=in_place, force=force,
                               allow_loss=allow_loss, replace=replace,
                               progress_factory=progress_bar)
    t = result.table
    click.echo(f"wrote {result.path} ({len(t.shapes)} shapes linked to sheet {t.sheet!r}, "
               f"rows {t.rows[0]}-{t.rows[-1]})")
    if result.backup is not None:
        click.echo(f"backup of the original: {result.backup}")


@cli.command()
@shapes_options
@click.option("--gpu", help="GPU preset name (see `sheetgen gpus`). Default: A100 40GB SXM.")
@click.option("--dtype", default="bf16", show_default=True,
              help=f"Element type: {', '.join(DTYPES)}.")
@gpu_file_option
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (SI numbers) for scripts instead of the table.")
def show(shapes: Path | None, shapes_sheet: str | None, gpu: str | None, dtype: str,
         gpu_file: Path | None, as_json: bool) -> None:
    """Print the Matmul table (Part 1) in the terminal, regimes coloured.

    \b
    Example:
      sheetgen show --gpu "H100 SXM" --dtype fp8
      sheetgen show --shapes my_shapes.xlsx --json | jq '.rows[].predicted_time'
    """
    from sheetgen.api import analyze

    with user_errors():
        frame = analyze(shapes, gpu=gpu, dtype=dtype, gpu_file=gpu_file,
                        shapes_sheet=shapes_sheet)
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
          f"ridge {g['ridge']:.4g} FLOP/B{eff}",
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
@click.option("--gpu", help="GPU preset name (see `sheetgen gpus`). Default: A100 40GB SXM.")
@click.option("--dtype", default="bf16", show_default=True,
              help=f"Element type: {', '.join(DTYPES)}.")
@gpu_file_option
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def plot(out: Path, shapes: Path | None, shapes_sheet: str | None, gpu: str | None,
         dtype: str, gpu_file: Path | None, force: bool) -> None:
    """Draw the roofline to OUT.png, OUT.svg or OUT.pdf (needs matplotlib).

    \b
    Example:
      sheetgen plot roofline.png --gpu "H100 SXM" --shapes my_shapes.csv
    """
    with user_errors():
        from sheetgen.plot import check_plot_path, plot_roofline

        check_plot_path(out, force)
        plot_roofline(shapes_frame(shapes, shapes_sheet), gpu=gpu, dtype=dtype,
                      gpu_file=gpu_file, path=out, force=force)
    click.echo(f"wrote {out}")


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


credentials_option = click.option(
    "--credentials", type=click.Path(dir_okay=False, path_type=Path),
    envvar="GOOGLE_APPLICATION_CREDENTIALS", show_envvar=True,
    help="Service-account JSON key. Share the spreadsheet (Editor) with its client_email.")


@cli.command()
@click.argument("spreadsheet")
@credentials_option
@workbook_options
@click.option("--replace", is_flag=True,
              help="Rewrite sheetgen's tabs and named ranges if they exist; other tabs are "
                   "never touched.")
def push(spreadsheet: str, credentials: Path | None, gpu: str | None, dtype: str,
         shapes: Path | None, shapes_sheet: str | None, spare_rows: int,
         gpu_file: Path | None, replace: bool, **model: Any) -> None:
    """Write the live workbook into a Google spreadsheet you shared with the service account.

    SPREADSHEET is its URL or key. Create it yourself (service accounts cannot own files) and
    share it (Editor) with the key file's client_email.

    \b
    Example:
      sheetgen push https://docs.google.com/spreadsheets/d/KEY/edit --credentials sa.json
      sheetgen push KEY --gpu "H100 SXM" --shapes shapes.csv --replace
    """
    from sheetgen.api import plan as make_plan
    from sheetgen.gsheets import push_plan

    with user_errors():
        p = make_plan(gpu=gpu, dtype=dtype, shapes=shapes, shapes_sheet=shapes_sheet,
                      spare_rows=spare_rows, gpu_file=gpu_file, chart_helpers=True, **model)
        total = sum(t.n_rows for s in p.sheets for t in s.tables)
        with progress_bar(total, "pushing") as progress:
            result = push_plan(p, spreadsheet, credentials=credentials, replace=replace,
                               progress=progress)
    replaced = " (replaced sheetgen's tabs)" if result.replaced else ""
    click.echo(f"pushed {', '.join(result.sheets)} to {result.url}{replaced} "
               f"({result.shape_rows} shape rows, {result.write_requests} write request"
               f"{'s' if result.write_requests != 1 else ''})")


@cli.command()
@click.argument("source")
@credentials_option
@click.option("--sheet", default="Matmul", show_default=True,
              help="Which sheetgen sheet to read (Matmul, Pipeline, What-if, Inputs, ...).")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv",
              show_default=True, help="Output format (to stdout).")
def read(source: str, credentials: Path | None, sheet: str, fmt: str) -> None:
    """Print a sheet's computed columns: an .xlsx file's formulas evaluated in pure Python
    (never its cached values), or a Google spreadsheet's values as Google computed them.

    \b
    Example:
      sheetgen read roofline.xlsx > matmul.csv
      sheetgen read KEY --credentials sa.json --sheet Inputs --format json
    """
    from sheetgen.check import is_workbook_path

    with user_errors():
        if is_workbook_path(source):
            from sheetgen.check import read_workbook

            frame = read_workbook(source, sheet)
        else:
            from sheetgen.gsheets import read as read_sheet

            frame = read_sheet(source, credentials=credentials, sheet=sheet)
    if fmt == "csv":
        click.echo(frame.to_csv(), nl=False)
    else:
        click.echo(frame.reset_index().to_json(orient="records"))


@cli.command()
@click.argument("target")
@credentials_option
@click.option("--rtol", type=float, default=None,
              help="Relative tolerance for numbers (default: 1e-9 for a sheetgen workbook, "
                   "1e-6 when grading a hand-made sheet).")
@click.option("--gpu", help="Grading: GPU preset to grade against (see `sheetgen gpus`). "
              "Default: A100 40GB SXM.")
@click.option("--dtype", help=f"Grading: element type, one of {', '.join(DTYPES)} "
              "(default bf16).")
@click.option("--peak", metavar="CELL|NUMBER", help="Grading: peak FLOP/s from a cell of the "
              "sheet (B2, Inputs!B2; a unit in the label beside it such as 'TFLOP/s' counts) "
              "or a number, instead of the preset's.")
@click.option("--bw", metavar="CELL|NUMBER", help="Grading: HBM bandwidth in B/s from a cell "
              "or a number, instead of the preset's.")
@click.option("--sheet", metavar="NAME", help="Grading: the sheet to grade (default: the first "
              "with an m/k/n header).")
@click.option("--time-unit", type=click.Choice(["s", "ms", "us", "ns"]),
              help="Grading: the unit of every time column (default: from its header, such "
                   "as 'Time (ms)', else seconds).")
@gpu_file_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check(target: str, credentials: Path | None, rtol: float | None, gpu: str | None,
          dtype: str | None, peak: str | None, bw: str | None, sheet: str | None,
          time_unit: str | None, gpu_file: Path | None, as_json: bool) -> None:
    """Check every formula cell against the reference model of the sheet's own inputs, or
    grade a hand-made roofline sheet.

    TARGET is an .xlsx file (every formula evaluated in pure Python, cached values ignored)
    or a Google spreadsheet URL or key (values as Google computed them). Exit status 0 when
    everything agrees, 1 when some cell does not, 2 when the target cannot be read.

    An .xlsx file sheetgen did not build is graded: its header row naming m, k, n is found,
    the other columns are recognised by their headers (FLOPs, Bytes moved, AI (FLOP/byte),
    Bound, Time (ms), ...) and compared row by row with the model of the GPU given by --gpu
    and --dtype (or --peak and --bw); failing columns show their first failing rows and a
    hint when the mistake is a classic one.

    \b
    Example:
      sheetgen check roofline.xlsx
      sheetgen check https://docs.google.com/spreadsheets/d/KEY/edit --credentials sa.json
      sheetgen check my_roofline.xlsx --gpu "H100 SXM" --dtype fp8
      sheetgen check my_roofline.xlsx --peak Inputs!B2 --bw Inputs!B3 --time-unit ms
    """
    from sheetgen.check import is_workbook_path

    grading = {"--gpu": gpu, "--dtype": dtype, "--peak": peak, "--bw": bw, "--sheet": sheet,
               "--time-unit": time_unit, "--gpu-file": gpu_file}
    if is_workbook_path(target):
        _check_file(target, rtol, as_json, GradeOptions(gpu, dtype, peak, bw, sheet,
                                                        time_unit, gpu_file))
        return
    _refuse_grading_options(grading, "a Google spreadsheet")
    from sheetgen.gsheets import check_spreadsheet

    with user_errors():
        report = check_spreadsheet(target, credentials=credentials,
                                   rtol=1e-9 if rtol is None else rtol)
    _print_check(report, as_json)


MAX_SHOWN = 50  # mismatch lines printed before "... and N more"


@dataclass(frozen=True)
class GradeOptions:
    gpu: str | None = None
    dtype: str | None = None
    peak: str | None = None
    bw: str | None = None
    sheet: str | None = None
    time_unit: str | None = None
    gpu_file: Path | None = None


def _refuse_grading_options(options: dict[str, Any], what: str) -> None:
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise UserError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to grading "
                        f"a hand-made sheet; {what} is checked against its own inputs")


def _check_file(path: str, rtol: float | None, as_json: bool,
                grade: GradeOptions | None = None) -> None:
    from sheetgen.check import check_workbook, read_metadata

    grade = grade or GradeOptions()
    if Path(path).is_file() and not read_metadata(path):
        _grade_file(path, rtol, as_json, grade)
        return
    _refuse_grading_options({f"--{k.replace('_', '-')}": v
                             for k, v in dataclasses.asdict(grade).items()},
                            "a sheetgen workbook")
    with user_errors(), _evaluation_progress() as progress:
        report = check_workbook(path, rtol=1e-9 if rtol is None else rtol, progress=progress)
    _print_check(report, as_json)


def _print_check(report: Any, as_json: bool) -> None:
    """A CheckReport (file or spreadsheet) as text or JSON; exit status 1 on a mismatch."""
    if as_json:
        click.echo(json.dumps(report.as_dict()))
    else:
        for line in report.summary():
            click.echo(line)
        for m in report.mismatches[:MAX_SHOWN]:
            click.echo(m.line())
        more = len(report.mismatches) - MAX_SHOWN
        if more > 0:
            click.echo(f"... and {more} more")
        click.echo("ok: every formula cell agrees with the reference model" if report.ok else
                   f"{len(report.mismatches)} of {report.cells} formula cells disagree with "
                   "the reference model")
    if not report.ok:
        sys.exit(1)


def _grade_file(path: str, rtol: float | None, as_json: bool, o: GradeOptions) -> None:
    from sheetgen.grade import DEFAULT_GRADE_RTOL, grade_workbook

    with user_errors(), _evaluation_progress() as progress:
        report = grade_workbook(path, gpu=o.gpu, dtype=o.dtype, peak=o.peak, bw=o.bw,
                                sheet=o.sheet, time_unit=o.time_unit, gpu_file=o.gpu_file,
                                rtol=DEFAULT_GRADE_RTOL if rtol is None else rtol,
                                progress=progress)
    if as_json:
        click.echo(json.dumps(report.as_dict()))
    else:
        for line in report.summary():
            click.echo(line)
    if not report.ok:
        sys.exit(1)


@contextmanager
def _evaluation_progress() -> Iterator[Callable[[int, int], None] | None]:
    """A bar for evaluating big workbooks (the evaluator reports done/total formula groups)."""
    if not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=1, label="evaluating", file=sys.stderr) as bar:

        def update(done: int, total: int) -> None:
            bar.length = max(total, 1)
            bar.update(done - bar.pos)

        yield update


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
