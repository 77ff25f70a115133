"""`sheetgen show` (table and --json) and `sheetgen plot` / `plot_roofline`."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest
from helpers import run

import sheetgen
from sheetgen.errors import SheetgenError


def test_show_json_is_the_reference_model(shapes_csv):
    path = shapes_csv("m,k,n\n1,4096,4096\n4096,4096,4096\n")
    result = run("show", "--shapes", str(path), "--gpu", "H100 SXM", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["gpu"]["gpu"] == "H100 SXM" and data["gpu"]["dtype"] == "bf16"
    assert data["gpu"]["peak_flops"] == pytest.approx(989.4e12)
    assert data["gpu"]["ridge"] == pytest.approx(989.4e12 / 3.35e12)
    rows = data["rows"]
    assert [(r["m"], r["k"], r["n"]) for r in rows] == [(1, 4096, 4096), (4096, 4096, 4096)]
    assert [r["regime"] for r in rows] == ["memory-bound", "compute-bound"]
    ref = sheetgen.analyze(path, gpu="H100 SXM")
    for row, (_, want) in zip(rows, ref.iterrows(), strict=True):
        for key in ("flops", "bytes_moved", "intensity", "predicted_time", "attained_flops"):
            assert isinstance(row[key], float) and row[key] == pytest.approx(want[key])
    assert rows[1]["predicted_time"] == pytest.approx(2 * 4096**3 / 989.4e12)


def test_show_table_readable_units_and_colour():
    plain = run("show", "--gpu", "H100 SXM")
    assert plain.exit_code == 0, plain.output
    lines = plain.output.splitlines()
    assert lines[0].startswith("H100 SXM, bf16: peak 989.4 TFLOP/s, HBM 3.35 TB/s, ridge 295.3")
    assert lines[1].split()[:5] == ["m", "k", "n", "FLOP/B", "regime"]
    assert len(lines) == 2 + 12
    assert "\x1b[" not in plain.output  # piped: no escape codes
    assert "µs" in plain.output and "ms" in plain.output
    assert "8.89 ms" in lines[-1]  # 16384³ at 989.4 TFLOP/s
    coloured = run("show", color=True)
    # the palette's regime colours as 24-bit escapes: orange C55A11, blue 2F5597
    assert "\x1b[38;2;197;90;17m" in coloured.output and "\x1b[38;2;47;85;151m" in coloured.output


def test_show_errors_are_one_line(tmp_path: Path):
    result = run("show", "--gpu", "A200")
    assert result.exit_code == 2 and result.output.startswith("Error: unknown GPU")
    assert len(result.output.strip().splitlines()) == 1


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_plot_png_through_the_cli(tmp_path: Path):
    from matplotlib.image import imread

    out = tmp_path / "roof.png"
    result = run("plot", str(out), "--gpu", "H100 SXM")
    assert result.exit_code == 0, result.output
    assert _png_size(out) == (800, 500)
    pixels = imread(out)
    # non-trivial: the red ceiling, both regime colours and text, not a blank canvas
    colours = {tuple(p) for p in (pixels[..., :3] * 255).astype(int).reshape(-1, 3)}
    assert len(colours) > 50
    reds = ((pixels[..., 0] > 0.6) & (pixels[..., 1] < 0.2) & (pixels[..., 2] < 0.2)).sum()
    assert reds > 500
    assert sorted(p.name for p in tmp_path.iterdir()) == ["roof.png"]  # no temporary left
    again = run("plot", str(out))
    assert again.exit_code == 2 and "already exists" in again.output
    assert run("plot", str(out), "--force").exit_code == 0


def test_plot_svg_and_bad_names(tmp_path: Path, shapes_csv):
    svg = tmp_path / "r.svg"
    result = run("plot", str(svg), "--shapes", str(shapes_csv("M,K,N\n8,4096,4096\n")))
    assert result.exit_code == 0, result.output
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "8x4096x4096" in text
    bad = run("plot", str(tmp_path / "r.txt"))
    assert bad.exit_code == 2 and "must end in .png, .svg, .pdf" in bad.output


def test_plot_roofline_api_reuses_an_analysis():
    import matplotlib.figure

    df = sheetgen.analyze([(1, 4096, 4096), (8192, 8192, 8192)], gpu="L4", dtype="fp16")
    fig = sheetgen.plot_roofline(df)
    assert isinstance(fig, matplotlib.figure.Figure)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_title() == "Roofline: L4, fp16"
    texts = [t.get_text() for t in ax.texts]
    assert "1x4096x4096" in texts and any(t.startswith("ridge ") for t in texts)
    # the vertical ridge line sits at the attainable ridge
    ridge = df.attrs["gpu"]["attainable_ridge"]
    assert any(list(line.get_xdata()) == [ridge, ridge] for line in ax.lines)
    fig2 = matplotlib.figure.Figure()
    ax2 = fig2.add_subplot()
    assert sheetgen.plot_roofline([(64, 64, 64)], ax=ax2) is fig2


def test_missing_matplotlib_gives_the_install_hint(monkeypatch, tmp_path: Path):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(SheetgenError, match=r"pip install 'sheetgen\[plot\]'"):
        sheetgen.plot_roofline()
    result = run("plot", str(tmp_path / "r.png"))
    assert result.exit_code == 2
    assert result.output.strip() == ("Error: plotting needs matplotlib: pip install "
                                     "'sheetgen[plot]' (from a clone of the repository: "
                                     "pip install '.[plot]')")


def test_plot_axes_in_tflops_and_legend_names_the_efficiencies():
    """y in TFLOP/s (hand figure: 8192³ on an A100 bf16 is compute-bound at 312 TFLOP/s);
    'efficiency-adjusted' only when an efficiency is below 1."""
    fig = sheetgen.plot_roofline([(8192, 8192, 8192)])
    ax = fig.axes[0]
    assert ax.get_ylabel() == "attained TFLOP/s"
    assert ax.get_xlabel() == "arithmetic intensity (FLOP/B)"
    points = [c for c in ax.collections if len(c.get_offsets())]
    assert float(points[0].get_offsets()[0][1]) == pytest.approx(312.0)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:2] == ["roof (spec peak and bandwidth)", "compute-bound"]
    assert not any("efficiency" in t for t in legend)
    adjusted = sheetgen.plot_roofline([(8192, 8192, 8192)], compute_eff=0.8)
    legend = [t.get_text() for t in adjusted.axes[0].get_legend().get_texts()]
    assert legend[:2] == ["attainable roof (compute ×0.8, memory ×1)", "spec roof (peak)"]
    point = next(c for c in adjusted.axes[0].collections if len(c.get_offsets()))
    assert float(point.get_offsets()[0][1]) == pytest.approx(0.8 * 312.0)
    int8 = sheetgen.plot_roofline([(8192, 8192, 8192)], dtype="int8").axes[0]
    assert int8.get_ylabel() == "attained TOP/s"


def test_plot_labels_do_not_overlap():
    """The built-in dozen (8192³ sits 0.04 decades from 4096×8192×28672): no two point labels'
    drawn boxes intersect."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = sheetgen.plot_roofline()
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    boxes = [t.get_window_extent(renderer) for t in ax.texts if "x" in t.get_text()]
    assert len(boxes) == 12
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)
    # nor does the legend cover a label or the ridge's note at the axis foot
    legend = ax.get_legend().get_window_extent(renderer)
    notes = [t.get_window_extent(renderer) for t in ax.texts]
    assert not any(legend.overlaps(box) for box in notes)
