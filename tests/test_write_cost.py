"""The write cost: a byte of C written costs w bytes read, on the refined time's memory side
(sheetgen.model.kernel_terms.write_memory_time), fitted by `sheetgen calibrate` and carried by
a preset into every sheet that uses the fit.

Every expected time is worked out by hand (bf16 operands and output, no launch floor, the
hard max): memory = 2 B · (m·k + k·n + m·n) / bandwidth, then (w − 1) · 2 B · m·n / bandwidth
more. The sheets hold times in their own units: µs on Matmul, ms on Pipeline."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest
from helpers import preset_toml, process_folder, table_values
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from xlsx_edit import cell_of, edit_cells

from sheetgen.assemble import BuildConfig, plan_build
from sheetgen.calibrate import fit
from sheetgen.calibrate.data import Measurements
from sheetgen.inputs.model_config import from_dict
from sheetgen.inputs.presets import PresetError, load_presets
from sheetgen.inputs.shapes import Shape
from sheetgen.model import kernel_terms
from sheetgen.model import transformer as xf_model
from sheetgen.sheets.transformer import TransformerInputs
from sheetgen.sheets.transformer.values import op_records
from sheetgen.writers.xlsx import write_xlsx

NAME = "Write GPU"
PEAK, BW, W = 400e12, 2.0e12, 1.5
PRESET = preset_toml(NAME, f"bf16 = {PEAK:g}", BW, "sm_count = 100", f"write_cost = {W:g}")
#: a short-k GEMM whose traffic is mostly C, and a compute-bound one the cost cannot reach
SHAPES = [(4096, 128, 4096), (4096, 4096, 4096)]


def test_the_hand_figures():
    m, k, n = 4096, 128, 4096
    memory = 2 * (m * k + k * n + m * n) / BW  # 17.825792 µs, 16.777216 µs of it C's
    assert memory == pytest.approx(17.825792e-6, rel=1e-12)
    assert kernel_terms.write_memory_time(memory, 2 * m * n, W, BW) == pytest.approx(
        17.825792e-6 + 0.5 * 16.777216e-6, rel=1e-12)  # 26.2144 µs
    assert kernel_terms.write_memory_time(memory, 2 * m * n, 1.0, BW) == memory


@functools.cache
def _plan():
    preset = process_folder("sheetgen-write-") / "write.toml"
    preset.write_text(PRESET)
    return plan_build(BuildConfig(shapes=[Shape(*s) for s in SHAPES], gpu=NAME,
                                  presets=load_presets(preset), spare_rows=0, layers=2,
                                  pipeline_shape=(4096, 128, 4096)))


def test_the_matmul_sheets_memory_side_pays_the_write_cost():
    col = table_values(_plan(), "matmul")
    assert _plan().model.scalars["write_cost"] == W  # the preset's, in the Inputs cell
    assert col["write_memory_time"][0] == pytest.approx(26.2144, rel=1e-12)  # µs
    assert col["memory_time"][0] == pytest.approx(17.825792, rel=1e-12)
    assert col["refined_time"][0] == pytest.approx(26.2144, rel=1e-12)  # memory-bound
    # 2·4,096³ / 400e12 = 343.597 µs of compute: C's 33.6 MB at 1.5 reads cannot reach it
    assert col["refined_time"][1] == pytest.approx(2 * 4096**3 / PEAK * 1e6, rel=1e-12)


def test_the_pipeline_and_whatif_sheets_take_it_too():
    plan = _plan()
    layers = table_values(plan, "layers")
    # layer 1 is [m×n]·[n×k] -> [m×k]: 4096 × 4096 · 4096 × 128, C = 4096 × 128
    m, k, n = 4096, 128, 4096
    memory = 2 * (m * n + n * k + m * k) / BW
    assert layers["layer_refined_time"][0] * 1e-3 == pytest.approx(
        memory + 0.5 * 2 * m * k / BW, rel=1e-12)  # ms
    # layer 2 is [m×k]·[k×n] -> [m×n]: C = 4096 × 4096
    assert layers["layer_refined_time"][1] * 1e-3 == pytest.approx(26.2144e-6, rel=1e-12)
    wi = table_values(plan, "whatif")
    assert all(t >= mt for t, mt in zip(wi["wi_write_memory_time"], wi["wi_memory_time"],
                                        strict=True))


def test_a_preset_out_of_range_is_one_clear_error(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text(preset_toml(NAME, f"bf16 = {PEAK:g}", BW, "write_cost = 0.5"))
    with pytest.raises(PresetError, match=re.escape(
            "field 'write_cost': expected 1 (off) to 4 bytes read per byte written, got 0.5")):
        load_presets(bad)


def test_the_fit_recovers_a_write_cost():
    """Times made by the model itself with w = 1.5 (and a 5 µs floor, 80 % / 90 %
    efficiencies): the write step, fitted from the fit without it, finds w again."""
    device = fit.Device("synthetic", PEAK, BW, 2.0, 132)
    rng = np.random.default_rng(7)
    m, k, n = (2.0 ** rng.integers(4, 15, 200) for _ in range(3))
    true = fit.Params(0.8, 0.9, 5e-6, write_cost=1.5, write=True)
    def rows(seconds):
        return Measurements("synthetic", "time_s", "bf16", m, k, n, np.ones(200), seconds)

    data = rows(fit.predict(device, true, rows(np.ones(200))))
    base = fit.fit(device, data)
    got = fit.fit(device, data, write=True, base=base)
    assert got.write and got.write_cost == pytest.approx(1.5, rel=1e-3)
    assert got.memory_efficiency == pytest.approx(0.9, rel=1e-3)
    assert fit.fit(device, data).write_cost == 1.0  # no step, no cost


#: a two-layer dense model small enough to work by hand (tests/test_refined_kernel.py's)
TINY = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 32000,
        "intermediate_size": 4096}


def test_the_transformer_sheet_equals_the_pure_model_with_it():
    """sheetgen.model.transformer.estimate with the write cost typed here: every realistic
    op time agrees with the sheet's. Prefill's GEMMs are compute-bound at 400 TFLOP/s (QKV:
    3.2 GFLOP in 8.05 µs a layer against 5.24 µs of bytes) and do not move; a decode step's
    QKV (1 × 1024 · 1024 × 3072, memory-bound) writes 2 · 3,072 B of C a layer, two layers
    a step: 0.5 · 12,288 B / 2e12 = 3.072 ns more a step."""
    preset = process_folder("sheetgen-write-") / "write_xf.toml"
    preset.write_text(PRESET)
    cfg = from_dict(TINY)
    ti = TransformerInputs(cfg, batch=1, prompt_tokens=512, generate=4)
    plan = plan_build(BuildConfig(gpu=NAME, presets=load_presets(preset), transformer=ti,
                                  shapes=[Shape(64, 64, 64)], spare_rows=0, layers=2))
    s = plan.model.scalars
    wl = xf_model.Workload(batch=1, prompt=512, generate=4, tp=1, weight_bytes=2,
                           act_bytes=2, out_bytes=2, kv_bytes=2, embed_bytes=2)
    hw = xf_model.Machine(peak=PEAK, bw=BW, capacity=s["capacity_bytes"], link_bw=100e9,
                          link_latency=8e-6, kernel=xf_model.GemmKernels(sms=100),
                          write_cost=W)
    est = xf_model.estimate(cfg, wl, hw)
    sheet = [r["realistic_time"] for r in op_records(cfg, s)]
    assert sheet == pytest.approx(est.op_real, rel=1e-12)
    off = xf_model.estimate(cfg, wl, xf_model.Machine(**{**hw.__dict__, "write_cost": 1.0}))
    labels = [(r["phase"], r["op"]) for r in op_records(cfg, s)]
    qkv = [i for i, (ph, op) in enumerate(labels) if ph == "decode" and "QKV" in op]
    assert len(qkv) == 1
    assert est.op_real[0] == off.op_real[0]  # prefill QKV: compute-bound
    assert est.op_real[qkv[0]] - off.op_real[qkv[0]] == pytest.approx(3.072e-9, rel=1e-6)


@libreoffice_job("write-cost", to="values")
def _workbooks(tmp: Path) -> dict[str, Path]:
    """The preset's workbook, and a copy where the user types a write cost of 2."""
    built = write_xlsx(_plan(), tmp / "write.xlsx")
    typed = edit_cells(built, tmp / "typed.xlsx",
                       {cell_of(_plan().defined_names["WRITE_COST"]): 2})
    return {"write": built, "typed": typed}


@needs_libreoffice
def test_libreoffice_recalculates_the_write_cost(libreoffice):
    values = {k: read_values(f) for k, f in libreoffice.outputs("write-cost").items()}
    assert mismatches(_plan(), values["write"]) == []
    t = _plan().table("matmul")
    col = {c.name: c.col for c in t.columns}
    # typed 2: 17.825792 µs + (2 − 1) · 16.777216 µs of C = 34.603008 µs
    for key, want in (("write", 26.2144), ("typed", 34.603008)):
        got = values[key]["Matmul"]
        assert got[(t.first_row, col["write_memory_time"])] == pytest.approx(want, rel=1e-9)
        assert got[(t.first_row, col["refined_time"])] == pytest.approx(want, rel=1e-9)
