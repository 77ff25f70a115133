"""`sheetgen build` and `sheetgen gpus` through the real CLI: outputs, errors, no clobbering."""

from __future__ import annotations

import os
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import openpyxl
import pytest
from click.testing import CliRunner
from helpers import one_line_error, run
from openpyxl.worksheet.cell_range import MultiCellRange
from xlsx_edit import sheet_xml

import sheetgen
import sheetgen.writers.xlsx
from sheetgen.cli import cli
from sheetgen.inputs.presets import builtin_presets


def read_only(path: Path, data_only: bool = False) -> openpyxl.Workbook:
    """openpyxl's read-only view of the file (cells, their values and types, the defined
    names): these tests read a few cells of workbooks built once each, where a whole load
    takes 2 s."""
    return openpyxl.load_workbook(path, read_only=True, data_only=data_only)


def data_validations(path: Path, sheet: str) -> list[tuple[str, dict[str, str], str | None]]:
    """(range, attributes, formula1) of each of the sheet's <dataValidation> elements: what
    openpyxl reads as data_validations, the range as openpyxl names it, without loading
    the cells."""
    xml = sheet_xml(path, sheet)
    block = re.search(r"<dataValidations\b.*?</dataValidations>", xml, re.S)
    if block is None:
        return []
    return [(str(MultiCellRange(dv.get("sqref"))), dict(dv.attrib), dv.findtext("formula1"))
            for dv in ET.fromstring(block[0]).iterfind("dataValidation")]


def test_build_defaults(tmp_path: Path):
    out = tmp_path / "roofline.xlsx"
    result = run("build", str(out))
    assert result.exit_code == 0, result.output
    assert "12 shape rows" in result.output
    wb = read_only(out)
    assert wb.sheetnames == ["Inputs", "Matmul", "Pipeline", "Parallelism", "What-if",
                             "GPU Specs"]
    assert "PEAK_FLOPS" in wb.defined_names and "RIDGE" in wb.defined_names
    # formulas read like the maths, through named cells
    assert wb["Matmul"]["G6"].value == '=IF(D6="ok",E6/F6,"")'
    assert "ATTAINABLE_RIDGE" in wb["Matmul"]["H6"].value
    # spare rows: 200 rows of formulas below the 12 shapes
    assert wb["Matmul"]["E217"].value.startswith("=IF(D217")
    assert wb["Matmul"]["A217"].value is None
    # dropdowns and whole-number rules are there
    wb.close()
    rules = {sqref: attrs for sqref, attrs, _ in data_validations(out, "Matmul")}
    assert rules["A6:A217"].get("type") == "whole"
    lists = [formula for _, attrs, formula in data_validations(out, "Inputs")
             if attrs.get("type") == "list"]
    assert "GPU_LIST" in lists and "DTYPE_LIST" in lists
    cached = read_only(out, data_only=True)
    assert cached["Matmul"]["H6"].value == "memory-bound"
    assert cached["Inputs"]["B13"].value == pytest.approx(312e12)
    cached.close()


def test_build_with_shapes_csv_ignores_other_columns(tmp_path: Path, shapes_csv):
    csv = shapes_csv(" M , note,K,n \n8,=HYPERLINK(\"x\"),16,32\n\n1,+1,2,3\n")
    out = tmp_path / "o.xlsx"
    result = run("build", str(out), "--shapes", str(csv), "--spare-rows", "3", "--gpu",
                 "h100 sxm", "--dtype", "FP8")
    assert result.exit_code == 0, result.output
    wb = read_only(out)
    ws = wb["Matmul"]
    assert [ws[f"A{r}"].value for r in (6, 7, 8)] == [8, 1, None]
    assert ws["D10"].value.startswith("=") and ws["D11"].value is None  # 2 shapes + 3 spare
    wb.close()


def test_text_from_a_gpu_file_is_written_as_text(tmp_path: Path):
    gpu_file = tmp_path / "mine.toml"
    gpu_file.write_text((Path(sheetgen.__file__).parent.parent / "templates" / "gpus.toml")
                        .read_text().split("[[gpu]]")[0]
                        .replace('default = "A100 40GB SXM"', 'default = "=1+1"')
                        + '[[gpu]]\nname = "=1+1"\npeak_flops = { bf16 = 1e15 }\n'
                        'hbm_bandwidth = 1e12\nmemory_bytes = 1e9\nlink_bandwidth = 1e11\n'
                        'link_latency = 1e-6\nhost_bandwidth = 1e10\nsm_count = 100\n'
                        'measured_compute_efficiency = 0.8\nmeasured_memory_efficiency = 0.9\n'
                        'measured_link_efficiency = 0.8\n'
                        'peak_flops_source = "=HYPERLINK(\\"http://x\\")"\n')
    out = tmp_path / "o.xlsx"
    result = run("build", str(out), "--gpu-file", str(gpu_file), "--gpu", "=1+1")
    assert result.exit_code == 0, result.output
    wb = read_only(out)
    ws = wb["GPU Specs"]
    texts = [c for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
    user = [c for c in texts if c.value in ("=1+1",) or "HYPERLINK" in c.value]
    assert user and all(c.data_type == "s" for c in user)  # strings, not formulas
    # the source is listed in full under GPU Specs' Sources, as a string cell
    assert [c.data_type for c in texts if c.value == '=HYPERLINK("http://x")'] == ["s"]
    assert wb["Inputs"]["B7"].value == "=1+1" and wb["Inputs"]["B7"].data_type == "s"
    wb.close()


@pytest.mark.parametrize(("csv", "needles"), [
    ("m,k,n\n0,1,1\n", ["row 2, column m", "at least 1"]),
    ("m,k,n\n-4,1,1\n", ["row 2, column m", "'-4'"]),
    ("m,k,n\n1,2.5,1\n", ["row 2, column k", "not a whole number"]),
    ("m,k,n\n1,,1\n", ["row 2, column k", "blank"]),
    ("m,k,n\n1,2,abc\n", ["row 2, column n", "not a number"]),
    ("m,k,n\n1,2,1e300\n", ["row 2, column n", "too large"]),
    ("m,k,n\n1,2,inf\n", ["row 2, column n", "finite"]),
    ("m,k\n1,2\n", ["missing column(s) n"]),
    ("", ["empty file"]),
    ("m,k,n\n", ["no shapes"]),
    ("m,k,n\n1,1,1\n0,1,1\n2,x,2\n", ["row 3, column m", "row 4, column k"]),
])
def test_bad_shapes_give_one_line_and_write_nothing(tmp_path: Path, shapes_csv, csv, needles):
    out = tmp_path / "o.xlsx"
    result = run("build", str(out), "--shapes", str(shapes_csv(csv)))
    one_line_error(result, *needles)
    assert not out.exists()
    assert os.listdir(tmp_path) == ["shapes.csv"]


@pytest.mark.parametrize(("args", "needles"), [
    (["--gpu", "A200"], ["unknown GPU 'A200'", "H100 SXM"]),
    (["--dtype", "fp4"], ["unknown dtype 'fp4'", "bf16"]),
    (["--dtype", "fp8"], ["A100 40GB SXM", "no fp8 support"]),
    (["--shapes", "/nonexistent.csv"], ["cannot read", "nonexistent.csv"]),
    (["--gpu-file", "/nonexistent.toml"], ["cannot read GPU preset file"]),
])
def test_bad_options(tmp_path: Path, args, needles):
    out = tmp_path / "o.xlsx"
    one_line_error(run("build", str(out), *args), *needles)
    assert not out.exists()


def test_existing_file_is_not_clobbered_without_force(tmp_path: Path):
    out = tmp_path / "mine.xlsx"
    out.write_bytes(b"precious")
    one_line_error(run("build", str(out)), "already exists", "--force")
    assert out.read_bytes() == b"precious"
    assert run("build", str(out), "--force").exit_code == 0
    assert out.read_bytes()[:2] == b"PK"


def test_output_must_be_a_writable_xlsx_path(tmp_path: Path):
    one_line_error(run("build", str(tmp_path)), "is a directory")
    one_line_error(run("build", str(tmp_path / "no" / "o.xlsx")), "does not exist")
    one_line_error(run("build", str(tmp_path / "o.csv")), "must end in .xlsx")
    # /proc refuses new files even for root, who ignores directory permissions
    one_line_error(run("build", "/proc/sheetgen-test.xlsx"), "cannot write to /proc")


def test_interrupted_write_leaves_no_partial_file(tmp_path: Path, monkeypatch):
    out = tmp_path / "o.xlsx"
    out.write_bytes(b"old")

    def boom(*a, **k):
        raise KeyboardInterrupt  # Ctrl-C half-way through writing

    monkeypatch.setattr(sheetgen.writers.xlsx, "_chart", boom)
    result = CliRunner().invoke(cli, ["build", str(out), "--force"])
    assert result.exit_code != 0
    assert out.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["o.xlsx"]  # no temporary left behind


def test_gpus_is_one_line_per_preset_and_sources_on_request():
    result = run("gpus")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    header = lines[0].split()
    assert header[:7] == ["GPU", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"]
    rows = {line[:16].strip(" *"): line[16:].split() for line in lines[1:10]}
    assert set(rows) == {"A100 40GB SXM", "A100 40GB PCIe", "A100 80GB SXM", "H100 SXM",
                         "H100 PCIe", "H200 SXM", "B200", "MI300X", "L4"}
    # A100 SXM datasheet: 312 TFLOP/s bf16 dense, 624 TOPS int8, no fp8 (shown as '-')
    assert rows["A100 40GB SXM"][:6] == ["19.5", "156", "312", "312", "-", "624"]
    assert rows["H100 SXM"][6] == "3.35"  # TB/s
    assert "mem GiB" in lines[0] and rows["A100 40GB SXM"][7] == "40"  # 40 GB = 40 GiB
    # a header, one line per preset, and two lines of notes
    assert len(lines) == len(builtin_presets().gpus) + 3
    assert "int8 TOP/s" in result.output and "TFLOP/s" in result.output
    assert "source" not in lines[1]
    detail = run("gpus", "H100 SXM", "--sources")
    assert detail.exit_code == 0 and "peak_flops: " in detail.output
    assert "A100 40GB SXM" not in detail.output.splitlines()[1]  # only the GPU named
    assert "shared/" not in run("gpus", "--sources").output  # users have no such file
    bad = run("gpus", "A200")
    assert bad.exit_code == 2 and bad.output.startswith("Error: unknown GPU 'A200'")


def test_every_command_is_documented_with_an_example():
    for name, command in cli.commands.items():
        assert command.help and "Example" in command.help, name
