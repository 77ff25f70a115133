"""Opening an xlsx file someone else made: budgets checked up front, damage said in one line.

Every path that reads a workbook (check, read, fill, --shapes) opens it here first, so a zip
bomb is refused from the zip directory alone, before any part is decompressed: the declared
sizes of *all* parts (any case, ``.rels`` and ``docProps`` included) must fit the budget,
and Python's zipfile stops a part at its declared size (a lie then fails its CRC check).
What a damaged package raises (XML ParseError, zlib.error, a broken shared-strings index, a
sheet name that is not UTF-8) becomes one WorkbookError naming the file.

An OLE compound file (the CFB container) holding an ``EncryptionInfo`` stream is how Office
stores a password-protected xlsx ([MS-OFFCRYPTO] 2.3.4.5); other CFB files are legacy .xls.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from xml.etree.ElementTree import ParseError

from sheetgen.errors import SheetgenError, WorkbookError

#: Uncompressed size of all parts of a package together, for the evaluator (check, read).
#: A 100,000-row sheetgen workbook is about 146 MB.
MAX_PACKAGE_BYTES = 512_000_000
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


@contextmanager
def open_package(path: str | os.PathLike[str],
                 budget: int | None = None) -> Iterator[zipfile.ZipFile]:
    """The checked zip package (budget: MAX_PACKAGE_BYTES unless given); damage met while
    it is read becomes one WorkbookError."""
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
            if total > budget:
                raise WorkbookError(
                    f"{name} would decompress to {_mb(total)} of XML, more than the "
                    f"{_mb(budget)} budget for this command (a zip bomb, or a workbook "
                    "too large to read safely; split it)")
            if any(i.flag_bits & 0x1 for i in infos):
                raise WorkbookError(f"{name} has encrypted zip entries; save a copy without "
                                    "a password and use that")
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


__all__ = ["MAX_OPENPYXL_BYTES", "MAX_PACKAGE_BYTES", "MAX_PARTS", "check_package",
           "damage_as_error", "guarded", "load_openpyxl", "open_package"]
