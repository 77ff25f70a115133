"""The Parallelism sheet's batch-size sweep chart: latency of one batch against m.

Hand figures from tests/test_parallelism.py's independent model (A100 40GB SXM, bf16, 72
layers of 8192<->32768, G = 2, PP at each m's best M by brute force; NVLink 300 GB/s and
5 µs, PCIe 31.5 GB/s and 10 µs, the preset's 5 µs launch floor on every matmul call, TP's
fastest all-reduce): at the input m = 4096 PP takes 271.262 ms at M = 19 and TP 262.327 ms
with one-shot all-reduces (issue #19's 267.662 and 262.147 ms without the floor, with ring
all-reduces). Over NVLink TP's latency is lower up to m = 4096 and PP's at m = 16384 (1043
vs 1048 ms at M = 64: a tie); over the host link the lines cross near m = 790 (m = 512: TP
42.0 vs PP 48.7 ms at M = 2; m = 1024: 83.3 vs 78.4 ms at M = 5).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pytest
from helpers import built_workbook
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from openpyxl.utils import column_index_from_string, get_column_letter
from test_chart import A, C, axes, chart_xml, filled_sg, hidden_columns, series
from test_parallelism import NVLINK, NVLINK_LAT, PCIE, PCIE_LAT, hand_sweep_row

from sheetgen.assemble import BuildConfig, input_values, plan_build, sheet_specs
from sheetgen.evaluate.values import ExcelError
from sheetgen.layout import palette
from sheetgen.layout.planner import WorkbookPlan, plan_workbook
from sheetgen.sheets.parallel import chart as parallel_chart
from sheetgen.sheets.parallel import sheet as parallel
from sheetgen.writers.xlsx import write_xlsx

SHEET = "Parallelism"
MS = [1, 8, 64, 512, 1024, 2048, 4096, 16384]  # the default sweep rows (× 1 and × 4 m = 4096)
NAMES = [parallel_chart.SINGLE, parallel_chart.PIPELINE, parallel_chart.TENSOR]
SWEEP = parallel.SWEEP
CHART_COL = parallel_chart.chart_col((SWEEP, parallel.TABLE))  # a blank column right of both
DATA_COL = CHART_COL + parallel_chart.CHART_COLS + 1


@functools.cache
def hand_ms(bw: float, lat: float) -> dict[str, list[float]]:
    """Each series' latency (ms) at every sweep m, from the hand model (its brute force
    over M takes 0.6 s: once per link; read it, never change it)."""
    rows = [hand_sweep_row(m, bw, lat) for m in MS]
    return {parallel_chart.SINGLE: [1e3 * s for _, _, s in rows],
            parallel_chart.PIPELINE: [1e3 * p["latency"] for p, _, _ in rows],
            parallel_chart.TENSOR: [1e3 * t["latency"] for _, t, _ in rows]}


def ref(ser: ET.Element, part: str) -> tuple[int, int, int]:
    (f,) = [e.text for e in ser.find(f"{C}{part}").iter(f"{C}f")]
    m = re.fullmatch(r"'?[^!]+'?!\$([A-Z]+)\$(\d+):\$([A-Z]+)\$(\d+)", f)
    assert m and m[1] == m[3], f
    return column_index_from_string(m[1]) - 1, int(m[2]) - 1, int(m[4]) - 1


def cache(ser: ET.Element, part: str) -> dict[int, float]:
    return {int(pt.get("idx")): float(pt.find(f"{C}v").text)
            for pt in ser.find(f"{C}{part}").iter(f"{C}pt")}


@functools.cache
def host_plan() -> WorkbookPlan:
    """The plan of the default build over the host link (PCIe), made once."""
    return plan_build(BuildConfig(link_over="host"))


@pytest.fixture(scope="module", params=["gpu", "host"])
def built(request, tmp_path_factory) -> tuple[str, Path]:
    """The default workbook built with link_over=param (helpers.built_workbook: one build
    per process, which test_render_docs and the LibreOffice jobs below share; "gpu" is the
    default, so that one is the default workbook other test files build too)."""
    assert BuildConfig().link_over == "gpu"
    options = {} if request.param == "gpu" else {"link_over": request.param}
    path = tmp_path_factory.mktemp("sweep") / f"{request.param}.xlsx"
    built_workbook(path, **options)
    return request.param, path


def test_series_read_the_hidden_na_columns_beside_the_sweep(built):
    link, path = built
    root = chart_xml(path, SHEET)
    ser = series(root)
    assert list(ser) == NAMES
    rows = (SWEEP.first_row, SWEEP.first_row + len(MS) - 1)  # the sweep's 8 rows, 93..100
    for i, (name, s) in enumerate(ser.items()):
        assert ref(s, "xVal") == (DATA_COL, *rows), name  # m, #N/A where a row is bad
        assert ref(s, "yVal") == (DATA_COL + 1 + i, *rows), name
        assert s.find(f"{C}marker/{C}symbol").get("val") == ("circle", "square", "triangle")[i]
        color = (palette.SINGLE_GPU, palette.PIPELINE, palette.TENSOR)[i]
        assert s.find(f"{C}spPr/{A}ln/{A}solidFill/{A}srgbClr").get("val") == color[1:]
    assert root.find(f"{C}chart/{C}plotVisOnly").get("val") == "0"
    # the chart's data, then (hidden too, right of Google's helpers) the layer counts
    hidden = hidden_columns(path, SHEET)
    assert set(range(DATA_COL, DATA_COL + 4)) <= hidden
    assert min(hidden - set(range(DATA_COL, DATA_COL + 4))) > DATA_COL + 8
    best = parallel.BEST  # the best-M helper table, hidden too
    assert set(range(best.col, best.col + len(best.all_columns()))) <= hidden
    # log-log, whole decades: m 1..16384 -> 1..10^5; latency 12.8..2030 ms -> 10..10^4
    bounds = [(float(ax.find(f"{C}scaling/{C}min").get("val")),
               float(ax.find(f"{C}scaling/{C}max").get("val"))) for ax in axes(root)]
    assert bounds == [(1.0, 1e5), (10.0, 1e4)]
    assert [ax.find(f"{C}scaling/{C}logBase").get("val") for ax in axes(root)] == ["10"] * 2
    # the cached points are the hand figures (ms), at the sweep's m
    want = hand_ms(*((NVLINK, NVLINK_LAT) if link == "gpu" else (PCIE, PCIE_LAT)))
    for name, s in ser.items():
        assert cache(s, "xVal") == dict(enumerate(map(float, MS)))
        got = cache(s, "yVal")
        assert got == {i: pytest.approx(v, rel=1e-9) for i, v in enumerate(want[name])}, name
    pp, tp = (cache(ser[n], "yVal") for n in NAMES[1:])
    assert pp[6] == pytest.approx(271.262 if link == "gpu" else 271.669, abs=5e-4)
    assert tp[6] == pytest.approx(262.327 if link == "gpu" else 331.149, abs=5e-4)
    if link == "gpu":  # over NVLink TP is sooner up to m = 4096, PP at its best M beyond
        assert [tp[i] < pp[i] for i in range(len(MS))] == [True] * 7 + [False]
    else:  # over PCIe the lines cross between m = 512 and 1024 (at m ≈ 790)
        assert [tp[i] < pp[i] for i in range(len(MS))] == [True] * 4 + [False] * 4


def test_chart_sits_right_of_the_sweep_clear_of_every_table(built):
    _, path = built
    with zipfile.ZipFile(path) as z:
        drawings = [z.read(n).decode() for n in z.namelist()
                    if re.fullmatch(r"xl/drawings/drawing\d+\.xml", n)]
    anchors = [re.search(r"<xdr:from><xdr:col>(\d+)</xdr:col>.*?<xdr:row>(\d+)</xdr:row>.*?"
                         r"<xdr:to><xdr:col>(\d+)</xdr:col>", d) for d in drawings]
    (a,) = [a for a in anchors if a and int(a[1]) == CHART_COL]
    assert int(a[2]) == SWEEP.header_row - 2  # level with the sweep's title
    widest = max(t.col + len(t.all_columns()) for t in (SWEEP, parallel.TABLE))
    assert int(a[1]) > widest and int(a[3]) < DATA_COL  # no cell under it, data beside it


def test_a_blank_sweep_row_is_no_point():
    """A sweep row with neither m nor × m gives #N/A in every chart column (never "",
    which Excel's XY chart would plot at x = 1, 2, 3 and y = 0): the chart has 7 points."""
    values = input_values(BuildConfig().resolved())
    values["sweep_m_typed"][1] = None
    plan = plan_workbook(sheet_specs(), values)
    cols = plan.model.columns
    for q in (parallel_chart.PLOT_M, *(q for _, q, _, _ in parallel_chart.LINES)):
        assert isinstance(cols[q.name][1], ExcelError) and str(cols[q.name][1]) == "#N/A"
        assert all(isinstance(v, float) for i, v in enumerate(cols[q.name]) if i != 1)


def test_fill_draws_the_same_lines(tmp_path):
    filled = filled_sg(tmp_path)  # test_fill's user workbook, filled with prefix "sg "
    root = chart_xml(filled, f"sg {SHEET}")
    ser = series(root)
    assert list(ser) == NAMES
    assert root.find(f"{C}chart/{C}plotVisOnly").get("val") == "0"
    for i, s in enumerate(ser.values()):
        assert s.find(f"{C}smooth").get("val") == "0"
        assert s.find(f"{C}marker/{C}symbol").get("val") == ("circle", "square", "triangle")[i]
        assert s.find(f"{C}spPr/{A}ln/{A}noFill") is None  # a line through the markers
        assert ref(s, "yVal")[0] == DATA_COL + 1 + i
    assert [ax.find(f"{C}scaling/{C}logBase").get("val") for ax in axes(root)] == ["10"] * 2
    best = parallel.BEST  # the best-M helper table is hidden too
    hidden = hidden_columns(filled, f"sg {SHEET}")
    assert set(range(DATA_COL, DATA_COL + 4)) <= hidden
    assert set(range(best.col, best.col + len(best.all_columns()))) <= hidden


@libreoffice_job("parallel-chart-alone", to="pdf")
def _sweep_chart_alone(tmp: Path) -> dict[str, Path]:
    """LibreOffice's print of the sweep chart alone (over the host link)."""
    from test_render_docs import load_render

    path, _ = built_workbook(tmp / "w.xlsx", link_over="host")
    top = SWEEP.header_row - 2
    area = (f"${get_column_letter(CHART_COL + 1)}${top + 1}:"
            f"${get_column_letter(CHART_COL + parallel_chart.CHART_COLS)}$"
            f"{top + parallel_chart.CHART_ROWS + 2}")
    load_render().narrow_print_areas(path, {SHEET: area}, one_page={SHEET})
    return {"chart": path}


def _palette_pixels(pdf: Path, tmp: Path) -> dict[str, int]:
    """Pixels of each series' colour on the chart's page."""
    from PIL import Image
    from test_render_docs import load_render

    page = load_render().sheet_pages(pdf)[SHEET] + 1  # docs/render.py's reader
    png = tmp / "chart"
    subprocess.run(["pdftoppm", "-png", "-singlefile", "-r", "100", "-f", str(page), "-l",
                    str(page), str(pdf), str(png)], check=True)
    with Image.open(png.with_suffix(".png")) as im:
        rgb = np.asarray(im.convert("RGB"), dtype=int)
    return {name: int((np.abs(rgb - np.asarray(palette.rgb(color))).max(axis=2) <= 24).sum())
            for name, color in zip(NAMES, (palette.SINGLE_GPU, palette.PIPELINE,
                                           palette.TENSOR), strict=True)}


@libreoffice_job("parallel-chart-data", to="values")
def _host_link(tmp: Path) -> dict[str, Path]:
    return {"host": write_xlsx(host_plan(), tmp / "host.xlsx")}


@needs_libreoffice
def test_libreoffice_recalculates_the_chart_data_to_the_hand_figures(libreoffice):
    plan = host_plan()
    recalculated = read_values(libreoffice.outputs("parallel-chart-data")["host"])
    assert mismatches(plan, recalculated) == []  # every cell, the chart data included
    values = recalculated[SHEET]
    want = hand_ms(PCIE, PCIE_LAT)
    for r, m in enumerate(MS):
        row = SWEEP.first_row + r
        assert values[(row, DATA_COL)] == m
        for i, name in enumerate(NAMES):
            assert values[(row, DATA_COL + 1 + i)] == pytest.approx(want[name][r], rel=1e-9)


@needs_libreoffice
@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="poppler-utils not installed")
def test_libreoffice_draws_the_three_lines_from_hidden_columns(libreoffice, tmp_path):
    drawn = _palette_pixels(libreoffice.outputs("parallel-chart-alone")["chart"], tmp_path)
    assert all(n > 150 for n in drawn.values()), drawn  # lines, not just legend samples
