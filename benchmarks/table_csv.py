"""The CSV the table converters write (xla_perf_table.py, aiconfigurator_gemm_table.py,
aiter_gemm_table.py, deepgemm_table.py):
`# key: value` lines that `sheetgen calibrate` keeps as metadata, then one row per timed
shape in the columns below, which `calibrate` reads as they are."""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

COLUMNS = ("b", "m", "k", "n", "dtype", "device", "time_s", "flops_per_s")


def csv_text(rows: Iterable[Mapping[str, object]], metadata: Iterable[str]) -> str:
    """The metadata lines (each "key: value") as `#` comments, then the rows under COLUMNS."""
    buf = io.StringIO()
    for line in metadata:
        buf.write(f"# {line}\n")
    writer = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def timed_row(m: int, k: int, n: int, dtype: str, device: str, seconds: float, b: int = 1
              ) -> dict[str, object]:
    """`b` matmuls of m×k×n (each with its own operands) timed together at `seconds`, as a
    row under COLUMNS (its rate 2·b·m·n·k / seconds, to the FLOP/s)."""
    return {"b": b, "m": m, "k": k, "n": n, "dtype": dtype, "device": device,
            "time_s": f"{seconds:.6e}", "flops_per_s": f"{2.0 * b * m * n * k / seconds:.0f}"}


def write(text: str, output: Path | None) -> None:
    """The CSV to `output`, or to standard output when none is given (each converter's -o)."""
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
