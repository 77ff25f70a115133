"""User-facing failures: each is one WorkbookError line naming the sheet and cell (strict
evaluation, lenient=False, as `check` runs it; the default leaves such cells "not evaluated",
tests/test_evaluate_odd_cells.py)."""

from __future__ import annotations

import zipfile

import pytest
from evaluate_helpers import write_book

from sheetgen.errors import WorkbookError
from sheetgen.evaluate import evaluate_workbook


def _fails(path, match: str) -> str:
    with pytest.raises(WorkbookError, match=match) as info:
        evaluate_workbook(path, lenient=False)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


def test_circular_reference_between_cells(tmp_path):
    path = write_book(tmp_path / "c.xlsx", {"S": {"A1": "=B1+1", "B1": "=C1", "C1": "=A1*2"}})
    msg = _fails(path, r"circular reference at S!")
    assert "A1" in msg and "B1" in msg and "C1" in msg


def test_circular_reference_in_a_column(tmp_path):
    cells = {f"A{r}": f"=A{r + 1}+1" for r in range(1, 20)}
    cells["A20"] = "=A1"
    _fails(write_book(tmp_path / "c.xlsx", {"S": cells}), r"circular reference at S!A\d+")


def test_self_reference(tmp_path):
    _fails(write_book(tmp_path / "c.xlsx", {"My Sheet": {"B2": "=B2+1"}}),
           r"circular reference at 'My Sheet'!B2")  # fmt: skip


def test_range_over_own_column_is_circular(tmp_path):
    cells = {f"A{r}": r for r in range(1, 5)}
    cells.update({f"B{r}": "=SUM($B$1:$B$4)" for r in range(1, 5)})
    _fails(write_book(tmp_path / "c.xlsx", {"S": cells}), r"circular reference at S!B")


def test_no_false_cycle_between_interleaved_columns(tmp_path):
    # D reads E on the same row, E reads D one row up: the columns depend on each other but
    # no cell depends on itself.
    cells: dict[str, object] = {"D1": 1, "E1": 1}
    for r in range(2, 40):
        cells[f"D{r}"] = f"=E{r}+1"
        cells[f"E{r}"] = f"=D{r - 1}*2"
    ev = evaluate_workbook(write_book(tmp_path / "ok.xlsx", {"S": cells}))
    d, e = 1.0, 1.0
    for _ in range(2, 40):
        e = d * 2
        d = e + 1
    assert ev.value("S", "D39") == d and ev.value("S", "E39") == e


def test_running_total_recurrence(tmp_path):
    cells: dict[str, object] = {"B1": 0}
    for r in range(2, 300):
        cells[f"A{r}"] = r
        cells[f"B{r}"] = f"=B{r - 1}+A{r}"
    ev = evaluate_workbook(write_book(tmp_path / "rt.xlsx", {"S": cells}))
    assert ev.value("S", "B299") == sum(range(2, 300))


def test_unsupported_function(tmp_path):
    path = write_book(tmp_path / "u.xlsx", {"Matmul": {"E6": "=XLOOKUP(1,A1:A3,B1:B3)"}})
    msg = _fails(path, r"unsupported function XLOOKUP in Matmul!E6")
    assert msg == "unsupported function XLOOKUP in Matmul!E6"


def test_wrong_argument_count(tmp_path):
    _fails(write_book(tmp_path / "u.xlsx", {"S": {"C3": "=ROUND(1)"}}), r"ROUND .* in S!C3")


def test_syntax_error_names_the_cell(tmp_path):
    _fails(
        write_book(tmp_path / "u.xlsx", {"S": {"C3": "={1,2}"}}), r"cannot parse formula in S!C3"
    )


def test_not_a_zip(tmp_path):
    p = tmp_path / "x.xlsx"
    p.write_text("hello, I am text")
    _fails(p, "not an xlsx workbook")


def test_xls_named_non_zip(tmp_path):
    p = tmp_path / "old.xls"
    p.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 500)
    msg = _fails(p, "an old-format .xls workbook; save it as .xlsx")
    assert ".xls" in msg


def test_zip_without_workbook(tmp_path):
    p = tmp_path / "z.xlsx"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("hello.txt", "hi")
    _fails(p, "no xl/workbook.xml")


def test_truncated_file(tmp_path):
    good = write_book(tmp_path / "g.xlsx", {"S": {f"A{r}": r for r in range(1, 2000)}})
    bad = tmp_path / "bad.xlsx"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    _fails(bad, "not")


def test_corrupt_sheet_xml(tmp_path):
    good = write_book(tmp_path / "g.xlsx", {"S": {"A1": 1}})
    bad = tmp_path / "bad.xlsx"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename.endswith("sheet1.xml"):
                data = data[: len(data) // 2]
            dst.writestr(item, data)
    _fails(bad, "not a readable xlsx workbook")


def test_missing_file(tmp_path):
    _fails(tmp_path / "nope.xlsx", "workbook not found")


def test_unknown_sheet_and_bad_address(tmp_path):
    ev = evaluate_workbook(write_book(tmp_path / "g.xlsx", {"S": {"A1": 1}}))
    with pytest.raises(WorkbookError, match="no sheet named 'T'"):
        ev.value("T", "A1")
    with pytest.raises(WorkbookError, match="not a cell address"):
        ev.value("S", "1A")
