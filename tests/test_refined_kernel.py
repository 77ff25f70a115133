"""The kernel terms in the main workbook's refined time (Matmul, What-if, Pipeline): a preset
fitted by `sheetgen calibrate` carries a K loop's latency per unit of k, a split-K kernel's
floor and the k it starts from, and a K loop that grows with the library's tile.

Every expected time is worked out by hand from the preset's figures (bf16 operands, no
launch floor unless stated, the hard max): compute = 2·m·k·n / peak, memory = 2 B · (m·k +
k·n + m·n) / bandwidth, then the kernel terms of sheetgen.model.kernel_terms."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import preset_toml, process_folder, run, table_values
from lo_helpers import libreoffice_job, mismatches, needs_libreoffice, read_values
from xlsx_edit import cell_of, edit_cells

import sheetgen
from sheetgen.assemble import BuildConfig, plan_build
from sheetgen.inputs.model_config import from_dict
from sheetgen.inputs.presets import load_presets
from sheetgen.inputs.shapes import Shape
from sheetgen.model import transformer as xf_model
from sheetgen.sheets import pipeline, whatif
from sheetgen.sheets.transformer import TransformerInputs
from sheetgen.sheets.transformer.values import op_records
from sheetgen.verify.check import check_workbook
from sheetgen.writers.xlsx import write_xlsx

NAME = "Kernel GPU"
PEAK, BW = 400e12, 2.0e12  # bf16 FLOP/s and HBM B/s
K_LATENCY, SPLIT_FLOOR, SPLIT_MIN_K = 1e-9, 3e-6, 2048
FIELDS = ("sm_count = 100", f"k_latency = {K_LATENCY:g}", f"split_k_floor = {SPLIT_FLOOR:g}",
          f"split_k_min_k = {SPLIT_MIN_K}")
PRESET = preset_toml(NAME, f"bf16 = {PEAK:g}", BW, *FIELDS)
#: a GEMV that splits k (32 tiles of 128 under-fill 100 SMs, k ≥ 2,048), a small GEMM that
#: cannot (k < 2,048) and so waits on its K loop, and a large one whose loop is lost in it
SHAPES = [(1, 4096, 4096), (64, 1024, 64), (4096, 4096, 4096)]
#: by hand, in µs: (time before the kernel terms, K loop, split-K floor, refined time)
HAND = {
    # memory 2·(4,096 + 4,096² + 4,096) / 2e12 = 16.785408 µs; split-K: no loop, + 3 µs
    (1, 4096, 4096): (16.785408, 0.0, 3.0, 19.785408),
    # memory 2·(65,536 + 65,536 + 4,096) / 2e12 = 0.135168 µs; + 1,024 · 1 ns
    (64, 1024, 64): (0.135168, 1.024, 0.0, 1.159168),
    # compute 2·4,096³ / 400e12 = 343.597384 µs; 1,024 tiles fill the SMs: + 4,096 · 1 ns
    (4096, 4096, 4096): (343.59738368, 4.096, 0.0, 347.69338368),
}


def test_the_hand_figures():
    m, k, n = 1, 4096, 4096
    assert 2 * (m * k + k * n + m * n) / BW == pytest.approx(16.785408e-6, rel=1e-12)
    assert pytest.approx(343.59738368e-6, rel=1e-12) == 2 * 4096**3 / PEAK
    assert pytest.approx(0.135168e-6, rel=1e-12) == 2 * (64 * 1024 * 2 + 64 * 64) / BW


@functools.cache
def _folder() -> Path:
    return process_folder("sheetgen-kernel-")


@functools.cache
def _plan(growth: bool = False):
    """The kernel preset; `growth`: the K loop grows with the tile instead (below)."""
    preset = _folder() / f"kernel{int(growth)}.toml"
    preset.write_text(GROWTH_PRESET if growth else PRESET)
    shapes = GROWTH_SHAPES if growth else SHAPES
    return plan_build(BuildConfig(shapes=[Shape(*s) for s in shapes], gpu=NAME,
                                  presets=load_presets(preset), spare_rows=2, layers=4,
                                  pipeline_shape=(64, 1024, 64)))


def test_the_matmul_sheet_adds_the_kernel_terms_by_hand():
    col = table_values(_plan(), "matmul")
    for i, shape in enumerate(SHAPES):
        before, loop, split, total = HAND[shape]
        assert col["gemm_time"][i] == pytest.approx(before, rel=1e-12), shape
        assert col["k_loop"][i] == pytest.approx(loop, rel=1e-12, abs=1e-15), shape
        assert col["split_k"][i] == pytest.approx(split, rel=1e-12, abs=1e-15), shape
        assert col["split"][i] == (1 if split else 0)
        assert col["refined_time"][i] == pytest.approx(total, rel=1e-12), shape
        # the roofline beside it stays the pure one
        assert col["predicted_time"][i] == pytest.approx(before, rel=1e-12)
    s = _plan().model.scalars
    assert (s["k_latency"], s["split_k_floor"], s["split_k_min_k"]) == (
        K_LATENCY, SPLIT_FLOOR, SPLIT_MIN_K)


def test_what_if_and_pipeline_carry_the_kernel_terms():
    p = _plan()
    wi = table_values(p, whatif.TABLE.name)
    # each scenario's own k drives its loop: k · 1 ns where it does not split; the base
    # 128 × 4096 · 4096 × 4096 has 32 tiles and splits, all doubled (256 × 8192 · 8192 ×
    # 8192: 2 · 64 = 128 tiles fill the 100 SMs) does not and waits 8,192 ns
    for k, split, loop in zip(wi["wi_k"], wi["wi_split"], wi["wi_k_loop"], strict=True):
        assert loop == pytest.approx(0.0 if split else k * K_LATENCY * 1e6, rel=1e-12, abs=0)
    assert (wi["wi_split"][0], wi["wi_split"][-1]) == (1, 0)
    assert wi["wi_k_loop"][-1] == pytest.approx(8.192, rel=1e-12)
    assert wi["wi_split_k"][0] == pytest.approx(3.0, rel=1e-12)
    layers = table_values(p, pipeline.TABLE.name)
    # the pipeline alternates 64×64 · 64×1,024 (k = 64) and 64×1,024 · 1,024×64 (k = 1,024):
    # the K loop is the layer's own inner dimension, 64 ns then 1,024 ns (in ms here)
    assert list(layers["layer_k_loop"]) == pytest.approx([64e-6, 1024e-6] * 2, rel=1e-12)
    assert list(layers["layer_refined_time"]) == pytest.approx(
        [b + loop for b, loop in zip(layers["layer_gemm_time"], layers["layer_k_loop"],
                                     strict=True)], rel=1e-12)


# The growth: vLLM's CUTLASS FP8 tiles on an H100 (kernel_terms' docstring): 64×64 up to
# m = 64, 64×128 up to 128, 128×128 beyond, with a 4 µs floor, 0.75 ns a unit of k per 64×64
# tile and 1.5 µs per tile, over 132 SMs.
GROWTH_PRESET = preset_toml(NAME, f"bf16 = {PEAK:g}", BW, "sm_count = 132",
                            "launch_overhead = 4e-6", "k_latency = 0.75e-9",
                            "k_loop_tile_growth = true", "k_loop_tile_latency = 1.5e-6")
GROWTH_SHAPES = [(1, 32, 65536), (256, 65536, 32)]


def test_a_k_loop_that_grows_with_the_tile_bounds_the_time_by_hand():
    """1 × 32 · 32 × 65,536: 1,024 tiles of 64×64 in ⌈1,024 / 132⌉ = 8 waves, each 1.5 µs +
    32 · 0.75 ns: 4 + 8 · 1.524 = 16.192 µs, above its 4 + 2.16272 µs of memory time
    (vLLM measured 15.6 µs). 256 × 65,536 · 65,536 × 32: a 128×128 tile (scale 4), one
    wave, 4 + 1.5 + 65,536 · 0.75 ns · 4 = 202.108 µs (vLLM measured 196 µs)."""
    col = table_values(_plan(growth=True), "matmul")
    assert list(col["k_tile"][:2]) == [1, 4]
    assert list(col["library_waves"][:2]) == [8, 1]
    assert col["gemm_time"][0] == pytest.approx(4 + 2 * (32 + 32 * 65536 + 65536) / BW * 1e6,
                                                rel=1e-12)
    assert col["refined_time"][0] == pytest.approx(16.192, rel=1e-12)
    assert col["refined_time"][1] == pytest.approx(202.108, rel=1e-12)


def test_check_passes_on_the_kernel_workbook(tmp_path):
    out = write_xlsx(_plan(), tmp_path / "kernel.xlsx")
    report = check_workbook(out)
    assert report.ok, report.mismatches[:3]
    # a latency typed into the Inputs sheet (in µs, as its times are held: 2 ns) and the
    # split-K turned off: check reads them back into the reference model
    names = _plan().defined_names
    typed = edit_cells(out, tmp_path / "typed.xlsx", {cell_of(names["K_LOOP_LATENCY"]): 0.002,
                                                      cell_of(names["SPLIT_K_MIN_K"]): 0})
    again = check_workbook(typed)
    assert again.ok, again.mismatches[:3]
    assert again.checked == report.checked


@libreoffice_job("refined-kernel", to="values")
def _kernel_workbooks(tmp: Path) -> dict[str, Path]:
    """The kernel workbook, the growth one, and a copy of the first where the user turns the
    growth on in the Inputs sheet with 1 µs per tile and splits from k = 1,024."""
    built = write_xlsx(_plan(), tmp / "kernel.xlsx")
    names = _plan().defined_names
    typed = edit_cells(built, tmp / "typed.xlsx", {
        cell_of(names["K_LOOP_TILE_GROWTH"]): "on", cell_of(names["TILE_LATENCY"]): 1,  # µs
        cell_of(names["SPLIT_K_MIN_K"]): 1024})
    return {"kernel": built, "typed": typed,
            "growth": write_xlsx(_plan(growth=True), tmp / "growth.xlsx"),
            "transformer": write_xlsx(_xf_plan(), tmp / "transformer.xlsx"),
            "transformer_growth": write_xlsx(_xf_plan(True), tmp / "transformer_growth.xlsx")}


@needs_libreoffice
def test_libreoffice_recalculates_the_kernel_terms(libreoffice):
    values = {k: read_values(f) for k, f in libreoffice.outputs("refined-kernel").items()}
    assert mismatches(_plan(), values["kernel"]) == []
    assert mismatches(_plan(growth=True), values["growth"]) == []
    assert mismatches(_xf_plan(), values["transformer"]) == []
    assert mismatches(_xf_plan(True), values["transformer_growth"]) == []
    t = _plan().table("matmul")
    col = {c.name: c.col for c in t.columns}
    got = values["typed"]["Matmul"]
    # 64 × 1,024 · 1,024 × 64 now splits (one tile, k ≥ 1,024): no loop, + 3 µs; 64×64 tile,
    # one wave: max(0.135168, 0 + 1 · (1 + 0)) + 3 = 4 µs
    r = t.first_row + 1
    assert got[(r, col["split"])] == 1
    assert got[(r, col["refined_time"])] == pytest.approx(4.0, rel=1e-9)
    # 4,096³: 128×128 tiles (scale 4), 1,024 tiles in 11 waves of 100:
    # max(343.597, 11 · (1 + 4,096 · 1 ns · 4)) = max(343.597, 191.224) = 343.597 µs
    r = t.first_row + 2
    assert got[(r, col["library_waves"])] == 11
    assert got[(r, col["refined_time"])] == pytest.approx(343.59738368, rel=1e-9)


def test_the_notebook_api_shows_the_kernel_terms(tmp_path):
    preset = tmp_path / "kernel.toml"
    preset.write_text(PRESET)
    df = sheetgen.analyze([(64, 1024, 64)], gpu=NAME, gpu_file=preset)
    g = df.attrs["gpu"]
    assert (g["k_latency"], g["split_k_floor"], g["split_k_min_k"]) == (
        K_LATENCY, SPLIT_FLOOR, SPLIT_MIN_K)
    assert df["k_loop"].iloc[0] == pytest.approx(1.024e-6, rel=1e-12)  # seconds
    assert df["refined_time"].iloc[0] == pytest.approx(1.159168e-6, rel=1e-12)


def test_show_names_the_kernel_terms(tmp_path):
    preset = tmp_path / "kernel.toml"
    preset.write_text(PRESET)
    result = run("show", "--gpu-file", str(preset), "--gpu", NAME)
    assert result.exit_code == 0, result.output
    assert "K loop 1 ns per k, split-K from k = 2,048 (+3 µs)" in result.output
    growth = tmp_path / "growth.toml"
    growth.write_text(GROWTH_PRESET)
    grown = run("show", "--gpu-file", str(growth), "--gpu", NAME)
    assert "K loop 750 ps per k growing with the tile (1.5 µs a tile)" in grown.output
    assert "split-K" not in grown.output  # no split-K threshold in that preset
    plain = run("show")  # a built-in preset has none
    assert "K loop" not in plain.output and "split-K" not in plain.output


def test_the_suggested_column_shows_the_built_dtypes_own_terms(tmp_path):
    """A preset fitted per dtype (refined_by_dtype): the Inputs cells take the built dtype's
    own kernel terms and floor, and the Suggested column beside them (GPU Specs' columns)
    shows the same figures, not the first dtype's."""
    preset = tmp_path / "p.toml"
    preset.write_text(preset_toml(NAME, f"bf16 = {PEAK:g}, fp8 = {2 * PEAK:g}", BW, *FIELDS,
                                  "refined_by_dtype = { fp8 = { k_latency = 2e-9, "
                                  "launch_overhead = 4e-6, split_k_floor = 0, "
                                  "split_k_min_k = 0 } }"))
    presets = load_presets(preset)
    for dtype, want in (("bf16", (K_LATENCY, 0.0, SPLIT_MIN_K)), ("fp8", (2e-9, 4e-6, 0))):
        s = plan_build(BuildConfig(shapes=[Shape(64, 64, 64)], gpu=NAME, dtype=dtype,
                                   presets=presets, spare_rows=0)).model.scalars
        assert (s["k_latency"], s["launch_overhead"], s["split_k_min_k"]) == want, dtype
        assert (s["suggest_k_latency"], s["suggest_launch_overhead"],
                s["suggest_split_k_min_k"]) == want, dtype


# ------------------------------------------------------------------ the Transformer sheet

#: a two-layer dense model small enough to work by hand (tests/test_refined_ramp.py's)
TINY = {"model_type": "llama", "hidden_size": 1024, "num_hidden_layers": 2,
        "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 32000,
        "intermediate_size": 4096}


@functools.cache
def _xf_plan(growth: bool = False):
    preset = _folder() / f"kernel_xf{int(growth)}.toml"
    preset.write_text(GROWTH_PRESET if growth else PRESET)
    ti = TransformerInputs(from_dict(TINY), batch=1, prompt_tokens=512, generate=4)
    return plan_build(BuildConfig(gpu=NAME, presets=load_presets(preset), transformer=ti,
                                  shapes=[Shape(64, 64, 64)], spare_rows=0, layers=2))


def test_the_transformer_gemms_take_the_kernel_terms_by_hand():
    """Two layers, one kernel each per GEMM row. Prefill QKV, 512 × 1024 · 1024 × 3072:
    4 · 24 = 96 tiles under-fill 100 SMs but k = 1,024 < 2,048, so no split: a K loop of
    2 · 1,024 · 1 ns = 2.048 µs. Decode MLP down, 1 × 4096 · 4096 × 1024: 8 tiles, k =
    4,096: split, no loop, 2 · 3 µs. Decode lm_head, 1 × 1024 · 1024 × 32,000, one kernel:
    250 tiles fill the SMs, 1.024 µs."""
    s = _xf_plan().model.scalars
    for key, loop, split in (("pf_qkv", 2.048e-6, 0.0), ("dc_down", 0.0, 6e-6),
                             ("dc_lm", 1.024e-6, 0.0)):
        assert s[f"xf_{key}_k_loop"] == pytest.approx(loop, rel=1e-12, abs=1e-18), key
        assert s[f"xf_{key}_split_k"] == pytest.approx(split, rel=1e-12, abs=1e-18), key
    # attention runs at flash attention's rate: no kernel terms
    assert "xf_pf_scores_k_loop" not in s


@pytest.mark.parametrize("growth", [False, True])
def test_the_transformer_sheet_equals_the_pure_model_with_kernel_terms(growth):
    """sheetgen.model.transformer.estimate on the preset's figures, typed here, not read from
    the plan: every realistic op time agrees, the K loop that grows with the tile too."""
    p = _xf_plan(growth)
    s = p.model.scalars
    cfg = from_dict(TINY)
    wl = xf_model.Workload(batch=1, prompt=512, generate=4, tp=1, weight_bytes=2,
                           act_bytes=2, out_bytes=2, kv_bytes=2, embed_bytes=2)
    kernel = (xf_model.GemmKernels(sms=132, k_latency=0.75e-9, growth=True, tile_latency=1.5e-6)
              if growth else xf_model.GemmKernels(sms=100, k_latency=K_LATENCY,
                                                  split_floor=SPLIT_FLOOR,
                                                  split_min_k=SPLIT_MIN_K))
    hw = xf_model.Machine(peak=PEAK, bw=BW, capacity=s["capacity_bytes"], link_bw=100e9,
                          link_latency=8e-6, launch=4e-6 if growth else 0.0, kernel=kernel)
    est = xf_model.estimate(cfg, wl, hw)
    sheet = [r["realistic_time"] for r in op_records(cfg, s)]
    assert len(sheet) == 16 and sheet == pytest.approx(est.op_real, rel=1e-12)
    assert s["ttft"] == pytest.approx(est.summary["ttft"], rel=1e-12)
    if not growth:  # the kernel terms are there to agree on: 2 µs of K loop in prefill QKV
        off = xf_model.estimate(cfg, wl, replace(hw, kernel=None))
        assert est.op_real[0] - off.op_real[0] == pytest.approx(2.048e-6, rel=1e-9)


def test_the_transformer_frame_shows_each_gemms_kernel_terms(tmp_path):
    preset = tmp_path / "kernel.toml"
    preset.write_text(PRESET)
    df = sheetgen.transformer(TINY, gpu=NAME, gpu_file=preset, prompt_tokens=512, generate=4)
    dc = df[df["phase"] == "decode"].set_index("op")
    assert dc.loc["MLP down", "split_k"] == pytest.approx(6e-6, rel=1e-12)
    assert dc.loc["MLP down", "k_loop"] == 0
    assert dc["k_loop"].isna().sum() == 3  # the two attention rows and the memory-only row


def test_what_if_and_pipeline_grey_each_term_while_it_is_off(tmp_path):
    """As the Matmul sheet does: each refined-time column carries a rule that greys it while
    its term is off (waves, ramp, each kernel term), on its own data rows."""
    import openpyxl

    out = write_xlsx(_plan(), tmp_path / "kernel.xlsx")
    wb = openpyxl.load_workbook(out)
    for sheet, table, prefix in (("What-if", whatif.TABLE.name, "wi_"),
                                 ("Pipeline", pipeline.TABLE.name, "layer_")):
        t = _plan().table(table)
        col = {c.col: c.name.removeprefix(prefix) for c in t.columns}
        want = {'OR(WAVE_QUANT="off",NOT(ISNUMBER(SM_COUNT)))': {
                    "tiles", "waves", "wave_efficiency", "quantized_compute_time"},
                "COMPUTE_RAMP_FLOPS<=0": {"compute_ramp"},
                "SPLIT_K_MIN_K<=0": {"split", "split_k"},
                "K_LOOP_LATENCY<=0": {"k_loop"},
                'K_LOOP_TILE_GROWTH<>"on"': {"k_tile", "library_waves"},
                'AND(K_LOOP_LATENCY<=0,SPLIT_K_MIN_K<=0,K_LOOP_TILE_GROWTH<>"on")': {
                    "gemm_time"}}
        rules: dict[str, set[str]] = {}
        for cf in wb[sheet].conditional_formatting:
            for rule in cf.rules:
                if rule.formula[0] not in want:  # the regimes', the fit's
                    continue
                (rng,) = str(cf.sqref).split()
                first = rng.split(":")[0]
                assert int(first.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")) == t.first_row + 1
                c = openpyxl.utils.column_index_from_string(first.rstrip("0123456789")) - 1
                rules.setdefault(rule.formula[0], set()).add(col[c])
        assert rules == want, sheet


def test_the_roofline_plot_marks_the_refined_time_with_its_kernel_terms(tmp_path):
    """`plot_roofline`'s hollow marker sits at FLOPs / refined time: 64 × 1024 · 1024 × 64
    is 8.39 MFLOP in 1.159168 µs with its K loop (7.24 TFLOP/s), not the 0.135168 µs
    before it."""
    import matplotlib

    matplotlib.use("Agg")
    preset = tmp_path / "kernel.toml"
    preset.write_text(PRESET)
    fig = sheetgen.plot_roofline([(64, 1024, 64)], gpu=NAME, gpu_file=preset)
    (refined,) = [c for c in fig.axes[0].collections
                  if c.get_label() == "refined time (floor, waves, fitted terms)"]
    (x, y), = refined.get_offsets()
    flops = 2 * 64 * 1024 * 64
    assert x == pytest.approx(flops / (2 * (64 * 1024 * 2 + 64 * 64)), rel=1e-12)  # FLOP/B
    assert y == pytest.approx(flops / 1.159168e-6 / 1e12, rel=1e-12)


def test_a_moe_model_in_chunks_equals_the_pure_model_with_kernel_terms():
    """Mixtral 8×7B with its prompt in two chunks: each experts row runs the touched experts'
    GEMMs in one kernel per layer and step (count / kernels of them side by side), so its
    tiles, split and K loop are per kernel; the sheet and the pure model agree on every op."""
    from sheetgen.inputs.model_config import load_bundled

    cfg = load_bundled("mixtral-8x7b")
    preset = _folder() / "kernel_moe.toml"
    preset.write_text(PRESET)
    ti = TransformerInputs(cfg, batch=4, prompt_tokens=512, generate=8, prefill_chunk=256)
    p = plan_build(BuildConfig(gpu=NAME, presets=load_presets(preset), transformer=ti,
                               shapes=[Shape(64, 64, 64)], spare_rows=0, layers=2))
    s = p.model.scalars
    wl = xf_model.Workload(batch=4, prompt=512, generate=8, tp=1, chunk=256, weight_bytes=2,
                           act_bytes=2, out_bytes=2, kv_bytes=2, embed_bytes=2)
    hw = xf_model.Machine(peak=PEAK, bw=BW, capacity=s["capacity_bytes"], link_bw=100e9,
                          link_latency=8e-6, kernel=xf_model.GemmKernels(
                              sms=100, k_latency=K_LATENCY, split_floor=SPLIT_FLOOR,
                              split_min_k=SPLIT_MIN_K))
    est = xf_model.estimate(cfg, wl, hw)
    rows = op_records(cfg, s)
    assert [r["realistic_time"] for r in rows] == pytest.approx(est.op_real, rel=1e-12)
    experts = [r for r in rows if r["op"].startswith("experts")]
    assert experts and all(r["k_loop"] + r["split_k"] > 0 for r in experts)
