"""The refined time (launch floor, tile and wave quantization) against hand arithmetic, in
LibreOffice, through `check`, and from the CLI. Every expected number here is worked out from
the definitions (NVIDIA's Matrix Multiplication Background guide: tiles = ceil(m/Tm)·ceil(n/Tn),
waves = ceil(tiles/SMs)), never read back from sheetgen."""

from __future__ import annotations

import functools
import json
import math
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import openpyxl
import pytest
from click.testing import CliRunner
from formula_edit import edit_formulas
from lo_helpers import expected_cells, libreoffice_job, mismatches, needs_libreoffice, read_values
from xlsx_edit import cell_of, edit_cells, sheet_parts
from xlsxwriter.utility import xl_rowcol_to_cell

import sheetgen
from sheetgen.assemble import BuildConfig, plan_build
from sheetgen.cli import cli
from sheetgen.inputs.shapes import Shape
from sheetgen.sheets import matmul, whatif
from sheetgen.verify.check import check_workbook
from sheetgen.writers.xlsx import write_xlsx

A100_PEAK, A100_BW = 312e12, 1.555e12
H100_PEAK, H100_BW = 989.4e12, 3.35e12
REFINED = ["tiles", "waves", "wave_efficiency", "quantized_compute_time", "refined_time"]


def test_one_partial_wave_on_a100():
    """1024x4096x1024 in bf16: 8·8 = 64 tiles of 128x128 on 108 SMs, one wave at 64/108."""
    row = sheetgen.analyze([(1024, 4096, 1024)], gpu="A100 40GB SXM", tile=(128, 128),
                           waves=True, launch_overhead=4e-6).iloc[0]
    assert (row.tiles, row.waves) == (64, 1)
    assert row.wave_efficiency == pytest.approx(64 / 108, rel=1e-12)
    compute = 2 * 1024 * 4096 * 1024 / A100_PEAK  # 27.5 µs
    memory = 2 * (1024 * 4096 + 4096 * 1024 + 1024 * 1024) / A100_BW  # 12.1 µs
    assert row.quantized_compute_time == pytest.approx(compute * 108 / 64, rel=1e-12)
    assert row.refined_time == pytest.approx(4e-6 + compute * 108 / 64, rel=1e-12)
    assert row.predicted_time == pytest.approx(max(compute, memory), rel=1e-12)  # untouched


def test_last_wave_rounds_up_on_h100():
    """4096² output: 32·32 = 1024 tiles; 7 waves of 132 hold 924, so 8 waves (1056 slots)."""
    row = sheetgen.analyze([(4096, 4096, 4096)], gpu="H100 SXM", waves=True,
                           launch_overhead=0.0).iloc[0]
    assert (row.tiles, row.waves) == (1024, 8)
    assert row.wave_efficiency == pytest.approx(1024 / 1056, rel=1e-12)
    compute = 2 * 4096**3 / H100_PEAK
    assert row.refined_time == pytest.approx(compute * 1056 / 1024, rel=1e-12)


@pytest.mark.parametrize(("gpu", "shape", "tile", "tiles", "waves", "sms"), [
    ("MI300X", (2304, 64, 2304), (128, 128), 18 * 18, 2, 304),  # 324 tiles on 304 CUs
    ("L4", (129, 64, 1), (128, 128), 2, 1, 58),  # a 1-row overhang still costs a tile
    ("B200", (8192, 64, 8192), (256, 128), 32 * 64, 14, 148),  # 2048 tiles: 13·148 = 1924
    ("H100 PCIe", (114 * 64, 64, 64), (64, 64), 114, 1, 114),  # exactly one full wave
])
def test_tiles_and_waves_per_gpu(gpu, shape, tile, tiles, waves, sms):
    row = sheetgen.analyze([shape], gpu=gpu, tile=tile, waves=True).iloc[0]
    assert (row.tiles, row.waves) == (tiles, waves)
    assert row.wave_efficiency == pytest.approx(tiles / (waves * sms), rel=1e-12)
    assert math.ceil(tiles / sms) == waves  # the test's own arithmetic is consistent


def test_waves_off_is_floor_plus_roofline():
    df = sheetgen.analyze([(1, 8192, 8192), (1024, 4096, 1024), (8192, 8192, 8192)],
                          waves=False, launch_overhead=5e-6)
    for row in df.itertuples():
        assert row.refined_time == pytest.approx(5e-6 + row.predicted_time, rel=1e-12)
    # the quantized columns are still shown, so the user sees what switching on would cost
    assert df.quantized_compute_time.iloc[1] > df.compute_time.iloc[1]


def test_memory_bound_gemv_ignores_waves():
    """m = 1: one row of 64 tiles, far below the SMs, but the weights' traffic dominates."""
    row = sheetgen.analyze([(1, 8192, 8192)], waves=True, launch_overhead=0.0).iloc[0]
    memory = 2 * (8192 + 8192 * 8192 + 8192) / A100_BW
    assert row.tiles == 64 and row.quantized_compute_time < memory
    assert row.refined_time == pytest.approx(memory, rel=1e-12)


def test_defaults_come_from_the_preset():
    gpu = sheetgen.inputs.presets.builtin_presets().get("A100 40GB SXM")
    df = sheetgen.analyze([(4096, 4096, 4096)])
    g = df.attrs["gpu"]
    assert (g["sm_count"], g["tile_m"], g["tile_n"]) == (108, 128, 128)
    assert g["launch_overhead"] == gpu.launch_overhead == 5e-6
    assert g["wave_quantization"] == "off"
    assert list(df.columns[df.columns.get_indexer(REFINED)]) == REFINED


def test_whatif_sheet_has_the_refined_columns():
    p = sheetgen.plan(shapes=[(1, 1, 1)], spare_rows=0, waves=True, launch_overhead=0.0)
    t = p.table(whatif.TABLE.name)
    col = {c.name: c.values for c in t.columns}
    # base 128x4096x4096: ceil(128/128)·ceil(4096/128) = 32 tiles, 1 wave, 32/108 busy
    assert (col["wi_tiles"][0], col["wi_waves"][0]) == (32, 1)
    assert col["wi_wave_efficiency"][0] == pytest.approx(32 / 108, rel=1e-12)
    # m doubled: 2·32 = 64 tiles, still one wave: the compute part doubles
    m2 = [s[0] for s in whatif.SCENARIOS].index("m doubled")
    assert col["wi_tiles"][m2] == 64
    assert col["wi_refined_ratio"][0] == 1.0


REFINED_SHAPES = [Shape(1024, 4096, 1024), Shape(4096, 4096, 4096), Shape(1, 8192, 8192),
                  Shape(129, 64, 1), Shape(2304, 64, 2304)]


@functools.cache
def _refined_plans() -> dict:
    """The plans, made once: the LibreOffice job writes them and the tests read them."""
    shapes = REFINED_SHAPES
    return {
        "a100": plan_build(BuildConfig(gpu="A100 40GB SXM", shapes=shapes, spare_rows=3,
                                       waves=True, launch_overhead=4e-6)),
        "mi300x": plan_build(BuildConfig(gpu="MI300X", dtype="fp8", shapes=shapes,
                                         spare_rows=0, tile=(256, 64), waves=False)),
        "overlap": plan_build(BuildConfig(gpu="H100 SXM", shapes=shapes, spare_rows=0,
                                          launch_overhead=5e-6, overlap=2.0)),
        "edited": plan_build(BuildConfig(gpu="H100 SXM", dtype="fp8", shapes=shapes,
                                         spare_rows=3, waves=False, launch_overhead=1e-5,
                                         tile=(64, 256), overlap=1.5)),
    }


@libreoffice_job("refined", to="values")
def _refined_workbooks(tmp: Path) -> dict[str, Path]:
    """Built workbooks with the refined layer switched on, one edited by hand."""
    plans = _refined_plans()
    files = {k: write_xlsx(plans[k], tmp / f"{k}.xlsx") for k in ("a100", "mi300x", "overlap")}
    # The user switches waves off, picks 64x256 tiles, a 10 µs floor (the Inputs cell holds
    # µs), the H100 SXM, fp8 and an overlap exponent of 1.5.
    names = plans["a100"].defined_names
    edited = edit_cells(files["a100"], tmp / "edited.xlsx", {
        cell_of(names[name]): value
        for name, value in (("WAVE_QUANT", "off"), ("TILE_M", 64), ("TILE_N", 256),
                            ("LAUNCH_OVERHEAD", 10), ("GPU_NAME", "H100 SXM"),  # µs
                            ("DTYPE", "fp8"), ("OVERLAP", 1.5))})
    return {**files, "edited": edited}


@pytest.fixture(scope="module")
def refined_books(libreoffice):
    """The workbooks above, recalculated by LibreOffice, and the plans they must match."""
    out = libreoffice.outputs("refined")
    return _refined_plans(), {k: read_values(f) for k, f in out.items()}


@needs_libreoffice
@pytest.mark.parametrize("key", ["a100", "mi300x", "overlap", "edited"])
def test_libreoffice_recalculates_the_refined_cells(refined_books, key):
    plans, values = refined_books
    assert mismatches(plans[key], values[key]) == []
    # and the refined columns really are there, with the hand-computed first row
    t = plans[key].table(matmul.TABLE.name)
    col = {c.name: c for c in t.columns}
    got = values[key]["Matmul"]
    tiles = got[(t.first_row, col["tiles"].col)]
    tile_m, tile_n = {"a100": (128, 128), "mi300x": (256, 64), "overlap": (128, 128),
                      "edited": (64, 256)}[key]
    assert tiles == math.ceil(1024 / tile_m) * math.ceil(1024 / tile_n)
    refined = got[(t.first_row, col["refined_time"].col)]
    assert refined == pytest.approx(col["refined_time"].values[0], rel=1e-9)


@pytest.mark.libreoffice
@needs_libreoffice
def test_libreoffice_smooth_max_and_per_dtype_efficiency_by_hand(refined_books):
    """H100 SXM bf16 4096³ with p = 2 and a 5 µs floor: compute 2·4096³ / 989.4e12 =
    138.91 µs, memory 3·4096²·2 B / 3.35e12 = 30.05 µs, refined 5 + √(138.91² + 30.05²) =
    147.12 µs. The suggested compute efficiency follows the dtype dropdown: 0.803 for bf16,
    the FP8 MAMF's 0.709 once the user picks fp8 (0.511 on MI300X fp8, which has no fp8
    figure of its own)."""
    plans, values = refined_books
    t = plans["overlap"].table(matmul.TABLE.name)
    col = {c.name: c for c in t.columns}
    compute, memory = 2 * 4096**3 / 989.4e12, 3 * 4096**2 * 2 / 3.35e12
    hand = 5e-6 + math.hypot(compute, memory)
    assert hand == pytest.approx(147.12e-6, rel=1e-4)
    got = values["overlap"]["Matmul"][(t.first_row + 1, col["refined_time"].col)]
    assert got == pytest.approx(hand * 1e6, rel=1e-9)  # the Matmul sheet's times are µs
    for key, eff in (("overlap", 0.803), ("edited", 0.709), ("mi300x", 0.511),
                     ("a100", 0.869)):
        assert plans[key].model.scalars["suggest_compute_eff"] == eff, key
    # in the workbook the user switched to fp8, LibreOffice's suggestion cell reads 0.709
    cell = next(e for e in expected_cells(plans["edited"]) if e.name == "suggest_compute_eff")
    assert values["edited"][cell.sheet][(cell.row, cell.col)] == pytest.approx(0.709)


def test_check_passes_and_catches_a_wrong_refined_formula(tmp_path):
    out = tmp_path / "r.xlsx"
    sheetgen.build(out, shapes=[(1024, 4096, 1024), (4096, 4096, 4096)], waves=True,
                   launch_overhead=3e-6, tile=(128, 256))
    assert check_workbook(out).ok
    p = sheetgen.plan(shapes=[(1024, 4096, 1024), (4096, 4096, 4096)], waves=True,
                      launch_overhead=3e-6, tile=(128, 256))
    t = p.table(matmul.TABLE.name)
    waves_col = next(c for c in t.columns if c.name == "waves")
    formula = waves_col.formula_at(t.first_row)
    assert "ROUNDUP(" in formula
    edit_formulas(out, out, {  # a partial wave for free
        ("Matmul", xl_rowcol_to_cell(t.first_row, waves_col.col)):
            formula.replace("ROUNDUP(", "ROUNDDOWN(", 1)})
    bad = check_workbook(out).mismatches
    assert bad and {m.quantity for m in bad} >= {"waves"}


def test_cli_options_reach_the_model():
    r = CliRunner().invoke(cli, ["show", "--gpu", "H100 SXM", "--tile", "256", "128",
                                 "--waves", "--launch-overhead", "2e-6", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["gpu"]["sm_count"] == 132 and data["gpu"]["tile_m"] == 256
    row = next(x for x in data["rows"] if (x["m"], x["n"]) == (4096, 4096))
    assert row["tiles"] == 16 * 32 and row["waves"] == 4  # 512 tiles: 3·132 = 396 < 512
    assert row["refined_time"] == pytest.approx(
        2e-6 + row["compute_time"] * 4 * 132 / 512, rel=1e-12)


@pytest.mark.parametrize(("args", "needle"), [
    (["--tile", "0", "128"], "--tile M must be a whole number from 1 to 4,096, got 0"),
    (["--launch-overhead", "-1e-6"], "--launch-overhead must be 0 to 1 seconds"),
    (["--launch-overhead", "nan"], "--launch-overhead must be 0 to 1 seconds"),
])
def test_bad_refined_options_are_one_line(args, needle):
    r = CliRunner().invoke(cli, ["show", *args])
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("Error: ")
    assert needle in lines[0]


def test_pipeline_layers_have_a_refined_total():
    """Default pipeline (4096, 8192, 32768) on an A100, waves on, a 7 µs floor: every layer is
    compute-bound with the same FLOPs; type 1 outputs 4096x8192 = 32·64 = 2048 tiles
    (19 waves of 108 = 2052 slots), type 2 outputs 4096x32768 = 32·256 = 8192 tiles
    (76 waves = 8208 slots)."""
    p = sheetgen.plan(shapes=[(1, 1, 1)], spare_rows=0, waves=True, launch_overhead=7e-6)
    col = {c.name: c.values for c in p.table("layers").columns}
    assert (col["layer_tiles"][0], col["layer_waves"][0]) == (2048, 19)
    assert (col["layer_tiles"][1], col["layer_waves"][1]) == (8192, 76)
    compute = 2 * 4096 * 8192 * 32768 / A100_PEAK
    expected = 72 * 7e-6 + 36 * compute * 2052 / 2048 + 36 * compute * 8208 / 8192
    assert p.model.scalars["pipe_refined"] == pytest.approx(expected, rel=1e-12)
    assert p.model.scalars["pipe_predicted"] == pytest.approx(72 * compute, rel=1e-12)


def _validations(path: Path, sheet: str, cell: str) -> list[tuple[str | None, str | None]]:
    """(type, formula1) of each data validation on the sheet whose cells (sqref) name
    `cell`, read from the worksheet's XML: a full openpyxl load of the workbook for one
    sheet's validations took seconds."""
    with zipfile.ZipFile(path) as z:
        root = ET.fromstring(z.read(sheet_parts(z)[sheet]))
    found = []
    for dv in root.iter():
        if dv.tag.rpartition("}")[2] != "dataValidation":
            continue
        if cell in re.split(r"[\s:]+", dv.get("sqref", "")):
            f1 = next((e.text for e in dv if e.tag.rpartition("}")[2] == "formula1"), None)
            found.append((dv.get("type"), f1))
    return found


def _wave_cell(p):
    sheet, cell = p.defined_names["WAVE_QUANT"].split("!")
    return sheet.strip("'"), cell.replace("$", "")


def test_wave_switch_is_an_on_off_dropdown_in_every_writer(tmp_path):
    """xlsx build, fill (openpyxl) and the Sheets requests all offer exactly on/off."""
    from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

    from sheetgen.writers.fill import fill_workbook
    from sheetgen.writers.google import requests as gsheets_requests

    out = tmp_path / "b.xlsx"
    sheetgen.build(out, shapes=[(8, 8, 8)])
    p = sheetgen.plan(shapes=[(8, 8, 8)])
    sheet, cell = _wave_cell(p)

    (built,) = _validations(out, sheet, cell)
    assert built == ("list", '"on,off"')
    theirs = tmp_path / "theirs.xlsx"
    wb = openpyxl.Workbook()
    wb.active.append(["m", "k", "n"])
    wb.active.append([8, 8, 8])
    wb.save(theirs)
    filled = fill_workbook(theirs, tmp_path / "f.xlsx").path
    (in_fill,) = _validations(filled, sheet, cell)
    assert in_fill == ("list", '"on,off"')
    col, row = coordinate_from_string(cell)
    sp = next(s for s in p.sheets if s.name == sheet)
    reqs = gsheets_requests._validation_requests(0, sp)
    (rule,) = [r["setDataValidation"]["rule"] for r in reqs
               if r["setDataValidation"]["range"]["startRowIndex"] == row - 1
               and r["setDataValidation"]["range"]["startColumnIndex"]
               == column_index_from_string(col) - 1]
    assert rule["condition"] == {"type": "ONE_OF_LIST", "values": [
        {"userEnteredValue": "on"}, {"userEnteredValue": "off"}]}


def test_overlap_factor_is_the_p_norm_by_hand():
    """3 µs of compute against 4 µs of memory traffic, 1 µs floor: the hard max gives 5 µs,
    p = 2 the Euclidean 5 µs + 1 = 6 µs, p = 1 the sum 7 µs + 1 = 8 µs."""
    from sheetgen.model import refined

    assert refined.refined_time(1e-6, 3e-6, 4e-6) == pytest.approx(5e-6)
    assert refined.refined_time(1e-6, 3e-6, 4e-6, 2.0) == pytest.approx(6e-6, rel=1e-12)
    assert refined.refined_time(1e-6, 3e-6, 4e-6, 1.0) == pytest.approx(8e-6, rel=1e-12)
    assert refined.overlap_factor(3.0, 4.0, 2.0) == pytest.approx(1.25)
    # 0 (and anything below 1) is the hard max; equal times with p = 1 double
    assert refined.overlap_factor(4.0, 4.0, 0.0) == 1.0
    assert refined.overlap_factor(4.0, 4.0, 1.0) == pytest.approx(2.0)
    # a large exponent approaches the hard max: (1 + 0.75^64)^(1/64) - 1 < 1e-9
    assert refined.overlap_factor(3.0, 4.0, 64.0) == pytest.approx(1.0, abs=1e-9)
