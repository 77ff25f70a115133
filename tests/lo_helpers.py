"""Tests that let LibreOffice open workbooks: one LibreOffice start for the whole session.

Starting LibreOffice takes seconds, so the tests do not start it one by one. A test module
registers what it needs converted with `@libreoffice_job(NAME, to=...)`: a function that
writes its workbooks into a folder. The first test that asks the session's `libreoffice`
fixture for a job's results (`libreoffice.outputs(NAME)`) makes the session build every job
of the selected test modules and convert them all together, one soffice call per target
format and profile; every later test reads its own results from the same run. A workbook
that LibreOffice could not convert in the shared call is converted again alone, so one bad
file fails only the tests that use it.

Targets: "xlsx" and "pdf" are LibreOffice's own saves; "values" is every sheet's computed
values, exported by LibreOffice as one CSV file a sheet (`read_values` reads either). A test
that only compares values asks for "values": LibreOffice writes the CSV in a third of the
time it takes to write the xlsx back (about 0.6 s against 1.9 s of CPU for the default
workbook), and reading it takes milliseconds where openpyxl took a second.

Profiles: `recalc=True` (the default) is sheetgen's forced-recalculation profile
(sheetgen.verify.libreoffice: every formula recomputed on load), which the cross-engine tests
need; `recalc=False` is a fresh default profile, what a user gets on double-clicking a file
(cached values shown, nothing recalculated).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
import time
import traceback
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from sheetgen.layout.planner import WorkbookPlan
from sheetgen.verify import libreoffice
from sheetgen.verify.compare import expected_cells, values_match

#: The one mark of a test that starts LibreOffice (the `libreoffice` marker): conftest skips
#: these tests when soffice is missing, keeps them on one pytest-xdist worker (they share
#: one LibreOffice run), and `-m "not libreoffice"` leaves them out.
needs_libreoffice = pytest.mark.libreoffice

#: builds a job's workbooks into the given (empty) folder; returns them by a key of its own
Builder = Callable[[Path], dict[str, Path]]


@dataclass
class Job:
    """Workbooks one test module wants LibreOffice to open, and what to save them as."""

    name: str
    build: Builder
    to: str
    recalc: bool
    module: str


#: every registered job by name (registered when its test module is imported)
JOBS: dict[str, Job] = {}


def libreoffice_job(name: str, *, to: str = "xlsx", recalc: bool = True
                    ) -> Callable[[Builder], Builder]:
    """Register `build(folder) -> {key: workbook}` as the job `name`: LibreOffice opens each
    workbook and saves it as `to` ("xlsx", "pdf", or "values": a folder of one CSV a sheet
    for `read_values`), with the forced-recalculation profile unless `recalc=False`. Tests
    get the results from `libreoffice.outputs(name)`."""

    def register(build: Builder) -> Builder:
        if name in JOBS and JOBS[name].module != build.__module__:
            raise ValueError(f"LibreOffice job {name!r} is registered twice")
        JOBS[name] = Job(name, build, to, recalc, build.__module__)
        return build

    return register


@dataclass
class LibreOfficeSession:
    """The session's LibreOffice run (conftest's `libreoffice` fixture)."""

    root: Path
    #: the test modules whose jobs a run builds (those with selected tests), by the xdist
    #: group their tests run in: a run builds only its own group's jobs
    modules: dict[str, str]
    done: dict[str, dict[str, Path]] = field(default_factory=dict)
    built: dict[str, dict[str, Path]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    starts: int = 0
    seconds: float = 0.0

    def outputs(self, name: str) -> dict[str, Path]:
        """The job's converted files, by the keys its builder gave; runs the shared
        conversion on the first call."""
        if name not in JOBS:
            raise KeyError(f"no LibreOffice job {name!r} (register it with @libreoffice_job)")
        if name not in self.done and name not in self.failed:
            group = self.modules.get(JOBS[name].module)
            pending = [j for j in JOBS.values() if j.name not in self.done
                       and j.name not in self.failed
                       and (self.modules.get(j.module, "-") == group or j.name == name)]
            self._run(pending)
        if name in self.failed:
            pytest.fail(f"LibreOffice job {name!r}: {self.failed[name]}", pytrace=False)
        return self.done[name]

    def sources(self, name: str) -> dict[str, Path]:
        """The workbooks the job's builder wrote, as they were before LibreOffice (it
        converts copies)."""
        self.outputs(name)
        return self.built[name]

    def _run(self, jobs: list[Job]) -> None:
        """Build every job, then one soffice call per (format, profile) for all of them."""
        built = self.built
        for job in jobs:
            folder = self.root / "in" / _safe(job.name)
            folder.mkdir(parents=True, exist_ok=True)
            try:
                built[job.name] = job.build(folder)
            except Exception:  # reported to each test of the job, traceback and all
                self.failed[job.name] = "building its workbooks failed:\n" + (
                    traceback.format_exc())
        groups: dict[tuple[str, bool], list[Job]] = {}
        for job in jobs:
            if job.name in built:
                groups.setdefault((job.to, job.recalc), []).append(job)
        for (to, recalc), members in groups.items():
            staged = {(job.name, key): src for job in members
                      for key, src in built[job.name].items()}
            # several modules open the same workbook (the default build): convert it once
            first: dict[str, tuple[str, str]] = {}
            twins = {k: first.setdefault(_content_key(src), k) for k, src in staged.items()}
            unique = {k: staged[k] for k in set(twins.values())}
            results, log = self._convert(unique, to, recalc)
            for k, original in twins.items():
                if k != original and original in results:
                    results[k] = results[original]
            for job in members:  # a file the shared call lost: once more, alone
                for key, src in built[job.name].items():
                    if (job.name, key) not in results:
                        again, log = self._convert({(job.name, key): src}, to, recalc)
                        results.update(again)
            for job in members:
                missing = [k for k in built[job.name] if (job.name, k) not in results]
                if missing:
                    self.failed[job.name] = (f"LibreOffice made no {to} of {missing}: "
                                             f"{log[-600:]}")
                else:
                    self.done[job.name] = {k: results[(job.name, k)] for k in built[job.name]}

    def _convert(self, files: dict[tuple[str, str], Path], to: str, recalc: bool
                 ) -> tuple[dict[tuple[str, str], Path], str]:
        """One soffice start converting every file; returns what it made and its output."""
        self.starts += 1
        run = self.root / f"run{self.starts}"
        indir, outdir = run / "in", run / "out"
        indir.mkdir(parents=True)
        names = {}
        for (job, key), src in files.items():
            stem = f"{_safe(job)}--{_safe(key)}"
            shutil.copy(src, indir / f"{stem}{src.suffix}")
            names[(job, key)] = stem
        binary = libreoffice.soffice() or "soffice"
        with tempfile.TemporaryDirectory(prefix="lo-test-") as prof:
            profile = (libreoffice.make_profile(Path(prof)) if recalc else Path(prof))
            target = CSV_EVERY_SHEET if to == VALUES else to
            cmd = [binary, f"-env:UserInstallation={profile.as_uri()}", "--headless",
                   "--norestore", "--nologo", "--convert-to", target, "--outdir", str(outdir),
                   *sorted(str(p) for p in indir.iterdir())]
            start = time.monotonic()
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                                      timeout=120 + 60 * len(files))
                log = f"exit {proc.returncode}: {proc.stdout}{proc.stderr}"
            except subprocess.TimeoutExpired as exc:
                log = f"timed out after {exc.timeout:.0f} s"
            self.seconds += time.monotonic() - start
        if to == VALUES:
            made = {k: _gather_sheets(outdir, stem, files[k]) for k, stem in names.items()}
            return {k: p for k, p in made.items() if p is not None}, log
        ext = to.split(":")[0]
        made = {k: outdir / f"{stem}.{ext}" for k, stem in names.items()}
        return {k: p for k, p in made.items() if p.exists() and p.stat().st_size > 0}, log


#: `to=VALUES`: every sheet's values as CSV, LibreOffice's "Text CSV" filter with its tokens
#: (https://help.libreoffice.org/latest/en-US/text/shared/guide/csv_params.html): comma,
#: double quote, UTF-8, line 1, -, language 0, quote every text cell, -, values not as
#: shown, no formulas, spaces kept, sheet -1 (each sheet to `<file>-<sheet>.csv`, 7.2+).
VALUES = "values"
CSV_EVERY_SHEET = ("csv:Text - txt - csv (StarCalc):44,34,76,1,,0,true,true,false,false,false,"
                   "-1")


def _sheet_names(workbook: Path) -> list[str]:
    """The sheet names of an xlsx file, in order, from its workbook part."""
    with zipfile.ZipFile(workbook) as z:
        part = z.read("xl/workbook.xml").decode("utf-8")
    return [_unescape(n) for n in re.findall(r'<(?:\w+:)?sheet\b[^>]*?\bname="([^"]*)"', part)]


def _unescape(text: str) -> str:
    return (text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
            .replace("&apos;", "'").replace("&amp;", "&"))


def _gather_sheets(outdir: Path, stem: str, source: Path) -> Path | None:
    """LibreOffice's `<stem>-<sheet>.csv` files, moved into the folder `<stem>` with the
    sheet order beside them; None if any sheet's file is missing."""
    try:
        sheets = _sheet_names(source)
    except (zipfile.BadZipFile, KeyError):
        return None
    made = [outdir / f"{stem}-{sheet}.csv" for sheet in sheets]
    if not sheets or not all(p.exists() for p in made):
        return None
    folder = outdir / stem
    folder.mkdir()
    for i, p in enumerate(made):
        p.rename(folder / f"{i}.csv")
    (folder / "sheets.json").write_text(json.dumps(sheets), "utf-8")
    return folder


def _content_key(path: Path) -> str:
    """The workbook's content, less the creation time xlsxwriter stamps in its properties:
    two builds of the same workbook have the same key."""
    digest = hashlib.sha256(path.suffix.encode())
    try:
        with zipfile.ZipFile(path) as z:
            for info in sorted(z.infolist(), key=lambda i: i.filename):
                if info.filename != "docProps/core.xml":
                    digest.update(info.filename.encode() + b"\0" + z.read(info) + b"\0")
    except zipfile.BadZipFile:  # not a zip (a hostile test file): its bytes
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _safe(text: str) -> str:
    return re.sub(r"[^\w.-]+", "_", text)


def read_values(path: Path) -> dict[str, Any]:
    """Every sheet's computed values, as openpyxl(data_only=True) reads them from an xlsx
    file, or from a `to="values"` job's folder of CSV files (`_csv_values`)."""
    if path.is_dir():
        sheets = json.loads((path / "sheets.json").read_text("utf-8"))
        return {name: _csv_values((path / f"{i}.csv").read_text("utf-8"))
                for i, name in enumerate(sheets)}
    wb = openpyxl.load_workbook(path, data_only=True, read_only=True)
    values = {}
    for ws in wb.worksheets:
        values[ws.title] = {(c.row - 1, c.column - 1): c.value
                            for row in ws.iter_rows() for c in row
                            if getattr(c, "row", None) is not None}
    wb.close()
    return values


#: one CSV field: quoted (text, or an error value) or bare (a number, TRUE/FALSE, a percent)
_FIELD = re.compile(r'(?:"((?:[^"]|"")*)"|([^,"\r\n]*))(,|\r?\n|$)')


def _csv_values(text: str) -> dict[tuple[int, int], Any]:
    """One sheet's CSV (`CSV_EVERY_SHEET`) as read_values gives an xlsx sheet: numbers as
    int or float (the same 15 significant digits LibreOffice writes in xlsx), percents
    divided by 100 exactly (the decimal point moved), TRUE/FALSE as booleans, error values
    as their xlsx text, text as text, an empty text result as None, blanks left out. The
    CSV quotes errors like text, so a text cell spelled like one of LibreOffice's error codes
    ("Err:502") would read as #VALUE!; sheetgen writes no such text."""
    values: dict[tuple[int, int], Any] = {}
    row = col = 0
    for m in _FIELD.finditer(text):
        quoted, bare, end = m.groups()
        if quoted is not None:  # text; "" is a formula's empty text, which reads as None
            value: Any = quoted.replace('""', '"') or None
            if value and re.fullmatch(r"Err:\d{3}", value):  # LibreOffice's own error codes
                value = "#VALUE!"  # (its Err:502, 504, ...), which its xlsx calls #VALUE!
            values[(row, col)] = value
        elif bare:
            values[(row, col)] = _bare(bare)
        if end == ",":
            col += 1
        else:
            row, col = row + 1, 0
        if m.end() >= len(text):
            break
    return values


def _bare(token: str) -> Any:
    if token in ("TRUE", "FALSE"):
        return token == "TRUE"
    if token.endswith("%"):
        return float(Decimal(token[:-1]).scaleb(-2))
    if re.fullmatch(r"-?\d+", token):
        return int(token)
    return float(token)


def mismatches(plan: WorkbookPlan, values: dict[str, Any], rtol: float = 1e-9) -> list[str]:
    """Formula cells whose recalculated value differs from the reference model."""
    bad = []
    count = 0
    for e in expected_cells(plan):
        count += 1
        got = values[e.sheet].get((e.row, e.col))
        if not values_match(got, e.value, rtol):
            bad.append(f"{e.sheet}!{e.address} {e.name}: got {got!r} expected {e.value!r}")
    assert count > 0
    return bad



def recalc_many(files: list[Path], outdir: Path) -> dict[Path, Path]:
    """Recalculate workbooks in a LibreOffice start of their own (seconds each time): kept for
    tests written before the shared run; a new test registers a `libreoffice_job` instead."""
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lo-test-") as prof:
        profile = libreoffice.make_profile(Path(prof))
        subprocess.run(
            [libreoffice.soffice() or "soffice", f"-env:UserInstallation={profile.as_uri()}",
             "--headless", "--norestore", "--convert-to", "xlsx", "--outdir", str(outdir),
             *map(str, files)],
            check=True, capture_output=True, timeout=600,
        )
    out = {f: outdir / f.name for f in files}
    missing = [str(p) for p in out.values() if not p.exists()]
    assert not missing, f"LibreOffice produced no output for {missing}"
    return out


def recalc_with_libreoffice(src: Path, workdir: Path) -> Path:
    """One workbook through a LibreOffice start of its own (see recalc_many)."""
    return recalc_many([src], workdir / "lo-out")[src]


#: LibreOffice test modules are split into this many groups, one per pytest-xdist worker
#: (`-n auto` on CI's 2 cores): each group shares its own LibreOffice start.
GROUPS = 2


def groups(modules: set[str]) -> dict[str, str]:
    """Each LibreOffice test module's xdist group: the modules in name order, dealt out in
    turn, so a module's jobs and tests always share one worker and one run."""
    return {m: f"libreoffice-{i % GROUPS}" for i, m in enumerate(sorted(modules))}


def pdf_page_texts(pdf: Path) -> list[str]:
    """Each printed page's text, by poppler's pdftotext (0.13 s for the default workbook's 27
    pages; pypdf's extract_text, used before, took 2.4 s of CPU). Pages end at form feeds."""
    if shutil.which("pdftotext") is None:
        pytest.skip("poppler-utils (pdftotext) is not installed")
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    pages = out.split("\f")
    return pages[:-1] if pages and not pages[-1].strip() else pages


def printed_pages(pdf: Path) -> list[str]:
    """Each printed page's text in the order LibreOffice drew it (`pdftotext -raw`: the
    footer first), line by line, as pypdf's extract_text gave it but in a thirtieth of its
    CPU (0.07 s against 2.3 s for the default workbook's 27 pages) and without the spaces
    pypdf dropped ("7.048ms"). A rotated text (a chart's y-axis title) comes one word a
    line, like a header wrapped a word a line: lo_helpers.pdf_page_texts (pdftotext's
    reading order) tells them apart."""
    if shutil.which("pdftotext") is None:
        pytest.skip("poppler-utils (pdftotext) is not installed")
    out = subprocess.run(["pdftotext", "-raw", "-enc", "UTF-8", str(pdf), "-"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    pages = out.split("\f")
    return pages[:-1] if pages and not pages[-1].strip() else pages
