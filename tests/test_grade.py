"""Grading hand-made roofline sheets: `sheetgen check` on workbooks sheetgen did not build.

Each candidate is written here with openpyxl, with real formulas (evaluated by the pure-Python
evaluator) and some typed values, in the spellings people use."""

from __future__ import annotations

import json

import openpyxl
import pytest
from helpers import one_line_error, run

from sheetgen.verify.grade import ALIASES, grade_workbook, normalise, recognise, regime_of

SHAPES = [(1, 4096, 4096), (4096, 4096, 4096), (128, 4096, 4096), (300, 70, 5)]
A100 = (312e12, 1555e9)  # bf16 peak FLOP/s, HBM B/s


def candidate(path, *, bytes_factor="2*", time_fn="MAX", time_scale="*1000",
              headers=None, title=False, extra=(), figures_at=None, typed_flops=False):
    """A hand-made sheet: m, k, n, FLOPs, bytes, intensity, bound, time (+ extra columns)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Mine"
    peak, bw = "312E12", "1555E9"
    if figures_at:  # the GPU figures in cells, labelled with units
        ws["K1"], ws["L1"] = "Peak (TFLOP/s)", 312
        ws["K2"], ws["L2"] = "HBM (GB/s)", 1555
        peak, bw = "($L$1*1E12)", "($L$2*1E9)"
    if title:
        ws.append(["My roofline homework"])
        ws.append([])
    heads = headers or ["M", "K", "N", "FLOPs", "Bytes moved", "AI (FLOP/byte)", "Bound",
                        "Time (ms)"]
    ws.append([*heads, *(h for h, _ in extra)])
    first = ws.max_row + 1
    for i, (m, k, n) in enumerate(SHAPES, start=first):
        flops = 2 * m * k * n if typed_flops else f"=2*A{i}*B{i}*C{i}"
        ws.append([m, k, n, flops, f"={bytes_factor}(A{i}*B{i}+B{i}*C{i}+A{i}*C{i})",
                   f"=D{i}/E{i}", f'=IF(F{i}>={peak}/{bw},"Compute","memory bound")',
                   f"={time_fn}(D{i}/{peak},E{i}/{bw}){time_scale}",
                   *(v for _, v in extra)])
    ws.append([])
    ws.append(["notes: bf16, A100"])
    wb.save(path)
    return path


def by_quantity(report):
    return {c.quantity: c for c in report.columns}


def test_a_correct_sheet_passes(tmp_path):
    path = candidate(tmp_path / "ok.xlsx")
    report = grade_workbook(path, gpu="A100 40GB SXM", dtype="bf16")
    assert report.ok, report.summary()
    cols = by_quantity(report)
    assert set(cols) == {"flops", "bytes_moved", "intensity", "regime", "predicted_time"}
    assert cols["predicted_time"].unit == "ms" and cols["predicted_time"].scale == 1e-3
    assert report.rows == [2, 3, 4, 5] and report.header_row == 1
    result = run("check", str(path), "--gpu", "A100 40GB SXM", "--dtype", "bf16")
    assert result.exit_code == 0, result.output
    assert "ok: every recognised column agrees" in result.output


def test_bytes_without_the_dtype_factor(tmp_path):
    path = candidate(tmp_path / "bytes.xlsx", bytes_factor="")
    report = grade_workbook(path)
    cols = by_quantity(report)
    assert not report.ok
    assert not cols["bytes_moved"].ok and cols["bytes_moved"].failed == 4
    assert "dtype factor" in cols["bytes_moved"].hint
    assert "dtype factor" in cols["intensity"].hint  # computed from it: fails too
    assert not cols["predicted_time"].ok  # the memory-bound rows
    assert cols["flops"].ok
    first = cols["bytes_moved"].failures[0]
    assert (first.row, first.cell, first.got, first.expected) == (2, "E2", 16785408.0,
                                                                  33570816.0)
    assert first.formula == "=(A2*B2+B2*C2+A2*C2)"
    result = run("check", str(path))
    assert result.exit_code == 1
    assert "bytes without the dtype factor" in result.output
    assert "row 2 (E2): got 16785408, expected 33570816" in result.output


def test_min_instead_of_max(tmp_path):
    path = candidate(tmp_path / "min.xlsx", time_fn="MIN")
    cols = by_quantity(grade_workbook(path))
    assert not cols["predicted_time"].ok
    assert cols["predicted_time"].hint == "MIN instead of MAX?"
    assert all(cols[q].ok for q in ("flops", "bytes_moved", "intensity", "regime"))


def test_seconds_below_a_title_and_a_blank_row(tmp_path):
    heads = ["m (rows)", "K dim", "n [cols]", "Total FLOPs", "bytes", "Arithmetic intensity",
             "Regime", "Runtime [s]"]
    path = candidate(tmp_path / "s.xlsx", headers=heads, title=True, time_scale="")
    report = grade_workbook(path)
    assert report.ok, report.summary()
    assert report.header_row == 3 and report.rows == [4, 5, 6, 7]
    assert by_quantity(report)["predicted_time"].unit == "s"
    # the same seconds under a header that says ms: a unit slip, with the hint
    heads[-1] = "Time (ms)"
    path = candidate(tmp_path / "slip.xlsx", headers=heads, time_scale="")
    col = by_quantity(grade_workbook(path))["predicted_time"]
    assert not col.ok and "unit slip" in col.hint
    # --time-unit overrides the header
    assert grade_workbook(path, time_unit="s").ok
    assert run("check", str(path), "--time-unit", "s").exit_code == 0


def test_peak_and_bw_from_cells(tmp_path):
    path = candidate(tmp_path / "cells.xlsx", figures_at=True, typed_flops=True)
    report = grade_workbook(path, peak="L1", bw="Mine!L2")
    assert report.ok, report.summary()
    assert report.gpu["peak_flops"] == 312e12 and report.gpu["hbm_bw"] == 1555e9
    # H100 figures disagree with this sheet's A100 numbers, from the regime on
    bad = by_quantity(grade_workbook(path, gpu="H100 SXM"))
    assert bad["flops"].ok and bad["bytes_moved"].ok and not bad["predicted_time"].ok
    # the sheet's own figures win over the preset
    assert grade_workbook(path, gpu="H100 SXM", peak="L1", bw="L2").ok
    assert run("check", str(path), "--peak", "L1", "--bw", "L2").exit_code == 0
    assert run("check", str(path), "--peak", "312e12", "--bw", "1.555e12").exit_code == 0
    one_line_error(run("check", str(path), "--peak", "K1"), "--peak", "positive number")
    one_line_error(run("check", str(path), "--peak", "Nope!A1"), "no sheet")


def test_unrecognised_columns_are_listed(tmp_path):
    path = candidate(tmp_path / "extra.xlsx",
                     extra=[("My comments", "hi"), ("Attained TFLOP/s", None)])
    report = grade_workbook(path)
    assert report.unrecognised == [("I", "My comments")]
    att = by_quantity(report)["attained_flops"]
    assert att.scale == 1e12 and att.missing == 4 and not att.ok and att.hint == "blank cells"
    data = json.loads(run("check", str(path), "--json").output)
    assert data["ok"] is False
    assert data["unrecognised"] == [{"column": "I", "header": "My comments"}]


def test_no_mkn_header_is_one_error_line(tmp_path):
    wb = openpyxl.Workbook()
    wb.active.append(["rows", "inner", "cols", "FLOPs"])
    wb.active.append([1, 2, 3, 12])
    wb.save(tmp_path / "nohead.xlsx")
    one_line_error(run("check", str(tmp_path / "nohead.xlsx")), "m, k, n")
    path = candidate(tmp_path / "ok.xlsx")
    one_line_error(run("check", str(path), "--sheet", "Other"), "no sheet 'Other'")
    only_dims = tmp_path / "dims.xlsx"
    wb = openpyxl.Workbook()
    wb.active.append(["m", "k", "n", "whatever"])
    wb.active.append([1, 2, 3, 4])
    wb.save(only_dims)
    one_line_error(run("check", str(only_dims)), "no column to grade")


def test_grading_options_are_refused_for_sheetgen_workbooks(tmp_path):
    out = tmp_path / "built.xlsx"
    assert run("build", str(out), "--spare-rows", "0").exit_code == 0
    one_line_error(run("check", str(out), "--gpu", "H100 SXM"), "--gpu", "grading")


@pytest.mark.parametrize(("header", "quantity", "unit", "scale"), [
    ("FLOPs", "flops", None, None),
    ("GFLOP (GFLOP)", None, None, None),
    ("FLOPs (GFLOP)", "flops", "GFLOP", 1e9),
    ("Bytes moved (GB)", "bytes_moved", "GB", 1e9),
    ("memory traffic [MiB]", "bytes_moved", "MiB", 2.0**20),
    ("bytes_in_KB", "bytes_moved", "kb", 1e3),
    ("AI", "intensity", None, None),
    ("flop / byte", "intensity", None, None),
    ("Limited by", "regime", None, None),
    ("Latency (µs)", "predicted_time", "µs", 1e-6),
    ("time_ms", "predicted_time", "ms", 1e-3),
    ("Compute time (ns)", "compute_time", "ns", 1e-9),
    ("Memory-time", "memory_time", None, None),
    ("Achieved FLOP/s (TFLOP/s)", "attained_flops", "TFLOP/s", 1e12),
    ("% of peak", "peak_fraction", "%", 0.01),
    ("Time (predicted, ms)", "predicted_time", "ms", 1e-3),
    ("Notes", None, None, None),
])
def test_header_aliases(header, quantity, unit, scale):
    found = recognise(header)
    if quantity is None:
        assert found is None
        return
    assert found is not None and found[0] == quantity
    assert (found[1] or "").lower() == (unit or "").lower() and found[2] == scale


def test_alias_table_is_normalised_and_unambiguous():
    seen = {}
    for quantity, (_kind, spellings) in ALIASES.items():
        for s in spellings:
            assert normalise(s) == s, s
            assert seen.setdefault(s, quantity) == quantity, s


@pytest.mark.parametrize(("text", "regime"), [
    ("Compute", "compute-bound"), ("MEMORY BOUND", "memory-bound"),
    ("memory-bound", "memory-bound"), ("compute bound", "compute-bound"), ("", None),
    ("both compute and memory", None), (3.0, None),
])
def test_regime_text_is_loose(text, regime):
    assert regime_of(text) == regime
