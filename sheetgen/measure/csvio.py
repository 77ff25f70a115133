"""measure's CSV: `# key: value` metadata lines (device, library and driver versions, threads
or clocks, date, measured peak and bandwidth), then one row per timed matmul.

`calibrate` (and any CSV reader that skips `#` lines, e.g. `pandas.read_csv(comment="#")`)
reads it as it is.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sheetgen.files.atomic import atomic_write, check_destination

COLUMNS = ("m", "k", "n", "dtype", "device", "time_s", "time_min_s", "time_max_s", "repeats")
COMMENT = "#"


@dataclass(frozen=True)
class Row:
    """One timed matmul: seconds per call (median, min, max over `repeats`)."""

    m: int
    k: int
    n: int
    dtype: str
    device: str
    time_s: float
    time_min_s: float
    time_max_s: float
    repeats: int

    def cells(self) -> list[str]:
        return [str(self.m), str(self.k), str(self.n), self.dtype, self.device,
                f"{self.time_s:.6e}", f"{self.time_min_s:.6e}", f"{self.time_max_s:.6e}",
                str(self.repeats)]


def csv_text(rows: Sequence[Row], metadata: Mapping[str, str]) -> str:
    buf = io.StringIO()
    for key, value in metadata.items():
        text = " ".join(str(value).split())  # one line per entry
        buf.write(f"{COMMENT} {key}: {text}\n")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(r.cells() for r in rows)
    return buf.getvalue()


def check_csv_path(path: str | Path, force: bool) -> Path:
    """The measurements' destination, refused as every writer refuses one."""
    return check_destination(path, force, suffixes=(".csv",), example="times.csv")


def write_csv(path: Path, rows: Sequence[Row], metadata: Mapping[str, str],
              force: bool = False) -> Path:
    """Write the measurements atomically; an existing file is replaced only with `force`."""
    with atomic_write(path, replace=force) as tmp:
        tmp.write_text(csv_text(rows, metadata), encoding="utf-8")
    return path


def split_comments(text: str) -> tuple[dict[str, str], str]:
    """(metadata from leading-or-not `# key: value` lines, the text without comment lines)."""
    meta: dict[str, str] = {}
    kept = []
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(COMMENT):
            body = line.lstrip()[1:].strip()
            if ":" in body:
                key, value = body.split(":", 1)
                meta.setdefault(key.strip(), value.strip())
            kept.append("\n")  # keep line numbers as the file has them
        else:
            kept.append(line)
    return meta, "".join(kept)
