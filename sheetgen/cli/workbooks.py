"""Commands that write workbooks: build, fill (into yours) and push (to Google Sheets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from sheetgen.cli.common import (
    DescribedDefault,
    cli,
    credentials_option,
    dtype_option,
    efficiency_options,
    gpu_file_option,
    gpu_option,
    progress_bar,
    storage_options,
    user_errors,
    workbook_options,
)
from sheetgen.cli.transformer import transformer_options
from sheetgen.core import defaults


@cli.command(short_help="Write the roofline workbook OUT.xlsx.")
@transformer_options
@click.argument("out", type=click.Path(path_type=Path))
@workbook_options
@click.option("--measured", type=click.Path(path_type=Path),
              help="Measured times (CSV/xlsx, as `sheetgen calibrate` reads them): add a "
                   "Measured sheet with the fitted model and live errors.")
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def build(out: Path, gpu: str | None, dtype: str, shapes: Path | None,
          shapes_sheet: str | None, spare_rows: int, gpu_file: Path | None,
          measured: Path | None, force: bool, **model: Any) -> None:
    """Write the roofline workbook OUT.xlsx (live formulas, cached values, chart).

    \b
    Example:
      sheetgen build roofline.xlsx --gpu "H100 SXM" --dtype bf16
      sheetgen build big.xlsx --layers 96 --pipeline-shape 8192 12288 49152 --gpus 4
      sheetgen build drill.xlsx --practice 20
      sheetgen build h100.xlsx --gpu "H100 SXM" --measured benchmarks/data/xla_h100_sm90.csv
    """
    from sheetgen.api import build_workbook

    with user_errors():
        if measured is not None:
            from sheetgen.calibrate.report import calibrate_file, measured_inputs

            model["measured"] = measured_inputs(calibrate_file(
                measured, gpu=gpu, gpu_file=gpu_file, dtype=dtype))
        path, n_rows = build_workbook(
            out, gpu=gpu, dtype=dtype, shapes=shapes, spare_rows=spare_rows,
            gpu_file=gpu_file, force=force, shapes_sheet=shapes_sheet,
            progress_factory=progress_bar, **model)
    click.echo(f"wrote {path} ({n_rows} shape rows)")


@cli.command(short_help="Add sheetgen's sheets to your own workbook.")
@click.argument("theirs", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path),
              cls=DescribedDefault, show_default="THEIRS.sheetgen.xlsx beside it",
              help="Where to write the result.")
@click.option("--shapes-sheet", metavar="NAME", cls=DescribedDefault,
              show_default="the first with an m/k/n header",
              help="Your sheet holding m, k, n.")
@gpu_option
@dtype_option
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
@efficiency_options
@click.option("--layers", type=int, default=defaults.DEFAULT_LAYERS, show_default=True,
              help="Layers in the Pipeline sheet (alternating types 1 and 2).")
@storage_options
def fill(theirs: Path, out: Path | None, shapes_sheet: str | None, gpu: str | None,
         dtype: str, gpu_file: Path | None, spare_rows: int, prefix: str, in_place: bool,
         force: bool, replace: bool, allow_loss: bool, compute_eff: float = 1.0,
         memory_eff: float = 1.0, link_eff: float = 1.0,
         layers: int = defaults.DEFAULT_LAYERS, **storage: str) -> None:
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
    from sheetgen.writers.fill import fill_workbook

    with user_errors():
        result = fill_workbook(theirs, out, gpu=gpu, dtype=dtype, gpu_file=gpu_file,
                               shapes_sheet=shapes_sheet, spare_rows=spare_rows,
                               prefix=prefix, in_place=in_place, force=force,
                               allow_loss=allow_loss, replace=replace,
                               compute_eff=compute_eff, memory_eff=memory_eff,
                               link_eff=link_eff, layers=layers,
                               progress_factory=progress_bar, **storage)
    t = result.table
    n = len(t.shapes)
    rows = f"row {t.rows[0]}" if t.rows[0] == t.rows[-1] else f"rows {t.rows[0]}-{t.rows[-1]}"
    click.echo(f"wrote {result.path} ({n} shape{'s' if n != 1 else ''} linked to sheet "
               f"{t.sheet!r}, {rows})")
    if result.backup is not None:
        click.echo(f"backup of the original: {result.backup}")



@cli.command(short_help="Write the live workbook into a Google spreadsheet.")
@transformer_options
@click.argument("spreadsheet")
@credentials_option
@workbook_options
@click.option("--replace", is_flag=True,
              help="Rewrite sheetgen's tabs and named ranges if they exist; other tabs are "
                   "never touched.")
@click.option("--measured", type=click.Path(path_type=Path),
              help="Measured times (CSV/xlsx, as `sheetgen calibrate` reads them): add a "
                   "Measured tab with the fitted model, live errors and its chart.")
def push(spreadsheet: str, credentials: Path | None, gpu: str | None, dtype: str,
         shapes: Path | None, shapes_sheet: str | None, spare_rows: int,
         gpu_file: Path | None, replace: bool, measured: Path | None, **model: Any) -> None:
    """Write the live workbook into a Google spreadsheet you shared with the service account.

    SPREADSHEET is its URL or key. Create it yourself (service accounts cannot own files) and
    share it (Editor) with the key file's client_email.

    \b
    Example:
      sheetgen push https://docs.google.com/spreadsheets/d/KEY/edit --credentials sa.json
      sheetgen push KEY --gpu "H100 SXM" --shapes shapes.csv --replace
      sheetgen push KEY --gpu "H100 SXM" --measured benchmarks/data/xla_h100_sm90.csv
    """
    from sheetgen.api import plan as make_plan
    from sheetgen.writers.google.sheets import push_plan

    with user_errors():
        if measured is not None:
            from sheetgen.calibrate.report import calibrate_file, measured_inputs

            model["measured"] = measured_inputs(calibrate_file(
                measured, gpu=gpu, gpu_file=gpu_file, dtype=dtype))
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

