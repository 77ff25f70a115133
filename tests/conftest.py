"""Shared fixtures: the loopback Sheets API emulator (see tests/sheets_emulator.py)."""

from sheets_emulator import (  # noqa: F401 - re-exported pytest fixtures
    gsheets_client,
    sa_key,
    service_account_file,
    sheets_emulator,
)
