"""Peak memory and time of every reading path on hostile files, against a genuine baseline.

    PYTHONPATH=.:tests python benchmarks/bench_hostile.py

Each case runs in its own child process (this script with --child) so its peak RSS
(RUSAGE_SELF) is its own. The baseline is `check` on a genuine 1,000-row sheetgen workbook,
measured in the same run; the table gives each case's peak as a ratio to it. The target
(README, "Limits"): every hostile case stays under about 1 GB.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from hostile_files import (  # noqa: E402
    bomb_sheet,
    formula,
    num,
    padding,
    shapes_sheet,
    sheet_xml,
    write_package,
)


def _dense_cells(n_rows: int, n_cols: int = 26) -> Iterator[str]:
    letters = [chr(65 + i) for i in range(n_cols)]
    return (num(f"{c}{r}", float(r)) for r in range(1, n_rows + 1) for c in letters)


def _wide_bottom() -> bytes:
    from openpyxl.utils import get_column_letter

    return b"".join(sheet_xml([num(f"{get_column_letter(c)}1048576", 1.0)
                               for c in range(1, 16385)], dimension="A1:XFD1048576"))


def _fan_out() -> dict[str, str]:
    names = {"LV_0": "Inputs!$A$1"}
    for i in range(1, 11):
        names[f"LV_{i}"] = "+".join([f"LV_{i - 1}"] * 8)
    return names


def make_cases(tmp: Path, only: str = "") -> dict[str, tuple[Path, list[str]]]:
    """name -> (file, CLI arguments after the command); `only`: cases whose name has it."""
    from sheetgen.api import plan
    from sheetgen.writers.xlsx import write_xlsx

    genuine = tmp / "genuine.xlsx"
    write_xlsx(plan(shapes=[(64 * i + 1, 4096, 4096) for i in range(1000)], spare_rows=0),
               genuine, force=True)
    files: dict[str, Callable[[Path], Path]] = {
        "bomb: 600 MB sheet XML": lambda p: write_package(p, {"S": bomb_sheet(600_000_000)}),
        "bomb: 600 MB docProps/custom.xml": lambda p: write_package(
            p, {"S": b"".join(shapes_sheet([(1, 2, 3)]))},
            extra={"docProps/custom.xml": padding(600_000_000)}),
        "dense: 7.8 M numeric cells": lambda p: write_package(
            p, {"S": sheet_xml(_dense_cells(300_000))}),
        "absurd: a cell at the bottom of all 16,384 columns": lambda p: write_package(p, {
            "S": b"".join(sheet_xml([formula("A1", "SUM(Other!A1048576:XFD1048576)"),
                                     formula("B1", "COUNTBLANK(Other!H:H)")])),
            "Other": _wide_bottom()}),
        "absurd: SUM(A1:XFD1048576) over two far cells": lambda p: write_package(p, {
            "S": b"".join(sheet_xml([formula("A1", "SUM(Other!A1:XFD1048576)")])),
            "Other": b"".join(sheet_xml([num("A1", 1.0), num("XFD1048576", 1.0)]))}),
        "fan-out: 10 levels of names x 8": lambda p: write_package(p, {
            "Inputs": b"".join(sheet_xml([num("A1", 1.0)])),
            "S": b"".join(sheet_xml([formula("A1", "LV_10")]))}, names=_fan_out()),
        "deep: 10,000 nested IFs": lambda p: write_package(p, {
            "S": b"".join(sheet_xml([formula("A1", "IF(1," * 10_000 + "1" + ")" * 10_000)]))}),
        "openpyxl: a 30 MB data sheet beside the shapes (under fill's budget)":
            lambda p: write_package(p, {"Shapes": b"".join(shapes_sheet([(1, 2, 3)])),
                                        "Data": sheet_xml(_dense_cells(35_000))}),
    }
    cases = {"baseline: check a genuine 1,000-row workbook": (genuine, ["check"])}
    for i, (name, make) in enumerate(files.items()):
        if only not in name:
            continue
        path = make(tmp / f"case{i}.xlsx")
        cases[f"{name} / check"] = (path, ["check"])
        if name.startswith(("bomb", "openpyxl")):
            cases[f"{name} / fill"] = (path, ["fill", "-o", str(tmp / f"out{i}.xlsx")])
            cases[f"{name} / build --shapes"] = (path, ["build", str(tmp / f"b{i}.xlsx"),
                                                        "--spare-rows", "0", "--shapes"])
    return cases


def child(args: list[str]) -> None:
    from click.testing import CliRunner

    from sheetgen.cli import cli

    t0 = time.perf_counter()
    result = CliRunner().invoke(cli, args)
    print(json.dumps({"seconds": time.perf_counter() - t0, "exit": result.exit_code,
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "output": result.output.strip().splitlines()[-1:]}))


def measure(path: Path, args: list[str]) -> dict[str, object]:
    cmd, rest = args[0], args[1:]
    argv = [cmd, *rest, str(path)] if cmd == "build" else [cmd, str(path), *rest]
    out = subprocess.run([sys.executable, __file__, "--child", *argv], capture_output=True,
                         text=True, timeout=600, check=True).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    ap.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.child:
        child(opts.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        cases = make_cases(Path(tmp), opts.only)
        rows = []
        for name, (path, args) in cases.items():
            print(f"{name} ...", file=sys.stderr, flush=True)
            rows.append((name, path.stat().st_size, measure(path, args)))
    base = rows[0][2]["peak_mb"]
    print("| case / command | file KB | exit | wall s | peak RSS MB | peak / baseline | says |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, size, r in rows:
        said = (r["output"] or [""])[0][:90]  # type: ignore[index]
        print(f"| {name} | {size / 1e3:,.0f} | {r['exit']} | {r['seconds']:.1f} "
              f"| {r['peak_mb']:.0f} | {r['peak_mb'] / base:.1f} | {said} |")  # type: ignore[operator]


if __name__ == "__main__":
    main()
