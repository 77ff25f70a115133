"""`sheetgen fill`: add sheetgen's sheets to a user's own workbook, linked to their shapes.

The Matmul table's m, k, n cells become live references to the cells of the user's shapes
table (found as `--shapes` finds it), so editing their sheet recomputes everything. Their
workbook is read, never written, unless `in_place`, which first copies it to THEIRS.xlsx.bak
(or .bak.2, .bak.3, ...: an existing backup is never overwritten and a link there is never
followed). The result is saved under a temporary name and moved into place (sheetgen.files.atomic),
so a failure leaves no half file, no half backup, and the user's workbook as it was.
"""

from __future__ import annotations

import contextlib
import io
import os
import posixpath
import shutil
import zipfile
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from sheetgen.assemble import BuildConfig, plan_build
from sheetgen.errors import InputError, OutputError, WorkbookError
from sheetgen.files.atomic import (
    TargetExists,
    WriteFailed,
    atomic_write,
    check_writable_dir,
    describe,
    quiet_file,
)
from sheetgen.files.untrusted import (
    MAX_OPENPYXL_BYTES,
    check_package,
    damage_as_error,
    load_openpyxl,
)
from sheetgen.inputs.presets import DEFAULT_DTYPE, load_presets
from sheetgen.inputs.shapes import ShapeTable, read_xlsx_table
from sheetgen.sheets import matmul
from sheetgen.writers.openpyxl_compat import save_workbook


@dataclass(frozen=True)
class FillResult:
    path: Path
    backup: Path | None
    table: ShapeTable  # where the linked shapes live in the user's workbook


def default_output(theirs: Path) -> Path:
    return theirs.with_name(f"{theirs.stem}.sheetgen.xlsx")


def _paths(theirs: Path, out: Path | None, in_place: bool, force: bool) -> Path:
    if theirs.is_dir() or not theirs.exists():
        raise InputError(f"{theirs}: no such workbook")
    if theirs.suffix.lower() == ".xlsm":
        raise InputError(f"{theirs.name}: fill would lose the macros of an .xlsm; save a copy "
                         "as .xlsx and fill that")
    if theirs.suffix.lower() != ".xlsx":
        raise InputError(f"{theirs.name}: fill works on .xlsx workbooks (save yours as .xlsx)")
    if in_place:
        if out is not None and out.resolve() != theirs.resolve():
            raise InputError("give either -o OUT or --in-place, not both")
        if theirs.is_symlink():
            raise InputError(f"{theirs} is a symbolic link to {theirs.resolve()}; fill that file "
                             "--in-place, or write a new one with -o OUT")
        check_writable_dir(theirs.parent)
        return theirs
    target = out or default_output(theirs)
    if target.exists() and target.resolve() == theirs.resolve():
        raise OutputError(f"{target} is the input workbook; pass --in-place to change it "
                          "(a backup is kept)")
    if target.suffix.lower() != ".xlsx":
        raise OutputError(f"{target}: the output file name must end in .xlsx")
    if target.is_dir():
        raise OutputError(f"{target} is a directory")
    if not target.parent.exists():
        raise OutputError(f"the folder {target.parent} does not exist; create it first or "
                          "write somewhere else")
    if target.exists() and not force:
        raise OutputError(f"{target} already exists; pass --force to overwrite it")
    check_writable_dir(target.parent)
    return target


def fill_workbook(theirs: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
                  gpu: str | None = None, dtype: str = DEFAULT_DTYPE,
                  gpu_file: str | os.PathLike[str] | None = None,
                  shapes_sheet: str | None = None, spare_rows: int = 0, prefix: str = "",
                  in_place: bool = False, force: bool = False, allow_loss: bool = False,
                  replace: bool = False,
                  progress_factory: Callable[[int, str], AbstractContextManager[Any]]
                  | None = None, **options: Any) -> FillResult:
    """Add sheetgen's sheets to the workbook `theirs`, linked live to its shapes table.

    `options`: other BuildConfig fields, as for `build` (compute_eff, memory_eff, link_eff,
    layers, ...).

    `replace`: `theirs` was filled before; rewrite sheetgen's sheets and names (a re-fill
    after rows were added), keeping the earlier fill's prefix and linked sheet by default.
    """
    from sheetgen.verify.readback import read_metadata
    from sheetgen.writers.into_workbook import losses, write_into

    src = Path(theirs)
    target = _paths(src, Path(out) if out is not None else None, in_place, force)
    check_package(src, MAX_OPENPYXL_BYTES)  # before any part of theirs is decompressed
    earlier = read_metadata(src)
    refill = replace and "sheetgen.linked_sheet" in earlier
    if replace and not refill:
        raise InputError(f"{src.name} was not filled by sheetgen, so there is nothing of "
                         "sheetgen's to replace; leave out --replace")
    if refill:
        prefix = prefix or earlier.get("sheetgen.prefix", "")
        shapes_sheet = shapes_sheet or earlier["sheetgen.linked_sheet"]
    before = _identity(src)
    with damage_as_error(src.name):
        lost = losses(src)
    if lost and not allow_loss:
        raise WorkbookError(
            f"{src.name} has {', '.join(lost)}, which openpyxl cannot carry over; fill would "
            "drop them. Use `sheetgen build` and copy its sheets in, or pass --allow-loss")
    table = read_xlsx_table(src, shapes_sheet)
    presets = load_presets(gpu_file)
    config = BuildConfig(gpu=gpu, dtype=dtype, shapes=table.shapes, spare_rows=spare_rows,
                         presets=presets, **options)
    assert table.sheet is not None
    links = {dim: [(table.sheet, row - 1, table.columns[dim]) for row in table.rows]
             for dim in (matmul.M.name, matmul.K.name, matmul.N.name)}
    plan = plan_build(config, prefix=prefix, links=links)
    plan.metadata["sheetgen.linked_sheet"] = table.sheet
    plan.metadata["sheetgen.linked_rows"] = f"{table.rows[0]}-{table.rows[-1]}"
    plan.metadata["sheetgen.prefix"] = prefix
    if not refill:  # refuse a clash from the sheet list and names alone, before the load
        head = load_openpyxl(src, read_only=True)
        try:
            _refuse_clashes(src, plan, head.sheetnames, set(head.defined_names),
                            "sheetgen.linked_sheet" in earlier)
        finally:
            head.close()
    wb = _load_theirs(src, {s.name.casefold() for s in plan.sheets} if refill else set())
    if refill:
        theirs_names = {name.casefold(): name for name in wb.sheetnames}  # Excel ignores case
        for sheet in plan.sheets:
            if sheet.name.casefold() in theirs_names:
                del wb[theirs_names[sheet.name.casefold()]]
        for name in set(plan.defined_names) & set(wb.defined_names):
            del wb.defined_names[name]
    _refuse_clashes(src, plan, wb.sheetnames, set(wb.defined_names),
                    "sheetgen.linked_sheet" in earlier)
    total = sum(t.n_rows for s in plan.sheets for t in s.tables)
    ctx = progress_factory(total, "filling") if progress_factory else nullcontext(None)
    with ctx as progress:
        write_into(plan, wb, progress=progress)
    backup = backup_copy(src) if in_place else None
    try:
        _save(wb, target, replace=force or in_place,
              unchanged=(src, before) if in_place else None)
    except BaseException:
        if backup is not None:  # the original is intact, so this copy is redundant
            with contextlib.suppress(OSError):
                backup.unlink()
        raise
    return FillResult(target, backup, table)


def _refuse_clashes(src: Path, plan: Any, sheetnames: list[str], defined: set[str],
                    filled_before: bool) -> None:
    """InputError when THEIRS already has a sheet (Excel ignores case) or a defined name
    that sheetgen's sheets would take."""
    theirs_names = {name.casefold(): name for name in sheetnames}
    clash = [theirs_names[s.name.casefold()] for s in plan.sheets
             if s.name.casefold() in theirs_names]
    if clash:
        hint = ("pass --replace to rewrite sheetgen's sheets from an earlier fill"
                if filled_before else
                "pass --prefix (e.g. --prefix 'sg ') to name sheetgen's sheets apart")
        raise InputError(f"{src.name} already has sheet(s) {', '.join(map(repr, clash))}; "
                         f"{hint}")
    names = sorted(set(plan.defined_names) & defined)
    if names:
        raise InputError(f"{src.name} already defines the name(s) {', '.join(names)} that "
                         "sheetgen's formulas use; rename them in your workbook first")


def _load_theirs(src: Path, replaced: set[str]) -> Any:
    """THEIRS in openpyxl. A re-fill deletes sheetgen's earlier sheets (`replaced`, names
    casefolded) unread: they load as empty sheets, which keeps every other sheet at its
    index (print titles and local names are bound by index), and their 26,000 cells,
    merges and charts are not parsed (half of a re-fill's CPU)."""
    if not replaced:
        return load_openpyxl(src, rich_text=True)
    import openpyxl

    check_package(src, MAX_OPENPYXL_BYTES)
    with damage_as_error(src.name):
        package = without_sheets(src, replaced)
        return openpyxl.load_workbook(package if package is not None else src, rich_text=True)


_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_PACKAGE_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_REL_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_EMPTY_SHEET = (b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
                b"<sheetData/></worksheet>")


def without_sheets(src: Path, replaced: set[str]) -> io.BytesIO | None:
    """A copy of the package src in memory, its worksheets named in `replaced` (casefolded)
    emptied and their relationships (charts, drawings) dropped; None when the package is
    not laid out as Excel and openpyxl lay one out (xl/workbook.xml): then load it whole."""
    with zipfile.ZipFile(src) as z:
        names = set(z.namelist())
        if not {"xl/workbook.xml", "xl/_rels/workbook.xml.rels"} <= names:
            return None
        book = ElementTree.fromstring(z.read("xl/workbook.xml"))
        rels = {r.get("Id"): r for r in
                ElementTree.fromstring(z.read("xl/_rels/workbook.xml.rels")).iter(_PACKAGE_REL)}
        emptied = set()
        for sheet in book.iter(f"{_MAIN}sheet"):
            rel = rels.get(sheet.get(_REL_ID))
            if (sheet.get("name", "").casefold() not in replaced or rel is None
                    or not rel.get("Type", "").endswith("/worksheet")):
                continue
            target = rel.get("Target", "")
            part = (target[1:] if target.startswith("/")
                    else posixpath.normpath(posixpath.join("xl", target)))
            if part not in names:
                return None
            emptied.add(part)
        dropped = {posixpath.join(posixpath.dirname(part), "_rels",
                                  posixpath.basename(part) + ".rels") for part in emptied}
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copy:
            for info in z.infolist():
                if info.filename in dropped:
                    continue
                copy.writestr(info.filename, _EMPTY_SHEET if info.filename in emptied
                              else z.read(info))
    out.seek(0)
    return out


def _identity(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


MAX_BACKUPS = 1000


def backup_name(src: Path, number: int) -> Path:
    """THEIRS.xlsx.bak, then THEIRS.xlsx.bak.2, .bak.3, ..."""
    return src.with_name(f"{src.name}.bak" + (f".{number}" if number > 1 else ""))


def backup_copy(src: Path) -> Path:
    """Copy src to the first free backup name, written whole under a temporary name and
    linked into place: never over an existing backup or through a symbolic link, and never
    a partial or empty one (a full disk leaves no backup and src untouched)."""
    for number in range(1, MAX_BACKUPS + 1):
        backup = backup_name(src, number)
        if os.path.lexists(backup):
            continue
        try:
            with atomic_write(backup, ".tmp") as tmp:
                with open(src, "rb") as fin, open(tmp, "wb") as fout:
                    shutil.copyfileobj(fin, fout)
                shutil.copystat(src, tmp)
        except TargetExists:  # another fill took this name meanwhile
            continue
        except WriteFailed as exc:
            raise OutputError(f"cannot back up {src.name} to {backup.name}: {exc.reason}; "
                              f"{src.name} was not changed") from None
        return backup
    raise OutputError(f"{src.name} already has {MAX_BACKUPS} backups ({backup_name(src, 1).name}"
                      f" ... {backup_name(src, MAX_BACKUPS).name}); move some away first")


def _save(wb: Any, target: Path, *, replace: bool,
          unchanged: tuple[Path, tuple[int, int, int]] | None = None) -> None:
    """Save atomically; `unchanged`: (path, identity) that must still hold when committing
    (an in-place fill refuses to replace a workbook someone saved while it ran)."""
    with atomic_write(target, ".tmp.xlsx", replace=replace) as tmp:
        with quiet_file(tmp) as fh:
            try:
                save_workbook(wb, fh)
            except OSError as exc:
                raise WriteFailed(target, describe(exc, target.parent)) from None
        if unchanged is not None and _identity(unchanged[0]) != unchanged[1]:
            raise OutputError(f"{unchanged[0]} changed while fill was running; nothing was "
                              "written, run fill again")


def fill(theirs: str | os.PathLike[str], out: str | os.PathLike[str] | None = None,
         **kwargs: Any) -> Path:
    """Add sheetgen's sheets to your workbook, linked to your m/k/n cells; returns the new
    file (THEIRS.sheetgen.xlsx unless `out`, or THEIRS itself with in_place=True)."""
    return fill_workbook(theirs, out, **kwargs).path
