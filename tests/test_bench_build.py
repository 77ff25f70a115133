"""The benchmark script runs end to end at a tiny size (a smoke test: nothing here is timed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sheetgen.api import plan
from sheetgen.verify.compare import expected_cells

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_build.py"


def test_bench_build_prints_the_table(tmp_path: Path):
    out = tmp_path / "bench.md"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(SCRIPT), "--rows", "50", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("| rows | formula cells | sheetgen s | baseline s | time ratio |")
    row = [c.strip() for c in lines[2].strip("|").split("|")]
    # 24 formula columns per shape row (11 roofline + 7 refined-time + 6 kernel terms), plus
    # the workbook's fixed formula cells
    fixed = sum(1 for _ in expected_cells(plan(shapes=[(1, 1, 1)], spare_rows=0))) - 24
    assert row[0] == "50" and row[1] == f"{50 * 24 + fixed:,}"
    assert all(float(c) > 0 for c in row[2:])
    assert out.read_text("utf-8").splitlines() == lines
