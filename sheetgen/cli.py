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
@click.option("--shapes", type=click.Path(path_type=Path),
              help="CSV whose header has columns m, k, n (other columns are ignored).")
@click.option("--spare-rows", type=click.IntRange(min=0), default=200, show_default=True,
              help="Empty formula rows below the shapes, to type new shapes into.")
@gpu_file_option
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def build(out: Path, gpu: str | None, dtype: str, shapes: Path | None, spare_rows: int,
          gpu_file: Path | None, force: bool) -> None:
    """Write the roofline workbook OUT.xlsx (live formulas, cached values, chart).

    \b
    Example:
      sheetgen build roofline.xlsx --gpu "H100 SXM" --dtype bf16
    """
    from sheetgen.api import build_workbook

    with user_errors():
        path, n_rows = build_workbook(out, gpu=gpu, dtype=dtype, shapes=shapes,
                                      spare_rows=spare_rows, gpu_file=gpu_file, force=force,
                                      progress_factory=progress_bar)
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


credentials_option = click.option(
    "--credentials", type=click.Path(dir_okay=False, path_type=Path),
    envvar="GOOGLE_APPLICATION_CREDENTIALS", show_envvar=True,
    help="Service-account JSON key. Share the spreadsheet (Editor) with its client_email.")


@cli.command()
@click.argument("spreadsheet")
@credentials_option
@click.option("--gpu", help="GPU preset name (see `sheetgen gpus`). Default: A100 40GB SXM.")
@click.option("--dtype", default="bf16", show_default=True,
              help=f"Element type: {', '.join(DTYPES)}.")
@click.option("--shapes", type=click.Path(path_type=Path),
              help="CSV whose header has columns m, k, n (other columns are ignored).")
@click.option("--spare-rows", type=click.IntRange(min=0), default=200, show_default=True,
              help="Empty formula rows below the shapes, to type new shapes into.")
@gpu_file_option
@click.option("--replace", is_flag=True,
              help="Rewrite sheetgen's tabs (Inputs, Matmul, GPU Specs) and named ranges if "
                   "they exist; other tabs are never touched.")
def push(spreadsheet: str, credentials: Path | None, gpu: str | None, dtype: str,
         shapes: Path | None, spare_rows: int, gpu_file: Path | None, replace: bool) -> None:
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
        p = make_plan(gpu=gpu, dtype=dtype, shapes=shapes, spare_rows=spare_rows,
                      gpu_file=gpu_file, chart_helpers=True)
        total = sum(t.n_rows for s in p.sheets for t in s.tables)
        with progress_bar(total, "pushing") as progress:
            result = push_plan(p, spreadsheet, credentials=credentials, replace=replace,
                               progress=progress)
    replaced = " (replaced sheetgen's tabs)" if result.replaced else ""
    click.echo(f"pushed {', '.join(result.sheets)} to {result.url}{replaced} "
               f"({result.shape_rows} shape rows, {result.write_requests} write request"
               f"{'s' if result.write_requests != 1 else ''})")


@cli.command()
@click.argument("spreadsheet")
@credentials_option
@click.option("--sheet", default="Matmul", show_default=True,
              help="Which sheetgen tab to read: Matmul, GPU Specs or Inputs.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv",
              show_default=True, help="Output format (to stdout).")
def read(spreadsheet: str, credentials: Path | None, sheet: str, fmt: str) -> None:
    """Print the columns as Google computed them (unformatted values).

    \b
    Example:
      sheetgen read KEY --credentials sa.json > matmul.csv
      sheetgen read KEY --sheet Inputs --format json
    """
    from sheetgen.gsheets import read as read_sheet

    with user_errors():
        frame = read_sheet(spreadsheet, credentials=credentials, sheet=sheet)
    if fmt == "csv":
        click.echo(frame.to_csv(), nl=False)
    else:
        click.echo(frame.reset_index().to_json(orient="records"))


@cli.command()
@click.argument("target")
@credentials_option
@click.option("--rtol", type=float, default=1e-9, show_default=True,
              help="Relative tolerance for numbers.")
def check(target: str, credentials: Path | None, rtol: float) -> None:
    """Check every formula cell against the reference model of the sheet's own inputs.

    TARGET is a Google spreadsheet URL or key (values as Google computed them), or an .xlsx
    file. Exit status 0 when everything agrees, 1 when some cell does not.

    \b
    Example:
      sheetgen check https://docs.google.com/spreadsheets/d/KEY/edit --credentials sa.json
    """
    if target.lower().endswith(".xlsx") and Path(target).is_file():
        # TODO(check): the xlsx checker lives in sheetgen.check (built on another branch).
        try:
            from sheetgen.check import check_workbook  # type: ignore[import-not-found]
        except ImportError:
            raise UserError("checking .xlsx files needs sheetgen.check, not in this "
                            "version; pass a Google spreadsheet URL or key") from None
        with user_errors():
            outcome = check_workbook(target)
        click.echo(str(outcome))
        return
    from sheetgen.gsheets import check_spreadsheet

    with user_errors():
        report = check_spreadsheet(target, credentials=credentials, rtol=rtol)
    if report.ok:
        click.echo(f"ok: {report.cells} formula cells agree with the reference model "
                   f"({report.shape_rows} shape rows)")
        return
    for m in report.mismatches[:20]:
        click.echo(str(m))
    more = len(report.mismatches) - 20
    if more > 0:
        click.echo(f"... and {more} more")
    click.echo(f"{len(report.mismatches)} of {report.cells} formula cells disagree with the "
               "reference model", err=True)
    sys.exit(1)


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
