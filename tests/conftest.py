"""Shared fixtures: shapes files, the LibreOffice marker's rules, and the loopback Sheets API
emulator (see tests/sheets_emulator/).

Every test that starts LibreOffice carries the `libreoffice` marker (lo_helpers'
`needs_libreoffice`): it is skipped when soffice is missing, and a test without the marker
that tries to start LibreOffice fails at once, so `-m "not libreoffice"` really runs none.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import openpyxl_fast
import pytest
from lo_helpers import LibreOfficeSession, groups
from sheets_emulator import (  # noqa: F401 - re-exported pytest fixtures
    gsheets_client,
    sa_key,
    service_account_file,
    sheets_emulator,
)
from threadpoolctl import threadpool_limits

import sheetgen.verify.libreoffice
from sheetgen.verify.libreoffice import soffice

LIBREOFFICE_RUNS = pytest.StashKey[tuple[int, float]]()

openpyxl_fast.install()  # openpyxl loads translate shared formulas from a template
# one BLAS thread per test process: pytest-xdist already runs a process per core, and BLAS
# threads waiting on busy cores cost more than they bring (sheetgen/calibrate/threads.py)
threadpool_limits(limits=1, user_api="blas")
# The test processes keep large object graphs alive (plans, workbooks and evaluations cached
# per process), and at the interpreter's default (700 allocations) the cyclic collector
# walks them over and over: 20,000 cut the CPU of test_check + test_fill by a fifth
# (31 -> 25 s). Reference counting still frees everything acyclic at once; only cycles
# wait a little longer.
gc.set_threshold(20_000, 10, 10)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The `libreoffice` tests: skipped where LibreOffice is not installed, else kept on one
    pytest-xdist worker per group (`--dist loadgroup`; lo_helpers.groups), where they share
    one LibreOffice run. Every other test runs in its module's group (the LibreOffice group
    of a module that has one): a module's fixtures and the per-process caches
    (helpers.built_workbook, load_workbook) then serve its tests once, not once per worker."""
    missing = soffice() is None
    skip = pytest.mark.skip(reason="LibreOffice (soffice) is not installed")
    group = lo_groups(items)
    for item in items:
        if item.get_closest_marker("libreoffice"):
            item.add_marker(skip if missing else pytest.mark.xdist_group(group[_module(item)]))
        elif not item.get_closest_marker("xdist_group"):
            module = _module(item)
            item.add_marker(pytest.mark.xdist_group(
                group[module] if module in group and not missing else module))


def _module(item: pytest.Item) -> str:
    return item.module.__name__ if getattr(item, "module", None) else item.nodeid


def lo_groups(items: list[pytest.Item]) -> dict[str, str]:
    """The xdist group of each module with LibreOffice tests (lo_helpers.groups)."""
    return groups({_module(item) for item in items if item.get_closest_marker("libreoffice")})


@pytest.fixture(scope="session")
def libreoffice(request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[LibreOfficeSession]:
    """The session's shared LibreOffice run (tests/lo_helpers.py): every registered job of the
    selected test modules, converted on first use."""
    session = LibreOfficeSession(tmp_path_factory.mktemp("libreoffice"),
                                 lo_groups(request.session.items))
    yield session
    if session.starts:
        request.config.stash[LIBREOFFICE_RUNS] = (session.starts, session.seconds)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many times LibreOffice started for the shared run, and for how long."""
    runs = terminalreporter.config.stash.get(LIBREOFFICE_RUNS, None)
    if runs:
        terminalreporter.write_line(f"LibreOffice: {runs[0]} shared start(s), {runs[1]:.1f} s")


@pytest.fixture(autouse=True)
def _libreoffice_only_when_marked(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test without the `libreoffice` marker cannot find soffice: forgetting the marker
    fails loudly instead of hiding a slow LibreOffice start among the quick tests."""
    if request.node.get_closest_marker("libreoffice"):
        yield
        return

    def unmarked() -> str:
        raise AssertionError("this test starts LibreOffice: mark it @needs_libreoffice "
                             "(tests/lo_helpers.py)")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sheetgen.verify.libreoffice, "soffice", unmarked)
        yield


@pytest.fixture
def shapes_csv(tmp_path: Path):
    """Write CSV text to a file and return its path."""

    def make(text: str, name: str = "shapes.csv") -> Path:
        p = tmp_path / name
        p.write_text(text, "utf-8")
        return p

    return make
