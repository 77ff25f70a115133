"""Every workbook variant opens and prints the way a user gets it: LibreOffice with a new,
default profile (no forced recalculation, so it shows the cached values and computes only
cells without one), exported to PDF.

The other LibreOffice tests force a full recalculation on load, which hid a crash: LibreOffice
7.4 ignores a cached boolean result (t="b") on xlsx import, computes the cell on first use and,
if the cell is formatted General, stamps a BOOLEAN format on it; when that first use is a
conditional format being drawn, it reads the replaced style and crashes, so no PDF was made.
Boolean cells therefore carry an explicit TRUE/FALSE number format (styles.BOOLEAN_CODE).
"""

from __future__ import annotations

import functools
import html
import re
import shutil
import zipfile
from collections import Counter
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from helpers import built_workbook, process_folder
from lo_helpers import libreoffice_job, needs_libreoffice, pdf_page_texts, printed_pages
from openpyxl.utils import range_boundaries
from xlsx_edit import cell_of, defined_names, edit_cells, replace_parts, sheet_parts

from sheetgen.cli import cli
from sheetgen.layout.styles import BOOLEAN_CODE

ROOT = Path(__file__).resolve().parents[1]
MEASURED_CSV = ROOT / "benchmarks" / "data" / "xla_h100_sm90.csv"
PLAN_XLSX = ROOT / "examples" / "plan.xlsx"

#: variant -> the `sheetgen` command line that writes it (OUT: the output path)
BUILDS: dict[str, list[str]] = {
    "default": ["build", "OUT"],
    "practice": ["build", "OUT", "--practice", "5"],
    "int8": ["build", "OUT", "--dtype", "int8"],
    # tf32: XLA's tf32 rows fit a K-loop latency of a few ns, which the sheet must show
    "measured": ["build", "OUT", "--measured", str(MEASURED_CSV), "--gpu", "H100 SXM",
                 "--dtype", "tf32"],
    "h100_fp8": ["build", "OUT", "--gpu", "H100 SXM", "--dtype", "fp8"],
    "fill": ["fill", str(PLAN_XLSX), "-o", "OUT"],
    "transformer": ["build", "OUT", "--model", "llama-3.1-8b", "--gpu", "H100 SXM", "--dtype",
                    "fp8", "--attention-quantize", "yes"],
}
#: variant -> text its PDF must show besides every sheet's title
EXPECTED_TEXT = {
    "practice": ["Practice"],
    "measured": ["Measured matmul times vs the model"],
    "fp8_flip": ["no fp8 on this GPU"],  # the A100 has no fp8: its cells say so
    "fill": ["Layer shapes for the serving plan"],  # the user's own sheet, kept
    # the fp8 build's attention-output quantize: the input and the one kernel it adds
    "transformer": ["attention output quantized by its own kernel",
                    "attention-output quantize kernels per layer",
                    # numbers wider than a 12.7-wide column printed as ###
                    "8,030,261,248.0", "1,403.0 TFLOP/s"],
}


def _run(args: list[str], out: Path) -> Path:
    result = CliRunner().invoke(cli, [str(out) if a == "OUT" else a for a in args],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


#: a formula cell's cached result: its type attribute and its <v> (xlsxwriter writes them)
_FORMULA_CELL = re.compile(r"<c\b([^>]*?)(?<!/)>(<f\b.*?)</c>", re.S)


def _drop_cached_values(path: Path) -> None:
    """Every formula cell of every sheet without its cached result (no `t`, no <v>), in
    place: what an openpyxl load and save leaves (it writes formulas without values), so
    LibreOffice computes each formula on open as Excel would after the user's edit."""
    def bare(m: re.Match[str]) -> str:
        attrs = re.sub(r'\st="[^"]*"', "", m.group(1))
        return f"<c{attrs}>{re.sub(r'<v>.*?</v>|<v/>', '', m.group(2), flags=re.S)}</c>"

    with zipfile.ZipFile(path) as z:
        parts = {part: _FORMULA_CELL.sub(bare, z.read(part).decode("utf-8")).encode("utf-8")
                 for part in set(sheet_parts(z).values())}
    replace_parts(path, path, parts)


def _fp8_flip(h100_fp8: Path, out: Path) -> Path:
    """A user's edit: the fp8 build's GPU dropdown switched to a GPU without fp8, typed into
    the sheet's XML (tests/xlsx_edit.py) and saved without cached values, as the openpyxl
    load and save this used to be (3 s of CPU for the XML's milliseconds)."""
    edit_cells(h100_fp8, out, {cell_of(defined_names(h100_fp8)["GPU_NAME"]): "A100 40GB SXM"})
    _drop_cached_values(out)
    return out


#: each variant's workbook, written once per test process (the LibreOffice job and the tests
#: read the same files; a build takes seconds)
_BOOKS: dict[str, Path] = {}


@functools.cache
def _folder() -> Path:
    return process_folder("sheetgen-user-view-")


def workbook(name: str) -> Path:
    """The variant's workbook, written on first use: the default is helpers.built_workbook's
    (the same workbook as `sheetgen build OUT`, shared with the other test files), the
    others through the command line of BUILDS, fp8_flip edited from h100_fp8."""
    if name not in _BOOKS:
        out = _folder() / f"{name}.xlsx"
        if name == "default":
            built_workbook(out)
        elif name == "fp8_flip":
            _fp8_flip(workbook("h100_fp8"), out)
        else:
            _run(BUILDS[name], out)
        _BOOKS[name] = out
    return _BOOKS[name]


class _Books:
    """The variants by name, each written when first asked for (the check without
    LibreOffice needs four of the eight)."""

    def __getitem__(self, name: str) -> Path:
        return workbook(name)


@pytest.fixture(scope="module")
def workbooks() -> _Books:
    return _Books()


VARIANTS = [*BUILDS, "fp8_flip"]


@libreoffice_job("opens-as-user", to="pdf", recalc=False)
def _user_pdfs(tmp: Path) -> dict[str, Path]:
    """All variants through the session's shared LibreOffice run with a new, default profile
    (recalc=False: an empty profile, as a double-click gets), to PDF."""
    return {name: shutil.copyfile(workbook(name), tmp / f"{name}.xlsx") for name in VARIANTS}


@pytest.fixture(scope="module")
def pdfs(libreoffice) -> dict[str, Path]:
    return libreoffice.outputs("opens-as-user")


def _boolean_cells_by_format(path: Path) -> dict[str, list[str]]:
    """Cells stored as booleans (t="b", a constant or a cached formula result), by the
    number-format code of their style."""
    with zipfile.ZipFile(path) as z:
        styles = z.read("xl/styles.xml").decode()
        codes = {int(i): html.unescape(c) for i, c in
                 re.findall(r'<numFmt numFmtId="(\d+)" formatCode="([^"]*)"', styles)}
        xfs = re.search(r"<cellXfs[^>]*>(.*?)</cellXfs>", styles, re.S)
        assert xfs is not None
        fmt_ids = [int(m) for m in re.findall(r'<xf [^>]*?numFmtId="(\d+)"', xfs.group(1))]
        found: dict[str, list[str]] = {}
        for name in z.namelist():
            if not name.startswith("xl/worksheets/sheet"):
                continue
            for tag in re.findall(r"<c [^>]*>", z.read(name).decode()):
                if 't="b"' not in tag:
                    continue
                style = re.search(r' s="(\d+)"', tag)
                fmt_id = fmt_ids[int(style.group(1))] if style else 0
                code = codes.get(fmt_id, "General" if fmt_id == 0 else f"builtin {fmt_id}")
                address = re.search(r' r="([A-Z]+\d+)"', tag)
                found.setdefault(code, []).append(f"{name}:{address.group(1) if address else '?'}")
    return found


@pytest.mark.parametrize("variant", ["default", "practice", "measured", "h100_fp8"])
def test_no_boolean_cell_is_formatted_general(workbooks, variant):
    """The crash's cause, checked without LibreOffice: every stored boolean has the
    TRUE/FALSE format, none is General."""
    found = _boolean_cells_by_format(workbooks[variant])
    assert sum(len(v) for v in found.values()) >= 4  # pass/fail checks and stage flags exist
    assert set(found) == {BOOLEAN_CODE}, {k: v[:5] for k, v in found.items()}


def _sheet_titles(path: Path) -> list[str]:
    wb = openpyxl.load_workbook(path, read_only=True)
    titles = [ws["A1"].value for ws in wb.worksheets]
    wb.close()
    return [t for t in titles if isinstance(t, str)]


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.libreoffice
@needs_libreoffice
@pytest.mark.parametrize("variant", VARIANTS)
def test_opens_and_prints_with_a_default_profile(workbooks, pdfs, variant):
    pdf = pdfs[variant]
    assert pdf.read_bytes()[:5] == b"%PDF-"
    pages = pdf_page_texts(pdf)
    titles = _sheet_titles(workbooks[variant])
    assert len(titles) >= 6  # Inputs, Matmul, Pipeline, Parallelism, What-if, GPU Specs
    assert len(pages) >= len(titles)  # every sheet printed, at least a page each
    text = _squash(" ".join(pages))
    missing = [t for t in titles + EXPECTED_TEXT.get(variant, []) if _squash(t) not in text]
    assert missing == []
    # the pass/fail checks print as words, as the cached booleans they are, not as 1 or 0
    assert re.search(r"\bTRUE\b", text)
    assert "###" not in text  # no number wider than its column


#: the page footer LibreOffice prints, which names the page's sheet ("Matmul 2 / 35")
_FOOTER = re.compile(r"(.+?) \d+ / \d+")


@pytest.mark.libreoffice
@needs_libreoffice
@pytest.mark.parametrize("variant", VARIANTS)
def test_every_short_text_in_the_print_area_prints_whole(workbooks, pdfs, variant):
    """Each text of up to 60 characters inside a sheet's print area (a label, a header, a
    regime or verdict word: what a narrow column cuts rather than wraps) is on that sheet's
    pages, whitespace aside: at 12 wide the Transformer's regime column printed
    "memory-boun". The cached values, as a user's LibreOffice shows them without
    recalculating."""
    text: dict[str, str] = {}
    for page in printed_pages(pdfs[variant]):
        sheet = _FOOTER.match(page.strip())
        key = sheet.group(1) if sheet else ""
        text[key] = text.get(key, "") + re.sub(r"\s+", "", page)
    wb = openpyxl.load_workbook(workbooks[variant], data_only=True)
    cut, checked = [], 0
    for ws in wb.worksheets:
        area = ws.print_area[0] if isinstance(ws.print_area, list) else ws.print_area
        if not area:  # a user's own sheet (fill): its page set-up and footer are theirs
            continue
        low_col, low_row, high_col, high_row = range_boundaries(area.split("!")[-1])
        cells = Counter(re.sub(r"\s+", "", c.value) for row in ws.iter_rows(
            min_row=low_row, max_row=high_row, min_col=low_col, max_col=high_col)
            for c in row if isinstance(c.value, str) and 3 <= len(c.value) <= 60)
        # as many times as cells hold it: a word repeated in a note does not hide a cut one
        cut += [(ws.title, value, n) for value, n in cells.items()
                if text.get(ws.title, "").count(value) < n]
        checked += cells.total()
    wb.close()
    assert checked > 300
    assert cut == []


@pytest.mark.libreoffice
@needs_libreoffice
def test_the_measured_sheets_latencies_print_their_nanoseconds(workbooks, pdfs):
    """The fitted K-loop latency per unit of k is picoseconds to nanoseconds: in the µs the
    sheet's times are held in, the times' two decimals printed it as 0.00; the latency format
    keeps its digits (0.004047 µs for the 4.05 ns of XLA's H100 tf32 rows)."""
    wb = openpyxl.load_workbook(workbooks["measured"], read_only=True)
    rows = {r[0]: r[1] for r in wb["Measured"].iter_rows(min_row=1, max_row=30, max_col=2,
                                                        values_only=True) if r[0]}
    wb.close()
    latency = rows["K-loop latency per unit of k"]  # µs
    assert 1e-3 < latency < 1e-2
    text = _squash(" ".join(pdf_page_texts(pdfs["measured"])))
    shown = f"{latency:.6f}".rstrip("0")
    assert "K-loop latency per unit of k" in text
    assert f" {shown} " in text, shown  # two decimals showed 0.00


def test_google_sheets_keeps_its_own_true_false():
    """The TRUE/FALSE code is for LibreOffice's sake; a pushed sheet keeps Google's automatic
    format, which shows a boolean as TRUE/FALSE."""
    from sheetgen.layout.styles import NUMBER_FORMATS
    from sheetgen.writers.google.requests import cell_format

    assert NUMBER_FORMATS["bool"] == NUMBER_FORMATS["flag"] == BOOLEAN_CODE
    assert "numberFormat" not in cell_format("derived", "bool")
    assert "numberFormat" not in cell_format("derived", "flag")
