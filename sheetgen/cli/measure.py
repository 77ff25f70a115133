"""Commands that meet measurements: measure (time matmuls here) and calibrate (fit to them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from sheetgen.cli.common import (
    DescribedDefault,
    cli,
    gpu_file_option,
    storage_options,
    user_errors,
)
from sheetgen.core.defaults import (
    DEFAULT_MEASURE_REPEATS,
    DEFAULT_MEASURE_SECONDS,
    REPEAT_FACTOR,
)
from sheetgen.errors import InputError
from sheetgen.inputs.presets import DTYPES


@cli.command(short_help="Time matmuls on this machine into OUT.csv.")
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--device", default="cpu", show_default=True,
              help="cpu (NumPy, always there) or cuda (PyTorch: pip install 'sheetgen[measure]').")
@click.option("--shapes", type=click.Path(path_type=Path), cls=DescribedDefault,
              show_default="a built-in sweep of ~40 shapes across both regimes and the tile "
                           "boundaries",
              help="CSV or xlsx with m, k, n columns.")
@click.option("--dtype", cls=DescribedDefault, show_default="fp32 on a CPU; bf16,fp8 on a GPU",
              help="Comma list or 'all' (tf32 = fp32 inputs on tensor cores, fp32 = without).")
@click.option("--max-seconds", type=float, default=DEFAULT_MEASURE_SECONDS,
              show_default=True, help="Time budget for the whole run.")
@click.option("--repeats", type=int, default=DEFAULT_MEASURE_REPEATS, show_default=True,
              help="Timed calls per shape (the CSV has their median, min and max).")
@click.option("--preset-out", type=click.Path(path_type=Path),
              help="Also write the device's measured peak and bandwidth as a preset TOML.")
@click.option("--name", cls=DescribedDefault, show_default="'<device> (measured)'",
              help="The preset's name.")
@click.option("--force", is_flag=True, help="Overwrite OUT and the preset if they exist.")
def measure(out: Path, device: str, shapes: Path | None, dtype: str | None,
            max_seconds: float, repeats: int, preset_out: Path | None, name: str | None,
            force: bool) -> None:
    """Time matmuls on this machine and write OUT.csv for `sheetgen calibrate`.

    Warm-up, several repeats (median, min, max); on a GPU CUDA events with the L2 flushed
    before every repeat. The CSV starts with `#` lines naming the device, library and driver
    versions, threads or clocks and the date. `python -m sheetgen.measure` is the same
    command for machines with only NumPy and PyTorch.

    \b
    Example:
      sheetgen measure cpu.csv --max-seconds 60 --preset-out cpu.toml
      sheetgen measure h100.csv --device cuda --dtype bf16,fp8 --max-seconds 480
    """
    from sheetgen.inputs.shapes import read_shapes
    from sheetgen.measure import run as measure_run  # NumPy: only when measuring

    with user_errors():
        sizes = [(s.m, s.k, s.n) for s in read_shapes(shapes)] if shapes else None
        result = measure_run.run(out, device=device, shapes=sizes, dtype=dtype,
                                 max_seconds=max_seconds, repeats=repeats,
                                 preset_out=preset_out, name=name, force=force,
                                 show_progress=sys.stderr.isatty())
    click.echo(f"wrote {out}: {result.summary()}")
    if preset_out is not None:
        preset = name or f"{result.metadata.get('device_name', device)} (measured)"
        click.echo(f"wrote {preset_out}: use --gpu-file {preset_out} --gpu {json.dumps(preset)}"
                   " (with --compute-eff measured --memory-eff measured, every sheet runs at "
                   "the measured efficiencies)")


@cli.command(short_help="Fit efficiencies and launch floor to measured times.")
@click.argument("measured", type=click.Path(path_type=Path))
@click.option("--gpu", help="GPU preset the measurements ran on (see `sheetgen gpus`).")
@gpu_file_option
@click.option("--dtype", cls=DescribedDefault, show_default="the file's",
              help=f"Rows of this dtype ({', '.join(DTYPES)}).")
@click.option("--sheet", cls=DescribedDefault, show_default="the first with m, k, n",
              help="Sheet of an xlsx MEASURED.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (SI numbers).")
@click.option("--no-fit", is_flag=True,
              help="Only report how well the preset's refined model predicts these times.")
@click.option("--preset-out", type=click.Path(path_type=Path),
              help="Write the fitted preset (for --gpu-file F --gpu NAME in every command).")
@click.option("--name", cls=DescribedDefault, show_default="'<GPU> (calibrated)'",
              help="Name of the fitted preset.")
@click.option("-o", "--output", "out", type=click.Path(path_type=Path),
              help="Also build a workbook with a Measured sheet (live errors, chart).")
@click.option("--force", is_flag=True, help="Overwrite the preset or workbook if it exists.")
@click.option("--quantize-bytes", type=float, cls=DescribedDefault,
              show_default="the file's '# activation_quantize_bytes_per_element' line, else 0",
              help="Bytes per element of A that a separate activation-quantize kernel, timed "
                   "with each matmul, moves (5: dynamic per-tensor FP8 from bf16).")
@click.option("--repeat", type=click.Path(path_type=Path),
              help="A second timing of the same shapes (another run, another board): rows "
                   f"whose two times differ by more than {REPEAT_FACTOR:g}x either way did not "
                   "repeat and are left out.")
@storage_options
def calibrate(measured: Path, gpu: str | None, gpu_file: Path | None, dtype: str | None,
              sheet: str | None, as_json: bool, no_fit: bool, preset_out: Path | None,
              name: str | None, out: Path | None, force: bool,
              quantize_bytes: float | None, repeat: Path | None, activation_dtype: str,
              weight_dtype: str, output_dtype: str) -> None:
    """Fit compute and memory efficiency and the launch floor to MEASURED times.

    MEASURED is a CSV or xlsx with m, k, n and a time column (`time_s`, `time (ms)`,
    `latency (us)`, ...; `measure`'s CSV as it is); an optional `b` column counts b
    independent matmuls per row. Rows faster than the roofline allows are flagged and left
    out of the fit. Wave quantization, a smooth max of compute and memory time, the K loop's
    latency, a split-K kernel's floor and a ramp of the compute efficiency with the matmul's
    FLOPs are kept only if they predict held-out rows better. With --repeat, the rows that
    a second timing of the same shapes contradicts (see its help) are left out.
    A file with several dtypes (a `dtype` column) and no --dtype is fitted per dtype; the
    preset gets each dtype's compute efficiency.

    \b
    Example:
      sheetgen calibrate cpu.csv --gpu-file cpu.toml --gpu "AMD EPYC (measured)"
      sheetgen calibrate h100.csv --gpu "H100 SXM" --preset-out h100.toml -o h100.xlsx
      sheetgen calibrate new.csv --gpu-file h100.toml --gpu "H100 SXM (calibrated)" --no-fit
      sheetgen calibrate run1.csv --repeat run2.csv --gpu "H100 SXM"
    """
    from sheetgen.api import build_workbook
    from sheetgen.calibrate.report import calibrate_dtypes, measured_inputs, write_merged_preset
    from sheetgen.inputs.preset_toml import check_preset_path
    from sheetgen.writers.xlsx import check_output_path

    with user_errors():
        if quantize_bytes is not None and not quantize_bytes >= 0:
            raise InputError(f"--quantize-bytes {quantize_bytes:g}: bytes per element of A "
                             "must be 0 or more")
        if preset_out is not None:
            check_preset_path(preset_out, force)
        if out is not None:
            check_output_path(out, force)
        storage = (activation_dtype, weight_dtype, output_dtype)  # click's case-folded choices
        cals = calibrate_dtypes(measured, gpu=gpu, gpu_file=gpu_file, dtype=dtype,
                                no_fit=no_fit, sheet=sheet, quantize_bytes=quantize_bytes,
                                storage=storage, repeat=repeat)
        cal = cals[0]  # the Measured sheet shows the first (bf16 when present)
        if preset_out is not None:
            write_merged_preset(cals, preset_out, name, force=force)
        if out is not None:
            shapes = list(dict.fromkeys(zip(cal.data.m.astype(int).tolist(),
                                            cal.data.k.astype(int).tolist(),
                                            cal.data.n.astype(int).tolist(), strict=True)))
            build_workbook(out, gpu=cal.gpu.name, dtype=cal.dtype, shapes=shapes,
                           gpu_file=gpu_file, force=force, measured=measured_inputs(cal),
                           activation_dtype=storage[0], weight_dtype=storage[1],
                           output_dtype=storage[2])
    if as_json:
        report = cal.as_dict() if len(cals) == 1 else {"dtypes": [c.as_dict() for c in cals]}
        click.echo(json.dumps(report, indent=2))
    else:
        for i, one in enumerate(cals):
            if i:
                click.echo("")
            for line in one.lines():
                click.echo(line)
    if preset_out is not None and not as_json:
        click.echo(f"wrote {preset_out}: use --gpu-file {preset_out} --gpu "
                   f"{json.dumps(name or cal.gpu.name + ' (calibrated)')} (with --compute-eff "
                   "measured --memory-eff measured, every sheet runs at the fit)")
    if out is not None and not as_json:
        click.echo(f"wrote {out} (Measured sheet: {len(cal.data)} {cal.dtype} rows)")
