"""Benchmark CLI start-up: `sheetgen --help`, `--version` and `gpus` against `python -c pass`.

Each command runs in a fresh interpreter (`python -c "from sheetgen.console import main; main()"`,
so a pyenv or venv shim adds nothing), best of `--repeat`, and is reported as a ratio to a bare
interpreter start measured in the same run. The goal is under 0.3 s: the CLI imports pandas,
NumPy, xlsxwriter and the Google clients only inside the commands that use them.

    python benchmarks/bench_startup.py
    python benchmarks/bench_startup.py --repeat 20 --out startup.md
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

CLI = "from sheetgen.console import main; main()"
COMMANDS: dict[str, list[str]] = {
    "python -c pass": ["-c", "pass"],
    "sheetgen --help": ["-c", CLI, "--help"],
    "sheetgen --version": ["-c", CLI, "--version"],
    "sheetgen gpus": ["-c", CLI, "gpus"],
    "import pandas (for scale)": ["-c", "import pandas"],
}
HEADER = "| command | best s | ratio to python -c pass |"


def best_of(args: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--out", type=Path, help="Also write the table to this file.")
    args = ap.parse_args(argv)
    base = best_of(COMMANDS["python -c pass"], args.repeat)
    lines = [HEADER, "|---|---:|---:|"]
    for label, cmd in COMMANDS.items():
        t = base if label == "python -c pass" else best_of(cmd, args.repeat)
        lines.append(f"| {label} | {t:.3f} | {t / base:.1f}x |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
