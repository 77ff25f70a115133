"""The grade of a hand-made sheet: per-row failures, per-column grades, the whole report."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sheetgen.core.units import si

SHOWN_FAILURES = 5  # failing rows listed per column


@dataclass(frozen=True)
class RowFailure:
    row: int  # 1-based sheet row
    cell: str
    got: Any  # as the sheet has it ("missing" for a blank cell)
    expected: Any  # in the column's unit
    formula: str | None

    def line(self) -> str:
        return (f"row {self.row} ({self.cell}): got {show_value(self.got)}, expected "
                f"{show_value(self.expected)}" + (f"  {self.formula}" if self.formula else ""))

    def as_dict(self) -> dict[str, Any]:
        return {"row": self.row, "cell": self.cell, "got": plain(self.got),
                "expected": plain(self.expected), "formula": self.formula}


@dataclass
class ColumnGrade:
    column: str  # letter
    header: str
    quantity: str
    unit: str | None
    scale: float  # SI value = sheet value * scale
    rows: int = 0
    failed: int = 0
    missing: int = 0
    failures: list[RowFailure] = field(default_factory=list)  # the first few
    hint: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def line(self) -> str:
        verdict = "pass" if self.ok else "FAIL"
        unit = f" [{self.unit}]" if self.unit else ""
        missing = f", {self.missing} blank" if self.missing else ""
        text = (f"{self.column} {self.header!r} -> {self.quantity}{unit}: {verdict} "
                f"{self.rows - self.failed}/{self.rows}{missing}")
        return text + (f"  hint: {self.hint}" if self.hint else "")

    def as_dict(self) -> dict[str, Any]:
        return {"column": self.column, "header": self.header, "quantity": self.quantity,
                "unit": self.unit, "scale": self.scale, "ok": self.ok, "rows": self.rows,
                "failed": self.failed, "missing": self.missing, "hint": self.hint,
                "failures": [f.as_dict() for f in self.failures]}


@dataclass
class GradeReport:
    path: str
    sheet: str
    header_row: int
    rows: list[int]  # the graded shape rows (1-based)
    gpu: dict[str, Any]
    columns: list[ColumnGrade] = field(default_factory=list)
    unrecognised: list[tuple[str, str]] = field(default_factory=list)  # (letter, header)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (row, why)
    #: formula cells outside the graded columns' reach that could not be evaluated
    not_evaluated: list[tuple[str, str]] = field(default_factory=list)  # (cell, why)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.columns)

    def summary(self) -> list[str]:
        g = self.gpu
        lines = [f"{self.path}: graded sheet {self.sheet!r}, header row {self.header_row}, "
                 f"{len(self.rows)} shape rows, against {g['gpu']} {g['dtype']} (peak "
                 f"{si(g['peak_flops'], 'FLOP/s')}, HBM {si(g['hbm_bw'], 'B/s')}, ridge "
                 f"{g['ridge']:.4g} FLOP/B)"]
        lines.append("recognised: " + ", ".join(
            f"{c.column} {c.header!r} -> {c.quantity}" + (f" [{c.unit}]" if c.unit else "")
            for c in self.columns))
        if self.unrecognised:
            lines.append("not recognised (not graded): " + ", ".join(
                f"{col} {h!r}" for col, h in self.unrecognised))
        for row, why in self.skipped[:SHOWN_FAILURES]:
            lines.append(f"skipped row {row}: {why}")
        if len(self.skipped) > SHOWN_FAILURES:
            lines.append(f"... and {len(self.skipped) - SHOWN_FAILURES} more skipped rows")
        if self.not_evaluated:
            shown = "; ".join(f"{cell} ({why})" for cell, why in
                              self.not_evaluated[:SHOWN_FAILURES])
            more = len(self.not_evaluated) - SHOWN_FAILURES
            lines.append(f"not evaluated (not graded, {len(self.not_evaluated)} cell(s)): "
                         + shown + (f"; ... and {more} more" if more > 0 else ""))
        for c in self.columns:
            lines.append("  " + c.line())
            lines.extend("      " + f.line() for f in c.failures)
            if c.failed > len(c.failures):
                lines.append(f"      ... and {c.failed - len(c.failures)} more")
        bad = sum(not c.ok for c in self.columns)
        lines.append("ok: every recognised column agrees with the reference model" if self.ok
                     else f"{bad} of {len(self.columns)} column(s) fail")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.path, "ok": self.ok, "sheet": self.sheet,
                "header_row": self.header_row, "rows": self.rows,
                "gpu": {k: plain(v) for k, v in self.gpu.items()},
                "columns": [c.as_dict() for c in self.columns],
                "unrecognised": [{"column": c, "header": h} for c, h in self.unrecognised],
                "skipped": [{"row": r, "why": w} for r, w in self.skipped],
                "not_evaluated": [{"cell": c, "why": w} for c, w in self.not_evaluated]}


def show_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.10g}"
    return repr(value) if isinstance(value, str) else str(value)


def plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
