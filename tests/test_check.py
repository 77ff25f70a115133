"""`sheetgen check` / `read` on xlsx files: clean builds pass, every altered formula is caught
at its cell, edited inputs still pass, and unreadable files give one line and exit 2."""

from __future__ import annotations

import functools
import json
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from formula_edit import edit_formulas
from helpers import one_line_error, run
from lo_helpers import libreoffice_job, needs_libreoffice, read_values
from xlsx_edit import cell_of, edit_cells, replace_parts
from xlsxwriter.utility import xl_rowcol_to_cell

from sheetgen.assemble import BuildConfig, plan_build
from sheetgen.evaluate import evaluate_workbook
from sheetgen.inputs.shapes import Shape
from sheetgen.verify.check import check_workbook, read_workbook
from sheetgen.verify.compare import values_match
from sheetgen.writers.xlsx import write_xlsx

SHAPES = [Shape(1, 4096, 4096), Shape(4096, 4096, 4096), Shape(300, 70, 5)]


@functools.cache
def _plan():
    """The plan of the workbook the tests alter, made once (the LibreOffice job writes it
    too). Read only."""
    return plan_build(BuildConfig(shapes=SHAPES, spare_rows=3, practice=3, layers=8))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The workbook the tests alter (a copy each), as sheetgen wrote it. The tests type their
    edits into its XML (xlsx_edit, formula_edit): milliseconds where openpyxl's load and save
    took 2.5 s, and the file keeps sheetgen's shared formulas, which `check` evaluates in a
    third of the time it takes for the plain formulas of an openpyxl save (tests/test_fill.py
    checks workbooks openpyxl wrote)."""
    tmp = tmp_path_factory.mktemp("check")
    plan = _plan()
    return plan, write_xlsx(plan, tmp / "built.xlsx")


@pytest.mark.parametrize("options", [{}, {"gpu": "H100 SXM", "dtype": "fp8", "gpus": 4},
                                     {"practice": 5, "layers": 3},
                                     {"link_over": "host", "tp_pairing": "wide",
                                      "tp_gather": True, "gpus": 3, "layers": 5}])
def test_every_build_checks_clean(tmp_path, options):
    path = write_xlsx(plan_build(BuildConfig(shapes=SHAPES, **options)), tmp_path / "a.xlsx")
    report = check_workbook(path)
    assert report.ok, [m.line() for m in report.mismatches[:5]]
    assert sum(report.checked.values()) > 1000


def _formula_columns(plan):
    for sheet in plan.sheets:
        for table in sheet.tables:
            for col in table.columns:
                if not col.is_input and table.n_rows:
                    yield sheet.name, table, col


def test_one_altered_formula_per_column_is_caught_at_that_cell(built, tmp_path):
    plan, path = built
    edits = {}
    for sheet, table, col in _formula_columns(plan):
        addr = xl_rowcol_to_cell(table.first_row, col.col)
        formula = col.formula_at(table.first_row)
        # a slip: the right formula, off by a factor and a term (numbers) or another text
        edits[(sheet, addr)] = f'=IF(ISNUMBER({formula[1:]}),({formula[1:]})*1.5+1,"typo")'
    for cell in plan.sheet("Inputs").cells:
        if cell.name == "ridge":
            edits[("Inputs", xl_rowcol_to_cell(cell.row, cell.col))] = "=HBM_BW/PEAK_FLOPS"
    altered = set(edits)
    out = edit_formulas(path, tmp_path / "altered.xlsx", edits)
    report = check_workbook(out)
    found = {(m.sheet, m.cell) for m in report.mismatches}
    assert altered <= found  # every altered cell is reported, at its own address
    ridge = [m for m in report.mismatches if m.quantity == "ridge"]
    assert ridge and ridge[0].formula == "=HBM_BW/PEAK_FLOPS"


def test_a_single_altered_formula_is_the_only_report(built, tmp_path):
    _plan, path = built
    out = edit_formulas(path, tmp_path / "one.xlsx", {  # bytes without dtype
        ("Matmul", "F7"): '=IF(D7="ok",(A7*B7+B7*C7+A7*C7),"")'})
    report = check_workbook(out)
    cells = {(m.sheet, m.cell) for m in report.mismatches}
    assert ("Matmul", "F7") in cells
    # downstream cells of that row follow the wrong bytes: all on row 7 of Matmul
    assert all(s == "Matmul" and c.endswith("7") for s, c in cells)
    result = run("check", str(out))
    assert result.exit_code == 1
    assert "Matmul!F7  bytes_moved  got" in result.output
    assert "(=IF(D7=\"ok\",(A7*B7+B7*C7+A7*C7),\"\"))" in result.output


def test_edited_inputs_still_check_clean(built, tmp_path):
    plan, path = built
    names = plan.defined_names
    edits = {cell_of(names[name]): value
             for name, value in (("GPU_NAME", "MI300X"), ("DTYPE", "fp16"), ("PAR_GPUS", 3))}
    edits["Matmul", "A6"] = 777  # a dimension
    edits.update({("Matmul", c): 64 for c in ("A9", "B9", "C9")})  # a spare row
    edits["GPU Specs", "B14"] = 12e12  # a preset figure
    out = edit_cells(path, tmp_path / "edited.xlsx", edits)
    report = check_workbook(out)
    assert report.ok, [m.line() for m in report.mismatches[:5]]
    assert run("check", str(out)).exit_code == 0


def test_check_json(built):
    _, path = built
    result = run("check", str(path), "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["ok"] is True and data["checked"]["Matmul"] > 0


def test_read_evaluates_instead_of_trusting_the_cache(built, tmp_path):
    _plan, path = built
    # the cached values stay as they were: flops of the 1x4096x4096 row, now stale
    out = edit_cells(path, tmp_path / "r.xlsx", {("Matmul", "A6"): 2})
    frame = read_workbook(out)
    assert list(frame.index[:3]) == [6, 7, 8]
    assert frame.loc[6, "flops"] == 2 * 2 * 4096 * 4096
    result = run("read", str(out), "--sheet", "pipeline", "--format", "json")
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert len(rows) == 8 and rows[0]["layer_type"] == 1


@pytest.mark.parametrize(("content", "needle"), [
    (b"not a zip at all", "not an xlsx"),
    (b"PK\x03\x04 truncated", "not an xlsx"),
])
def test_unreadable_files(tmp_path, content, needle):
    bad = tmp_path / "bad.xlsx"
    bad.write_bytes(content)
    result = run("check", str(bad))
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:"), result.output


def test_other_unreadable_inputs(tmp_path, built):
    _, path = built
    xls = tmp_path / "old.xls"
    xls.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100)  # OLE2: .xls or encrypted
    one_line_error(run("check", str(xls)))
    one_line_error(run("check", str(tmp_path / "missing.xlsx")), "not found")
    # a sheetgen workbook with a sheet deleted (gone from the workbook's list of sheets)
    cut = tmp_path / "cut.xlsx"
    with zipfile.ZipFile(path) as src:
        book, n = re.subn(rb'<sheet name="What-if"[^>]*/>', b"", src.read("xl/workbook.xml"))
    assert n == 1
    replace_parts(path, cut, {"xl/workbook.xml": book})
    one_line_error(run("check", str(cut)), "What-if")
    # a circular reference
    circ = edit_formulas(path, tmp_path / "circ.xlsx", {("Inputs", "B17"): "=B17+1"})
    one_line_error(run("check", str(circ)), "circular")
    # a hand-made workbook without sheetgen's properties
    plain = tmp_path / "plain.xlsx"
    wb = openpyxl.Workbook()
    wb.active["A1"] = "hello"
    wb.save(plain)
    result = run("check", str(plain))
    assert result.exit_code == 2


def test_zip_without_workbook_part(tmp_path):
    odd = tmp_path / "odd.xlsx"
    with zipfile.ZipFile(odd, "w") as z:
        z.writestr("hello.txt", "hi")
    one_line_error(run("check", str(odd)))


@libreoffice_job("check-evaluator", to="values")
def _practice_workbook(tmp: Path) -> dict[str, Path]:
    return {"built": write_xlsx(_plan(), tmp / "built.xlsx")}


@needs_libreoffice
def test_evaluator_agrees_with_libreoffice(built, libreoffice):
    plan, _ = built
    path = libreoffice.sources("check-evaluator")["built"]
    lo = read_values(libreoffice.outputs("check-evaluator")["built"])
    ev = evaluate_workbook(path)
    checked = 0
    for sheet in plan.sheets:
        for r, c in [(cell.row, cell.col) for cell in sheet.cells if cell.formula] + [
                (t.first_row + i, col.col) for t in sheet.tables for col in t.columns
                if not col.is_input for i in range(t.n_rows)]:
            addr = xl_rowcol_to_cell(r, c)
            assert values_match(ev.value(sheet.name, addr), lo[sheet.name].get((r, c))), \
                (sheet.name, addr)
            checked += 1
    assert checked > 700


def test_huge_workbook_is_refused_up_front(built, monkeypatch):
    import sheetgen.files.untrusted as untrusted

    _plan, path = built
    assert path.stat().st_size > 10_000
    monkeypatch.setattr(untrusted, "MAX_PACKAGE_BYTES", 10_000)  # as if it were gigabytes
    one_line_error(run("check", str(path)), "more than the 10,000 bytes budget")


@pytest.mark.parametrize(("name", "value", "needle"), [
    ("COMPUTE_EFF", "abc", "holds 'abc', not a number"),
    ("COMPUTE_EFF", None, "is blank"),
    ("COMPUTE_EFF", 0, "outside what the cell allows"),
    ("TILE_M", True, "not a number"),
    ("PAR_GPUS", 1e308, "outside what the cell allows"),
    ("PAR_GPUS", 2.5, "holds 2.5, outside what the cell allows (A whole number"),
    # "auto" and blank are the sheet's own (ISNUMBER picks the best M), but a typed number is
    # used as it stands: 0 divided the rows by zero, and the model raised ZeroDivisionError
    ("MICRO_BATCHES", 0, "holds 0, outside what the cell allows"),
    ("MICRO_BATCHES", 2.5, "holds 2.5, outside what the cell allows"),
    # one sweep row tests the Pipeline's m with ISNUMBER, but every layer multiplies it: a
    # blank m was let through, and the model raised TypeError
    ("PIPE_M", None, "is blank; it needs a number"),
    ("PIPE_M", "abc", "holds 'abc', not a number"),
    # a dropdown typed past its validation (a paste does that in Excel):
    # the model raised KeyError: 'x' (a traceback)
    ("TP_ALLREDUCE", "x", "holds 'x', which its list does not offer (auto or ring or one-shot"),
    # 1,430 and 778 cells disagreed: the sheet's lookups show #N/A, the model guessed
    ("DTYPE", "xx", "holds 'xx', which its list does not offer (Pick a dtype)"),
    ("GPU_NAME", "nope", "holds 'nope', which its list does not offer (Pick a GPU"),
    ("GPU_NAME", None, "is blank, which its list does not offer"),
    # a generic line that named no cell ("cannot convert float NaN to integer")
    ("ACT_DTYPE", "bad", "holds 'bad', which its list does not offer"),
    ("OUT_DTYPE", 3, "holds 3, which its list does not offer"),
    # the sheet echoes the typed spelling into its sentences ("36 Ring all-reduces")
    ("TP_ALLREDUCE", "Ring", "holds 'Ring', which its list does not offer"),
])
def test_a_malformed_input_cell_is_named(built, tmp_path, name, value, needle):
    """Text, a blank, a boolean or an out-of-range number in a numeric input cell, or what its
    list does not offer in a dropdown, is the user's file's problem: one line naming the
    cell, not a traceback and not a mismatch."""
    plan, path = built
    sheet, cell = plan.defined_names[name].split("!")
    out = edit_cells(path, tmp_path / "odd.xlsx", {cell_of(plan.defined_names[name]): value})
    result = run("check", str(out))
    one_line_error(result, needle)
    assert f"{sheet.strip(chr(39))}!{cell.replace('$', '')}" in result.output


def _input_cell(plan, name, row=0):
    """(sheet, "B9") of a named input cell, or of row `row` of an input column."""
    for sheet in plan.sheets:
        for c in sheet.cells:
            if c.name == name:
                return sheet.name, xl_rowcol_to_cell(c.row, c.col)
        for t in sheet.tables:
            for col in t.columns:
                if col.name == name:
                    return sheet.name, xl_rowcol_to_cell(t.first_row + row, col.col)
    raise KeyError(name)


@pytest.mark.parametrize(("name", "row", "value", "needle"), [
    # a bandwidth divides: 0 was let through (ZeroDivisionError), and text went past the
    # override's ISBLANK into the arithmetic (TypeError)
    ("link_bw_override", 0, 0, "holds 0, outside what the cell allows"),
    ("link_bw_override", 0, "abc", "holds 'abc', not a number"),
    # What-if's scenario factors had no validation: text was a TypeError
    ("k_scale", 3, "abc", "holds 'abc', not a number (A positive factor"),
    ("m_scale", 1, 0, "holds 0, outside what the cell allows (A positive factor"),
    # the selected GPU's own figures (row 0, the A100 40GB SXM): a blank link bandwidth and
    # text for the HBM's were a line naming no cell, 0 a ZeroDivisionError
    ("spec_link_bw", 0, None, "is blank; it needs a number (A positive number)"),
    ("spec_hbm_bw", 0, "1.5 TB/s", "holds '1.5 TB/s', not a number"),
    ("spec_hbm_bw", 0, 0, "holds 0, outside what the cell allows"),
])
def test_a_bad_override_or_factor_is_named(built, tmp_path, name, row, value, needle):
    plan, path = built
    sheet, cell = _input_cell(plan, name, row)
    out = edit_cells(path, tmp_path / "odd.xlsx", {(sheet, cell): value})
    result = run("check", str(out))
    one_line_error(result, needle)
    assert f"{sheet}!{cell}" in result.output


def test_a_cleared_sm_count_reads_n_a_as_a_preset_without_one(built, tmp_path):
    """The selected GPU's SM count cleared: the sheet shows n/a and waves stay off, as for a
    preset that gives none (its INDEX read the blank as 0 and divided the waves by it, 188
    cells the model disagreed with)."""
    plan, path = built
    out = edit_cells(path, tmp_path / "sms.xlsx", {_input_cell(plan, "spec_sms", 0): None})
    result = run("check", str(out))
    assert result.exit_code == 0, result.output
    assert "every formula cell agrees" in result.output


def test_text_in_a_sweep_row_is_the_rows_hint_not_a_crash(built, tmp_path):
    """The sweep's rows take text (their guard shows "type m or × input m"): the model read
    it with isnan and raised TypeError."""
    plan, path = built
    out = edit_cells(path, tmp_path / "sweep.xlsx",
                     {_input_cell(plan, "sweep_m_typed", 1): "abc"})
    result = run("check", str(out))
    assert result.exit_code == 0, result.output
    assert "every formula cell agrees" in result.output


@pytest.mark.parametrize("value", ["auto", None, "x", 7])
def test_micro_batches_auto_blank_text_or_a_count_check_clean(built, tmp_path, value):
    """The micro-batch cell takes auto (or anything but a number: the sheet's ISNUMBER reads
    it as auto) or a whole number; each checks clean against the model."""
    plan, path = built
    out = edit_cells(path, tmp_path / "m.xlsx",
                     {cell_of(plan.defined_names["MICRO_BATCHES"]): value})
    result = run("check", str(out))
    assert result.exit_code == 0, result.output
    assert "every formula cell agrees" in result.output


def test_a_bug_in_the_model_is_not_a_user_error(built, monkeypatch):
    """The check turns only what a malformed file causes into WorkbookError: a TypeError (a
    bug in sheetgen) propagates as itself."""
    from sheetgen.verify import readback

    def broken(*args, **kwargs):
        raise TypeError("a bug")

    monkeypatch.setattr(readback, "plan_workbook", broken)
    with pytest.raises(TypeError, match="a bug"):
        check_workbook(built[1])
