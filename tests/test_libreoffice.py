"""LibreOffice, an independent engine, recalculates built workbooks: every formula cell must
equal the reference model (relative 1e-9), and the tests prove a recalculation happened."""

from __future__ import annotations

import functools
from pathlib import Path

import openpyxl
import pytest
from helpers import load_workbook
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from xlsx_edit import cell_of, edit_cells

import sheetgen.writers.xlsx
from sheetgen.assemble import BuildConfig, input_values, plan_build, sheet_specs
from sheetgen.inputs.shapes import Shape
from sheetgen.layout.planner import WorkbookPlan, plan_workbook
from sheetgen.verify.libreoffice import recalculate
from sheetgen.writers.xlsx import write_xlsx

pytestmark = needs_libreoffice

SHAPES = [Shape(1, 4096, 4096), Shape(512, 512, 512), Shape(4096, 4096, 4096),
          Shape(3, 5, 7), Shape(100_000, 20_000, 3)]
VARIANTS = {
    "a100_bf16": ("A100 40GB SXM", "bf16"),
    "h100_fp8": ("H100 SXM", "fp8"),
    "l4_fp32": ("L4", "fp32"),
    "mi300x_int8": ("MI300X", "int8"),
}


def _wrong(value):
    """Cached values that no correct recalculation could leave in place."""
    if isinstance(value, str):
        return "WRONG" if value else value
    return -12345.0


#: a formula-like text typed into an empty cell of the edited workbook, a new row below the
#: Inputs sheet's last
TYPED_TEXT = ("H300", "=1+1")


@functools.cache
def plans() -> dict[str, WorkbookPlan]:
    return {key: plan_build(BuildConfig(gpu=gpu, dtype=dtype, shapes=SHAPES, spare_rows=5))
            for key, (gpu, dtype) in VARIANTS.items()}


@libreoffice_job("libreoffice-variants", to="values")
def variants(tmp: Path) -> dict[str, Path]:
    """The four variants; one with every cached value wrong (LibreOffice must still match
    the model); one with a user's edits: the GPU and dtype dropdowns flipped, a new shape
    and a bad one typed into the spare rows."""
    files = {key: write_xlsx(p, tmp / f"{key}.xlsx") for key, p in plans().items()}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sheetgen.writers.xlsx, "_cached", _wrong)
        files["wrong_cache"] = write_xlsx(plans()["a100_bf16"], tmp / "wrong_cache.xlsx")
    names = plans()["a100_bf16"].defined_names
    edits = {cell_of(names["GPU_NAME"]): "H100 SXM", cell_of(names["DTYPE"]): "fp16"}
    first_spare = plans()["a100_bf16"].table("matmul").first_row + len(SHAPES) + 1  # 1-based
    for col, value in zip("ABC", (2048, 1024, 4096), strict=True):
        edits["Matmul", f"{col}{first_spare}"] = value
    for col, value in zip("ABC", (-5, 1024, 7.5), strict=True):
        edits["Matmul", f"{col}{first_spare + 1}"] = value
    edits["Matmul", f"A{first_spare + 2}"] = 64  # partly filled: stays blank
    edits["Inputs", TYPED_TEXT[0]] = TYPED_TEXT[1]  # typed as text, off every table
    files["edited"] = edit_cells(files["a100_bf16"], tmp / "edited.xlsx", edits)
    files["distinct"] = write_xlsx(plan_build(BuildConfig(shapes=SHAPES[:1], spare_rows=0)),
                                   tmp / "a.xlsx")
    return files


@pytest.fixture(scope="module")
def recalculated(libreoffice):
    values = {key: read_values(path)
              for key, path in libreoffice.outputs("libreoffice-variants").items()}
    values["wrong_cache_before"] = read_values(
        libreoffice.sources("libreoffice-variants")["wrong_cache"])
    return plans(), values


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_formula_cell_matches_the_model(recalculated, variant):
    plans, values = recalculated
    assert mismatches(plans[variant], values[variant]) == []


def test_libreoffice_really_recalculated(recalculated):
    plans, values = recalculated
    # the file's cached values were all wrong; LibreOffice's answers are the model's anyway
    assert values["wrong_cache_before"]["Inputs"][(12, 1)] == -12345.0
    assert len(mismatches(plans["a100_bf16"], values["wrong_cache_before"])) > 60
    assert mismatches(plans["a100_bf16"], values["wrong_cache"]) == []
    assert values["wrong_cache"]["Inputs"][(12, 1)] == pytest.approx(312e12)


def test_edited_inputs_recompute_everything(recalculated):
    plans, values = recalculated
    vals = input_values(BuildConfig(gpu="H100 SXM", dtype="fp16", shapes=SHAPES,
                                    spare_rows=5).resolved())
    n = len(SHAPES)
    for dim, new in zip("mkn", ((2048, -5, 64), (1024, 1024, None), (4096, 7.5, None)),
                        strict=True):
        vals[dim] = list(vals[dim][:n]) + list(new) + [None, None]
    expected = plan_workbook(sheet_specs(), vals)
    assert mismatches(expected, values["edited"]) == []
    matmul = values["edited"]["Matmul"]
    first = plans["a100_bf16"].table("matmul").first_row + n
    assert matmul[(first, 3)] == "ok"
    assert matmul[(first + 1, 3)] == "check m,k,n"
    assert matmul[(first + 1, 4)] in ("", None)  # FLOPs blank on a bad row, no #VALUE!
    assert matmul[(first + 2, 3)] in ("", None)  # partly filled: nothing yet
    # the H100's peak, not the A100's, now drives the times
    assert values["edited"]["Inputs"][(12, 1)] == pytest.approx(989.4e12)
    # text that starts with "=" was typed as text (xlsx_edit): LibreOffice keeps it text
    row, col = int(TYPED_TEXT[0][1:]) - 1, ord(TYPED_TEXT[0][0]) - ord("A")
    assert values["edited"]["Inputs"][(row, col)] == TYPED_TEXT[1]


def test_default_build_has_both_regimes(recalculated):
    _, values = recalculated
    regimes = {v for (r, c), v in values["a100_bf16"]["Matmul"].items() if c == 7 and r > 4}
    assert {"compute-bound", "memory-bound"} <= regimes


def test_the_shared_run_writes_beside_never_over_the_source(libreoffice):
    """Guards the helper itself: LibreOffice writes a new file of its own; the source
    stays as the builder wrote it."""
    out = libreoffice.outputs("libreoffice-variants")["distinct"]
    src = libreoffice.sources("libreoffice-variants")["distinct"]
    assert out.exists() and src.exists() and out.resolve() != src.resolve()
    assert openpyxl.load_workbook(src, data_only=True)["Inputs"]["B13"].value == 312e12
    assert list(read_values(out)) == load_workbook(src).sheetnames


#: cells whose CSV spelling differs from the xlsx's: errors (LibreOffice's own Err:502 among
#: them), booleans, percents, text that looks like a number, a boolean or an error, quotes,
#: a line break, an empty-text result, numbers at the ends of the double range
READER_CELLS = ["=NA()", "=1/0", "=SQRT(-1)", "=INDEX(A1:A2,5)", "=NOSUCH(1)", "=2^2000",
                "=1=1", "=1=2", "TRUE", "5%", "#N/A", "12", 'say "hi", twice',
                "two\nlines", "=\"\"", 1e-300, 1e300, -0.0, 123456789012345678, 2 / 3]


@libreoffice_job("values-reader-xlsx", to="xlsx")
@libreoffice_job("values-reader-csv", to="values")
def _reader_cases(tmp: Path) -> dict[str, Path]:
    """The default workbook, and a sheet of awkward cells (its name has a hyphen, a space and
    an apostrophe) with percent formats, read back both ways."""
    import xlsxwriter

    odd = tmp / "odd.xlsx"
    with xlsxwriter.Workbook(odd) as wb:
        ws = wb.add_worksheet("What-if it's odd")
        pct = wb.add_format({"num_format": "0.0%"})
        for row, v in enumerate(READER_CELLS):
            if isinstance(v, str) and v.startswith("="):
                ws.write_formula(row, 0, v)
            elif isinstance(v, str):
                ws.write_string(row, 0, v)
            else:
                ws.write_number(row, 0, v)
            ws.write_formula(row, 1, f"=ROW()/7-{row}", pct)
        wb.add_worksheet("Empty")
    return {"default": write_xlsx(plan_build(BuildConfig()), tmp / "default.xlsx"), "odd": odd}


def test_the_values_route_reads_what_the_xlsx_route_reads(libreoffice):
    """Guards `to="values"` (lo_helpers): LibreOffice's CSV of every sheet, read by
    read_values, gives the very values openpyxl reads from LibreOffice's own xlsx save of the
    same workbooks: every cell, type and digit (a boolean reads as the 1 or 0 it equals)."""
    csv, xlsx = libreoffice.outputs("values-reader-csv"), libreoffice.outputs(
        "values-reader-xlsx")
    for key in ("default", "odd"):
        assert csv[key].is_dir() and xlsx[key].suffix == ".xlsx"
        got, want = read_values(csv[key]), read_values(xlsx[key])
        assert list(got) == list(want), key
        for sheet in want:  # (openpyxl also lists styled empty cells, as None)
            expected = {k: v for k, v in want[sheet].items() if v is not None}
            assert {k: v for k, v in got[sheet].items() if v is not None} == expected, (
                key, sheet)
            for k, v in expected.items():  # same type too: text stays text, numbers numbers
                assert isinstance(got[sheet][k], str) == isinstance(v, str), (key, sheet, k)
    odd = read_values(csv["odd"])["What-if it's odd"]
    cells = [odd.get((row, 0)) for row in range(len(READER_CELLS))]
    assert cells[:6] == ["#N/A", "#DIV/0!", "#VALUE!", "#VALUE!", "#NAME?", "#NUM!"]
    assert cells[6:12] == [True, False, "TRUE", "5%", "#N/A", "12"]
    assert cells[12:15] == ['say "hi", twice', "two\nlines", None]
    assert cells[15:] == [1e-300, 1e300, 0, 1.23456789012346e17, 0.666666666666667]
    assert odd[(0, 1)] == 0.142857142857143  # 1/7 in a 0.0% cell: 15 digits, not "14.3%"


def test_sheetgens_own_recalculate_forces_a_recalculation(tmp_path: Path):
    """sheetgen.verify.libreoffice.recalculate (what docs/render.py uses), on its own start:
    a file whose cached values are all wrong comes back with the model's values."""
    plan = plan_build(BuildConfig(shapes=SHAPES[:2], spare_rows=0))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sheetgen.writers.xlsx, "_cached", _wrong)
        src = write_xlsx(plan, tmp_path / "wrong.xlsx")
    assert read_values(src)["Inputs"][(12, 1)] == -12345.0
    out = recalculate(src, tmp_path / "out")
    assert out == (tmp_path / "out" / "wrong.xlsx").resolve() and src.exists()
    assert mismatches(plan, read_values(out)) == []


# Per-operand storage (issue #19 §3): weight-only int4 (W4A16), fp8 compute writing bf16,
# raw int8 -> int32, and the A/B/C dropdowns flipped by hand after the build.
STORAGE_VARIANTS = {
    "a100_w4a16": ("A100 40GB SXM", "bf16", {"weight_dtype": "int4"}),
    "h100_fp8_bf16_out": ("H100 SXM", "fp8", {}),  # auto: fp8 A and B, bf16 C
    "h100_int8_int32_out": ("H100 SXM", "int8", {"output_dtype": "int32"}),
    "b200_nvfp4_weights": ("B200", "fp8", {"weight_dtype": "nvfp4"}),
}
STORAGE_SHAPES = [Shape(1, 8192, 8192), Shape(4096, 4096, 4096), Shape(3, 5, 7)]


@functools.cache
def storage_plans() -> dict[str, WorkbookPlan]:
    return {key: plan_build(BuildConfig(gpu=gpu, dtype=dtype, shapes=STORAGE_SHAPES,
                                        spare_rows=2, **storage))
            for key, (gpu, dtype, storage) in STORAGE_VARIANTS.items()}


@libreoffice_job("libreoffice-storage", to="values")
def storage_variants(tmp: Path) -> dict[str, Path]:
    files = {key: write_xlsx(p, tmp / f"{key}.xlsx") for key, p in storage_plans().items()}
    # Flip the dropdowns of a default (bf16, all auto) build: fp8 compute on an H100, A in
    # fp8, B in int4, C in fp32.
    base = plan_build(BuildConfig(gpu="A100 40GB SXM", dtype="bf16", shapes=STORAGE_SHAPES,
                                  spare_rows=2))
    flipped = edit_cells(write_xlsx(base, tmp / "base.xlsx"), tmp / "flipped.xlsx", {
        cell_of(base.defined_names[name]): value
        for name, value in (("GPU_NAME", "H100 SXM"), ("DTYPE", "fp8"), ("ACT_DTYPE", "fp8"),
                            ("WEIGHT_DTYPE", "int4"), ("OUT_DTYPE", "fp32"))})
    return {**files, "flipped": flipped}


@pytest.fixture(scope="module")
def storage_recalculated(libreoffice):
    out = libreoffice.outputs("libreoffice-storage")
    return storage_plans(), {key: read_values(path) for key, path in out.items()}


@pytest.mark.parametrize("variant", list(STORAGE_VARIANTS))
def test_operand_storage_matches_the_model(storage_recalculated, variant):
    plans, values = storage_recalculated
    assert mismatches(plans[variant], values[variant]) == []


def _bytes_column(plan, values):
    t = plan.table("matmul")
    col = t.column("bytes_moved").col
    return [values["Matmul"][(t.first_row + i, col)] for i in range(len(STORAGE_SHAPES))]


def test_operand_storage_hand_figures_in_libreoffice(storage_recalculated):
    plans, values = storage_recalculated
    # W4A16 1×8192×8192: 2·8192 + 0.5·8192² + 2·8192
    assert _bytes_column(plans["a100_w4a16"], values["a100_w4a16"])[0] == 33_587_200
    # fp8 compute writing bf16, 4096³: 1·4096² + 1·4096² + 2·4096²
    fp8 = plans["h100_fp8_bf16_out"]
    assert _bytes_column(fp8, values["h100_fp8_bf16_out"])[1] == 67_108_864
    # int8 A and B, int32 C: 3·5 + 5·7 + 4·3·7
    i8 = plans["h100_int8_int32_out"]
    assert _bytes_column(i8, values["h100_int8_int32_out"])[2] == 15 + 35 + 84


def test_flipped_operand_dropdowns_recompute(storage_recalculated):
    _, values = storage_recalculated
    expected = plan_build(BuildConfig(gpu="H100 SXM", dtype="fp8", shapes=STORAGE_SHAPES,
                                      spare_rows=2, activation_dtype="fp8",
                                      weight_dtype="int4", output_dtype="fp32"))
    assert mismatches(expected, values["flipped"]) == []
    # 1×8192×8192: 1·8192 + 0.5·8192² + 4·8192
    assert _bytes_column(expected, values["flipped"])[0] == 8192 + 0.5 * 8192**2 + 4 * 8192
