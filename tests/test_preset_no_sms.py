"""A user's GPU preset without `sm_count` (a datasheet gives peaks, bandwidth and memory, but
seldom the SM count): it loads; the wave cells say "n/a"; the refined time is the plain
roofline (plus the launch floor), a number and not a gap, with the sheet saying why; and the
Python reference, the evaluator (`check`) and LibreOffice agree on such a workbook.

Every expected time is worked out by hand from the preset's figures:
compute = 2·m·k·n / peak, memory = 2 B · (m·k + k·n + m·n) / bandwidth (bf16 operands),
refined = floor + max(compute, memory)."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import openpyxl
import pytest
from helpers import one_line_error, preset_toml, process_folder, run
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from openpyxl.utils import get_column_letter
from xlsx_edit import edit_cells

import sheetgen
from sheetgen.assemble import BuildConfig, plan_build
from sheetgen.inputs.presets import load_presets
from sheetgen.inputs.shapes import Shape
from sheetgen.verify.check import check_workbook
from sheetgen.writers.xlsx import write_xlsx

NAME = "Datasheet GPU"
PEAK, BW = 400e12, 2.0e12  # bf16 FLOP/s and HBM B/s, as the file below gives them
#: wave quantization asked for, but no SM count to count waves with
PRESET = preset_toml(NAME, f"bf16 = {PEAK:g}, fp32 = 50e12", BW, "wave_quantization = true")
NOTE = "waves off: preset has no SM count"
WAVE_COLUMNS = ("waves", "wave_efficiency", "quantized_compute_time")
SHAPES = [(1, 4096, 4096), (4096, 4096, 4096), (8192, 8192, 8192), (300, 70, 5)]


def by_hand(m: int, k: int, n: int, floor: float = 0.0) -> float:
    compute = 2 * m * k * n / PEAK
    memory = 2 * (m * k + k * n + m * n) / BW
    return floor + max(compute, memory)


@pytest.fixture
def preset(tmp_path: Path) -> Path:
    path = tmp_path / "datasheet.toml"
    path.write_text(PRESET)
    return path


def test_the_preset_loads_without_an_sm_count(preset):
    gpu = load_presets(preset).get(NAME)
    assert gpu.sm_count is None and gpu.wave_quantization is True


@pytest.mark.parametrize("floor", [0.0, 5e-6])
def test_refined_time_is_the_plain_roofline_by_hand(preset, floor):
    frame = sheetgen.analyze(SHAPES, gpu=NAME, gpu_file=preset, launch_overhead=floor)
    for (m, k, n), (_, row) in zip(SHAPES, frame.iterrows(), strict=True):
        assert row.refined_time == pytest.approx(by_hand(m, k, n, floor), rel=1e-12)
        assert row.predicted_time == pytest.approx(by_hand(m, k, n), rel=1e-12)
        assert [row[c] for c in WAVE_COLUMNS] == ["n/a"] * 3
        # the tile count needs no SM count: ceil(m/128)·ceil(n/128)
        assert row.tiles == -(-m // 128) * -(-n // 128)
    # 8192³ is compute-bound: 2·8192³ / 400e12 = 2,748.78 µs, with no wave penalty
    assert frame.refined_time.iloc[2] == pytest.approx(floor + 2 * 8192**3 / 400e12, rel=1e-12)


def test_the_sheet_states_the_assumption_and_greys_the_wave_columns(preset):
    plan = sheetgen.plan(shapes=SHAPES, gpu=NAME, gpu_file=preset, spare_rows=2)
    assert plan.model.scalars["waves_note"] == NOTE
    assert plan.model.scalars["sm_count"] == "n/a"  # GPU Specs says n/a, Inputs shows it
    matmul = next(s for s in plan.sheets if s.name == "Matmul")
    note = next(c for c in matmul.cells if c.name == "waves_note")
    refined = next(c for c in plan.table("matmul").columns if c.name == "refined_time")
    assert (note.row, note.col) == (plan.table("matmul").header_row - 1, refined.col)
    assert "ISNUMBER(SM_COUNT)" in note.formula
    assert any("ISNUMBER(SM_COUNT)" in d.condition for d in matmul.dim_rules)
    # a built-in preset has its count: the note reads the switch
    assert sheetgen.plan(shapes=SHAPES, spare_rows=0, waves=True).model.scalars[
        "waves_note"] == "waves on"
    assert sheetgen.plan(shapes=SHAPES, spare_rows=0).model.scalars["waves_note"] == \
        "waves off"


def test_check_passes_on_the_built_workbook(preset, tmp_path):
    # the count-less preset's workbook: 4 shapes, 2 spare rows, 4 layers (_plans, shared
    # with the LibreOffice job)
    report = check_workbook(shutil.copyfile(_built(), tmp_path / "a.xlsx"))
    assert report.ok, [m.line() for m in report.mismatches[:5]]
    assert sum(report.checked.values()) > 1000


def top_of_matmul(path: Path) -> str:
    """The Matmul sheet's first four rows (formulas as written, as openpyxl reads them), one
    text: read-only, so only those rows of one sheet are parsed, not the whole workbook."""
    wb = openpyxl.load_workbook(path, read_only=True)
    try:
        return "\n".join(str(c.value) for row in wb["Matmul"].iter_rows(max_row=4)
                         for c in row)
    finally:
        wb.close()


def test_cli_build_show_and_gpus(preset, tmp_path):
    out = tmp_path / "mine.xlsx"
    result = run("build", str(out), "--gpu-file", str(preset), "--gpu", NAME)
    assert result.exit_code == 0, result.output
    assert NOTE in top_of_matmul(out)
    shown = run("show", "--gpu-file", str(preset), "--gpu", NAME)
    assert shown.exit_code == 0 and NOTE in shown.output, shown.output
    listed = run("gpus", "--gpu-file", str(preset), NAME, "--sources")
    assert listed.exit_code == 0 and NOTE in listed.output, listed.output


@pytest.mark.parametrize(("value", "shown"), [("0", "0"), ("-4", "-4"), ("2.5", "2.5"),
                                               ('"132"', "'132'")])
def test_a_bad_sm_count_is_one_error_line(tmp_path, value, shown):
    bad = tmp_path / "bad.toml"
    bad.write_text(PRESET + f"sm_count = {value}\n")
    one_line_error(run("build", str(tmp_path / "x.xlsx"), "--gpu-file", str(bad)),
                   "bad.toml", f"gpu '{NAME}'", "field 'sm_count'",
                   f"expected a whole number from 1 to 100,000, got {shown}")


# ------------------------------------------------------------------ LibreOffice agrees (1e-9)

@functools.cache
def _folder() -> Path:
    return process_folder("sheetgen-no-sms-")


@functools.cache
def _plans() -> dict[str, object]:
    """The workbook with the count-less preset, and the plan the same workbook must match
    once a user types an SM count (100) into its GPU Specs row: waves then count. Planned
    once per test process (the job, its test and the check test read them)."""
    folder = _folder()
    preset = folder / "datasheet.toml"
    preset.write_text(PRESET)
    with_count = folder / "with_count.toml"
    with_count.write_text(PRESET + "sm_count = 100\n")
    shapes = [Shape(*s) for s in SHAPES]
    return {k: plan_build(BuildConfig(shapes=shapes, gpu=NAME, presets=load_presets(f),
                                      spare_rows=2, layers=4))
            for k, f in (("no_sms", preset), ("typed", with_count))}


@functools.cache
def _built() -> Path:
    """The count-less preset's workbook, written once per test process; callers copy it."""
    return write_xlsx(_plans()["no_sms"], _folder() / "no_sms.xlsx")


@libreoffice_job("preset-no-sms", to="values")
def _no_sms_workbooks(tmp: Path) -> dict[str, Path]:
    plans = _plans()
    built = shutil.copyfile(_built(), tmp / "no_sms.xlsx")
    gpus = plans["no_sms"].table("gpus")
    col = {c.name: c for c in gpus.columns}
    row = gpus.first_row + list(col["spec_name"].values).index(NAME)
    typed = edit_cells(built, tmp / "typed.xlsx", {
        ("GPU Specs", f"{get_column_letter(col['spec_sms'].col + 1)}{row + 1}"): 100})
    return {"no_sms": built, "typed": typed}


@needs_libreoffice
def test_libreoffice_agrees_with_the_reference(libreoffice):
    plans = _plans()
    out = libreoffice.outputs("preset-no-sms")
    values = {k: read_values(p) for k, p in out.items()}
    assert mismatches(plans["no_sms"], values["no_sms"]) == []
    assert mismatches(plans["typed"], values["typed"]) == []  # the count, typed in, is live
    t = plans["no_sms"].table("matmul")
    col = {c.name: c.col for c in t.columns}
    got = values["no_sms"]["Matmul"]
    for i, (m, k, n) in enumerate(SHAPES):
        r = t.first_row + i
        assert got[(r, col["refined_time"])] * 1e-6 == pytest.approx(by_hand(m, k, n),
                                                                     rel=1e-9)  # µs
        assert [got[(r, col[c])] for c in WAVE_COLUMNS] == ["n/a"] * 3
    assert NOTE in got.values()
    # typed in: 8192³ has 64·64 = 4096 tiles on 100 SMs, 41 waves (4100 slots)
    typed = values["typed"]["Matmul"]
    r = t.first_row + 2
    assert typed[(r, col["waves"])] == 41
    assert typed[(r, col["refined_time"])] * 1e-6 == pytest.approx(
        2 * 8192**3 / PEAK * 4100 / 4096, rel=1e-9)
    assert "waves on" in typed.values()


def test_a_preset_written_back_leaves_the_missing_count_out(preset, tmp_path):
    """calibrate's fitted preset of a count-less GPU: TOML has no null, so sm_count (and
    its source) stay out, and the file loads back to a preset without a count."""
    from sheetgen.inputs.preset_toml import preset_text, write_preset

    gpu = {"name": NAME, "peak_flops": {"bf16": PEAK}, "hbm_bandwidth": BW,
           "memory_bytes": 48e9, "link_bandwidth": 1e11, "link_latency": 8e-6,
           "host_bandwidth": 3e10, "sm_count": None, "sm_count_source": "not given"}
    assert "sm_count" not in preset_text([gpu])
    back = load_presets(write_preset(tmp_path / "fit.toml", [gpu])).get(NAME)
    assert back.sm_count is None and back.peak("bf16") == PEAK


def test_fill_with_the_preset_checks_clean(preset, tmp_path):
    """`fill` (the formulas written into a user's own workbook) with the count-less preset:
    the evaluator agrees with the reference model."""
    plan = tmp_path / "plan.xlsx"
    shutil.copyfile(Path(__file__).resolve().parent.parent / "examples" / "plan.xlsx", plan)
    out = tmp_path / "filled.xlsx"
    result = run("fill", str(plan), "--gpu-file", str(preset), "--gpu", NAME, "-o", str(out))
    assert result.exit_code == 0, result.output
    report = check_workbook(out)
    assert report.ok, [m.line() for m in report.mismatches[:5]]
    assert NOTE in top_of_matmul(out)
