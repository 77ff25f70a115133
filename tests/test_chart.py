"""The Matmul roofline chart, read from the chart XML of built and filled workbooks.

Hand figures, A100 40GB SXM in bf16 (312 TFLOP/s dense, 1,555 GB/s, efficiencies 1.0): the
ridge is 312e12 / 1.555e12 = 200.643 FLOP/B at 312 TFLOP/s. The default shapes' intensities
run from 2·4096² / (2·(4096 + 4096² + 4096)) = 0.9995 FLOP/B (1×4096×4096) to
2·8192³ / (2·3·8192²) = 2730.7 FLOP/B (8192³), so the x axis spans the decades 0.1..10^4;
attained rates from 0.9995 × 1.555 = 1.554 TFLOP/s to the 312 TFLOP/s roof: y 1..1000.
"""

from __future__ import annotations

import atexit
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from helpers import built_workbook
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from openpyxl.utils import column_index_from_string, get_column_letter
from test_fill import make_theirs
from test_gaps import make_fp8_on_a100
from xlsx_edit import sheet_xml

import sheetgen
from sheetgen.evaluate import evaluate_workbook
from sheetgen.sheets import matmul
from sheetgen.verify.check import check_workbook

C = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
RIDGE = 312e12 / 1.555e12


def chart_part(parts: dict[str, bytes], sheet: str = "Matmul") -> str:
    """The chart part whose series read `sheet` (the workbook has one chart per sheet)."""
    (name,) = [n for n, data in parts.items() if re.fullmatch(r"xl/charts/chart\d+\.xml", n)
               and re.search(rf"<(?:c:)?f>'?{re.escape(sheet)}'?!".encode(), data)]
    return name


def chart_xml(path: Path, sheet: str = "Matmul") -> ET.Element:
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    return ET.fromstring(parts[chart_part(parts, sheet)])


def series(root: ET.Element) -> dict[str, ET.Element]:
    out = {}
    for ser in root.iter(f"{C}ser"):
        name = ser.find(f"{C}tx")
        text = "".join(name.itertext()) if name is not None else ""
        out[text] = ser
    return out


def ref(ser: ET.Element, part: str) -> tuple[int, int, int]:
    """(0-based column, first row, last row) of the series' xVal or yVal reference."""
    (f,) = [e.text for e in ser.find(f"{C}{part}").iter(f"{C}f")]
    m = re.fullmatch(r"'?Matmul'?!\$([A-Z]+)\$(\d+)(?::\$([A-Z]+)\$(\d+))?", f)
    assert m, f
    return column_index_from_string(m[1]) - 1, int(m[2]) - 1, int(m[4] or m[2]) - 1


def axes(root: ET.Element) -> list[ET.Element]:
    return list(root.iter(f"{C}valAx"))


def column_of(name: str) -> int:
    table = next(t for t in (matmul.POINTS, matmul.CEILING) if name in
                 [c.name for c in t.all_columns()])
    return table.col + [c.name for c in table.all_columns()].index(name)


def chart_data_columns() -> set[int]:
    """The #N/A points through the ceiling table (AH..AO by default), 0-based."""
    return set(range(matmul.POINTS_COL, matmul.CEILING_COL + len(matmul.CEILING.all_columns())))


def hidden_columns(path: Path, sheet: str) -> set[int]:
    """The sheet's hidden columns (0-based), from its <col min max hidden> elements, which
    openpyxl reads as column_dimensions: read from the part alone, not a whole load (2 s)."""
    xml = sheet_xml(path, sheet)
    head = re.split(r"<(?:\w+:)?sheetData\b", xml, maxsplit=1)[0]  # <cols> comes before
    cols = re.search(r"<(?:\w+:)?cols>(.*?)</(?:\w+:)?cols>", head, re.S)
    out: set[int] = set()
    for attrs in re.findall(r"<(?:\w+:)?col\b([^>]*?)/?>", cols[1] if cols else ""):
        a = dict(re.findall(r'(\w+)="([^"]*)"', attrs))
        if a.get("hidden") in ("1", "true"):
            out |= set(range(int(a["min"]) - 1, int(a["max"])))
    return out


_FILLED: list[Path] = []


def filled_sg(folder: Path) -> Path:
    """test_fill's user workbook (make_theirs) filled with the prefix "sg ", as
    `folder/filled.xlsx`: filled once per test process and copied after that (a fill takes
    a second, and the chart tests here and in test_parallel_chart only read it)."""
    if not _FILLED:
        tmp = Path(tempfile.mkdtemp(prefix="sheetgen-filled-sg-"))
        atexit.register(shutil.rmtree, tmp, True)
        _FILLED.append(sheetgen.fill(make_theirs(tmp / "plan.xlsx"), tmp / "filled.xlsx",
                                     prefix="sg "))
    out = folder / "filled.xlsx"
    shutil.copyfile(_FILLED[0], out)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    path, _ = built_workbook(tmp_path_factory.mktemp("chart") / "roofline.xlsx")
    return path


def test_series_read_the_na_helper_columns_and_the_ridge(built):
    root = chart_xml(built)
    ser = series(root)
    assert list(ser) == ["roofline ceiling", "compute-bound", "memory-bound", "ridge point"]
    first, last = matmul.TABLE.first_row, matmul.TABLE.first_row + 211  # 12 shapes + 200
    x = column_of("plot_intensity")
    assert ref(ser["compute-bound"], "xVal") == (x, first, last)
    assert ref(ser["compute-bound"], "yVal") == (column_of("plot_compute"), first, last)
    assert ref(ser["memory-bound"], "yVal") == (column_of("plot_memory"), first, last)
    assert ref(ser["roofline ceiling"], "yVal")[0] == column_of("roof_tflops")
    # the helpers sit right of the chart, hidden, and the chart plots hidden cells
    assert x > matmul.CHART_COL + matmul.CHART_COLS - 1
    assert hidden_columns(built, "Matmul") == chart_data_columns()
    assert root.find(f"{C}chart/{C}plotVisOnly").get("val") == "0"
    # every series is numeric (a strRef x is what makes Excel number the points 1, 2, 3)
    for s in ser.values():
        for part in ("xVal", "yVal"):
            assert s.find(f"{C}{part}/{C}numRef") is not None, part
    # the ridge: one point at (200.6 FLOP/B, 312 TFLOP/s), a diamond
    ridge = ser["ridge point"]
    pts = [[float(v.text) for v in ridge.find(f"{C}{p}").iter(f"{C}v")] for p in ("xVal", "yVal")]
    assert pts[0] == [pytest.approx(RIDGE, rel=1e-12)] and pts[1] == [pytest.approx(312.0)]
    assert ridge.find(f"{C}marker/{C}symbol").get("val") == "diamond"
    # the points are markers only; Excel reads their labels from the shape-label column
    for name in ("compute-bound", "memory-bound"):
        assert ser[name].find(f"{C}spPr/{A}ln/{A}noFill") is not None
        assert ser[name].find(f".//{C}dLbls") is not None


def test_axes_are_titled_and_tight_by_decades(built):
    root = chart_xml(built)
    titles = ["".join(ax.find(f"{C}title").itertext()) for ax in axes(root)]
    assert titles == ["arithmetic intensity (FLOP/B)", "attained TFLOP/s (TOP/s for int8)"]
    bounds = [(float(ax.find(f"{C}scaling/{C}min").get("val")),
               float(ax.find(f"{C}scaling/{C}max").get("val"))) for ax in axes(root)]
    assert bounds == [(0.1, 1e4), (1.0, 1e3)]  # the hand figures in the module docstring
    for ax in axes(root):
        assert ax.find(f"{C}scaling/{C}logBase").get("val") == "10"
        assert ax.find(f"{C}numFmt").get("formatCode") == "General"


def test_model_gives_na_for_spare_rows_and_tflops_for_shapes():
    p = sheetgen.plan()
    cols = p.model.columns
    ok = p.model.ok["matmul"]
    assert ok.sum() == 12
    for name in ("plot_intensity", "plot_compute", "plot_memory"):
        assert all(str(v) == "#N/A" for v in cols[name][~ok])
    # 1x4096x4096 (row 0 of the default shapes): memory-bound at 0.9995 × 1.555 TFLOP/s
    i0 = 2 * 4096**2 / (2 * (4096 + 4096**2 + 4096))
    assert cols["plot_intensity"][0] == pytest.approx(i0, rel=1e-12)
    assert cols["plot_memory"][0] == pytest.approx(i0 * 1.555, rel=1e-12)
    assert str(cols["plot_compute"][0]) == "#N/A"
    formula = p.sheet("Matmul").table("chart_points").column("plot_memory").formula_at(5)
    assert "NA()" in formula and '""' not in formula


@libreoffice_job("chart-helpers", to="values")
def _built_and_filled(tmp: Path) -> dict[str, Path]:
    built, _ = built_workbook(tmp / "roofline.xlsx")
    return {"built": built, "filled": filled_sg(tmp)}


@needs_libreoffice
def test_libreoffice_recalculates_the_helpers_with_no_blank_in_chart_data(libreoffice):
    out = libreoffice.outputs("chart-helpers")
    built, filled = libreoffice.sources("chart-helpers").values()
    values = read_values(out["built"])
    assert mismatches(sheetgen.plan(), values) == []
    ser = series(chart_xml(built))
    seen = {"number": 0, "#N/A": 0}
    for s in ser.values():
        for part in ("xVal", "yVal"):
            col, first, last = ref(s, part)
            for row in range(first, last + 1):
                v = values["Matmul"].get((row, col))
                kind = "#N/A" if v == "#N/A" else "number" if isinstance(v, float | int) else v
                assert kind in seen, (part, row, col, v)
                seen[kind] += 1
    assert seen["number"] > 0 and seen["#N/A"] > 0
    # check agrees with both workbooks; the filled one recalculated by LibreOffice too
    assert check_workbook(built).ok
    assert check_workbook(filled).ok
    fvalues = read_values(out["filled"])["sg Matmul"]
    assert any(v == "#N/A" for v in fvalues.values())


def test_fill_chart_is_markers_without_smoothing(tmp_path):
    filled = filled_sg(tmp_path)
    root = chart_xml(filled, "sg Matmul")
    assert root.find(f".//{C}scatterChart") is not None
    assert root.find(f".//{C}scatterStyle").get("val") == "lineMarker"
    assert root.find(f"{C}chart/{C}plotVisOnly").get("val") == "0"  # its data are hidden
    assert hidden_columns(filled, "sg Matmul") == chart_data_columns()
    ser = {"".join(s.find(f"{C}tx").itertext()): s for s in root.iter(f"{C}ser")}
    assert list(ser) == ["roofline ceiling", "compute-bound", "memory-bound", "ridge point"]
    for name, s in ser.items():
        assert s.find(f"{C}smooth").get("val") == "0", name
        symbol = s.find(f"{C}marker/{C}symbol").get("val")
        if name == "roofline ceiling":
            assert symbol == "none"
        else:
            assert symbol in ("square", "triangle", "diamond")
            assert s.find(f"{C}spPr/{A}ln/{A}noFill") is not None, name
    for ax in axes(root):
        fmt = ax.find(f"{C}numFmt")
        assert fmt.get("formatCode") == "General" and fmt.get("sourceLinked") == "0"
        assert ax.find(f"{C}scaling/{C}min") is not None


def test_fp8_on_a100_leaves_no_text_in_chart_data(tmp_path):
    """A gap (fp8 picked for the A100, which has none) is #N/A in every chart y column,
    never the marker text, which Excel would plot as 0; check agrees."""
    path = make_fp8_on_a100(tmp_path)  # the default with 2 spare rows, fp8 picked
    report = check_workbook(path)
    assert report.ok, [m.line() for m in report.mismatches[:5]]
    ev = evaluate_workbook(path)
    first, last = matmul.TABLE.first_row + 1, matmul.TABLE.first_row + 14  # 12 shapes + 2
    for name in ("plot_compute", "plot_memory"):
        got = ev.column("Matmul", get_column_letter(column_of(name) + 1), first, last)
        assert {str(v) for v in got} == {"#N/A"}, name
    # the ceiling needs the missing peak: its x (which Excel would number 1, 2, 3 as text)
    # and y are #N/A on all 7 decade rows
    top = matmul.CEILING.first_row + 1
    for name in ("roof_x", "roof_y", "roof_tflops"):
        got = ev.column("Matmul", get_column_letter(column_of(name) + 1), top, top + 6)
        assert [str(v) for v in got] == ["#N/A"] * 7, name
    got = ev.column("Matmul", get_column_letter(column_of("plot_intensity") + 1), first, last)
    assert all(isinstance(v, float) for v in got[:12])  # intensity needs no peak: numbers
    assert [str(v) for v in got[12:]] == ["#N/A", "#N/A"]  # the spare rows


@libreoffice_job("chart-pixels", to="pdf")
def _chart_alone(tmp: Path) -> dict[str, Path]:
    """LibreOffice's print of the Matmul chart alone (its columns and rows): as built, and a
    control whose chart says plotVisOnly="1" (what xlsxwriter writes by default)."""
    from test_render_docs import load_render

    path, _ = built_workbook(tmp / "shown.xlsx")
    control = tmp / "control.xlsx"
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    name = chart_part(parts)
    parts[name] = parts[name].replace(b'<c:plotVisOnly val="0"/>', b'<c:plotVisOnly val="1"/>')
    with zipfile.ZipFile(control, "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in parts.items():
            z.writestr(n, data)
    render = load_render()
    area = (f"${get_column_letter(matmul.CHART_COL + 1)}$1:"
            f"${get_column_letter(matmul.CHART_COL + matmul.CHART_COLS)}$"
            f"{matmul.TABLE.first_row + matmul.CHART_ROWS + 2}")
    for workbook in (path, control):
        render.narrow_print_areas(workbook, {"Matmul": area}, one_page={"Matmul"})
    return {"shown": path, "control": control}


def _chart_pixels(pdf: Path, tmp: Path) -> dict[str, int]:
    """The chart's page rasterised by poppler: how many pixels are each series' palette
    colour."""
    import numpy as np
    from PIL import Image
    from test_render_docs import load_render

    from sheetgen.layout import palette

    png = tmp / pdf.stem
    page = load_render().sheet_pages(pdf)["Matmul"] + 1  # docs/render.py's reader
    subprocess.run(["pdftoppm", "-png", "-singlefile", "-r", "100", "-f", str(page), "-l",
                    str(page), str(pdf), str(png)], check=True)
    with Image.open(png.with_suffix(".png")) as im:
        rgb = np.asarray(im.convert("RGB"), dtype=int)
    out = {}
    for name, color in (("ceiling", palette.CEILING), ("compute", palette.COMPUTE),
                        ("memory", palette.MEMORY)):
        want = np.asarray(palette.rgb(color))
        out[name] = int((np.abs(rgb - want).max(axis=2) <= 24).sum())
    return out


@needs_libreoffice
@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="poppler-utils not installed")
def test_libreoffice_draws_the_chart_from_its_hidden_columns(libreoffice, tmp_path):
    """The chart data are hidden; LibreOffice still draws the ceiling line and both regimes'
    markers, because the chart says <c:plotVisOnly val="0"/>. The control flips it to "1"
    (what xlsxwriter writes by default), and LibreOffice then drops the hidden ceiling."""
    pdfs = libreoffice.outputs("chart-pixels")
    shown = _chart_pixels(pdfs["shown"], tmp_path)
    assert shown["ceiling"] > 100 and shown["compute"] > 20 and shown["memory"] > 20, shown
    hidden = _chart_pixels(pdfs["control"], tmp_path)
    assert hidden["ceiling"] < shown["ceiling"] / 4, (hidden, shown)  # the legend sample
