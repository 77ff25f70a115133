"""`sheetgen fill`: sheetgen's sheets added to a user's own workbook, linked live to their
m/k/n cells. Their sheets, values, formatting and chart survive; LibreOffice recalculates the
result to the reference model, and again after an edit in their sheet."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import openpyxl
import pytest
from helpers import load_workbook, one_line_error, run
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from openpyxl.chart import BarChart, Reference
from openpyxl.styles import Font, PatternFill
from openpyxl.workbook.defined_name import DefinedName
from xlsx_edit import edit_cells

import sheetgen
from sheetgen.assemble import BuildConfig, plan_build
from sheetgen.errors import InputError, WorkbookError
from sheetgen.inputs.shapes import Shape
from sheetgen.writers.fill import fill_workbook

SHAPES = [Shape(1, 4096, 12288), Shape(4096, 4096, 11008), Shape(8, 4096, 4096)]
ROWS = [4, 6, 7]  # their data rows (row 5 is blank)


def make_theirs(path: Path, extra_sheets: tuple[str, ...] = ()) -> Path:
    """A user's workbook: a titled, merged, formatted plan sheet with a blank row, a number
    stored as text, a formula and a bar chart of its own; a notes sheet."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Model plan"
    ws["A1"] = "Layers of my model"
    ws.merge_cells("A1:E1")
    ws["A1"].font = Font(bold=True, size=16)
    ws.append([])
    ws.append(["layer", "M (rows)", "K dim", "n", "weight"])
    ws.append(["qkv", 1, 4096, 12288, 0.5])
    ws.append([])
    ws.append(["mlp", "4096", 4096.0, 11008, 0.3])
    ws.append(["out", 8, 4096, 4096, 0.2])
    ws["B3"].fill = PatternFill("solid", start_color="FFFF00")
    for r in (4, 6, 7):
        ws[f"E{r}"].number_format = "0.0%"
        ws[f"F{r}"] = f"=E{r}*100"
    ws.column_dimensions["A"].width = 31
    chart = BarChart()
    chart.title = "my weights"
    chart.add_data(Reference(ws, min_col=5, min_row=3, max_row=7), titles_from_data=True)
    ws.add_chart(chart, "H2")
    notes = wb.create_sheet("Notes")
    notes["A1"] = "keep me"
    notes["A1"].font = Font(italic=True, color="FF0000")
    for name in extra_sheets:
        wb.create_sheet(name)["A1"] = f"their {name}"
    wb.save(path)
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fill_links_and_preserves_their_workbook(tmp_path: Path):
    theirs = make_theirs(tmp_path / "plan.xlsx")
    before = digest(theirs)
    result = run("fill", str(theirs), "--gpu", "H100 SXM")
    assert result.exit_code == 0, result.output
    assert "3 shapes linked to sheet 'Model plan', rows 4-7" in result.output
    out = tmp_path / "plan.sheetgen.xlsx"
    assert digest(theirs) == before  # never touched without --in-place
    wb = openpyxl.load_workbook(out, rich_text=True)
    assert wb.sheetnames == ["Model plan", "Notes", "Inputs", "Matmul", "Pipeline",
                             "Parallelism", "What-if", "GPU Specs"]
    ws = wb["Model plan"]
    # their values, formula, formatting, merge, width and chart
    assert [ws[f"B{r}"].value for r in ROWS] == [1, "4096", 8]
    assert ws["F4"].value == "=E4*100"
    assert ws["A1"].font.b and ws["A1"].font.sz == 16
    assert ws["B3"].fill.start_color.rgb.endswith("FFFF00")
    assert ws["E4"].number_format == "0.0%"
    assert ws.column_dimensions["A"].width == 31
    assert [str(r) for r in ws.merged_cells.ranges] == ["A1:E1"]
    assert len(ws._charts) == 1
    assert ws._charts[0].title.tx.rich.p[0].r[0].t == "my weights"
    assert wb["Notes"]["A1"].value == "keep me" and wb["Notes"]["A1"].font.i
    # sheetgen's m/k/n cells refer to theirs, row by row (blank row 5 skipped)
    m = wb["Matmul"]
    assert [m[f"A{6 + i}"].value for i in range(3)] == [
        f"='Model plan'!$B${r}*1" for r in ROWS]
    assert m["C8"].value == "='Model plan'!$D$7*1"
    assert m["A9"].value is None  # no spare rows by default: nothing reads an empty cell
    assert m["D6"].value.startswith("=IF(")
    assert len(m._charts) == 1
    assert "PEAK_FLOPS" in wb.defined_names
    assert wb["Inputs"]["B7"].value == "H100 SXM"
    props = {p.name: p.value for p in wb.custom_doc_props}
    assert props["sheetgen.linked_sheet"] == "Model plan"
    assert props["sheetgen.linked_rows"] == "4-7"


def test_fill_refuses_clobbering_and_keeps_a_backup_in_place(tmp_path: Path):
    theirs = make_theirs(tmp_path / "plan.xlsx")
    original = theirs.read_bytes()
    assert run("fill", str(theirs)).exit_code == 0
    one_line_error(run("fill", str(theirs)), "already exists", "--force")
    assert run("fill", str(theirs), "--force").exit_code == 0
    one_line_error(run("fill", str(theirs), "-o", str(theirs)), "is the input workbook",
                   "--in-place")
    result = run("fill", str(theirs), "--in-place")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "plan.xlsx.bak").read_bytes() == original
    # read-only: openpyxl reads the sheet list alone, not every cell of the filled workbook
    assert "Matmul" in openpyxl.load_workbook(theirs, read_only=True).sheetnames
    # filling again in place meets its own sheets: a clear refusal, nothing changed
    now = digest(theirs)
    one_line_error(run("fill", str(theirs), "--in-place"), "already has sheet(s)", "--replace")
    assert digest(theirs) == now
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "plan.sheetgen.xlsx", "plan.xlsx", "plan.xlsx.bak"]  # no temporaries left


def test_sheet_and_name_clashes(tmp_path: Path):
    theirs = make_theirs(tmp_path / "p.xlsx", extra_sheets=("Inputs",))
    one_line_error(run("fill", str(theirs)), "already has sheet(s) 'Inputs'", "--prefix")
    result = run("fill", str(theirs), "--prefix", "sg ")
    assert result.exit_code == 0, result.output
    wb = openpyxl.load_workbook(tmp_path / "p.sheetgen.xlsx", read_only=True)  # cells on demand
    assert wb.sheetnames[-6:] == ["sg Inputs", "sg Matmul", "sg Pipeline", "sg Parallelism",
                                  "sg What-if", "sg GPU Specs"]
    assert wb["Inputs"]["A1"].value == "their Inputs"
    assert wb.defined_names["PEAK_FLOPS"].attr_text.startswith("'sg Inputs'!")
    wb.close()
    named = load_workbook(make_theirs(tmp_path / "n.xlsx"))
    named.defined_names["RIDGE"] = DefinedName("RIDGE", attr_text="'Model plan'!$A$1")
    named.save(tmp_path / "n.xlsx")
    one_line_error(run("fill", str(tmp_path / "n.xlsx")), "already defines the name(s) RIDGE")


def test_fill_refuses_what_openpyxl_would_drop(tmp_path: Path):
    theirs = make_theirs(tmp_path / "p.xlsx")
    with zipfile.ZipFile(theirs, "a") as z:  # a slicer part, as Excel writes one
        z.writestr("xl/slicers/slicer1.xml", "<slicers/>")
    one_line_error(run("fill", str(theirs)), "slicers", "openpyxl cannot carry over",
                   "--allow-loss")
    assert not (tmp_path / "p.sheetgen.xlsx").exists()
    assert run("fill", str(theirs), "--allow-loss").exit_code == 0


def test_fill_input_errors(tmp_path: Path):
    bad = openpyxl.Workbook()
    bad.active.title = "S"
    for row in (["m", "k", "n"], [1, 2, 3], [4096.5, 1, 1], [1, "x", 1]):
        bad.active.append(row)
    bad.save(tmp_path / "bad.xlsx")
    one_line_error(run("fill", str(tmp_path / "bad.xlsx")), "sheet 'S' row 3, column m (A3)",
                   "row 4, column k (B4)")
    one_line_error(run("fill", str(tmp_path / "none.xlsx")), "no such workbook")
    (tmp_path / "s.csv").write_text("m,k,n\n1,2,3\n")
    one_line_error(run("fill", str(tmp_path / "s.csv")), "fill works on .xlsx")
    (tmp_path / "m.xlsm").write_bytes((tmp_path / "bad.xlsx").read_bytes())
    one_line_error(run("fill", str(tmp_path / "m.xlsm")), "lose the macros")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.xlsx", "m.xlsm", "s.csv"]


def test_fill_api(tmp_path: Path):
    theirs = make_theirs(tmp_path / "p.xlsx")
    out = sheetgen.fill(theirs, tmp_path / "o.xlsx", gpu="L4", dtype="fp16", spare_rows=2)
    wb = openpyxl.load_workbook(out, read_only=True)  # the cells asked for, not all of them
    ws = wb["Matmul"]
    assert ws["A8"].value == "='Model plan'!$B$7*1"
    assert ws["A9"].value is None and ws["E9"].value.startswith("=IF(D9")  # a spare row
    wb.close()
    with pytest.raises(InputError, match="no sheet 'Nope'"):
        fill_workbook(theirs, tmp_path / "x.xlsx", shapes_sheet="Nope")
    broken = tmp_path / "broken.xlsx"
    broken.write_bytes(b"not a zip")
    with pytest.raises(WorkbookError, match=r"broken\.xlsx is not an xlsx workbook"):
        fill_workbook(broken)


@libreoffice_job("fill-filled-and-edited", to="values")
def _filled_and_edited(tmp: Path) -> dict[str, Path]:
    theirs = make_theirs(tmp / "plan.xlsx", extra_sheets=("Inputs",))
    filled = sheetgen.fill(theirs, tmp / "filled.xlsx", gpu="H100 SXM", prefix="sg ")
    # their edit after the fill: a new m in their sheet, the text "4096" becomes a number
    edited = edit_cells(filled, tmp / "edited.xlsx", {("Model plan", "B7"): 2048,
                                                      ("Model plan", "B6"): 4096})
    return {"filled": filled, "edited": edited}


@needs_libreoffice
def test_libreoffice_recalculates_the_filled_workbook(libreoffice):
    sources = libreoffice.sources("fill-filled-and-edited")
    # openpyxl stores no cached results: whatever LibreOffice shows, it computed (the one
    # cell read, not every sheet)
    wb = openpyxl.load_workbook(sources["filled"], read_only=True, data_only=True)
    assert wb["sg Matmul"]["E6"].value is None
    wb.close()
    out = libreoffice.outputs("fill-filled-and-edited")
    links = {d: [("Model plan", r - 1, c) for r in ROWS] for d, c in zip("mkn", (1, 2, 3),
                                                                          strict=True)}
    for key, shapes in (("filled", SHAPES),
                        ("edited", [*SHAPES[:2], Shape(2048, 4096, 4096)])):
        plan = plan_build(BuildConfig(gpu="H100 SXM", shapes=shapes, spare_rows=0),
                          prefix="sg ", links=links)
        values = read_values(out[key])
        assert mismatches(plan, values) == [], key
        # their own sheets come through LibreOffice with their values
        assert values["Model plan"][(3, 5)] == pytest.approx(50.0)
        assert values["Inputs"][(0, 0)] == "their Inputs"
    edited_values = read_values(out["edited"])["sg Matmul"]
    assert edited_values[(7, 0)] == 2048
    assert edited_values[(7, 4)] == pytest.approx(2 * 2048 * 4096 * 4096)


@pytest.mark.parametrize(("part", "content", "what"), [
    ("xl/drawings/drawing1.xml", "<xdr:wsDr><xdr:sp><xdr:nvSpPr/></xdr:sp></xdr:wsDr>",
     "drawn shapes or text boxes"),
    ("xl/worksheets/sheet1.xml", "<worksheet><extLst><x14:sparklineGroups/></extLst>",
     "sparklines"),
    ("xl/worksheets/sheet1.xml", "<worksheet><x14:conditionalFormattings/></worksheet>",
     "Excel 2010+ extended conditional formats or validations"),
    ("xl/charts/chartEx1.xml", "<cx:chartSpace/>", "Excel 2016+ charts (chartex)"),
])
def test_losses_are_detected(tmp_path: Path, part, content, what):
    from sheetgen.writers.into_workbook import losses

    path = tmp_path / "x.xlsx"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(part, content)
        z.writestr("xl/drawings/drawing2.xml", "<xdr:wsDr><xdr:graphicFrame/></xdr:wsDr>")
    assert losses(path) == [what]
    assert losses(make_theirs(tmp_path / "plain.xlsx")) == []  # a chart alone is carried


def test_progress_bar_only_on_a_terminal(monkeypatch, capsys):
    import sys

    from sheetgen.cli import progress_bar

    with progress_bar(100_000, "filling") as update:
        assert update is not None  # piped (pytest captures stderr): plain lines, a few
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with progress_bar(100_000, "filling") as update:
        assert update is not None
        update(100_000)
    with progress_bar(10, "filling") as update:
        assert update is None  # too small to bother


@pytest.mark.parametrize("prefix", ["", "sg "])
def test_refill_in_place_after_adding_rows(tmp_path: Path, prefix: str):
    from sheetgen.verify.check import check_workbook

    theirs = make_theirs(tmp_path / "plan.xlsx", extra_sheets=("Inputs",) if prefix else ())
    args = ["--prefix", prefix] if prefix else []
    assert run("fill", str(theirs), "--in-place", *args).exit_code == 0
    assert check_workbook(theirs).ok  # a filled workbook checks clean, prefix or not
    # a second fill without --replace is refused, and says what to do
    one_line_error(run("fill", str(theirs), "--in-place", "--force"), "--replace")
    # the user adds a row to their table, then re-fills in place
    edited = edit_cells(theirs, tmp_path / "edited.xlsx", {
        ("Model plan", f"{col}8"): value
        for col, value in zip("ABCDE", ["new", 2048, 2048, 2048, 0.1], strict=True)})
    edited.replace(theirs)  # check_workbook below evaluates every formula
    result = run("fill", str(theirs), "--in-place", "--force", "--replace")
    assert result.exit_code == 0, result.output
    assert "4 shapes linked to sheet 'Model plan', rows 4-8" in result.output
    wb = openpyxl.load_workbook(theirs, read_only=True)  # the cells asked for, not all of them
    matmul = wb[f"{prefix}Matmul"]
    assert matmul["A9"].value == "='Model plan'!$B$8*1"  # the new row is linked
    assert wb.sheetnames.count(f"{prefix}Matmul") == 1
    assert wb["Notes"]["A1"].value == "keep me"
    wb.close()
    report = check_workbook(theirs)
    assert report.ok and report.shape_rows == 4


def test_replace_needs_an_earlier_fill(tmp_path: Path):
    theirs = make_theirs(tmp_path / "plan.xlsx")
    one_line_error(run("fill", str(theirs), "--replace"), "not filled by sheetgen")


def test_a_refill_leaves_the_replaced_sheets_unread(tmp_path: Path):
    """A re-fill loads sheetgen's earlier sheets as empty sheets (it deletes them), every
    other sheet whole and in its place. (Its result is the one a whole load gives, but for
    a border openpyxl adds while loading the old sheets' merged cells, unused once they
    are gone: compared part by part when this was written; test_refill_in_place_after_
    adding_rows checks such a result.)"""
    from sheetgen.writers.fill import without_sheets

    first = fill_workbook(make_theirs(tmp_path / "plan.xlsx"), tmp_path / "first.xlsx").path
    package = without_sheets(first, {"matmul", "inputs"})
    assert package is not None
    wb = openpyxl.load_workbook(package)
    assert wb.sheetnames == openpyxl.load_workbook(first, read_only=True).sheetnames
    assert wb["Matmul"].max_row == 1 and wb["Inputs"].max_row == 1
    assert not wb["Matmul"].merged_cells.ranges and not wb["Matmul"]._charts
    assert wb["Pipeline"].max_row > 20 and wb["Pipeline"].merged_cells.ranges
    assert wb["Model plan"]["A1"].value == "Layers of my model"
    assert wb["Model plan"]._charts and wb["Model plan"]["F4"].value == "=E4*100"
    (tmp_path / "odd.xlsx").write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
    assert without_sheets(tmp_path / "odd.xlsx", {"matmul"}) is None
