"""Reading back a workbook laid out otherwise (issue 21): an older sheetgen's workbook, or one
whose recorded layout differs from this version's, is refused in one `Error:` line naming
what differs, before any evaluation; a hand-made sheet needs no fingerprint."""

from __future__ import annotations

import dataclasses
import json
import re
import zipfile
from pathlib import Path

import pytest
from helpers import one_line_error, run, sheetgen_process
from xlsx_edit import replace_parts

from sheetgen.assemble import BuildConfig, plan_build, sheet_specs
from sheetgen.errors import WorkbookError
from sheetgen.inputs.shapes import Shape
from sheetgen.layout.planner import LAYOUT_PROPERTY, layout_fingerprint
from sheetgen.verify.check import check_workbook, read_workbook
from sheetgen.writers.xlsx import write_xlsx

SHAPES = [Shape(1, 4096, 4096), Shape(300, 70, 5)]
CUSTOM = "docProps/custom.xml"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("layout")
    return write_xlsx(plan_build(BuildConfig(shapes=SHAPES, spare_rows=2)), tmp / "built.xlsx")


def with_properties(src: Path, out: Path, edit) -> Path:
    """A copy of `src` whose docProps/custom.xml is `edit(text)`, every other part as it was."""
    with zipfile.ZipFile(src) as z:
        text = edit(z.read(CUSTOM).decode("utf-8"))
    return replace_parts(src, out, {CUSTOM: text.encode("utf-8")})


def drop_property(name: str):
    pattern = re.compile(r'<property [^>]*name="' + re.escape(name) + r'">.*?</property>', re.S)

    def edit(xml: str) -> str:
        assert pattern.search(xml), f"no property {name}"
        return pattern.sub("", xml)

    return edit


def recorded(path: Path) -> dict[str, str]:
    with zipfile.ZipFile(path) as z:
        xml = z.read(CUSTOM).decode("utf-8")
    m = re.search(r'name="' + re.escape(LAYOUT_PROPERTY) + r'"><vt:lpwstr>([^<]*)<', xml)
    assert m, "the workbook records no layout"
    return json.loads(m.group(1).replace("&quot;", '"'))


def older(built: Path, tmp: Path) -> Path:
    """What a sheetgen from before the Parallelism sheet's best-M table wrote: no record of
    that table's rows, and no layout fingerprint (reading it used to raise KeyError)."""
    first = with_properties(built, tmp / "step.xlsx", drop_property("sheetgen.rows.pp_best_m"))
    return with_properties(first, tmp / "older.xlsx", drop_property(LAYOUT_PROPERTY))


def test_the_workbook_records_one_fingerprint_per_sheet_and_not_its_row_counts(built, tmp_path):
    marks = recorded(built)
    assert list(marks) == ["Inputs", "Matmul", "Pipeline", "Parallelism", "What-if",
                           "GPU Specs"]
    assert all(re.fullmatch(r"[0-9a-f]{12}", v) for v in marks.values()), marks
    bigger = write_xlsx(plan_build(BuildConfig(shapes=SHAPES * 20, spare_rows=7, layers=9)),
                        tmp_path / "bigger.xlsx")
    assert recorded(bigger) == marks  # more rows: the same cells


def test_moving_one_table_changes_that_sheets_fingerprint_only():
    specs = sheet_specs()
    before = layout_fingerprint(specs)
    i = next(i for i, s in enumerate(specs) if s.name == "Matmul")
    table = specs[i].tables[0]
    moved = dataclasses.replace(table, header_row=table.header_row + 1)
    specs[i] = dataclasses.replace(specs[i], tables=[moved, *specs[i].tables[1:]])
    after = layout_fingerprint(specs)
    assert [s for s in before if before[s] != after[s]] == ["Matmul"]


@pytest.mark.parametrize("command", ["check", "read"])
def test_an_older_layout_is_one_line_naming_the_table(built, tmp_path, command):
    path = older(built, tmp_path)
    line = one_line_error(run(command, str(path)), "older.xlsx", "different cell layout",
                          "pp_best_m", "Parallelism", "rebuild")
    assert "KeyError" not in line


def test_an_older_layout_in_a_real_process_exits_2_without_a_traceback(built, tmp_path):
    one_line_error(sheetgen_process("check", str(older(built, tmp_path))), "pp_best_m")


def test_the_api_raises_the_projects_error(built, tmp_path):
    path = older(built, tmp_path)
    with pytest.raises(WorkbookError, match="pp_best_m"):
        check_workbook(path)
    with pytest.raises(WorkbookError, match="different cell layout"):
        read_workbook(path)


def test_a_sheet_laid_out_otherwise_is_named(built, tmp_path):
    mark = f'"Pipeline":"{recorded(built)["Pipeline"]}"'

    def edit(xml: str) -> str:
        assert mark in xml
        return xml.replace(mark, '"Pipeline":"0123456789ab"')

    path = with_properties(built, tmp_path / "moved.xlsx", edit)
    line = one_line_error(run("check", str(path)), "Pipeline", "different cell layout")
    assert "Matmul" not in line and "Inputs" not in line
    with pytest.raises(WorkbookError, match="Pipeline"):
        read_workbook(path)


def test_a_damaged_fingerprint_is_one_line(built, tmp_path):
    pattern = re.compile(r'(name="' + re.escape(LAYOUT_PROPERTY) + r'"><vt:lpwstr>)[^<]*')
    path = with_properties(built, tmp_path / "damaged.xlsx",
                           lambda xml: pattern.sub(r"\1not json", xml))
    one_line_error(run("check", str(path)), LAYOUT_PROPERTY)


def renamed(src: Path, out: Path, old: str, new: str) -> Path:
    """A copy of `src` with sheet `old` called `new` in xl/workbook.xml, as a user renaming
    its tab leaves it (openpyxl's title setter changes only that name too; formulas and
    defined names that name the sheet are left as they were), every other part unchanged:
    no whole openpyxl load and save (5 s)."""
    with zipfile.ZipFile(src) as z:
        text, n = re.subn(r'(<sheet\b[^>]*?\bname=")' + re.escape(old) + '"',
                          r"\g<1>" + new + '"', z.read("xl/workbook.xml").decode("utf-8"))
    assert n == 1, f"no sheet {old}"
    return replace_parts(src, out, {"xl/workbook.xml": text.encode("utf-8")})


def test_a_renamed_sheet_is_named_with_what_to_do(built, tmp_path):
    path = renamed(built, tmp_path / "renamed.xlsx", "Pipeline", "Pipe")
    one_line_error(run("read", str(path)), "Pipeline", "rename")


def test_a_built_workbook_still_checks_clean(built):
    report = check_workbook(built)
    assert report.ok and report.shape_rows == len(SHAPES)

