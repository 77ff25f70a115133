"""Shapes from the files users really have: xlsx made by openpyxl and by hand (raw XML), odd
headers, titles above the header, merged cells, blank rows, numbers stored as text."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from click.testing import CliRunner
from openpyxl.styles import Font

from sheetgen.api import to_shapes
from sheetgen.cli import cli
from sheetgen.errors import InputError
from sheetgen.inputs.shapes import (
    HEADER_SEARCH_ROWS,
    MAX_REPORTED,
    Shape,
    header_key,
    read_shape_table,
    read_shapes,
)


@pytest.mark.parametrize(("cell", "key"), [
    ("m", "m"), ("M", "m"), (" K ", "k"), ("m (rows)", "m"), ("K dim", "k"),
    ("n [cols]", "n"), ("N_size", "n"), ("k (inner, reduction)", "k"), ("M:", "m"),
    ("mm", None), ("name", None), ("", None), (None, None), ("km", None), (4, None),
])
def test_header_key(cell, key):
    assert header_key(cell) == key


def openpyxl_book(path: Path, sheets: dict[str, list[list[object]]],
                  merge: dict[str, str] | None = None) -> Path:
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for name, rows in sheets.items():
        ws = wb.create_sheet(name)
        for row in rows:
            ws.append(row)
        if merge and name in merge:
            ws.merge_cells(merge[name])
            ws[merge[name].split(":")[0]].font = Font(bold=True, size=14)
    wb.save(path)
    return path


def _cell_xml(ref: str, value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        text = value.replace("&", "&amp;").replace("<", "&lt;")
        return f'<c r="{ref}" t="inlineStr"><is><t>{text}</t></is></c>'
    return f'<c r="{ref}"><v>{value}</v></c>'


def handwritten_book(path: Path, rows: list[list[object]], merge: str | None = None) -> Path:
    """A minimal SpreadsheetML package written by hand: inline strings, no <dimension>,
    no styles part, a merged title: what small tools and scripts produce."""
    from xlsxwriter.utility import xl_rowcol_to_cell

    body = "".join(
        f'<row r="{r + 1}">'
        + "".join(_cell_xml(xl_rowcol_to_cell(r, c), v) for c, v in enumerate(row))
        + "</row>"
        for r, row in enumerate(rows)
    )
    merged = f'<mergeCells count="1"><mergeCell ref="{merge}"/></mergeCells>' if merge else ""
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rel_ns = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
    rels = "http://schemas.openxmlformats.org/package/2006/relationships"
    office = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    ct = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("[Content_Types].xml",
                   '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/'
                   'package/2006/content-types"><Default Extension="rels" ContentType="'
                   'application/vnd.openxmlformats-package.relationships+xml"/>'
                   '<Default Extension="xml" ContentType="application/xml"/>'
                   f'<Override PartName="/xl/workbook.xml" ContentType="{ct}.sheet.main+xml"/>'
                   f'<Override PartName="/xl/worksheets/sheet1.xml" '
                   f'ContentType="{ct}.worksheet+xml"/></Types>')
        z.writestr("_rels/.rels",
                   f'<?xml version="1.0"?><Relationships xmlns="{rels}"><Relationship Id="r1" '
                   f'Type="{office}/officeDocument" Target="xl/workbook.xml"/></Relationships>')
        z.writestr("xl/workbook.xml",
                   f'<?xml version="1.0"?><workbook {ns} {rel_ns}><sheets>'
                   '<sheet name="My shapes" sheetId="1" r:id="rId1"/></sheets></workbook>')
        z.writestr("xl/_rels/workbook.xml.rels",
                   f'<?xml version="1.0"?><Relationships xmlns="{rels}"><Relationship '
                   f'Id="rId1" Type="{office}/worksheet" Target="worksheets/sheet1.xml"/>'
                   '</Relationships>')
        z.writestr("xl/worksheets/sheet1.xml",
                   f'<?xml version="1.0"?><worksheet {ns}><sheetData>{body}</sheetData>'
                   f'{merged}</worksheet>')
    return path


TITLED = [
    ["Shapes for the decode benchmark", None, None, None],
    [None, None, None, None],
    ["layer", "M (rows)", "K dim", "n [cols]"],
    ["qkv", 1, 4096, 12288],
    [None, None, None, None],
    ["mlp", "4096", 4096.0, 11008],
    ["note: more later", None, None, None],
]


@pytest.mark.parametrize("maker", ["openpyxl", "handwritten"])
def test_titled_sheet_with_odd_headers(tmp_path: Path, maker):
    path = tmp_path / "shapes.xlsx"
    if maker == "openpyxl":
        openpyxl_book(path, {"Notes": [["nothing here"]], "Dims": TITLED}, {"Dims": "A1:D1"})
        sheet = "Dims"
    else:
        handwritten_book(path, TITLED, merge="A1:D1")
        sheet = "My shapes"
    table = read_shape_table(path)
    assert table.sheet == sheet and table.header_row == 3
    assert table.columns == {"m": 1, "k": 2, "n": 3}
    assert table.rows == [4, 6]
    assert table.shapes == [Shape(1, 4096, 12288), Shape(4096, 4096, 11008)]


def test_every_bad_cell_is_reported_with_sheet_row_column(tmp_path: Path):
    rows = [["m", "k", "n"], [4096.5, 1, 1], [1, "abc", 0], [True, 2, 3], [1, None, 1],
            [2**40, 1, 1]]
    path = openpyxl_book(tmp_path / "bad.xlsx", {"S": rows})
    with pytest.raises(InputError) as info:
        read_shapes(path)
    msg = str(info.value)
    for needle in ("sheet 'S' row 2, column m (A2)", "'4096.5' is not a whole number",
                   "row 3, column k (B3): 'abc' is not a number",
                   "row 3, column n (C3)", "at least 1", "row 4, column m (A4)",
                   "row 5, column k (B5): blank", "row 6, column m (A6)", "too large"):
        assert needle in msg, (needle, msg)


def test_many_bad_cells_are_capped(tmp_path: Path):
    rows = [["m", "k", "n"]] + [[0, 1, 1]] * (MAX_REPORTED + 7)
    with pytest.raises(InputError, match=r"\(and 7 more\)$"):
        read_shapes(openpyxl_book(tmp_path / "bad.xlsx", {"S": rows}))


def test_shapes_sheet_choice_and_errors(tmp_path: Path):
    path = openpyxl_book(tmp_path / "b.xlsx", {"A": [["m", "k", "n"], [1, 2, 3]],
                                               "B": [["M", "K", "N"], [4, 5, 6]],
                                               "C": [["x"]]})
    assert read_shapes(path) == [Shape(1, 2, 3)]
    assert read_shapes(path, "B") == [Shape(4, 5, 6)]
    with pytest.raises(InputError, match=r"no sheet 'Z'.*'A', 'B', 'C'"):
        read_shapes(path, "Z")
    with pytest.raises(InputError, match=r"sheet 'C'.*missing column\(s\) m, k, n"):
        read_shapes(path, "C")
    none = openpyxl_book(tmp_path / "none.xlsx", {"A": [["a", "b"], [1, 2]]})
    with pytest.raises(InputError, match=r"no sheet has a header row.*--shapes-sheet"):
        read_shapes(none)


def test_deep_header_in_an_auto_detected_workbook_says_where_to_look(tmp_path: Path):
    """A header below the search window of every sheet: the message says how far each sheet
    was searched and names the sheet (quoted for the shell) that has one further down; named
    with --shapes-sheet, that sheet is searched to its end and read."""
    notes = [[f"note {i}"] for i in range(HEADER_SEARCH_ROWS + 10)]  # rows 1..60
    path = openpyxl_book(tmp_path / "deep.xlsx", {
        "Readme": [["about"], [None], ["these shapes"]],  # non-blank rows 1 and 3
        "My Data": [*notes, ["M", "K", "N"], [8, 4096, 4096]],  # header on row 61
    })
    with pytest.raises(InputError) as info:
        read_shapes(path)
    msg = str(info.value)
    assert "in its first 50 non-blank rows" in msg, msg
    assert "searched 'Readme' to row 3, 'My Data' to row 50" in msg, msg
    assert "sheet 'My Data' has one on row 61: pass --shapes-sheet 'My Data'" in msg, msg
    assert read_shapes(path, "My Data") == [Shape(8, 4096, 4096)]
    bad = CliRunner().invoke(cli, ["show", "--shapes", str(path)])
    assert bad.exit_code == 2 and bad.output.count("\n") == 1, bad.output
    assert bad.output.startswith("Error: deep.xlsx: no sheet has a header row")
    good = CliRunner().invoke(cli, ["show", "--shapes", str(path), "--shapes-sheet", "My Data"])
    assert good.exit_code == 0, good.output
    assert "4096" in good.output


def test_no_header_anywhere_in_a_workbook_lists_the_search(tmp_path: Path):
    path = openpyxl_book(tmp_path / "none.xlsx", {"A": [["a", "b"], [1, 2]], "B": []})
    with pytest.raises(InputError, match=r"\(searched 'A' to row 2, 'B' \(empty\)\); name "
                                         r"the sheet holding the shapes with --shapes-sheet$"):
        read_shapes(path)


def test_deep_csv_header_names_the_row_where_the_search_stopped(shapes_csv):
    """Blank lines do not count: with a blank line after each note, the 50th non-blank row
    is line 99, so the search stops there and the header on line 103 is out of reach."""
    notes = "".join(f"note {i}\n\n" for i in range(HEADER_SEARCH_ROWS + 1))  # lines 1..102
    path = shapes_csv(notes + "m,k,n\n1,2,3\n")
    with pytest.raises(InputError, match=r"is on row 103, .* first 50 non-blank rows \(the "
                                         r"search stopped at row 99\); delete the rows above"):
        read_shapes(path)

def test_not_a_workbook(tmp_path: Path):
    fake = tmp_path / "x.xlsx"
    fake.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(InputError, match=r"x\.xlsx is not an xlsx workbook \(not a zip file"):
        read_shapes(fake)
    (tmp_path / "old.xls").write_bytes(b"\xd0\xcf")
    with pytest.raises(InputError, match=r"old \.xls format"):
        read_shapes(tmp_path / "old.xls")


def test_csv_header_below_a_title_and_odd_spellings(shapes_csv):
    path = shapes_csv("My shapes,,\n\nM (rows),K dim,N_size,comment\n1,2,3,x\n,,,only a note\n"
                      "4,5,6\n")
    table = read_shape_table(path)
    assert table.header_row == 3 and table.rows == [4, 6]
    assert table.shapes == [Shape(1, 2, 3), Shape(4, 5, 6)]


def test_dataframe_headers_use_the_same_matcher():
    df = pd.DataFrame({"M (rows)": [1], "K dim": [2.0], "N": ["3"], "x": ["y"]})
    assert to_shapes(df) == [Shape(1, 2, 3)]


def test_build_from_xlsx_shapes_through_the_cli(tmp_path: Path):
    src = openpyxl_book(tmp_path / "in.xlsx", {"Other": [["a"]], "Dims": TITLED})
    out = tmp_path / "o.xlsx"
    result = CliRunner().invoke(cli, ["build", str(out), "--shapes", str(src),
                                      "--shapes-sheet", "Dims", "--spare-rows", "0"])
    assert result.exit_code == 0, result.output
    assert "2 shape rows" in result.output
    bad = CliRunner().invoke(cli, ["build", str(out), "--shapes", str(src), "--shapes-sheet",
                                   "Other", "--force"])
    assert bad.exit_code == 2 and bad.output.startswith("Error: ")
    assert "sheet 'Other'" in bad.output
