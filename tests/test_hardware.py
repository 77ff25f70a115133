"""Presets: the shipped file is complete and sourced; bad files give errors naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from sheetgen.errors import InputError, PresetError
from sheetgen.hardware import DTYPES, FIGURES, builtin_presets, load_presets

GOOD = """
[[gpu]]
name = "Mine"
peak_flops = { bf16 = 1e15 }
hbm_bandwidth = 2e12
memory_bytes = 8e10
link_bandwidth = 1e11
link_latency = 1e-6
host_bandwidth = 3e10
sm_count = 64
measured_compute_efficiency = 0.8
measured_memory_efficiency = 0.9
measured_link_efficiency = 0.8
"""


def test_builtin_presets_are_complete_and_sourced():
    presets = builtin_presets()
    assert presets.default == "A100 40GB SXM"
    assert len(presets.gpus) == 9
    for gpu in presets.gpus:
        for key in ("peak_flops", *FIGURES):
            assert gpu.sources.get(key), f"{gpu.name}: no source for {key}"
        assert set(gpu.peak_flops) <= set(DTYPES)


def test_published_figures():
    """Regression against vendor datasheets (dense figures), exact."""
    p = builtin_presets()
    a100 = p.get("A100 40GB SXM")
    assert (a100.peak("bf16"), a100.hbm_bandwidth, a100.memory_bytes) == (312e12, 1.555e12, 40e9)
    assert not a100.supports("fp8")
    assert p.get("H100 SXM").peak("bf16") == 989.4e12  # 1979 TFLOP/s is the sparse figure
    assert p.get("H100 SXM").link_bandwidth == 450e9  # 900 GB/s is both directions


def test_user_file_adds_and_overrides(tmp_path: Path):
    f = tmp_path / "mine.toml"
    f.write_text(GOOD)
    presets = load_presets(f)
    assert presets.get("mine").peak("bf16") == 1e15
    assert "A100 40GB SXM" in presets.names


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda s: s.replace("hbm_bandwidth = 2e12", "hbm_bandwidth = -2e12"),
     "field 'hbm_bandwidth': expected a positive number"),
    (lambda s: s.replace("hbm_bandwidth = 2e12", 'hbm_bandwidth = "fast"'),
     "field 'hbm_bandwidth'"),
    (lambda s: s.replace("bf16 = 1e15", "bf17 = 1e15"), "peak_flops.bf17': unknown dtype"),
    (lambda s: s.replace("link_latency = 1e-6\n", ""), "missing field 'link_latency'"),
    (lambda s: s.replace("measured_link_efficiency = 0.8", "measured_link_efficiency = 1.5"),
     "must be at most 1"),
    (lambda s: s + "colour = 1\n", "unknown field 'colour'"),
    (lambda s: s.replace('name = "Mine"', "name = 3"), "'name' must be a non-empty string"),
    (lambda s: s + "[[gpu\n", "not valid TOML"),
    (lambda s: "", "expected at least one [[gpu]]"),
])
def test_bad_preset_files_name_file_and_field(tmp_path: Path, edit, needle):
    f = tmp_path / "bad.toml"
    f.write_text(edit(GOOD))
    with pytest.raises(PresetError) as err:
        load_presets(f)
    assert needle in str(err.value)
    assert "bad.toml" in str(err.value)


def test_unknown_gpu_lists_choices():
    with pytest.raises(InputError, match="choose one of: A100 40GB SXM"):
        builtin_presets().get("V100")
