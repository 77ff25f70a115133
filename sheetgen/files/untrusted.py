"""Opening an xlsx file someone else made: budgets checked up front, damage said in one line.

Every path that reads a workbook (check, read, fill, --shapes) opens it here first, so a zip
bomb is refused from the zip directory alone, before any part is decompressed: the declared
sizes of *all* parts (any case, ``.rels`` and ``docProps`` included) must fit the budget,
and Python's zipfile stops a part at its declared size (a lie then fails its CRC check).

The budget grows with what the worksheets say they hold: each worksheet's
``<dimension ref="A1:Q100005"/>`` (read from the first few KB of the part, which is all that
is decompressed up front) lets its part be up to rows × columns × MAX_CELL_BYTES larger, so
a 1,048,576-row workbook sheetgen wrote is read back. The dimension is written by whoever
made the file, so a hard cap (MAX_DECLARED_BYTES) bounds the total whatever it declares, and
readers stream each part through read_part(), which stops at the size judged here.
What a damaged package raises (XML ParseError, zlib.error, a broken shared-strings index, a
sheet name that is not UTF-8) becomes one WorkbookError naming the file.

An OLE compound file (the CFB container) holding an ``EncryptionInfo`` stream is how Office
stores a password-protected xlsx ([MS-OFFCRYPTO] 2.3.4.5); other CFB files are legacy .xls.
"""

from __future__ import annotations

import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from xml.etree.ElementTree import ParseError

from sheetgen.errors import SheetgenError, WorkbookError

#: Uncompressed size of all parts of a package together, for the evaluator (check, read),
#: beyond what the worksheets' declared dimensions cover. (A 100,000-row sheetgen workbook
#: written cell by cell is about 277 MB; with the big tables' shared formulas, about 160 MB.)
MAX_PACKAGE_BYTES = 512_000_000
#: Bytes of sheet XML one declared cell may take: a sheetgen table cell averages about 130 B
#: written plainly (``<c r="P100005" s="12"><f>...</f><v>1.2345678901234567e-05</v></c>``),
#: and every declared cell of the used range counts, blanks included.
MAX_CELL_BYTES = 512
#: Hard cap on the whole package, whatever the dimensions declare: a 1,048,576-row sheetgen
#: workbook is about 1.7 GB, and check streams sheets, so this bounds time, not memory.
MAX_DECLARED_BYTES = 4_000_000_000
#: Decompressed bytes read from the start of a worksheet part to find its dimension.
DIMENSION_PROBE_BYTES = 4_096
#: The same for openpyxl, which holds every cell as a Python object (fill, --shapes): about
#: 30 times the sheet XML in memory, so a smaller budget keeps a fill under about 1 GB.
MAX_OPENPYXL_BYTES = 32_000_000
#: Parts in one package (a sheetgen workbook has about 20).
MAX_PARTS = 10_000

_CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_DAMAGE = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, ParseError, KeyError,
           IndexError, UnicodeDecodeError, EOFError, ValueError, TypeError, AttributeError)

T = TypeVar("T")


def _cfb_kind(path: Path) -> str | None:
    """'encrypted' or 'xls' for an OLE compound file, None for anything else."""
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
            if head != _CFB_MAGIC:
                return None
            blob = fh.read(4_000_000)  # directory entries are near the start in practice
    except OSError:
        return None
    return "encrypted" if "EncryptionInfo".encode("utf-16-le") in blob else "xls"


def check_package(path: str | os.PathLike[str], budget: int | None = None) -> None:
    """Refuse, from the zip directory alone, a file that is not a readable xlsx package or
    whose parts would decompress beyond `budget` bytes."""
    with open_package(path, budget):
        pass


_DIMENSION = re.compile(rb'<(?:\w+:)?dimension\s+ref="\$?([A-Z]{1,3})\$?(\d{1,7})'
                        rb'(?::\$?([A-Z]{1,3})\$?(\d{1,7}))?"')


def _letters(col: bytes) -> int:
    n = 0
    for ch in col:
        n = n * 26 + ch - 64
    return n


def declared_cells(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """Cells a worksheet part's <dimension> says its used range spans (0 when absent or
    beyond Excel's grid); only the part's first DIMENSION_PROBE_BYTES are decompressed."""
    with zf.open(info) as fh:
        head = fh.read(DIMENSION_PROBE_BYTES)
    m = _DIMENSION.search(head)
    if m is None:
        return 0
    c1, r1 = _letters(m.group(1)), int(m.group(2))
    c2, r2 = (_letters(m.group(3)), int(m.group(4))) if m.group(3) else (c1, r1)
    if not (1 <= r1 <= r2 <= 1_048_576 and 1 <= c1 <= c2 <= 16_384):
        return 0
    return (r2 - r1 + 1) * (c2 - c1 + 1)


def _is_worksheet(name: str) -> bool:
    low = name.lower()
    return low.startswith("xl/worksheets/") and low.endswith(".xml") and low.count("/") == 2


def _allowance(zf: zipfile.ZipFile, infos: list[zipfile.ZipInfo]) -> int:
    """Bytes the worksheets' declared dimensions cover: per sheet, at most its own size."""
    covered = 0
    for info in infos:
        if _is_worksheet(info.filename) and info.file_size > 0:
            covered += min(info.file_size, declared_cells(zf, info) * MAX_CELL_BYTES)
    return covered


def read_part(zf: zipfile.ZipFile, name: str, chunk: int = 1 << 24) -> Iterator[bytes]:
    """A part's bytes in chunks, stopping with a WorkbookError past the size the zip
    directory declared (and open_package judged): the streaming half of the budget."""
    limit = zf.getinfo(name).file_size
    seen = 0
    with zf.open(name) as fh:
        while block := fh.read(chunk):
            seen += len(block)
            if seen > limit:
                raise WorkbookError(f"{name} decompresses past its declared size "
                                    f"({limit:,} bytes): a damaged or hostile package")
            yield block


@contextmanager
def open_package(path: str | os.PathLike[str],
                 budget: int | None = None) -> Iterator[zipfile.ZipFile]:
    """The checked zip package (budget: MAX_PACKAGE_BYTES unless given); damage met while
    it is read becomes one WorkbookError."""
    by_dimension = budget is None  # the evaluator's budget; fill's openpyxl one is fixed
    budget = MAX_PACKAGE_BYTES if budget is None else budget
    p = Path(path)
    name = p.name
    if not p.exists():
        raise WorkbookError(f"workbook not found: {p}")
    if p.is_dir():
        raise WorkbookError(f"{p} is a directory, not a workbook")
    kind = _cfb_kind(p)
    if kind == "encrypted":
        raise WorkbookError(f"{name} is password-protected (an encrypted Office file); "
                            "save a copy without a password and use that")
    if kind == "xls":
        raise WorkbookError(f"{name} is an old-format .xls workbook; save it as .xlsx")
    with damage_as_error(name):
        try:
            zf = zipfile.ZipFile(p)
        except zipfile.BadZipFile:
            raise WorkbookError(f"{name} is not an xlsx workbook (not a zip file; .xls and "
                                ".ods are not supported)") from None
        with zf:
            infos = zf.infolist()
            if len(infos) > MAX_PARTS:
                raise WorkbookError(f"{name} has {len(infos):,} parts, more than the "
                                    f"{MAX_PARTS:,} sheetgen reads")
            total = sum(i.file_size for i in infos)
            if any(i.flag_bits & 0x1 for i in infos):
                raise WorkbookError(f"{name} has encrypted zip entries; save a copy without "
                                    "a password and use that")
            if total > budget and by_dimension and total <= MAX_DECLARED_BYTES:
                allowed = budget + _allowance(zf, infos)
                if total > allowed:
                    raise WorkbookError(
                        f"{name} would decompress to {_mb(total)} of XML, more than the "
                        f"{_mb(budget)} budget for this command plus what its sheets' "
                        f"declared cells can hold ({_mb(allowed)} in all: a zip bomb, or a "
                        "workbook too large to read safely; split it)")
            elif total > budget:
                cap = MAX_DECLARED_BYTES if by_dimension else budget
                raise WorkbookError(
                    f"{name} would decompress to {_mb(total)} of XML, more than the "
                    f"{_mb(cap)} budget for this command (a zip bomb, or a workbook "
                    "too large to read safely; split it)")
            yield zf


def _mb(n: int) -> str:
    if n < 1_000_000:
        return f"{n:,} bytes"
    return f"{n / 1e6:,.0f} MB" if n >= 10_000_000 else f"{n / 1e6:,.1f} MB"


@contextmanager
def damage_as_error(name: str) -> Iterator[None]:
    """Turn what a damaged package raises into one WorkbookError line naming the file."""
    try:
        yield
    except SheetgenError:
        raise
    except MemoryError:
        raise WorkbookError(f"{name} needs more memory than is available to read") from None
    except RecursionError:
        raise WorkbookError(f"{name} nests its XML too deeply to read") from None
    except zlib.error:
        raise WorkbookError(f"{name} is damaged: a part's compressed data is corrupt") from None
    except UnicodeDecodeError:
        raise WorkbookError(f"{name} is damaged: a part is not valid UTF-8 text") from None
    except OSError as exc:
        raise WorkbookError(f"cannot read {name}: {exc.strerror or exc}") from None
    except _DAMAGE as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise WorkbookError(f"{name} is not a readable xlsx workbook "
                            f"({type(exc).__name__}: {msg[:200]})") from None


def load_openpyxl(path: str | os.PathLike[str], **kwargs: Any) -> Any:
    """openpyxl.load_workbook behind the package check with MAX_OPENPYXL_BYTES."""
    import openpyxl

    check_package(path, min(MAX_OPENPYXL_BYTES, MAX_PACKAGE_BYTES))
    with damage_as_error(Path(path).name):
        return openpyxl.load_workbook(path, **kwargs)


def guarded(name: str, fn: Callable[[], T]) -> T:
    """fn() with damage turned into one WorkbookError (for lazy openpyxl reads)."""
    with damage_as_error(name):
        return fn()


__all__ = ["MAX_CELL_BYTES", "MAX_DECLARED_BYTES", "MAX_OPENPYXL_BYTES", "MAX_PACKAGE_BYTES",
           "MAX_PARTS", "check_package", "damage_as_error", "declared_cells", "guarded",
           "load_openpyxl", "open_package", "read_part"]
