"""Benchmark sheetgen.evaluate against LibreOffice headless recalculation and `formulas`.

    PYTHONPATH=. python benchmarks/bench_evaluate.py            # 1k, 10k, 100k rows
    PYTHONPATH=. python benchmarks/bench_evaluate.py --quick    # 1k and 10k only
    PYTHONPATH=. python benchmarks/bench_evaluate.py --no-formulas

Each measurement runs in its own child process (this script with --child), which reports its
wall time and peak RSS (RUSAGE_SELF for in-process engines, RUSAGE_CHILDREN for soffice).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import xlsxwriter

FORMULA_COLUMNS = {
    "D": '=IF(AND(ISNUMBER(A{r}),ISNUMBER(B{r}),ISNUMBER(C{r})),"ok","")',
    "E": '=IF($D{r}="ok",2*A{r}*B{r}*C{r},"")',
    "F": '=IF($D{r}="ok",DTYPE_BYTES*(A{r}*B{r}+B{r}*C{r}+A{r}*C{r}),"")',
    "G": '=IF($D{r}="ok",E{r}/F{r},"")',
    "H": '=IF($D{r}="ok",IF(G{r}>=RIDGE,"compute-bound","memory-bound"),"")',
    "I": '=IF($D{r}="ok",E{r}/PEAK_FLOPS,"")',
    "J": '=IF($D{r}="ok",F{r}/HBM_BW,"")',
    "K": '=IF($D{r}="ok",MAX(I{r},J{r}),"")',
    "L": '=IF($D{r}="ok",E{r}/K{r}/1E+12,"")',
    "M": '=IF($D{r}="ok",ROUNDUP(LOG10(E{r}),0),"")',
    "N": '=IF($D{r}="ok",ROUND(100*L{r}*1E+12/PEAK_FLOPS,2),"")',
    "O": '=IF($D{r}="ok",A{r}&"x"&B{r}&"x"&C{r}&" "&H{r},"")',
}
FIRST_ROW = 6


def build(path: Path, rows: int) -> int:
    """A roofline-like workbook; cached values are deliberately wrong (-1)."""
    wb = xlsxwriter.Workbook(str(path), {"constant_memory": True})
    inputs = wb.add_worksheet("Inputs")
    sheet = wb.add_worksheet("Matmul")
    for r, (label, value) in enumerate(
        [("PEAK_FLOPS", 989e12), ("HBM_BW", 3.35e12), ("DTYPE_BYTES", 2)], start=5
    ):
        inputs.write_string(f"A{r}", label)
        inputs.write_number(f"B{r}", value)
        wb.define_name(label, f"=Inputs!$B${r}")
    inputs.write_string("A8", "RIDGE")
    inputs.write_formula("B8", "=PEAK_FLOPS/HBM_BW", None, -1)
    wb.define_name("RIDGE", "=Inputs!$B$8")
    for c, head in enumerate(["m", "k", "n", "ok", "flops", "bytes", "intensity", "regime"]):
        sheet.write_string(4, c, head)
    n_formulas = 1
    for i in range(rows):
        r = FIRST_ROW + i
        if i % 50 != 49:  # a blank input row now and then exercises the guards
            sheet.write_number(f"A{r}", 256 * (1 + i % 64))
            sheet.write_number(f"B{r}", 128 * (1 + i % 32))
            sheet.write_number(f"C{r}", 512 * (1 + i % 16))
        for col, f in FORMULA_COLUMNS.items():
            sheet.write_formula(f"{col}{r}", f.format(r=r), None, -1)
            n_formulas += 1
    wb.close()
    return n_formulas


def build_sheetgen(path: Path, rows: int) -> int:
    """A workbook built by `sheetgen build` itself (all sheets), `rows` random shapes."""
    import random

    from sheetgen.api import plan
    from sheetgen.verify.compare import expected_cells
    from sheetgen.writers.xlsx import write_xlsx

    rng = random.Random(rows)
    shapes = [(rng.randint(1, 16384), rng.randint(1, 16384), rng.randint(1, 16384))
              for _ in range(rows)]
    p = plan(shapes=shapes, spare_rows=0)
    write_xlsx(p, path, force=True)
    return sum(1 for _ in expected_cells(p))


def child(engine: str, path: str) -> None:
    """Run one engine on one file; print JSON {seconds, peak_mb}."""
    t0 = time.perf_counter()
    if engine == "check":
        from sheetgen.verify.check import check_workbook

        report = check_workbook(path)
        assert report.ok, report.mismatches[:3]
        usage = resource.RUSAGE_SELF
    elif engine == "sheetgen":
        from sheetgen.evaluate import evaluate_workbook

        ev = evaluate_workbook(path)
        assert ev.value("Matmul", f"E{FIRST_ROW}") == 2 * 256 * 128 * 512
        usage = resource.RUSAGE_SELF
    elif engine == "libreoffice":
        from sheetgen.verify.libreoffice import recalculate

        with tempfile.TemporaryDirectory() as tmp:
            recalculate(path, Path(tmp) / "out", timeout=3600)
        usage = resource.RUSAGE_CHILDREN
    elif engine == "formulas":
        import formulas

        model = formulas.ExcelModel().loads(path).finish()
        model.calculate()
        usage = resource.RUSAGE_SELF
    elif engine == "openpyxl-read":
        import gc

        import openpyxl

        gc.disable()  # same footing as our reader, which disables the cyclic GC while reading

        wb = openpyxl.load_workbook(path, read_only=True)
        n = sum(1 for ws in wb.worksheets for row in ws.iter_rows() for _ in row)
        assert n > 0
        usage = resource.RUSAGE_SELF
    elif engine == "sheetgen-read":
        import gc

        from sheetgen.evaluate.reader import read_workbook

        gc.disable()

        read_workbook(path)
        usage = resource.RUSAGE_SELF
    else:
        raise SystemExit(f"unknown engine {engine}")
    seconds = time.perf_counter() - t0
    peak_mb = resource.getrusage(usage).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb}))


def measure(engine: str, path: Path) -> dict[str, float] | None:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, __file__, "--child", engine, str(path)],
        capture_output=True, text=True, env=env, timeout=7200,
    )  # fmt: skip
    if proc.returncode != 0:
        print(f"  {engine} failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1k and 10k rows only")
    ap.add_argument("--no-formulas", action="store_true", help="skip the slow `formulas` runs")
    ap.add_argument("--no-libreoffice", action="store_true")
    ap.add_argument("--rows", type=int, nargs="*", help="row counts to run")
    ap.add_argument("--sheetgen-workbook", action="store_true",
                    help="time `sheetgen check` (evaluate + model + compare) on workbooks built "
                         "by sheetgen itself, against LibreOffice and `formulas`")
    ap.add_argument("--formulas-max-rows", type=int, default=10_000,
                    help="largest size `formulas` is run at (it is very slow)")
    ap.add_argument("--child", nargs=2, metavar=("ENGINE", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    sizes = args.rows or ([1_000, 10_000] if args.quick else [1_000, 10_000, 100_000])
    engines = (["check"] if args.sheetgen_workbook
               else ["sheetgen-read", "openpyxl-read", "sheetgen"])
    ours_engine = engines[-1]
    if not args.no_libreoffice and shutil.which("soffice"):
        engines.append("libreoffice")
    if not args.no_formulas:
        engines.append("formulas")
    results: list[tuple[int, int, str, dict[str, float] | None]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows in sizes:
            path = Path(tmp) / f"roofline_{rows}.xlsx"
            n = build_sheetgen(path, rows) if args.sheetgen_workbook else build(path, rows)
            for engine in engines:
                if engine == "formulas" and rows > args.formulas_max_rows:
                    continue
                print(f"{rows} rows ({n} formulas): {engine} ...", file=sys.stderr, flush=True)
                results.append((rows, n, engine, measure(engine, path)))
    print(f"| rows | formula cells | engine | wall s | peak RSS MB | time / {ours_engine} |")
    print("|---:|---:|---|---:|---:|---:|")
    ours = {rows: r["seconds"] for rows, _, e, r in results if e == ours_engine and r}
    for rows, n, engine, r in results:
        if r is None:
            print(f"| {rows:,} | {n:,} | {engine} | failed | | |")
            continue
        ratio = r["seconds"] / ours[rows] if rows in ours else float("nan")
        print(f"| {rows:,} | {n:,} | {engine} | {r['seconds']:.2f} | {r['peak_mb']:.0f} "
              f"| {ratio:.1f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
