"""Reliability suite: hostile and damaged files on every reading path (check, read, fill,
--shapes). Each must give one `Error:` line naming the limit or the damage, exit 2, quickly
and in bounded memory -- never a traceback. The files are made here (tests/hostile_files.py);
bombs are compressed, so nothing large is stored or held."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import openpyxl
import pytest
from helpers import one_line_error, run
from hostile_files import (
    bomb_sheet,
    corrupt_deflate,
    encrypted_file,
    formula,
    num,
    padding,
    shapes_sheet,
    sheet_xml,
    write_package,
)

import sheetgen.files.untrusted as untrusted
from sheetgen.errors import InputError, WorkbookError
from sheetgen.evaluate import evaluate_cells, evaluate_workbook
from sheetgen.evaluate.limits import MAX_FORMULA_CHARS, MAX_FUNCTION_NESTING
from sheetgen.inputs.shapes import HEADER_SEARCH_ROWS, read_shape_table

TESTS = Path(__file__).parent


def every_path(tmp_path: Path, path: Path, *needles: str) -> None:
    """check, read, fill and build --shapes all refuse `path` with one line."""
    one_line_error(run("check", str(path)), *needles)
    one_line_error(run("read", str(path)), *needles)
    one_line_error(run("fill", str(path), "-o", str(tmp_path / "filled.xlsx")), *needles)
    one_line_error(run("build", str(tmp_path / "built.xlsx"), "--shapes", str(path)),
                   *needles)
    assert not (tmp_path / "filled.xlsx").exists() and not (tmp_path / "built.xlsx").exists()


def good_shapes(path: Path, **kwargs) -> Path:
    return write_package(path, {"Shapes": b"".join(shapes_sheet([(1, 2, 3), (4, 5, 6)]))},
                         **kwargs)


# ---- 5. zip bombs: the budget covers every part, checked before any is read ---------------
@pytest.mark.parametrize("part", ["xl/worksheets/sheet9.XML", "xl/_rels/bloat.rels",
                                  "docProps/custom.xml", "xl/media/image1.png"])
def test_every_part_counts_against_the_budget(tmp_path, monkeypatch, part):
    monkeypatch.setattr(untrusted, "MAX_PACKAGE_BYTES", 200_000)
    monkeypatch.setattr(untrusted, "MAX_OPENPYXL_BYTES", 200_000)
    path = good_shapes(tmp_path / "b.xlsx", extra={part: padding(300_000)})
    assert path.stat().st_size < 20_000  # compressed: a bomb
    every_path(tmp_path, path, "b.xlsx would decompress to", "more than the 200,000 bytes")


def test_a_real_bomb_is_refused_quickly_in_little_memory(tmp_path):
    """600 MB of sheet XML in a file of well under 1 MB. Each path runs in a fresh process:
    first on a 9-byte non-zip file, then on the bomb. The peak is the process's VmHWM (the
    child's own: ru_maxrss keeps the forking parent's peak across exec), read after each
    run; the high-water mark only rises, so the bomb may raise it at most 50 MB above the
    tiny file's (nothing is decompressed). One process a path, not two: the tiny run's
    peak is what a fresh process refusing the tiny file reaches, and imports the bomb run
    would add are already counted in it."""
    path = write_package(tmp_path / "bomb.xlsx", {"Shapes": bomb_sheet(600_000_000)})
    assert path.stat().st_size < 1_500_000
    tiny = tmp_path / "tiny.xlsx"
    tiny.write_bytes(b"not a zip")
    script = textwrap.dedent("""
        import json, sys
        from click.testing import CliRunner
        from sheetgen.cli import cli
        out = []
        for args in json.loads(sys.argv[1]):
            r = CliRunner().invoke(cli, args)
            hwm = next(line for line in open("/proc/self/status")
                       if line.startswith("VmHWM"))
            out.append([r.exit_code, r.output, int(hwm.split()[1]) / 1024])
        print(json.dumps(out))
    """)

    def peaks(*runs: list[str]) -> list[tuple[int, str, float]]:
        out = subprocess.run([sys.executable, "-c", script, json.dumps(runs)],
                             capture_output=True, text=True, check=True, timeout=120).stdout
        return [tuple(r) for r in json.loads(out)]  # type: ignore[misc]

    for make_args in (lambda f: ["check", str(f)],
                      lambda f: ["fill", str(f), "-o", str(tmp_path / "o.xlsx")],
                      lambda f: ["build", str(tmp_path / "x.xlsx"), "--shapes", str(f)]):
        (base_code, _, base_mb), (code, output, bomb_mb) = peaks(make_args(tiny),
                                                                 make_args(path))
        assert code == 2 and "would decompress to 600 MB" in output, output
        assert base_code == 2
        assert bomb_mb < base_mb + 50, (make_args(path)[0], bomb_mb, base_mb)


def test_fill_has_its_own_smaller_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(untrusted, "MAX_OPENPYXL_BYTES", 50_000)
    path = good_shapes(tmp_path / "big.xlsx", extra={"xl/worksheets/sheet2.xml":
                                                     bomb_sheet(60_000)})
    one_line_error(run("fill", str(path), "-o", str(tmp_path / "o.xlsx")), "50,000 bytes")
    one_line_error(run("build", str(tmp_path / "x.xlsx"), "--shapes", str(path)),
                   "50,000 bytes")
    assert "50,000" not in run("read", str(path), "--sheet", "Shapes").output  # 512 MB there


# ---- 6. dense or absurd coordinates: allocation by the cells present -----------------------
def test_one_cell_at_the_bottom_of_every_column(tmp_path):
    cells = [num(f"{openpyxl.utils.get_column_letter(c)}1048576", 1.0)
             for c in range(1, 16385)]
    other = write_package(tmp_path / "wide.xlsx", {
        "S": b"".join(sheet_xml([formula("A1", "SUM(Other!A1048576:XFD1048576)"),
                                 formula("B1", "COUNTBLANK(Other!H:H)"),
                                 formula("C1", "SUM(Other!XFD:XFD)")])),
        "Other": b"".join(sheet_xml(cells, dimension="A1:XFD1048576")),
    })
    ev = evaluate_workbook(other)
    assert ev.value("S", "A1") == 16384.0
    assert ev.value("S", "B1") == 1_048_575.0  # every row of column H but the last is blank
    assert ev.value("S", "C1") == 1.0


def test_a_range_over_the_whole_grid_is_clipped_to_the_cells_present(tmp_path):
    path = write_package(tmp_path / "grid.xlsx", {
        "S": b"".join(sheet_xml([formula("A1", "SUM(Other!A1:XFD1048576)"),
                                 formula("B1", "COUNTBLANK(Other!A1:XFD1048576)")])),
        "Other": b"".join(sheet_xml([num("A1", 2.0), num("C3", 5.0)])),
    })
    ev = evaluate_workbook(path)
    assert ev.value("S", "A1") == 7.0
    assert ev.value("S", "B1") == 1_048_576 * 16_384 - 2


def test_cells_spread_over_the_grid_are_refused_with_the_budget(tmp_path):
    cells = [num(f"{openpyxl.utils.get_column_letter(c)}{r}", 1.0)
             for r in (1, 1_048_576) for c in range(1, 101)]
    path = write_package(tmp_path / "spread.xlsx", {"S": b"".join(sheet_xml(cells))})
    one_line_error(run("check", str(path)), "span", "40,000,000")


@pytest.mark.parametrize("ref", ["A99999999999", "XFE1", "ZZZ5"])
def test_a_cell_off_the_grid_is_refused(tmp_path, ref):
    path = write_package(tmp_path / "off.xlsx", {"S": b"".join(sheet_xml([num(ref, 1.0)]))})
    one_line_error(run("check", str(path)), f"S!{ref}", "outside Excel's grid")


@pytest.mark.parametrize("text_", ["SUM(A1:A99999999999)", "A1048577", "SUM(XFE:XFE)"])
def test_a_reference_off_the_grid_is_refused(tmp_path, text_):
    path = write_package(tmp_path / "ref.xlsx", {"S": b"".join(sheet_xml([formula("B2",
                                                                                   text_)]))})
    with pytest.raises(WorkbookError, match=r"S!B2: row .* outside Excel's grid|S!B2: column"
                                            r" .* outside Excel's grid"):
        evaluate_workbook(path)  # (check grades such a file leniently, skipping the cell)


# ---- 7. deep formulas: Excel's limits, checked before parsing ------------------------------
@pytest.mark.parametrize(("body", "needle"), [
    ("(" * 10_000 + "1" + ")" * 10_000, "characters long"),
    ("IF(1," * 10_000 + "1" + ")" * 10_000, "characters long"),
    ("1" + "+1" * 50_000, "characters long"),
    ("IF(1," * (MAX_FUNCTION_NESTING + 1) + "1" + ")" * (MAX_FUNCTION_NESTING + 1),
     "nests functions more than 64"),
    ("(" * 500 + "1" + ")" * 500, "nests parentheses more than"),
])
def test_deep_or_long_formulas_name_the_cell_and_the_limit(tmp_path, body, needle):
    path = write_package(tmp_path / "deep.xlsx", {"S": b"".join(sheet_xml([formula("C3",
                                                                                   body)]))})
    line = one_line_error(run("check", str(path)), "S!C3", needle)
    if "characters" in needle:
        assert f"{MAX_FORMULA_CHARS:,}" in line


def test_formulas_at_excels_limits_still_evaluate():
    nested = "IF(1," * MAX_FUNCTION_NESTING + "7" + ")" * MAX_FUNCTION_NESTING
    long = "1" + "+1" * ((MAX_FORMULA_CHARS - 1) // 2)
    ev = evaluate_cells({"S": {(0, 0): "=" + nested, (0, 1): "=" + long}}, {})
    assert ev.value("S", "A1") == 7.0
    assert ev.value("S", "B1") == float((MAX_FORMULA_CHARS - 1) // 2 + 1)


# ---- 8. defined-name fan-out ---------------------------------------------------------------
def _fan_out(levels: int) -> dict[str, str]:
    names = {"LV_0": "Inputs!$A$1"}
    for i in range(1, levels + 1):
        names[f"LV_{i}"] = "+".join([f"LV_{i - 1}"] * 8)
    return names


def test_defined_name_fan_out_is_refused(tmp_path):
    path = write_package(tmp_path / "fan.xlsx", {
        "Inputs": b"".join(sheet_xml([num("A1", 1.0)])),
        "S": b"".join(sheet_xml([formula("A1", "LV_10")])),
    }, names=_fan_out(10))
    one_line_error(run("check", str(path)), "S!A1", "expands to more than 100,000")


def test_moderate_name_reuse_evaluates_exactly():
    ev = evaluate_cells({"S": {(0, 0): "=LV_5"}}, {"Inputs": {(0, 0): 1.0}}, _fan_out(5))
    assert ev.value("S", "A1") == 8.0 ** 5  # 32,768: each level adds its name 8 times


# ---- 9. corrupt parts ----------------------------------------------------------------------
def test_corrupt_deflate_data(tmp_path):
    good = good_shapes(tmp_path / "good.xlsx")
    bad = corrupt_deflate(good, tmp_path / "bad.xlsx", "xl/worksheets/sheet1.xml")
    every_path(tmp_path, bad, "bad.xlsx")


def test_broken_xml_on_the_openpyxl_paths(tmp_path):
    path = write_package(tmp_path / "broken.xlsx", {"Shapes": b"<worksheet><sheetData><row"})
    every_path(tmp_path, path, "broken.xlsx")


def test_shared_string_index_out_of_range(tmp_path):
    sheet = b"".join(sheet_xml(['<c r="A1" t="s"><v>7</v></c>', num("B1", 1.0)]))
    sst = (f'<?xml version="1.0"?><sst xmlns="{"http://schemas.openxmlformats.org/"}'
           'spreadsheetml/2006/main" count="1"><si><t>m</t></si></sst>').encode()
    path = write_package(tmp_path / "sst.xlsx", {"Shapes": sheet},
                         extra={"xl/sharedStrings.xml": sst})
    one_line_error(run("check", str(path)), "bad shared-string index '7' in cell Shapes!A1")
    one_line_error(run("fill", str(path), "-o", str(tmp_path / "o.xlsx")),
                   "sst.xlsx is not a readable xlsx workbook (IndexError")
    one_line_error(run("build", str(tmp_path / "x.xlsx"), "--shapes", str(path)),
                   "sst.xlsx is not a readable xlsx workbook (IndexError")


def test_sheet_name_that_is_not_utf8(tmp_path):
    good = good_shapes(tmp_path / "good.xlsx")
    bad = tmp_path / "name.xlsx"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "xl/workbook.xml":
                data = data.replace(b'name="Shapes"', b'name="Sh\xff\xfepes"')
            dst.writestr(item, data)
    every_path(tmp_path, bad, "name.xlsx")


def test_password_protected_file_is_called_encrypted(tmp_path):
    path = encrypted_file(tmp_path / "secret.xlsx")
    every_path(tmp_path, path, "secret.xlsx is password-protected")


def test_fill_a_valid_workbook_without_calcpr(tmp_path):
    theirs = good_shapes(tmp_path / "plain.xlsx", calc_pr=False)
    out = tmp_path / "filled.xlsx"
    result = run("fill", str(theirs), "-o", str(out), "--gpu", "L4")
    assert result.exit_code == 0, result.output
    wb = openpyxl.load_workbook(out, read_only=True)  # the workbook part, not every cell
    assert wb.calculation.fullCalcOnLoad is True
    wb.close()


# ---- 10. unbounded reads -------------------------------------------------------------------
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_dev_zero_as_shapes_and_as_credentials(tmp_path):
    one_line_error(run("build", str(tmp_path / "x.xlsx"), "--shapes", "/dev/zero"),
                   "larger than 64 MB")
    one_line_error(run("push", "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms",
                       "--credentials", "/dev/zero"), "larger than 1000 KB")
    one_line_error(run("gpus", "--gpu-file", "/dev/zero"), "larger than 1000 KB",
                   "GPU preset file")


# ---- input-file messages -------------------------------------------------------------------
def test_an_uncached_formula_in_shapes_is_not_called_blank(tmp_path):
    path = write_package(tmp_path / "f.xlsx", {
        "Shapes": b"".join(shapes_sheet([(1, 2, 3), ("=2*8", 4, 5), ("=1", "=2", "=3")]))})
    with pytest.raises(InputError) as info:
        read_shape_table(path)
    msg = str(info.value)
    assert "row 3, column m (A3): holds a formula whose result was never saved" in msg
    assert "row 4, column n (C4)" in msg and "blank" not in msg


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_semicolon_and_tab_csv_are_read(tmp_path, sep):
    path = tmp_path / "s.csv"
    path.write_text(sep.join(["m", "k", "n"]) + "\n" + sep.join(["8", "4096", "4096"]) + "\n")
    table = read_shape_table(path)
    assert [(s.m, s.k, s.n) for s in table.shapes] == [(8, 4096, 4096)]


def test_header_below_the_search_window_is_named(tmp_path):
    path = tmp_path / "deep.csv"
    lines = [f"note {i}" for i in range(HEADER_SEARCH_ROWS + 5)] + ["m,k,n", "1,2,3"]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"header with columns m, k, n is on row "
                                         rf"{HEADER_SEARCH_ROWS + 6}.*first "
                                         rf"{HEADER_SEARCH_ROWS} non-blank rows"):
        read_shape_table(path)


def test_workbook_errors_are_sheetgen_errors(tmp_path):
    with pytest.raises(WorkbookError, match="password-protected"):
        evaluate_workbook(encrypted_file(tmp_path / "e.xlsx"))
