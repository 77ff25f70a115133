"""The Measured sheet (`calibrate -o`, `build --measured`): LibreOffice recalculates it to the
reference model, its refined times equal the fit's own predictions (computed without the
sheet), its fitted values are inputs of that sheet only, and `sheetgen check` agrees."""

from __future__ import annotations

import atexit
import copy
import functools
import json
import posixpath
import shutil
import tempfile
import zipfile
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import openpyxl
import pytest
from helpers import run
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from openpyxl.utils import get_column_letter
from xlsx_edit import edit_cells, sheet_parts

import sheetgen.writers.xlsx
from sheetgen.assemble import BuildConfig, plan_build
from sheetgen.calibrate import fit
from sheetgen.calibrate.report import calibrate_file, device_for, measured_inputs
from sheetgen.sheets import measured
from sheetgen.writers.xlsx import write_xlsx

ROOT = Path(__file__).resolve().parent.parent
XLA = ROOT / "benchmarks" / "data" / "xla_h100_sm90.csv"
CSV = ("m,k,n,b,time_s\n4096,4096,4096,1,2.1e-4\n1,8192,8192,1,4.6e-5\n256,256,256,1,5.2e-6\n"
       "1024,1024,1024,4,2e-5\n129,4096,4000,1,1.4e-5\n2048,512,1024,2,1.3e-5\n"
       "8,4096,4096,1,1.1e-5\n512,2048,512,1,7e-6\n128,2048,1024,1,9e-6\n")


@functools.cache
def _calibration():
    """The small table's calibration, fitted once per test process (a fit takes 2 s of CPU):
    the fixture's and the LibreOffice job's. Tests only read it."""
    tmp = Path(tempfile.mkdtemp(prefix="sheetgen-measured-"))
    atexit.register(shutil.rmtree, tmp, True)
    path = tmp / "times.csv"
    path.write_text(CSV)
    return calibrate_file(path, gpu="H100 SXM", dtype="bf16")


@pytest.fixture(scope="module")
def calibration(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("measured")
    return tmp, _calibration()


#: a K-loop latency growing with the tile, a quantize pass with a roofline of its own and a
#: compute ramp ending at 10 GFLOP (4096³, 1.4e11 FLOPs, lies beyond it), set by hand (the
#: small table's fit chooses none of them); the pass's three times each win on some row
#: (test_the_quantize_kernel_takes_the_slowest_of_its_three_times)
TERMS = {"k_latency": 2e-10, "k_tile_growth": True, "tile_latency": 1e-6, "quantize_bytes": 5.0,
         "split_floor": 1.5e-6,
         "split_min_k": 512.0, "ramp_flops": 3e9, "ramp_exponent": 0.8, "ramp_end": 1e10,
         "quantize_efficiency": 0.5, "quantize_row_latency": 7e-9, "quantize_k_latency": 3e-10}


def _plan(cal, waves: bool | None = None, **terms: float):
    """The workbook with the Measured sheet for `cal`; the shared calibration's plans are made
    once (the LibreOffice job and two tests read the same three)."""
    if cal is _calibration():
        return _shared_plan(waves, tuple(sorted(terms.items())))
    return _plan_of(cal, waves, **terms)


@functools.cache
def _shared_plan(waves: bool | None, terms: tuple[tuple[str, float], ...]):
    return _plan_of(_calibration(), waves, **dict(terms))


def _plan_of(cal, waves: bool | None = None, **terms: float):
    inputs = measured_inputs(cal)
    if waves is not None:
        inputs = measured.MeasuredInputs(**{**inputs.__dict__, "waves": waves, **terms})
    return plan_build(BuildConfig(gpu="H100 SXM", dtype="bf16", spare_rows=0,
                                  measured=inputs))


def test_sheet_matches_the_fit_without_the_sheet(calibration):
    _tmp, cal = calibration
    for waves, terms in ((False, {}), (True, {}), (False, TERMS)):
        p = _plan(cal, waves, **terms)
        table = p.table("measured")
        col = {c.name: p.model.columns[c.name] for c in table.columns}  # SI
        params = fit.Params(**{**cal.params.__dict__, "waves": waves, **terms})
        expect = fit.predict(device_for(cal.gpu, cal.dtype), params, cal.data)
        np.testing.assert_allclose(np.asarray(col[measured.CAL_TIME.name], float), expect,
                                   rtol=1e-12)
        np.testing.assert_allclose(np.asarray(col["meas_roof_time"], float), cal.pure,
                                   rtol=1e-12)  # the Inputs sheet's efficiencies are 1.0
        s = p.model.scalars
        assert s["meas_mean_cal"] == pytest.approx(np.mean(np.abs(
            (expect - cal.data.measured) / cal.data.measured)), rel=1e-12)
    # the fitted values sit on the Measured sheet; the Inputs sheet keeps its defaults
    assert p.model.scalars["cal_compute_eff"] == cal.params.compute_efficiency
    assert p.model.scalars["compute_eff"] == 1.0
    assert p.model.scalars["launch_overhead"] == cal.gpu.launch_overhead  # the preset's
    assert p.model.scalars["cal_floor"] == cal.params.launch_overhead != cal.gpu.launch_overhead


@libreoffice_job("measured-sheet", to="values")
def _measured_workbooks(tmp: Path) -> dict[str, Path]:
    cal = _calibration()
    plans = {"off": _plan(cal, False), "on": _plan(cal, True),
             "terms": _plan(cal, False, **TERMS)}
    files = {k: write_xlsx(p, tmp / f"waves_{k}.xlsx") for k, p in plans.items()}
    with pytest.MonkeyPatch.context() as mp:  # every cached value wrong: only a recalculation
        mp.setattr(sheetgen.writers.xlsx, "_cached",  # can fix them
                   lambda v: "WRONG" if isinstance(v, str) and v else -12345.0)
        files["wrong"] = write_xlsx(plans["on"], tmp / "wrong.xlsx")
    # a user's edit on the Measured sheet: waves off, another floor, overlap exponent 1.5,
    # a K-loop latency of 0.3 ns per k, a 5-byte quantize pass, a 2 µs split-K floor from
    # k = 1,024, a compute ramp to half the efficiency at 5 GFLOP with h = 1.7 ending at
    # 2 GFLOP (the rows of 4.2, 8.6 and 137 GFLOP beyond it), a write cost of 2 reads a
    # byte of C, a new measured time
    sheet = plans["on"].sheet("Measured")
    cells = {c.name: f"{get_column_letter(c.col + 1)}{c.row + 1}" for c in sheet.cells}
    edits = {("Measured", cells[q.name]): value for q, value in (
        (measured.CAL_WAVES, "off"),
        (measured.CAL_FLOOR, 3),  # the sheet's times are µs
        (measured.CAL_OVERLAP, 1.5),
        (measured.CAL_K_LATENCY, 3e-4),  # µs per unit of k
        (measured.CAL_K_TILE, "ON"),  # any case, as the waves' switch
        (measured.CAL_TILE_LATENCY, 2),  # µs per tile
        (measured.CAL_QUANT_BYTES, 5),
        (measured.CAL_QUANT_EFF, 0.7),
        (measured.CAL_QUANT_ROW, 5e-3),  # µs per row of A
        (measured.CAL_QUANT_K, 4e-4),  # µs per element of a row
        (measured.CAL_SPLIT_FLOOR, 2),  # µs
        (measured.CAL_SPLIT_MIN_K, 1024),
        (measured.CAL_RAMP_FLOPS, 5e9),
        (measured.CAL_RAMP_H, 1.7),
        (measured.CAL_RAMP_END, 2e9),
        (measured.CAL_WRITE, 2.0))}
    table = plans["on"].table("measured")
    time_col = get_column_letter(table.column("meas_time").col + 1)
    edits["Measured", f"{time_col}{table.first_row + 1}"] = 400
    files["edited"] = edit_cells(files["on"], tmp / "edited.xlsx", edits)
    return files


@needs_libreoffice
def test_libreoffice_recalculates_the_measured_sheet_to_the_model(calibration, libreoffice):
    _, cal = calibration
    plans = {"off": _plan(cal, False), "on": _plan(cal, True),
             "terms": _plan(cal, False, **TERMS)}
    out = libreoffice.outputs("measured-sheet")
    for key in plans:
        assert mismatches(plans[key], read_values(out[key])) == [], key
    assert mismatches(plans["on"], read_values(out["wrong"])) == []
    got = read_values(out["edited"])["Measured"]
    data = copy.copy(cal.data)  # the shared calibration stays as fitted
    data.measured = data.measured.copy()
    data.measured[0] = 4e-4
    params = fit.Params(**{**cal.params.__dict__, "waves": False, "launch_overhead": 3e-6,
                           "overlap": 1.5, "k_latency": 3e-10, "k_tile_growth": True,
                           "tile_latency": 2e-6,
                           "quantize_bytes": 5.0,
                           "split_floor": 2e-6, "split_min_k": 1024.0,
                           "ramp_flops": 5e9, "ramp_exponent": 1.7, "ramp_end": 2e9,
                           "quantize_efficiency": 0.7, "quantize_row_latency": 5e-9,
                           "quantize_k_latency": 4e-10, "write_cost": 2.0})
    expect = fit.predict(device_for(cal.gpu, cal.dtype), params, data)
    col = measured.TABLE.col + [c.name for c in measured.TABLE.all_columns()].index(
        measured.CAL_TIME.name)
    rows = [got[(measured.TABLE.first_row + i, col)] for i in range(len(expect))]
    np.testing.assert_allclose(rows, expect * 1e6, rtol=1e-9)  # µs


def test_the_k_loop_grows_with_the_tile_by_hand(calibration):
    """TERMS' K loop without split-K, row by row: k · 0.2 ns · 1 for m ≤ 64, · 2 for
    64 < m ≤ 128, · 4 beyond (vLLM's 64×64, 64×128 and 128×128 tiles); with the growth off,
    k · 0.2 ns on every row."""
    _, cal = calibration
    rows = list(zip(cal.data.m, cal.data.k, strict=True))
    for growth in (True, False):
        p = _plan(cal, False, **{**TERMS, "k_tile_growth": growth, "split_min_k": 0.0,
                                 "split_floor": 0.0})
        tile = list(p.model.columns[measured.K_TILE.name])
        loop = np.asarray(p.model.columns[measured.K_LOOP.name], float)
        for (m, k), scale in (((8, 4096), 1), ((1, 8192), 1), ((128, 2048), 2),
                              ((129, 4096), 4), ((4096, 4096), 4)):
            i = rows.index((m, k))
            assert tile[i] == (scale if growth else 1), (m, growth)
            assert loop[i] == pytest.approx(k * 2e-10 * (scale if growth else 1), rel=1e-12)
        # the library's tiles (64×64 to m = 64, 64×128 to 128, 128×128 beyond) in waves of
        # 132 SMs: 4096³ 1,024 tiles, 8 waves; 1×8192×8192 128 tiles; 4 × 1024³ 256 tiles;
        # 128×2048×1024 16 tiles; 129×4096×4000 64 tiles
        col = p.model.columns
        waves = list(col[measured.LIBRARY_WAVES.name])
        shapes = list(zip(cal.data.m, cal.data.k, cal.data.n, cal.data.b, strict=True))
        for shape, count in (((4096, 4096, 4096, 1), 8), ((1, 8192, 8192, 1), 1),
                             ((1024, 1024, 1024, 4), 2), ((128, 2048, 1024, 1), 1),
                             ((129, 4096, 4000, 1), 1), ((2048, 512, 1024, 2), 2)):
            assert waves[shapes.index(shape)] == (count if growth else 1), shape
        # growing, the waves of tiles bound the GEMM (the larger of the refined time and
        # floor + waves · (1 µs + loop)); off, the loop adds to it; the quantize pass follows
        refined = np.asarray(col[measured.REFINED.time.name], float)
        quant = np.asarray(col[measured.QUANT_TIME.name], float)
        gemm = (np.maximum(refined, cal.params.launch_overhead
                           + np.asarray(waves, float) * (1e-6 + loop)) if growth
                else refined + loop)
        np.testing.assert_allclose(np.asarray(col[measured.CAL_TIME.name], float),
                                   gemm + quant, rtol=1e-12)
    # with a K loop long enough to matter (50 ns a unit of k), the bound takes over on the
    # skinny rows: 1 × 8192 × 8192 runs one wave of tiles, 1 µs + 409.6 µs, after the floor
    p = _plan(cal, False, **{**TERMS, "k_latency": 5e-8, "split_min_k": 0.0,
                             "split_floor": 0.0})
    i = rows.index((1, 8192))
    got = p.model.columns[measured.CAL_TIME.name][i]
    quant = p.model.columns[measured.QUANT_TIME.name][i]
    assert got - quant == pytest.approx(cal.params.launch_overhead + 1e-6 + 8192 * 5e-8,
                                        rel=1e-12)


def test_the_quantize_kernel_takes_the_slowest_of_its_three_times(calibration):
    """TERMS' pass by hand, row by row: b·m·k·5 B at 0.5 of the H100's 3.35 TB/s, b·m rows of
    7 ns, one row of k elements of 0.3 ns; each wins somewhere, and the sheet's column is the
    slowest."""
    _, cal = calibration
    p = _plan(cal, False, **TERMS)
    got = np.asarray(p.model.columns[measured.QUANT_TIME.name], float)
    hand = {(4096, 4096, 4096, 1): 4096 * 4096 * 5 / (3.35e12 * 0.5),  # its bytes: 50.1 µs
            (1, 8192, 8192, 1): 8192 * 0.3e-9,  # one row of 8,192: 2.46 µs
            (1024, 1024, 1024, 4): 4 * 1024 * 7e-9}  # 4,096 rows: 28.7 µs
    rows = list(zip(cal.data.m, cal.data.k, cal.data.n, cal.data.b, strict=True))
    for shape, seconds in hand.items():
        assert got[rows.index(shape)] == pytest.approx(seconds, rel=1e-12), shape
    assert cal.gpu.hbm_bandwidth == 3.35e12


def test_calibrate_output_workbook_checks_clean(tmp_path):
    book = tmp_path / "h100.xlsx"
    proc = run("calibrate", str(XLA), "--gpu", "H100 SXM", "--dtype", "bf16", "-o", str(book))
    assert proc.exit_code == 0, proc.stderr
    assert f"wrote {book} (Measured sheet: 375 bf16 rows)" in proc.stdout
    wb = openpyxl.load_workbook(book, read_only=True)
    assert "Measured" in wb.sheetnames
    wb.close()
    proc = run("check", str(book))
    assert proc.exit_code == 0, proc.output
    assert "Measured" in proc.stdout


def test_calibrate_counts_bytes_in_the_storage_asked_for(tmp_path):
    """`calibrate --output-dtype fp32` (aiter's bf16 GEMMs write fp32; raw cuBLASLt int8
    writes int32): the fit counts C at 4 bytes an element, says so, and the workbook it
    writes has the same storage on its Inputs sheet, so the Measured sheet's fitted times
    are calibrate's own: by hand, 1 × 4096 × 4096 in bf16 moves 2·4096 + 2·4096² + 4·4096 B
    with C in fp32, against 2·4096 + 2·4096² + 2·4096 with auto."""
    book = tmp_path / "h100.xlsx"
    auto = json.loads(run("calibrate", str(XLA), "--gpu", "H100 SXM", "--dtype", "bf16",
                          "--json").stdout)
    proc = run("calibrate", str(XLA), "--gpu", "H100 SXM", "--dtype", "bf16", "--json",
               "--output-dtype", "fp32", "-o", str(book))
    assert proc.exit_code == 0, proc.output
    wide = json.loads(proc.stdout.split("\nwrote")[0])
    assert auto["storage"] == {"activation": "bf16", "weight": "bf16", "output": "bf16"}
    assert wide["storage"] == {"activation": "bf16", "weight": "bf16", "output": "fp32"}
    cal = calibrate_file(XLA, gpu="H100 SXM", dtype="bf16", storage=("auto", "auto", "fp32"))
    device = device_for(cal.gpu, cal.dtype, cal.storage)
    assert device.operand_bytes == (2, 2, 4)
    moved = fit.fixed_terms(device, fit.PURE, cal.data).moved
    i = next(i for i in range(len(cal.data)) if (cal.data.b[i], cal.data.m[i], cal.data.k[i],
                                                  cal.data.n[i]) == (1, 4096, 4096, 4096))
    assert moved[i] == 2 * 4096 * 4096 + 2 * 4096 * 4096 + 4 * 4096 * 4096
    assert "operands stored A bf16, B bf16, C fp32" in "\n".join(cal.lines())
    assert [r["calibrated_s"] for r in wide["rows"]] != [r["calibrated_s"] for r in auto["rows"]]
    wb = openpyxl.load_workbook(book, data_only=True)
    assert any(row[1] == "fp32" for row in wb["Inputs"].iter_rows(values_only=True)
               if row[0] == "Outputs (C) stored as")
    ws = wb["Measured"]
    col = measured.TABLE.col + [c.name for c in measured.TABLE.all_columns()].index(
        measured.CAL_TIME.name)
    cached = [ws.cell(measured.TABLE.first_row + 1 + j, col + 1).value
              for j in range(len(wide["rows"]))]
    np.testing.assert_allclose(cached, [r["calibrated_s"] * 1e6 for r in wide["rows"]],
                               rtol=1e-9)  # µs
    assert run("check", str(book)).exit_code == 0


def test_build_measured_adds_the_sheet(tmp_path):
    src = tmp_path / "t.csv"
    src.write_text(CSV)
    book = tmp_path / "b.xlsx"
    proc = run("build", str(book), "--gpu", "H100 SXM", "--measured", str(src))
    assert proc.exit_code == 0, proc.stderr
    wb = openpyxl.load_workbook(book, read_only=True)  # one sheet read, not every cell
    ws = wb["Measured"]
    assert ws.cell(measured.TABLE.first_row + 1, 1).value == 4096
    wb.close()
    assert sheet_charts(book, "Measured")  # the measured-vs-predicted chart
    bad = tmp_path / "bad.csv"
    bad.write_text("m,k,n\n1,2,3\n")
    proc = run("build", str(tmp_path / "c.xlsx"), "--measured", str(bad))
    assert proc.exit_code == 2 and "no time column" in proc.stderr
    assert not (tmp_path / "c.xlsx").exists()


_PACKAGE_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_CHART_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/chart"
_DRAWING_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/drawing"


def _related(z: zipfile.ZipFile, part: str, kind: str) -> list[str]:
    """The parts that `part`'s relationships of type `kind` point to (that exist)."""
    folder, name = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", name + ".rels")
    if rels not in z.namelist():
        return []
    out = []
    for rel in ET.fromstring(z.read(rels)).iter(_PACKAGE_REL):
        if rel.get("Type") == kind and rel.get("TargetMode") != "External":
            target = rel.get("Target", "")
            path = target.lstrip("/") if target.startswith("/") else \
                posixpath.normpath(posixpath.join(folder, target))
            if path in z.namelist():
                out.append(path)
    return out


def sheet_charts(path: Path, sheet: str) -> list[str]:
    """The chart parts drawn on `sheet` (what openpyxl reads into ws._charts: the charts of
    the sheet's drawing), from the package's relationships instead of a whole load (2 s)."""
    with zipfile.ZipFile(path) as z:
        return [chart for drawing in _related(z, sheet_parts(z)[sheet], _DRAWING_REL)
                for chart in _related(z, drawing, _CHART_REL)
                if ET.fromstring(z.read(chart)).find(
                    ".//{http://schemas.openxmlformats.org/drawingml/2006/chart}plotArea")
                is not None]


def test_fitted_overlap_reaches_the_sheet_and_the_preset(calibration, tmp_path):
    """The fitted overlap exponent is an input cell of the Measured sheet, the refined column
    follows it, and --preset-out writes it (loaded back, --no-fit reproduces the fit)."""
    _tmp, cal = calibration
    forced = fit.fit(device_for(cal.gpu, cal.dtype), cal.data, overlap=True)
    assert forced.overlap >= 1
    inputs = measured.MeasuredInputs(**{**measured_inputs(cal).__dict__,
                                        "overlap": forced.overlap})
    p = plan_build(BuildConfig(gpu="H100 SXM", dtype="bf16", spare_rows=0, measured=inputs))
    assert p.model.scalars["cal_overlap"] == forced.overlap
    params = fit.Params(**{**cal.params.__dict__, "overlap": forced.overlap})
    np.testing.assert_allclose(
        np.asarray(p.model.columns[measured.CAL_TIME.name], float),
        fit.predict(device_for(cal.gpu, cal.dtype), params, cal.data), rtol=1e-12)
    preset = tmp_path / "fitted.toml"
    cal.write_preset(preset, name="fitted")
    text = preset.read_text()
    assert f"overlap_exponent = {float(f'{cal.params.overlap:.6g}')!r}" in text
