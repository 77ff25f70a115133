"""Big workbooks (issue 21): read back what sheetgen writes, refuse bombs of the same size.

Sizes are modest (CI budget); thresholds are monkeypatched so the big-file logic runs."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from helpers import load_workbook, one_line_error, run
from hostile_files import bomb_sheet, padding, write_package
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from openpyxl_fast import library_translator
from xlsx_edit import sheet_xml

import sheetgen.files.untrusted as untrusted
from sheetgen.api import build_workbook
from sheetgen.errors import WorkbookError
from sheetgen.evaluate.reader import read_workbook


def shapes(n: int) -> list[tuple[int, int, int]]:
    dims = (64, 512, 4096, 8192)
    return [(dims[i % 4], dims[(i // 4) % 4], dims[(i // 16) % 4]) for i in range(n)]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("big") / "big.xlsx"
    build_workbook(out, shapes=shapes(300), spare_rows=0)
    return out


def unpacked_size(path: Path) -> int:
    with zipfile.ZipFile(path) as zf:
        return sum(i.file_size for i in zf.infolist())


def test_guard_accepts_a_big_sheetgen_workbook_and_refuses_a_bomb_of_its_size(
        built, tmp_path, monkeypatch):
    size = unpacked_size(built)
    # The fixed budget is set well below the workbook, as 512 MB is below a 1M-row workbook.
    monkeypatch.setattr(untrusted, "MAX_PACKAGE_BYTES", size // 4)
    with pytest.raises(WorkbookError, match="more than the"):
        untrusted.check_package(built, size // 4)  # a fixed budget (fill's) still refuses
    book = read_workbook(built)  # the declared dimensions cover the Matmul sheet
    matmul = next(s for s in book.sheets if s.name == "Matmul")
    assert len(matmul.formula_texts()) > 300 * 10
    # A bomb of the same uncompressed size declaring one cell is refused from the directory.
    bomb = write_package(tmp_path / "bomb.xlsx", {"Matmul": bomb_sheet(size)})
    assert unpacked_size(bomb) >= size and bomb.stat().st_size < size // 50
    with pytest.raises(WorkbookError, match="declared cells can hold"):
        read_workbook(bomb)


def test_a_declared_dimension_cannot_lift_the_hard_cap(tmp_path, monkeypatch):
    """The dimension is the file's own claim: the whole grid declared still meets the cap."""
    monkeypatch.setattr(untrusted, "MAX_PACKAGE_BYTES", 100_000)
    monkeypatch.setattr(untrusted, "MAX_DECLARED_BYTES", 2_000_000)

    def sheet(total: int):
        yield from write_sheet_with_dimension("A1:XFD1048576")
        yield from padding(total)

    lying = write_package(tmp_path / "lie.xlsx", {"S": sheet(1_000_000)})
    read_workbook(lying)  # under the cap: the claimed grid covers it
    over = write_package(tmp_path / "over.xlsx", {"S": sheet(3_000_000)})
    with pytest.raises(WorkbookError, match=r"decompress to 3\.0 MB.*the 2\.0 MB budget"):
        read_workbook(over)


def write_sheet_with_dimension(ref: str):
    """A worksheet with a <dimension> and no cells (a bomb's whitespace may follow it)."""
    yield (b'<?xml version="1.0" encoding="UTF-8"?>\n'
           b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
           + f'<dimension ref="{ref}"/><sheetData/></worksheet>'.encode())


def test_declared_cells_reads_the_dimension_only(tmp_path):
    path = write_package(tmp_path / "d.xlsx", {"S": write_sheet_with_dimension("B2:D11")})
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("xl/worksheets/sheet1.xml")
        assert untrusted.declared_cells(zf, info) == 3 * 10


# ---- the fast path: shared formulas for big tables ----------------------------------------
FAST_SHAPES = 150


def build_fast(out: Path) -> tuple[Path, object]:
    """A workbook whose Matmul and chart tables take the fast path (thresholds lowered)."""
    import sheetgen.writers.shared_rows as shared_rows
    import sheetgen.writers.xlsx as xlsx_writer
    from sheetgen.api import plan

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(xlsx_writer, "CONSTANT_MEMORY_ROWS", 40)
        mp.setattr(shared_rows, "FAST_TABLE_ROWS", 40)
        mp.setattr(shared_rows, "BLOCK_ROWS", 16)  # several blocks per run
        build_workbook(out, shapes=shapes(FAST_SHAPES), spare_rows=0)
    return out, plan(shapes=shapes(FAST_SHAPES), spare_rows=0)


@pytest.fixture(scope="module")
def fast_built(tmp_path_factory) -> tuple[Path, object]:
    return build_fast(tmp_path_factory.mktemp("fast") / "fast.xlsx")


def test_a_row_holding_another_cell_is_written_plainly_between_two_runs(tmp_path,
                                                                        monkeypatch):
    """A note beside the table splits the shared range: that row's formulas are written by
    xlsxwriter as plain formulas, the runs above and below each get their own masters."""

    import sheetgen.writers.shared_rows as shared_rows
    import sheetgen.writers.xlsx as xlsx_writer
    from sheetgen.api import plan
    from sheetgen.layout.planner import Cell

    monkeypatch.setattr(xlsx_writer, "CONSTANT_MEMORY_ROWS", 40)
    monkeypatch.setattr(shared_rows, "FAST_TABLE_ROWS", 40)
    p = plan(shapes=shapes(60), spare_rows=0)
    t = p.table("matmul")
    note_row = t.first_row + 30
    p.sheet("Matmul").cells.append(Cell(note_row, 60, "note", "a note beside the table"))
    out = xlsx_writer.write_xlsx(p, tmp_path / "split.xlsx")
    xml = sheet_xml(out, "Matmul")
    e = next(c for c in t.columns if c.col == 4)
    assert f':E{note_row}" si=' in xml  # a run ends just above the note's row
    assert f'ref="E{note_row + 2}:E{t.last_row + 1}"' in xml
    assert f'<c r="E{note_row + 1}" s="' in xml and "<f>" + e.formula_at(note_row)[1:] in xml
    ws = load_workbook(out)["Matmul"]
    for row in (note_row - 1, note_row, note_row + 1, t.last_row):
        for c in t.columns:
            got = ws.cell(row + 1, c.col + 1).value
            want = c.values[row - t.first_row] if c.is_input else c.formula_at(row)
            assert got == want, (c.name, row)
    assert ws.cell(note_row + 1, 61).value == "a note beside the table"
    from sheetgen.verify.check import check_workbook  # plain rows and two runs per column

    report = check_workbook(out)
    assert report.mismatches == [] and report.checked["Matmul"] > 15 * 60


def test_fast_path_writes_shared_formulas(fast_built):
    path, p = fast_built
    xml = sheet_xml(path, "Matmul")
    t = p.table("matmul")
    formulas = sum(1 for c in t.columns if not c.is_input)
    # one master per formula column and run; every other table formula cell is a copy
    masters = xml.count('<f t="shared" ref=')
    assert formulas <= masters <= 3 * formulas + 12
    assert xml.count('<f t="shared" si=') >= formulas * (FAST_SHAPES - 10)
    assert f'ref="E{t.first_row + 1}:E' in xml


def test_openpyxl_reads_the_shared_formulas_as_each_cells_formula(fast_built):
    """openpyxl translates each copy from its master itself (openpyxl.formula.translate);
    every table cell must read as the formula the plan holds for its row, and the cached
    value as the reference model's."""
    path, p = fast_built
    t = p.table("matmul")
    assert formulas_read_back(path, "Matmul", t, (0, 1, 17, t.n_rows - 1)) > 40


def formulas_read_back(path: Path, sheet: str, t, rows: tuple[int, ...]) -> int:
    """Each of the table's cells at `rows` as openpyxl reads it: an input its value, a formula
    the plan's formula for its row with the reference model's cached value. Returns how many
    formula cells were checked."""
    import math

    import openpyxl

    with library_translator():  # openpyxl's own reading, as a user's openpyxl reads it
        ws = openpyxl.load_workbook(path)[sheet]
    cached = openpyxl.load_workbook(path, data_only=True)[sheet]
    checked = 0
    for c in t.columns:
        for i in rows:
            row = t.first_row + i
            got = ws.cell(row + 1, c.col + 1).value
            if c.is_input:
                assert got == c.values[i]
                continue
            assert got == c.formula_at(row), (c.name, row)
            want = c.values[i]
            have = cached.cell(row + 1, c.col + 1).value
            if isinstance(want, float) and math.isfinite(want):
                assert have == pytest.approx(want, rel=1e-15), (c.name, row)
            checked += 1
    return checked


def test_fast_reader_expands_shared_formulas_like_elementtree(fast_built):
    """sheetgen's fast reader against its ElementTree path, which shifts copies with
    openpyxl's Translator: the same cells and texts."""
    from sheetgen.evaluate.reader import RawSheet, read_sheet_slow_for_tests, read_workbook

    path, _ = fast_built
    fast = next(s for s in read_workbook(path).sheets if s.name == "Matmul")
    slow = RawSheet("Matmul")
    read_sheet_slow_for_tests(sheet_xml(path, "Matmul").encode(), slow)
    assert isinstance(fast.f_rows, __import__("numpy").ndarray)  # the fast path was taken
    assert fast.shared and len(fast.f_texts) < FAST_SHAPES  # copies are kept as templates
    a = sorted(fast.formula_texts())
    b = sorted(zip(slow.f_rows, slow.f_cols, slow.f_texts, strict=True))
    assert a == b and len(a) > 15 * FAST_SHAPES


def test_check_passes_on_the_fast_workbook(fast_built):
    from click.testing import CliRunner

    from sheetgen.cli import cli

    path, _ = fast_built
    r = CliRunner().invoke(cli, ["check", str(path)])
    assert r.exit_code == 0, r.output
    assert "0 mismatches" in r.output


@libreoffice_job("big-shared-formulas", to="values")
def _blanked(tmp: Path) -> dict[str, Path]:
    """The fast-path workbook with every cached value in its shared-formula cells zeroed."""
    import re

    path, _ = build_fast(tmp / "fast.xlsx")
    blanked = tmp / "blanked.xlsx"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(blanked, "w",
                                                       zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.startswith("xl/worksheets/sheet"):
                text = re.sub(r'( t="(?:str|e|b)")?>(<f t="shared"[^>]*(?:/>|>[^<]*</f>))'
                              r"<v>[^<]*</v>", r">\2<v>0</v>", data.decode())
                data = text.encode()
            dst.writestr(info, data)
    return {"blanked": blanked}


@needs_libreoffice
def test_libreoffice_recalculates_the_shared_formula_table_to_the_reference(fast_built,
                                                                            libreoffice):
    """Every cached value in the shared-formula cells is zeroed first, so the numbers
    LibreOffice hands back are its own recalculation of the shared formulas."""
    _, p = fast_built
    blanked = libreoffice.sources("big-shared-formulas")["blanked"]
    with zipfile.ZipFile(blanked) as z:
        zeroed = sum(len(re.findall(r'<f t="shared"[^>]*(?:/>|>[^<]*</f>)<v>0</v>',
                                    z.read(n).decode())) for n in z.namelist()
                     if n.startswith("xl/worksheets/sheet"))
    assert zeroed > 15 * FAST_SHAPES
    out = libreoffice.outputs("big-shared-formulas")["blanked"]
    assert mismatches(p, read_values(out)) == []


# ---- streaming output: show, show --json, read --format csv/json -------------------------
def _printing_peak(make_pieces, collect: bool = False) -> float:
    """Peak bytes Python allocates while the pieces are made and dropped (as click.echo
    does with each), the frame they come from already built. `collect`: unreachable cycles
    are collected after each piece (for a few large pieces), so the bound is on what stays
    reachable rather than on when the cyclic collector happens to run (the suite raises its
    threshold; conftest.py): a fresh-clone CI once saw show's 1.84 MB against 2.54 MB with
    it left to chance."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        for _ in make_pieces():
            if collect:
                gc.collect()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def frames() -> dict[int, object]:
    from sheetgen.api import analyze

    return {n: analyze(shapes(n)) for n in (400, 1_600)}


@pytest.mark.parametrize("kind", ["show", "show_json", "csv", "json"])
def test_streamed_output_stays_bounded_as_rows_grow(kind, frames, monkeypatch):
    """Four times the rows, about the same peak: one chunk's text is alive at a time."""
    import sheetgen.cli.checking as checking
    import sheetgen.cli.terminal as terminal

    monkeypatch.setattr(terminal, "STREAM_ROWS", 100)
    monkeypatch.setattr(checking, "STREAM_ROWS", 100)
    peaks = []
    for frame in frames.values():
        make = {"show": lambda f=frame: terminal.show_table_stream(f),
                "show_json": lambda f=frame: terminal.show_json_stream(f),
                "csv": lambda f=frame: checking.csv_stream(f),
                "json": lambda f=frame: checking.json_stream(f)}[kind]
        # a chunk per 100 rows, but show's table a line per row: a collection after each of
        # those 1,600 lines would take minutes, and its peak held without them
        peaks.append(_printing_peak(make, collect=kind != "show"))
    # the whole text of 1,600 rows is about 1 MB; a chunk's some 60 KB
    assert peaks[1] < 1.3 * peaks[0] + 100_000, peaks


def test_streamed_output_is_the_same_text(monkeypatch):
    import sheetgen.cli.checking as checking
    import sheetgen.cli.terminal as terminal
    from sheetgen.api import analyze

    frame = analyze(shapes(7))
    whole_json = json.dumps(terminal.show_json(frame), indent=2)
    whole_csv = checking.neutralised(checking.fifteen_digits(
        checking.whole_numbers(frame))).to_csv()
    whole_records = json.dumps(checking.json_records(checking.whole_numbers(frame)))
    for n in (1, 3, 100):
        monkeypatch.setattr(terminal, "STREAM_ROWS", n)
        monkeypatch.setattr(checking, "STREAM_ROWS", n)
        assert "".join(terminal.show_json_stream(frame)) == whole_json
        assert json.loads(whole_json)["rows"][6]["m"] == shapes(7)[6][0]
        assert "".join(checking.csv_stream(frame)) == whole_csv
        assert "".join(checking.json_stream(frame)) == whole_records
    assert len(terminal.show_table(frame)) == 2 + 7


# ---- progress on a pipe, and the chart of a big table -------------------------------------
def test_progress_on_a_pipe_is_a_line_per_tenth_at_a_modest_rate(capsys, monkeypatch):
    import sheetgen.cli.common as common

    monkeypatch.setattr(common, "PIPE_SECONDS", 0.0)
    with common.progress_bar(100_000, "writing") as progress:
        assert progress is not None
        for _ in range(100):
            progress(1_000)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("writing: 10% (10,000 of 100,000 rows")
    assert len(lines) == 9 + 1 and lines[-1].startswith("writing: all 100,000 rows in ")
    monkeypatch.setattr(common, "PIPE_SECONDS", 3600.0)  # a quick job says nothing
    with common.progress_bar(100_000, "writing") as progress:
        progress(100_000)
    assert capsys.readouterr().err == ""


def test_a_big_tables_chart_plots_its_first_rows_and_says_so(tmp_path, monkeypatch):
    import sheetgen.writers.xlsx as xlsx_writer

    monkeypatch.setattr(xlsx_writer, "CHART_MAX_POINTS", 50)
    out = tmp_path / "c.xlsx"
    build_workbook(out, shapes=shapes(80), spare_rows=0)
    with zipfile.ZipFile(out) as zf:
        charts = [zf.read(n).decode() for n in zf.namelist() if n.startswith("xl/charts/")]
    roofline = next(c for c in charts if "(the first 50 of 80 rows)" in c)
    assert roofline.count('<c:ptCount val="50"/>') >= 2
    assert '<c:ptCount val="80"/>' not in roofline


# ---- show a piece at a time: the table is never held whole --------------------------------
def test_analyze_pieces_are_the_table_a_piece_at_a_time():
    from sheetgen.api import analyze, analyze_pieces

    pieces = list(analyze_pieces(shapes(50), piece_rows=7))
    assert [len(p) for p in pieces] == [7] * 7 + [1]
    joined = pd.concat(pieces)
    pd.testing.assert_frame_equal(joined, analyze(shapes(50)), check_exact=True)
    last = pieces[-1].iloc[0]
    assert pieces[-1].index.tolist() == [49]
    # shape 49 is 512 x 64 x 8192 (bf16, A100 40GB SXM at 1555 GB/s):
    # FLOPs 2*512*64*8192; bytes 2*(512*64 + 64*8192 + 512*8192) = 9,502,720
    assert (last["m"], last["k"], last["n"]) == (512, 64, 8192)
    assert last["flops"] == 2 * 512 * 64 * 8192
    assert last["bytes_moved"] == 9_502_720
    assert last["memory_time"] == pytest.approx(9_502_720 / 1555e9, rel=1e-12)
    assert all(p.attrs["gpu"] == pieces[0].attrs["gpu"] for p in pieces)


def test_show_prints_the_same_text_in_pieces(tmp_path, monkeypatch):
    import sheetgen.api as api

    csv = tmp_path / "s.csv"
    csv.write_text("m,k,n\n" + "".join(f"{m},{k},{n}\n" for m, k, n in shapes(30)), "utf-8")
    whole = {flag: run("show", "--shapes", str(csv), *flag).output for flag in ((), ("--json",))}
    monkeypatch.setattr(api, "PIECE_ROWS", 4)  # 8 pieces; show's table takes two passes
    for flag, text in whole.items():
        assert run("show", "--shapes", str(csv), *flag).output == text
    rows = json.loads(whole[("--json",)])["rows"]
    assert [(r["m"], r["k"], r["n"]) for r in rows] == shapes(30)


def test_show_memory_does_not_grow_with_the_shapes():
    """Four times the shapes, about the same peak: one piece of the table is alive at a time
    (the shapes themselves, 8 bytes a row here, are the caller's)."""
    import sheetgen.cli.terminal as terminal
    from sheetgen.api import analyze_pieces
    from sheetgen.inputs.shapes import Shape

    peaks = []
    for n in (800, 3_200):
        objs = [Shape(*s) for s in shapes(n)]
        peaks.append(_printing_peak(lambda o=objs: terminal.show_json_stream(
            lambda: analyze_pieces(o, piece_rows=200)), collect=True))
    assert peaks[1] < 1.3 * peaks[0] + 100_000, peaks


def test_group_sums_by_hand_in_one_pass():
    """The Pipeline's per-stage sums (SUMPRODUCT((stage[]=stage)*time[])) by hand; computed
    per group, so --layers 100000 no longer compares every layer with every other."""
    import numpy as np

    from sheetgen.model.factories import sum_where_equal

    q = sum_where_equal("total", "stage", "time", "Stage total", "s")
    keys = np.array([1, 2, 1, 3, 2, np.nan])
    vals = np.array([1.0, 10.0, 100.0, 1000.0, 10000.0, 5.0])
    # stage 1: 1 + 100; stage 2: 10 + 10000; stage 3: 1000; a blank stage equals no row
    assert q.reference(stage=keys, time=vals).tolist() == [101, 10010, 101, 1000, 10010, 0]
    assert q.reference(stage=np.array([]), time=np.array([])).tolist() == []
    many = np.arange(200_000) // 4 + 1.0  # 50,000 stages of 4 layers
    assert q.reference(stage=many, time=np.ones_like(many)).tolist() == [4.0] * 200_000


def test_a_time_column_scales_its_numbers_only():
    """A column's cells in ms: numbers times 1000; text, blanks, booleans, NaN (a cell that
    shows text) and infinities (no cell holds one) as they are."""
    import numpy as np

    from sheetgen.core.time_cells import scaled

    column = np.empty(9, dtype=object)
    column[:] = [1.5, 2, True, "n/a", None, float("nan"), float("inf"), np.float64(3.0), ""]
    out = scaled(column, 1e3).tolist()
    assert out[:5] == [1500.0, 2000, True, "n/a", None]
    assert np.isnan(out[5]) and out[6] == float("inf") and out[7:] == [3000.0, ""]
    assert type(out[2]) is bool


# ---- show streams a shapes CSV: checked in a first pass, then read a piece at a time ------
def _shapes_csv(path: Path, rows: list[tuple[object, object, object]], head: str = "m,k,n\n",
                sep: str = ",") -> Path:
    path.write_text(head + "".join(sep.join(map(str, r)) + "\n" for r in rows), "utf-8")
    return path


def test_reading_a_shapes_csv_in_pieces_holds_one_piece(tmp_path):
    """Three times the shapes, about the same peak: the first pass keeps a count and the
    second a piece (10,000 Shape objects held would be about 1.7 MB, 30,000 about 5 MB; the
    whole-file reader's peak is 64 MB, its read buffer)."""
    import tracemalloc

    from sheetgen.inputs.shapes import open_shapes

    peaks = []
    for n in (10_000, 30_000):
        csv = _shapes_csv(tmp_path / f"s{n}.csv", shapes(n))
        tracemalloc.start()
        try:
            source = open_shapes(csv)
            assert source.count == n
            seen = sum(len(piece) for piece in source.pieces(2_000))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert seen == n
    assert peaks[1] < 1.2 * peaks[0] + 100_000, peaks
    assert peaks[1] < 2_000_000, peaks


def test_show_of_a_csv_with_a_bad_late_row_prints_one_error_and_no_table(tmp_path, monkeypatch):
    """Row 2,950 of 3,000 bad, pieces of 100 shapes: the first pass finds it before any
    output, so stdout stays empty (no half-written JSON) and stderr is one line."""
    import sheetgen.api as api

    rows: list[tuple[object, object, object]] = list(shapes(3_000))
    rows[2_948] = (64, "4k", 512)  # row 2,950 of the file (the header is row 1)
    csv = _shapes_csv(tmp_path / "late.csv", rows)
    monkeypatch.setattr(api, "PIECE_ROWS", 100)
    for flag in (("--json",), ()):
        result = run("show", "--shapes", str(csv), *flag)
        assert result.stdout == ""
        assert one_line_error(result) == "Error: late.csv row 2950, column k: '4k' is not a number"


@pytest.mark.parametrize("name, text", [
    ("plain", "m,k,n\n64,512,4096\n1,8,16\n"),
    ("bom-crlf-title", "\ufeffMy shapes,,\r\n,,\r\nM (rows),K dim,n [cols],note\r\n"
                       "64,512,4096,x\r\n,,\r\n4096.0, 8 ,1_024,\r\n"),
    ("semicolons", "title\n\nm;k;n\n64;512;4096\n2;3;4\n"),
    ("tabs", "m\tk\tn\n7\t8\t9\n"),
])
def test_a_streamed_csv_gives_the_whole_readers_shapes(tmp_path, name, text):
    from sheetgen.api import analyze
    from sheetgen.cli.terminal import show_json_stream
    from sheetgen.inputs.shapes import open_shapes, read_shapes

    csv = tmp_path / f"{name}.csv"
    csv.write_bytes(text.encode("utf-8"))
    whole = read_shapes(csv)
    source = open_shapes(csv)
    assert source.held is None  # read again in pieces, not held
    assert [s for piece in source.pieces(1) for s in piece] == whole
    streamed = run("show", "--json", "--shapes", str(csv)).output
    assert streamed == "".join(show_json_stream(analyze(csv))) + "\n"


@pytest.mark.parametrize("text", [
    "",                                           # empty file
    "a,b,c\n1,2,3\n",                             # no header
    "m,k\n1,2\n",                                 # a missing column
    "m,k,n\n",                                    # no shapes below the header
    "m,k,n\n1,2,0\n1.5,x,\n" + "0,0,0\n" * 5,    # many bad cells: the first ten, then a count
    "m,k,n\n" + "1,2,3\n" * 60 + "1,2,99999999999\n",  # too large, late
])
def test_a_streamed_csv_gives_the_whole_readers_errors(tmp_path, text):
    from sheetgen.errors import InputError
    from sheetgen.inputs.shapes import open_shapes, read_shapes

    csv = tmp_path / "bad.csv"
    csv.write_text(text, "utf-8")
    with pytest.raises(InputError) as whole:
        read_shapes(csv)
    with pytest.raises(InputError) as streamed:
        open_shapes(csv)
    assert str(streamed.value) == str(whole.value)


def test_a_csv_that_is_not_utf8_late_is_one_error(tmp_path):
    from sheetgen.errors import InputError
    from sheetgen.inputs.shapes import open_shapes

    csv = tmp_path / "latin.csv"
    csv.write_bytes(b"m,k,n\n" + b"1,2,3\n" * 500 + b"1,2,3 \xe9\n")
    with pytest.raises(InputError, match="not a UTF-8 text CSV file"):
        open_shapes(csv)


def test_the_default_best_m_table_is_shared_formulas_in_memory(tmp_path):
    """A small workbook (in memory, no scratch files) writes its tables of more than
    SHARED_TABLE_ROWS rows as shared formulas too: the default Parallelism sheet's 512-row
    best-M table. openpyxl reads every one back as the plan's formula for its row, with the
    reference model's cached value; the other sheets keep plain formulas."""
    from sheetgen.api import plan
    from sheetgen.writers import shared_rows

    path = tmp_path / "default.xlsx"
    build_workbook(path)
    p = plan()
    t = p.table("pp_best_m")
    assert t.n_rows > shared_rows.SHARED_TABLE_ROWS
    with zipfile.ZipFile(path) as zf:
        names = {n for n in zf.namelist() if n.startswith("xl/worksheets/sheet")}
        xml = {n: zf.read(n).decode() for n in names}
    shared = [n for n, x in xml.items() if 't="shared"' in x]
    assert len(shared) == 1 and xml[shared[0]].count('<f t="shared" ref="') >= len(t.columns) - 1
    checked = formulas_read_back(path, "Parallelism", t, (0, 1, 255, t.n_rows - 1))
    assert checked >= 4 * (len(t.columns) - 1)


def test_the_largest_workbook_sheetgen_builds_fits_its_own_evaluator_budget(tmp_path,
                                                                         monkeypatch):
    """Excel's whole grid of shapes (1,048,576 rows less the Matmul sheet's five above its
    table) must stay within the cells and spans `check` and `read` accept: the totals the
    evaluator counts, measured on 200 and 400 shapes and extrapolated (they grow by the
    same 30 cells a shape row: m, k, n, 24 formula columns, 3 chart points). Each column a
    sheet adds to every shape row moves the largest workbook 1,048,571 cells closer."""
    import sheetgen.evaluate.engine as engine
    from sheetgen.assemble import XLSX_MAX_ROWS
    from sheetgen.evaluate.limits import MAX_CELLS, MAX_SPAN_CELLS
    from sheetgen.verify.check import check_workbook

    counted: list[tuple[int, int]] = []
    real = engine.check_budget
    monkeypatch.setattr(engine, "check_budget",
                        lambda cells, spans: (counted.append((cells, spans)),
                                              real(cells, spans))[1])
    totals = {}
    for n in (200, 400):
        counted.clear()
        out, _ = build_workbook(tmp_path / f"w{n}.xlsx", shapes=shapes(n), spare_rows=0)
        assert check_workbook(out).ok
        totals[n] = counted[-1]  # after the last sheet: the workbook's totals
    per_row = [(b - a) / 200 for a, b in zip(totals[200], totals[400], strict=True)]
    assert per_row[0] == 30
    rows = XLSX_MAX_ROWS - 5
    cells, spans = (t + p * (rows - 400) for t, p in zip(totals[400], per_row, strict=True))
    assert cells <= MAX_CELLS and spans <= MAX_SPAN_CELLS, (cells, spans)
    assert cells > 0.9 * 30 * rows  # the shapes are most of it


def test_a_streamed_workbook_may_pass_zip64s_four_gib(tmp_path, monkeypatch):
    """The whole grid of shapes writes a Matmul sheet whose XML passes 2 GiB (2.07 GB: 30
    cells a row of 1,048,571 rows), which Python's zipfile writes only with ZIP64 records
    (zipfile.ZIP64_LIMIT): xlsxwriter refused it with a traceback until the writer allowed
    them. zipfile writes them only for a member that needs them, so the streamed (big)
    workbooks allow them and small ones, which never need them, are left as they were."""
    import xlsxwriter

    calls: list[bool] = []
    real = xlsxwriter.Workbook.use_zip64
    monkeypatch.setattr(xlsxwriter.Workbook, "use_zip64",
                        lambda self: (calls.append(True), real(self))[1])
    small, _ = build_workbook(tmp_path / "small.xlsx", shapes=shapes(10), spare_rows=0)
    assert calls == []
    big, _ = build_workbook(tmp_path / "big.xlsx", shapes=shapes(5_001), spare_rows=0)
    assert calls == [True]
    for path in (small, big):  # and none of them needed the records: plain zips
        with zipfile.ZipFile(path) as z:
            assert all(i.file_size < zipfile.ZIP64_LIMIT for i in z.infolist())
            assert not any(i.extra for i in z.infolist()), path
