"""docs/render.py, which makes the README's sheet pictures, still works on today's workbook.

It needs poppler-utils' pdftoppm for the last step (not a test dependency), so this test runs
everything before it: the narrowed print areas and LibreOffice's PDF, whose pages must hold
what the pictures promise (the Matmul table beside its chart; the Parallelism verdict on the
same single page as the sheet's inputs).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from helpers import built_workbook, load_script
from lo_helpers import libreoffice_job, needs_libreoffice, printed_pages
from xlsxwriter.utility import xl_col_to_name

from sheetgen.sheets.parallel import chart as parallel_chart
from sheetgen.sheets.parallel import sheet as parallel

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "docs" / "render.py"


def load_render() -> ModuleType:
    return load_script(SCRIPT)


@libreoffice_job("render-docs", to="pdf")
def _pictures(tmp: Path) -> dict[str, Path]:
    """The workbooks docs/render.py prints, print areas narrowed as it narrows them."""
    render = load_render()
    workbook, _ = built_workbook(tmp / "roofline.xlsx")
    render.narrow_print_areas(workbook, {"Matmul": render.matmul_area(workbook),
                                         "Parallelism": render.parallelism_area(workbook)},
                              one_page={"Parallelism"})
    host, _ = built_workbook(tmp / "host.xlsx", link_over="host")
    render.narrow_print_areas(host, {"Parallelism": render.sweep_areas(host)}, one_page=set())
    return {"roofline": workbook, "host": host}


@needs_libreoffice
def test_narrowed_pages_hold_what_the_pictures_show(libreoffice, tmp_path: Path):
    render = load_render()
    workbook, _ = built_workbook(tmp_path / "roofline.xlsx")
    matmul, parallel = render.matmul_area(workbook), render.parallelism_area(workbook)
    # the chart's anchor (xlsxwriter writes it right of the table, from the second data row)
    # and the rows above the sweep's title, within the sheet's printed columns: the hidden
    # best-M helper table (right of them, from column BP) stays out
    assert re.fullmatch(r"\$A\$1:\$A[A-L]\$(2\d|3\d)", matmul), matmul
    assert re.fullmatch(r"\$A\$1:\$[A-Z]\$\d+", parallel), parallel
    pdf = libreoffice.outputs("render-docs")["roofline"]  # printed with these areas
    pages = render.sheet_pages(pdf)
    texts = printed_pages(pdf)
    assert set(pages) >= {"Matmul", "Parallelism"}
    first = texts[pages["Matmul"]]
    assert "m (rows)" in first and "chart label" in first and "Roofline" in first
    assert "21.59" in first  # 1×4096×4096 memory time (µs): 33,570,816 B / 1.555e12 B/s
    assert "refined time" in first  # the whole table on the chart's page, one page wide
    assert "chart points" not in first.lower()  # the hidden helper columns are left out
    par = [t for t in texts if t.startswith("Parallelism ")]
    assert len(par) == 1, len(par)  # one page: inputs through the verdict
    assert "Parallelism input" in par[0] and "Verdict (live)" in par[0]
    assert "Splits" in par[0] and "PP per micro-batch" in par[0]  # the side tables (I..L)
    assert "Batch-size sweep" not in par[0]
    assert "best micro-batch count" not in par[0]  # the hidden best-M table


def test_pictures_are_fit_to_one_page_wide():
    """The workbook prints wide sheets unshrunk, split at manual column breaks (issue #18);
    a picture is one page, so render.py fits the narrowed sheets to the page width (and to
    one page tall for Parallelism) and drops the breaks."""
    render = load_render()
    page = ('<worksheet xmlns="x"><dimension ref="A1"/><pageMargins left="0.3"/>'
            '<pageSetup paperSize="9" scale="47" orientation="landscape"/>'
            '<colBreaks count="1"><brk id="16"/></colBreaks></worksheet>')
    wide = render.fit_to_pages(page, tall=False)
    assert '<sheetPr><pageSetUpPr fitToPage="1"/></sheetPr>' in wide and "Breaks" not in wide
    assert 'fitToWidth="1" fitToHeight="0" orientation="landscape"' in wide
    assert "scale=" not in wide
    tall = render.fit_to_pages(page.replace('<worksheet xmlns="x">',
                                            '<worksheet xmlns="x"><sheetPr><pageSetUpPr '
                                            'fitToPage="0"/></sheetPr>'), tall=True)
    assert tall.count("pageSetUpPr") == 1 and 'fitToPage="1"' in tall
    assert 'fitToWidth="1" fitToHeight="1" orientation="portrait"' in tall


def test_missing_pdftoppm_is_one_error_line(tmp_path: Path):
    env = dict(os.environ, PATH=str(tmp_path))  # an empty folder: no pdftoppm on PATH
    proc = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "Error: pdftoppm not found: install poppler-utils (apt-get install -y poppler-utils)"]
    assert "Traceback" not in proc.stderr


@needs_libreoffice
def test_sweep_pages_hold_the_chart_and_the_crossover(libreoffice, tmp_path: Path):
    """The third picture: over the host link (PCIe) the sweep table's first columns on one
    page and its chart on the next, with the hand figures of tests/test_parallel_chart.py
    (m = 512: TP 42.0 vs PP 48.7 ms at M = 2; m = 1024: TP 83.3 vs PP 78.4 ms at M = 5)."""
    render = load_render()
    workbook, _ = built_workbook(tmp_path / "host.xlsx", link_over="host")
    areas = render.sweep_areas(workbook)
    table, chart = areas.split(",")
    assert re.fullmatch(rf"\$A\$(\d+):\${render.SWEEP_COLUMNS}\$(\d+)", table), table
    # the chart, as xlsxwriter anchors it: a column right of the sweep, CHART_COLS wide
    first = parallel.SWEEP.col + len(parallel.SWEEP.all_columns()) + 1
    last = first + parallel_chart.CHART_COLS - 1
    assert re.fullmatch(rf"\${xl_col_to_name(first)}\$\d+:\${xl_col_to_name(last)}\$\d+",
                        chart), chart
    pdf = libreoffice.outputs("render-docs")["host"]  # printed with these areas
    first = render.sheet_pages(pdf)["Parallelism"]
    texts = printed_pages(pdf)
    rows, plot = texts[first], texts[first + 1]
    assert "Batch-size sweep" in rows and "Per layer" not in rows
    assert "TP latency" in rows and "latency: better" in rows
    lines = {line.split()[0]: line.split() for line in rows.splitlines()
             if re.match(r"[\d,]+ ", line)}
    for m, tp, pp, better in (("512", "42.024", "48.658", "tensor"),
                              ("1,024", "83.327", "78.424", "pipeline")):
        line = " ".join(next(v for v in lines.values() if v[1] == m))
        assert f" {tp}" in line and f" {pp}" in line and better in line, line
    assert "Latency of one batch vs batch size" in plot
    for name in ("one GPU", "pipeline parallel", "tensor parallel", "m (rows per batch)"):
        assert name in plot, name
    assert plot.startswith("Parallelism ")  # the chart's own page, the sheet's next
    assert "Batch-size sweep" not in plot
