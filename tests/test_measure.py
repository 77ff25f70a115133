"""`sheetgen measure`: real timings on this machine's CPU, the CSV calibrate reads as it is, the
device preset --gpu-file loads, one-line errors, and an import path free of the workbook
libraries (a bare GPU machine has only NumPy and PyTorch)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run, sheetgen_process

from sheetgen.inputs.presets import load_preset_file
from sheetgen.measure import csvio, sweep

ROOT = Path(__file__).resolve().parent.parent
TINY = "m,k,n\n8,16,32\n64,64,64\n1,128,256\n32,8,128\n"




def _data_rows(path: Path) -> tuple[list[str], list[list[str]], list[str]]:
    lines = path.read_text().splitlines()
    comments = [ln for ln in lines if ln.startswith("#")]
    table = list(csv.reader(ln for ln in lines if not ln.startswith("#")))
    return table[0], table[1:], comments


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    tmp = tmp_path_factory.mktemp("measure")
    (tmp / "tiny.csv").write_text(TINY)
    # a real process: the one end-to-end run of `sheetgen measure`
    proc = sheetgen_process("measure", "cpu.csv", "--shapes", "tiny.csv", "--max-seconds",
                            "2", "--repeats", "5", "--preset-out", "cpu.toml", "--name",
                            "This CPU", cwd=tmp)
    return tmp / "cpu.csv", tmp / "cpu.toml", proc


def test_cpu_measure_writes_a_well_formed_csv(measured):
    out, _preset, proc = measured
    assert proc.returncode == 0, proc.stderr
    header, rows, comments = _data_rows(out)
    assert tuple(header) == csvio.COLUMNS
    assert [tuple(map(int, r[:3])) for r in rows] == [(8, 16, 32), (64, 64, 64), (1, 128, 256),
                                                      (32, 8, 128)]
    for r in rows:
        t, lo, hi = float(r[5]), float(r[6]), float(r[7])
        assert r[3] == "fp32" and r[4] == "cpu" and int(r[8]) == 5
        assert 0 < lo <= t <= hi < 1.0  # tiny shapes: well under a second each
    meta = dict(c[2:].split(": ", 1) for c in comments)
    for key in ("device_name", "cpu_threads", "numpy", "blas", "date", "peak_flops.fp32",
                "copy_bandwidth"):
        assert meta.get(key), key
    assert int(meta["cpu_threads"]) >= 1
    assert float(meta["seconds_taken"]) < 10  # the 2 s budget, plus start-up


def test_calibrate_reads_measure_output_as_is(measured):
    out, preset, _ = measured
    proc = run("calibrate", str(out), "--gpu-file", str(preset), "--gpu", "This CPU", "--json")
    assert proc.exit_code == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["dtype"] == "fp32" and report["time_column"] == "time_s"
    assert [(r["m"], r["k"], r["n"]) for r in report["rows"]][:2] == [(8, 16, 32), (64, 64, 64)]
    times = [float(r[5]) for r in _data_rows(out)[1]]
    assert [r["measured_s"] for r in report["rows"]] == pytest.approx(times, rel=1e-6)


def test_device_preset_loads_with_gpu_file(measured):
    _out, preset, _ = measured
    gpu = load_preset_file(preset).get("This CPU")
    assert set(gpu.peak_flops) == {"fp32"}
    assert 1e8 < gpu.peak_flops["fp32"] < 1e14  # a CPU: more than 0.1 GFLOP/s, less than 100 T
    assert 1e8 < gpu.hbm_bandwidth < 1e13
    assert gpu.sm_count >= 1
    proc = run("show", "--gpu-file", str(preset), "--gpu", "This CPU", "--dtype", "fp32",
               "--json")
    assert proc.exit_code == 0, proc.stderr
    assert json.loads(proc.stdout)["gpu"]["peak_flops"] == gpu.peak_flops["fp32"]


def test_builtin_sweep_spans_both_regimes_and_tile_edges():
    for device, ridge in (("cpu", 10.0), ("cuda", 295.0)):  # CPU ~ 0.2 TFLOP/s / 20 GB/s
        shapes = sweep.builtin_sweep(device)
        assert 35 <= len(shapes) <= 45 and len(set(shapes)) == len(shapes)
        intensity = [2 * m * k * n / (2 * (m * k + k * n + m * n)) for m, k, n in shapes]
        assert min(intensity) < 1 and max(intensity) > 2 * ridge
        first = shapes[:10]  # a run cut short still has both regimes
        assert any(m == 1 for m, _, _ in first) and any(m >= 1024 for m, _, _ in first)
        sides = {m for m, k, n in shapes if m == k == n}
        assert {383, 385, 767, 769} <= sides  # 128·q ± 1: one more row of tiles


@pytest.mark.parametrize("args, message", [
    (["--device", "tpu"], "unknown device 'tpu'; choose one of: cpu, cuda"),
    (["--dtype", "bf16"], "--dtype bf16: the cpu backend times fp32"),
    (["--max-seconds", "0"], "--max-seconds must be a positive number"),
    (["--repeats", "0"], "--repeats must be at least 1"),
])
def test_bad_options_one_line_exit_2(tmp_path, args, message):
    proc = run("measure", "x.csv", *args, cwd=tmp_path)
    assert proc.exit_code == 2
    assert proc.stderr.strip().splitlines() == [f"Error: {proc.stderr.strip()[7:]}"]
    assert message in proc.stderr
    assert not (tmp_path / "x.csv").exists()


def test_existing_output_needs_force(tmp_path):
    (tmp_path / "x.csv").write_text("keep")
    proc = run("measure", "x.csv", cwd=tmp_path)
    assert proc.exit_code == 2 and "already exists; pass --force" in proc.stderr
    assert (tmp_path / "x.csv").read_text() == "keep"


_POISON = ("import sys\n"
           "for name in {blocked!r}: sys.modules[name] = None  # import fails as if missing\n"
           "sys.argv = ['sheetgen.measure', *sys.argv[1:]]\n"
           "import runpy; runpy.run_module('sheetgen.measure', run_name='__main__')\n")


def _run_poisoned(blocked: tuple[str, ...], *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _POISON.format(blocked=blocked), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120, check=False)


WORKBOOK_LIBRARIES = ("pandas", "xlsxwriter", "openpyxl", "click", "scipy", "matplotlib",
                      "gspread", "google")


def test_measure_runs_with_only_numpy(tmp_path):
    """Every library but NumPy blocked: python -m sheetgen.measure still measures."""
    (tmp_path / "tiny.csv").write_text(TINY)
    proc = _run_poisoned((*WORKBOOK_LIBRARIES, "torch"), "bare.csv", "--shapes", "tiny.csv",
                         "--max-seconds", "1", "--repeats", "3", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    header, rows, _ = _data_rows(tmp_path / "bare.csv")
    assert tuple(header) == csvio.COLUMNS and len(rows) == 4


def test_measure_imports_no_workbook_library():
    code = ("import sys\nimport sheetgen.measure.run, sheetgen.measure.__main__\n"
            f"print(sorted(m for m in {WORKBOOK_LIBRARIES!r} if sys.modules.get(m)))")
    # The package __init__ tries the workbook side first (it is installed here), so poison
    # those libraries: the measure modules must import without loading any of them.
    blocked = ("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n"
                                         for m in WORKBOOK_LIBRARIES) + code)
    proc = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_cuda_without_torch_is_one_line(tmp_path):
    proc = _run_poisoned(("torch",), "gpu.csv", "--device", "cuda", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("Error: --device cuda needs PyTorch, which is not installed: "
                                   "pip install 'sheetgen[measure]' (or a CUDA build of torch)")
    proc = sheetgen_process("measure", "gpu.csv", "--device", "cuda", cwd=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "--device cuda" in proc.stderr  # torch missing here, or present without a GPU
    assert not (tmp_path / "gpu.csv").exists()
