"""Commands that read workbooks back: read and check (a sheetgen workbook, or grading)."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from sheetgen.cli.common import (
    DEFAULT_GPU_NAME,
    DescribedDefault,
    UserError,
    cli,
    credentials_option,
    gpu_file_option,
    nonblank,
    storage_options,
    user_errors,
)
from sheetgen.inputs.presets import DEFAULT_DTYPE, DTYPES


@cli.command(short_help="Print a sheet's computed columns (xlsx or Google).")
@click.argument("source")
@credentials_option
@click.option("--sheet", default="Matmul", show_default=True,
              help="Which sheetgen sheet to read (Matmul, Pipeline, What-if, Inputs, ...).")
@click.option("--block", is_flag=True,
              help="The sheet's named values (Pipeline totals, the Parallelism comparison, "
                   "What-if crossovers) instead of its first table.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv",
              show_default=True, help="Output format (to stdout).")
def read(source: str, credentials: Path | None, sheet: str, block: bool, fmt: str) -> None:
    """Print a sheet's computed columns: an .xlsx file's formulas evaluated in pure Python
    (never its cached values), or a Google spreadsheet's values as Google computed them.

    \b
    Example:
      sheetgen read roofline.xlsx > matmul.csv
      sheetgen read roofline.xlsx --sheet Pipeline --block     # totals, fits in VRAM
      sheetgen read KEY --credentials sa.json --sheet Inputs --format json
    """
    from sheetgen.verify.check import is_workbook_path

    with user_errors():
        if is_workbook_path(source):
            from sheetgen.verify.check import read_workbook

            frame = read_workbook(source, sheet, block=block)
        else:
            from sheetgen.writers.google.sheets import read as read_sheet

            frame = read_sheet(source, credentials=credentials, sheet=sheet, block=block)
    for piece in (csv_stream if fmt == "csv" else json_stream)(frame):
        click.echo(piece, nl=False)
    if fmt == "json":
        click.echo()


#: Rows converted at a time by the streaming writers: the text of one chunk is alive at once.
STREAM_ROWS = 5_000


def _step(frame: Any) -> int:
    """Rows a piece: a sheet's named values (one mixed column, a few dozen rows) in one,
    since whole_numbers types that column from all its values."""
    return max(len(frame), 1) if list(frame.columns) == ["value"] else STREAM_ROWS


def csv_stream(frame: Any) -> Iterator[str]:
    """`neutralised(fifteen_digits(whole_numbers(frame))).to_csv()` in pieces of STREAM_ROWS
    rows."""
    step = _step(frame)
    for start in range(0, max(len(frame), 1), step):
        chunk = whole_numbers(frame.iloc[start:start + step])
        yield neutralised(fifteen_digits(chunk)).to_csv(header=start == 0)


def json_stream(frame: Any) -> Iterator[str]:
    """`json.dumps(json_records(whole_numbers(frame)))` in pieces of STREAM_ROWS rows."""
    yield "["
    sep = ""
    step = _step(frame)
    for start in range(0, len(frame), step):
        rows = json_records(whole_numbers(frame.iloc[start:start + step]))
        text = json.dumps(rows, allow_nan=False)[1:-1]
        if text:
            yield sep + text
            sep = ", "
    yield "]"


@functools.cache
def _int_names() -> frozenset[str]:
    """The quantities declared as whole numbers (fmt "int": m, k, n, layer, GPU count...)."""
    from sheetgen.assemble import all_sheet_specs

    names = set()
    for spec in all_sheet_specs():
        items = [i for b in spec.blocks for i in b.items()]
        items += [c for t in spec.tables for c in t.all_columns()]
        names.update(i.name for i in items if i.fmt == "int")
    return frozenset(names)


def _whole(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def whole_numbers(frame: Any) -> Any:
    """Whole-number quantities (m, k, n, ...) as integers, not 4096.0."""
    ints = _int_names()
    frame = frame.copy()
    if list(frame.columns) == ["value"]:  # a sheet of named values: name -> value
        frame["value"] = [_whole(_plain(v)) if name in ints else v
                          for name, v in zip(frame.index, frame["value"], strict=True)]
        return frame
    for col in frame.columns:
        if col in ints:
            frame[col] = frame[col].astype(object).map(lambda v: _whole(_plain(v)))
    return frame


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def fifteen_digits(frame: Any) -> Any:
    """Every number as a spreadsheet shows it, to 15 significant digits: an input typed as
    10 µs and read back in seconds is 1e-05, not the float noise 9.999999999999999e-06."""
    def one(value: Any) -> Any:
        value = _plain(value)
        if isinstance(value, float) and math.isfinite(value):
            return float(f"{value:.15g}")
        return value

    out = frame.copy()
    for col in out.columns:
        if out[col].dtype.kind in "fO":
            out[col] = out[col].astype(object).map(one)
    return out


#: A text cell starting with one of these is read as a formula by Excel, LibreOffice and
#: Google Sheets when the CSV is opened. OWASP's advice (CSV Injection,
#: https://owasp.org/www-community/attacks/CSV_Injection; ASVS 5.0 V1.2.10 adds NUL):
#: prefix such cells with a single quote so they stay text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\0")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def neutralise(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula, made inert (`'=HYPERLINK..`).

    Numbers, negative ones included, are left alone: they are not text, and neither is text
    that is just a number ("-5"), which no spreadsheet can turn into a formula.
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) \
            and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def neutralised(frame: Any) -> Any:
    """The frame with every text cell neutralised (index and headers too)."""
    from pandas.api.types import is_numeric_dtype

    out = frame.copy()
    for col in out.columns:
        if not is_numeric_dtype(out[col]):  # text (object or string dtype), mixed columns
            out[col] = out[col].astype(object).map(neutralise)
    if not is_numeric_dtype(out.index):
        out.index = out.index.map(neutralise)
    out.columns = [neutralise(c) for c in out.columns]
    return out


def json_records(frame: Any) -> list[dict[str, Any]]:
    """One object per row, every number at full precision (Python's shortest round-trip
    repr, not pandas' 10 decimals that turn 3.9e-12 s into 0.0); NaN and infinities (which
    JSON cannot hold) as null."""
    rows = frame.reset_index().to_dict("records")
    return [{str(k): _json_value(v) for k, v in row.items()} for row in rows]


def _json_value(value: Any) -> Any:
    value = _plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@cli.command(short_help="Check formulas against the model, or grade a sheet.")
@click.argument("target")
@credentials_option
@click.option("--rtol", type=float, default=None, callback=lambda c, p, v: check_rtol(v),
              cls=DescribedDefault,
              show_default="1e-9 for a sheetgen workbook, 1e-6 when grading a hand-made sheet",
              help="Relative tolerance for numbers, 0 <= RTOL < 1.")
@click.option("--gpu", callback=nonblank, cls=DescribedDefault, show_default=DEFAULT_GPU_NAME,
              help="Grading: GPU preset to grade against (see `sheetgen gpus`).")
@click.option("--dtype", cls=DescribedDefault, show_default=DEFAULT_DTYPE,
              help=f"Grading: element type, one of {', '.join(DTYPES)}.")
@click.option("--peak", metavar="CELL|NUMBER", help="Grading: peak FLOP/s from a cell of the "
              "sheet (B2, Inputs!B2; a unit in the label beside it such as 'TFLOP/s' counts) "
              "or a number, instead of the preset's.")
@click.option("--bw", metavar="CELL|NUMBER", help="Grading: HBM bandwidth in B/s from a cell "
              "or a number, instead of the preset's.")
@click.option("--sheet", metavar="NAME", cls=DescribedDefault,
              show_default="the first with an m/k/n header",
              help="Grading: the sheet to grade.")
@click.option("--time-unit", type=click.Choice(["s", "ms", "us", "ns"]), cls=DescribedDefault,
              show_default="from its header, such as 'Time (ms)', else seconds",
              help="Grading: the unit of every time column.")
@gpu_file_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@storage_options(grading=True)
def check(target: str, credentials: Path | None, rtol: float | None, gpu: str | None,
          dtype: str | None, peak: str | None, bw: str | None, sheet: str | None,
          time_unit: str | None, gpu_file: Path | None, as_json: bool,
          activation_dtype: str | None = None, weight_dtype: str | None = None,
          output_dtype: str | None = None) -> None:
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
    from sheetgen.verify.check import is_workbook_path

    grading = {"--gpu": gpu, "--dtype": dtype, "--peak": peak, "--bw": bw, "--sheet": sheet,
               "--time-unit": time_unit, "--gpu-file": gpu_file,
               "--activation-dtype": activation_dtype, "--weight-dtype": weight_dtype,
               "--output-dtype": output_dtype}
    if is_workbook_path(target):
        _check_file(target, rtol, as_json, GradeOptions(gpu, dtype, peak, bw, sheet,
                                                        time_unit, gpu_file, activation_dtype,
                                                        weight_dtype, output_dtype))
        return
    _refuse_grading_options(grading, "a Google spreadsheet")
    from sheetgen.writers.google.sheets import check_spreadsheet

    with user_errors():
        report = check_spreadsheet(target, credentials=credentials,
                                   rtol=1e-9 if rtol is None else rtol)
    _print_check(report, as_json)


def check_rtol(rtol: float | None) -> float | None:
    """--rtol, refused as the library refuses it (compare.validate_rtol)."""
    from sheetgen.errors import InputError
    from sheetgen.verify.compare import validate_rtol

    try:
        return None if rtol is None else validate_rtol(rtol)
    except InputError as exc:
        raise click.BadParameter(str(exc)) from None


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
    activation_dtype: str | None = None
    weight_dtype: str | None = None
    output_dtype: str | None = None


def _refuse_grading_options(options: dict[str, Any], what: str) -> None:
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise UserError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to grading "
                        f"a hand-made sheet; {what} is checked against its own inputs")


def _check_file(path: str, rtol: float | None, as_json: bool,
                grade: GradeOptions | None = None) -> None:
    from sheetgen.verify.check import check_workbook
    from sheetgen.verify.readback import read_metadata

    grade = grade or GradeOptions()
    with user_errors():  # the package's budget is checked before its properties are read
        sheetgen_built = not Path(path).is_file() or bool(read_metadata(path))
    if not sheetgen_built:
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
    from sheetgen.verify.grade import DEFAULT_GRADE_RTOL, grade_workbook

    with user_errors(), _evaluation_progress() as progress:
        report = grade_workbook(path, gpu=o.gpu, dtype=o.dtype, peak=o.peak, bw=o.bw,
                                sheet=o.sheet, time_unit=o.time_unit, gpu_file=o.gpu_file,
                                activation_dtype=o.activation_dtype,
                                weight_dtype=o.weight_dtype, output_dtype=o.output_dtype,
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

