"""Small things a new user reads (issue #18, "the first ten minutes"): the Python API's
errors name its keyword arguments, `read` prints what was typed rather than float noise, a
missing output folder is called a folder."""

from __future__ import annotations

import pytest
from helpers import one_line_error, run

import sheetgen
from sheetgen.errors import OutputError, in_api_words


@pytest.mark.parametrize(("cli", "api"), [
    ("x.xlsx already exists; pass --force to overwrite it",
     "x.xlsx already exists; pass force=True to overwrite it"),
    ("--spare-rows must be a whole number", "spare_rows must be a whole number"),
    ("pass --in-place to change it", "pass in_place=True to change it"),
    ("--pipeline-shape m: 'x' is not a number", "pipeline_shape m: 'x' is not a number"),
    ("a value of -5 or a--b stays", "a value of -5 or a--b stays"),
])
def test_cli_options_become_keyword_arguments(cli, api):
    assert in_api_words(cli) == api


def test_the_python_api_says_force_true(tmp_path):
    out = tmp_path / "r.xlsx"
    sheetgen.build(out, shapes=[(8, 8, 8)], spare_rows=0)
    with pytest.raises(OutputError, match=r"pass force=True to overwrite") as info:
        sheetgen.build(out, shapes=[(8, 8, 8)], spare_rows=0)
    assert "--force" not in str(info.value)
    one_line_error(run("build", str(out)), "pass --force")  # the CLI keeps its own words


def test_a_missing_output_folder_is_called_a_folder(tmp_path):
    line = one_line_error(run("build", str(tmp_path / "nodir" / "o.xlsx")))
    assert "the folder" in line and "nodir" in line and "does not exist" in line


def test_read_prints_inputs_as_typed_not_float_noise(tmp_path):
    out = tmp_path / "r.xlsx"
    assert run("build", str(out), "--link-over", "host").exit_code == 0
    text = run("read", str(out), "--sheet", "Parallelism", "--block").output
    assert "host_link_latency,1e-05\n" in text  # 10 µs, stored as 10 in a µs cell
    assert "9.999999999999" not in text


def test_fill_takes_the_efficiencies_and_layers_build_takes(tmp_path):
    """`fill` has --compute-eff and --layers like `build`, and a one-row table is '1 shape'
    on 'row 2' (not '1 shapes ... rows 2-2')."""
    import openpyxl

    from sheetgen.verify.check import read_workbook

    theirs = tmp_path / "one.xlsx"
    wb = openpyxl.Workbook()
    wb.active.append(["m", "k", "n"])
    wb.active.append([64, 128, 256])
    wb.save(theirs)
    out = tmp_path / "one.sheetgen.xlsx"
    result = run("fill", str(theirs), "-o", str(out), "--compute-eff", "0.8", "--layers", "6")
    assert result.exit_code == 0, result.output
    assert "(1 shape linked to sheet 'Sheet', row 2)" in result.output
    inputs = read_workbook(out, "Inputs", block=True)["value"]
    assert inputs["compute_eff"] == 0.8
    assert len(read_workbook(out, "Pipeline")) == 6
