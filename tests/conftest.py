"""Shared fixtures: workbook building, LibreOffice recalculation, and the loopback Sheets API
emulator (see tests/sheets_emulator/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sheets_emulator import (  # noqa: F401 - re-exported pytest fixtures
    gsheets_client,
    sa_key,
    service_account_file,
    sheets_emulator,
)

from sheetgen.verify.libreoffice import soffice

needs_libreoffice = pytest.mark.skipif(soffice() is None, reason="LibreOffice not installed")


@pytest.fixture
def shapes_csv(tmp_path: Path):
    """Write CSV text to a file and return its path."""

    def make(text: str, name: str = "shapes.csv") -> Path:
        p = tmp_path / name
        p.write_text(text, "utf-8")
        return p

    return make
