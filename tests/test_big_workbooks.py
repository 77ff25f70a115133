"""Big workbooks (issue 21): read back what sheetgen writes, refuse bombs of the same size.

Sizes are modest (CI budget); thresholds are monkeypatched so the big-file logic runs."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from hostile_files import bomb_sheet, padding, write_package

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
    build_workbook(out, shapes=shapes(600), spare_rows=0)
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
    assert len(matmul.f_texts) > 600 * 10
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
