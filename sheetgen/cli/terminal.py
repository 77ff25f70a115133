"""Commands that answer in the terminal or a picture: show, plot and gpus."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import click

from sheetgen.cli.common import (
    cli,
    dtype_option,
    efficiency_options,
    gpu_file_option,
    gpu_option,
    refined_options,
    shapes_options,
    storage_options,
    user_errors,
)
from sheetgen.cli.transformer import transformer_view
from sheetgen.core.defaults import NO_SMS_NOTE
from sheetgen.core.units import GIBI, GIGA, TERA, rate_unit, seconds, si
from sheetgen.inputs.presets import DTYPES, load_presets
from sheetgen.layout.palette import rgb
from sheetgen.layout.styles import REGIME_COLORS


@cli.command(short_help="Print the Matmul table in the terminal.")
@transformer_view("show")
@shapes_options
@gpu_option
@dtype_option
@gpu_file_option
@efficiency_options
@refined_options
@storage_options
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (SI numbers) for scripts instead of the table.")
def show(shapes: Path | None, shapes_sheet: str | None, gpu: str | None, dtype: str,
         gpu_file: Path | None, as_json: bool, **options: Any) -> None:
    """Print the Matmul table (Part 1) in the terminal, regimes coloured.

    \b
    Example:
      sheetgen show --gpu "H100 SXM" --dtype fp8
      sheetgen show --shapes my_shapes.xlsx --json | jq '.rows[].predicted_time'
    """
    from sheetgen.api import analyze_pieces, shape_source

    with user_errors():
        # Checked in full before any output (a bad last row is one error line and no
        # table); a CSV is then read again a piece at a time, never held whole.
        everything = shape_source(shapes, shapes_sheet)

        def pieces() -> Iterator[Any]:  # the table a piece at a time: memory stays one's
            return analyze_pieces(everything, gpu=gpu, dtype=dtype, gpu_file=gpu_file,
                                  **_refined(options))

        if as_json:
            for piece in show_json_stream(pieces):
                click.echo(piece, nl=False)
            click.echo()
            return
        for line in show_table_stream(pieces):
            click.echo(line)


#: Rows turned into text at a time by the streaming printers: memory stays one chunk's.
STREAM_ROWS = 2_000


def _chunks(frame: Any) -> Iterator[list[dict[str, Any]]]:
    """The frame's rows as records, STREAM_ROWS at a time, sliced from each column's array
    (slicing the DataFrame itself would leave a reference behind per slice). A column is
    converted to numpy one slice at a time: a text column that pandas keeps in Arrow (when
    pyarrow is installed) would otherwise become a whole column of Python strings at once."""
    columns = {str(c): frame[c].array for c in frame.columns}
    for start in range(0, len(frame), STREAM_ROWS):
        stop = start + STREAM_ROWS
        lists = [v[start:stop].to_numpy().tolist() for v in columns.values()]
        yield [dict(zip(columns, row, strict=True)) for row in zip(*lists, strict=True)]


def _whole_or_text(value: Any) -> str:
    """A count as a whole number, or the text a cell shows instead ("n/a")."""
    from sheetgen.core.excel import is_number  # numpy: not on a light command's path

    return f"{int(value)}" if is_number(value) else str(value)


#: (header, column, formatter) of each `show` column; widths follow the widest cell
_SHOW_COLUMNS: list[tuple[str, str, Callable[[Any], str]]] = [
    ("m", "m", lambda v: f"{int(v)}"),
    ("k", "k", lambda v: f"{int(v)}"),
    ("n", "n", lambda v: f"{int(v)}"),
    ("FLOP/B", "intensity", lambda v: f"{v:.4g}"),
    ("regime", "regime", str),
    ("compute", "compute_time", seconds),
    ("memory", "memory_time", seconds),
    ("predicted", "predicted_time", seconds),
    ("waves", "waves", lambda v: _whole_or_text(v)),  # n/a: no SMs
    ("refined", "refined_time", seconds),
    ("TFLOP/s", "attained_flops", lambda v: f"{v / TERA:.4g}"),
    ("of peak", "peak_fraction", lambda v: f"{v:.1%}"),
]
_REGIME_COLORS = {regime: rgb(strong) for regime, (strong, _) in REGIME_COLORS.items()}


def _storage_note(g: dict[str, Any]) -> str:
    """' (C bf16 stored)': the operands not stored in the compute dtype, if any."""
    odd = [f"{role} {g[key]}" for role, key in (("A", "act_storage"), ("B", "weight_storage"),
                                                 ("C", "out_storage")) if g[key] != g["dtype"]]
    return f" ({', '.join(odd)} stored)" if odd else ""


def show_table(frame: Any) -> list[str]:
    """The lines `sheetgen show` prints: a GPU header, then one aligned row per shape."""
    return list(show_table_stream(frame))


def _headers(frame: Any) -> list[str]:
    unit = rate_unit(str(frame.attrs["gpu"]["dtype"]))  # FLOP/s, or OP/s for int8
    per_byte = unit.removesuffix("/s") + "/B"
    return [{"TFLOP/s": f"T{unit}", "FLOP/B": per_byte}.get(h, h) for h, _, _ in _SHOW_COLUMNS]


def _gpu_line(frame: Any) -> str:
    g = frame.attrs["gpu"]
    unit = rate_unit(str(g["dtype"]))
    from sheetgen.core.excel import is_number  # numpy: not on a light command's path

    per_byte = unit.removesuffix("/s") + "/B"
    eff = ""
    if (g["compute_eff"], g["memory_eff"]) != (1.0, 1.0):
        eff = (f"; attainable {si(g['attainable_flops'], unit)}, "
               f"{si(g['attainable_bw'], 'B/s')}, ridge {g['attainable_ridge']:.4g} {per_byte}")
    return (click.style(f"{g['gpu']}, {g['dtype']}", bold=True) + _storage_note(g)
            + f": peak {si(g['peak_flops'], unit)}, HBM {si(g['hbm_bw'], 'B/s')}, "
              f"ridge {g['ridge']:.4g} {per_byte}{eff}; refined: floor "
              f"{seconds(g['launch_overhead'])}, {g['tile_m']:.0f}x{g['tile_n']:.0f} tiles"
              + (f" on {g['sm_count']:.0f} SMs, waves {g['wave_quantization']}"
                 if is_number(g["sm_count"]) else f", {NO_SMS_NOTE}") + _fitted_terms(g))


def _fitted_terms(g: dict[str, Any]) -> str:
    """The refined time's overlap exponent, compute ramp and kernel terms, where the preset
    has them (a preset from `calibrate --preset-out`): they change every refined time below."""
    out = ""
    if g["overlap_exponent"] > 0:
        out += f", overlap p {g['overlap_exponent']:.3g}"
    if g["compute_ramp_flops"] > 0:
        end = g["compute_ramp_end_flops"]
        out += (f", compute ramp F_half {si(g['compute_ramp_flops'], 'FLOP')} h "
                f"{g['compute_ramp_exponent']:.3g}"
                + (f" to {si(end, 'FLOP')}" if end > 0 else ""))
    if g["write_cost"] > 1:
        out += f", write cost {g['write_cost']:.3g} reads a byte"
    if seconds(g["k_latency"]) != "0 s":  # a fit at its lower bound ends a few e-25 s above 0
        out += f", K loop {seconds(g['k_latency'])} per k"
    if str(g["k_loop_tile_growth"]).lower() == "on":
        out += f" growing with the tile ({seconds(g['k_loop_tile_latency'])} a tile)"
    if g["split_k_min_k"] > 0:
        out += (f", split-K from k = {int(g['split_k_min_k']):,} "
                f"(+{seconds(g['split_k_floor'])})")
    return out


#: A frame (`analyze`'s table), or a function giving the table as frames, a piece at a time
#: (`analyze_pieces`): called again for a second pass.
Frames = Any | Callable[[], Iterable[Any]]


def _frames(source: Frames) -> Iterable[Any]:
    return source() if callable(source) else [source]


def show_table_stream(source: Frames) -> Iterator[str]:
    """show's lines, made STREAM_ROWS rows at a time: a first pass keeps only each column's
    widest text (and the table's first piece, in case it is the only one), so memory
    stays one chunk's (one piece's) whatever the rows."""
    kept: list[Any] = []
    head: list[str] = []
    widths: list[int] = []
    for i, frame in enumerate(_frames(source)):
        if i == 0:
            head = [_gpu_line(frame), *_headers(frame)]
            widths = [len(h) for h in head[1:]]
        kept = [frame] if i == 0 else []
        for chunk in _chunks(frame):
            for i, (_, col, fmt) in enumerate(_SHOW_COLUMNS):
                widths[i] = max(widths[i], max(len(fmt(row[col])) for row in chunk))
    yield head[0]
    yield "  ".join(f"{h:>{w}}" for h, w in zip(head[1:], widths, strict=True))
    for frame in kept or _frames(source):
        for chunk in _chunks(frame):
            for row in chunk:
                cells = []
                for (_, col, fmt), width in zip(_SHOW_COLUMNS, widths, strict=True):
                    text = f"{fmt(row[col]):>{width}}"
                    if col == "regime":
                        text = click.style(text, fg=_REGIME_COLORS.get(row[col]))
                    cells.append(text)
                yield "  ".join(cells)


def show_json_stream(source: Frames) -> Iterator[str]:
    """`json.dumps(show_json(frame), indent=2)` in pieces, STREAM_ROWS rows at a time (of
    each piece of the table, if given in pieces)."""
    sep = ""
    for frame in _frames(source):
        if sep == "":
            gpu = json.dumps(show_json(frame.iloc[:0])["gpu"], indent=2).replace("\n", "\n  ")
            yield f'{{\n  "gpu": {gpu},\n  "rows": ['
            sep = "\n"
        for chunk in _chunks(frame):
            rows = _json_rows(chunk)
            yield ("," if sep == "," else "") + ",".join(
                "\n    " + json.dumps(r, indent=2).replace("\n", "\n    ") for r in rows)
            sep = ","
    yield "\n  ]\n}" if sep == "," else "]\n}"


def show_json(frame: Any) -> dict[str, Any]:
    """`sheetgen show --json`: the GPU figures and one object per row, SI numbers."""

    def plain(value: Any) -> Any:
        return value.item() if hasattr(value, "item") else value

    rows = _json_rows(frame.to_dict("records"))
    return {"gpu": {k: plain(v) for k, v in frame.attrs["gpu"].items()}, "rows": rows}


def _json_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """show --json's row objects: plain Python numbers, m, k and n as integers."""
    rows = [{k: v.item() if hasattr(v, "item") else v for k, v in row.items()}
            for row in records]
    for row in rows:
        for dim in "mkn":
            row[dim] = int(row[dim])
    return rows


@cli.command(short_help="Draw the roofline to PNG, SVG or PDF (matplotlib).")
@transformer_view("plot")
@click.argument("out", type=click.Path(path_type=Path))
@shapes_options
@gpu_option
@dtype_option
@gpu_file_option
@efficiency_options
@refined_options
@storage_options
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def plot(out: Path, shapes: Path | None, shapes_sheet: str | None, gpu: str | None,
         dtype: str, gpu_file: Path | None, force: bool, **options: Any) -> None:
    """Draw the roofline to OUT.png, OUT.svg or OUT.pdf (needs matplotlib).

    \b
    Example:
      sheetgen plot roofline.png --gpu "H100 SXM" --shapes my_shapes.csv
    """
    with user_errors():
        from sheetgen.writers.plot import check_plot_path, plot_roofline

        check_plot_path(out, force)
        plot_roofline(shapes_frame(shapes, shapes_sheet), gpu=gpu, dtype=dtype,
                      gpu_file=gpu_file, path=out, force=force, **_refined(options))
    click.echo(f"wrote {out}")


def _refined(options: dict[str, Any]) -> dict[str, Any]:
    """The refined-time options as the API takes them (an unset --tile arrives empty)."""
    return {**options, "tile": options.get("tile") or None}


def shapes_frame(shapes: Path | None, sheet: str | None) -> Any:
    """--shapes/--shapes-sheet as what the API takes (a path is read with its sheet)."""
    from sheetgen.api import to_shapes

    return None if shapes is None else to_shapes(shapes, sheet)


@cli.command(short_help="List the GPU presets and their figures.")
@gpu_file_option
@click.option("--sources", is_flag=True, help="Also list every figure's source.")
@click.argument("names", nargs=-1, metavar="[GPU]...")
def gpus(gpu_file: Path | None, sources: bool, names: tuple[str, ...]) -> None:
    """List the GPU presets: one line each, T(FL)OP/s per dtype (dense), TB/s, GB.

    Name GPUs to see only those; --sources adds where each figure comes from.

    \b
    Example:
      sheetgen gpus
      sheetgen gpus "H100 SXM" --sources
    """
    with user_errors():
        presets = load_presets(gpu_file)
        chosen = [presets.get(n) for n in names] if names else list(presets.gpus)
    for line in gpus_table(chosen, presets):
        click.echo(line)
    if not sources:
        click.echo("Sources of every figure: sheetgen gpus --sources")
        return
    for g in chosen:
        click.secho(f"\n{g.name}", bold=True)
        waves = NO_SMS_NOTE if g.sm_count is None else \
            f"wave quantization {'on' if g.wave_quantization else 'off'}"
        sms = "" if g.sm_count is None else f"{g.sm_count} SMs, "
        click.echo(f"  refined time: {sms}{g.tile_m}x{g.tile_n} tiles, "
                   f"launch {seconds(g.launch_overhead)}, {waves}")
        for key, src in g.sources.items():
            click.echo(f"  {key}: {src}")


def gpus_table(chosen: list[Any], presets: Any) -> list[str]:
    """`sheetgen gpus`: one aligned row per preset, figures in the units people quote;
    * marks the default, + a preset from --gpu-file (++ when it replaces a built-in one)."""
    default = presets.default

    def mark(g: Any) -> str:
        out = " *" if g.name == default else ""
        if g.name in presets.origins:
            out += " ++" if presets.replaces_builtin(g.name) else " +"
        return out

    def peak(g: Any, dtype: str) -> str:
        return f"{g.peak_flops[dtype] / TERA:.4g}" if dtype in g.peak_flops else "-"

    headers = ["GPU", *DTYPES, "HBM TB/s", "mem GiB", "link GB/s", "latency", "host GB/s",
               "measured c/m/l", "SMs"]
    rows = [[g.name + mark(g),
             *(peak(g, d) for d in DTYPES),
             f"{g.hbm_bandwidth / TERA:.4g}", f"{g.memory_bytes / GIBI:.4g}",
             f"{g.link_bandwidth / GIGA:.4g}", seconds(g.link_latency),
             f"{g.host_bandwidth / GIGA:.4g}",
             f"{g.measured_compute_efficiency:g}/{g.measured_memory_efficiency:g}/"
             f"{g.measured_link_efficiency:g}", str(g.sm_count or "-")] for g in chosen]
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    units = ", ".join(f"{d} T{rate_unit(d)}" for d in DTYPES if rate_unit(d) != "FLOP/s")
    origins = [f"{g.name}{mark(g)}: from {presets.origins[g.name]}"
               + (", replaces the built-in preset" if presets.replaces_builtin(g.name) else "")
               for g in chosen if g.name in presets.origins]
    return [line(headers), *(line(r) for r in rows), *origins,
            f"Dense peaks in TFLOP/s ({units}); memory as the vendor's GB mean it (GiB); links "
            "per direction; measured compute/memory/"
            f"link efficiency{'; * default' if any(g.name == default for g in chosen) else ''}"
            f"{'; + from --gpu-file (++ replaces a built-in)' if presets.origins else ''}."]
