"""The CSV the table converters write (xla_perf_table.py, aiconfigurator_gemm_table.py,
aiter_gemm_table.py):
`# key: value` lines that `sheetgen calibrate` keeps as metadata, then one row per timed
shape in the columns below, which `calibrate` reads as they are."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping

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
