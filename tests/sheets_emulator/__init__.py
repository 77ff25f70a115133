"""A loopback emulator of the Google Sheets API v4 (and Google's OAuth token endpoint).

Why: the writer and client must be tested with the *real* gspread and google-auth code paths
(JWT grant, bearer tokens, URL building, error bodies, retries) without network access. The
emulator stores what it receives, typed (``formulaValue`` stays a formula, ``stringValue`` stays
text), applies ``batchUpdate`` atomically, validates requests strictly enough that mistakes a
real server would reject fail here too, and can inject faults before a request is applied.

Use from pytest through the fixtures (fixtures.py, re-exported by ``tests/conftest.py``)::

    def test_x(sheets_emulator, gsheets_client):
        sheets_emulator.create_spreadsheet(KEY, sheets=["Model"], shared_with=[SA_EMAIL])
        sh = open_spreadsheet(gsheets_client, KEY)

It is a test double, not a spreadsheet engine: formula results come from the pluggable
``compute`` hook, by default compute.py's `engine_compute` (sheetgen's formula evaluator run on
the stored formulas), so a formula cell always reads back calculated, as at Google.

Modules, by concern: server.py (SheetsEmulator and its test-facing API), http_handler.py
(requests, logging, injected faults), auth.py (token endpoint, access checks), batch_update.py
and values_api.py (the endpoints), state.py (what is stored), rules.py (Google's validation
rules), schemas.py (accepted request keys), masks.py (field masks), values.py (value input
and rendering), a1.py (A1 notation, formula shifting), errors.py (error bodies, faults),
client.py (routing the production client here), compute.py (the default formula hook),
fixtures.py (keys, pytest fixtures).
"""

from __future__ import annotations

from .a1 import A1Range, BadRange, a1, col_index, col_letters, parse_a1, quote_sheet, shift_formula
from .client import make_http_client_class
from .compute import engine_compute
from .constants import CELL_LIMIT, PROJECT_ID, PROJECT_NUMBER, SA_EMAIL
from .errors import Fault, HTTPReply, Invalid, google_error
from .fixtures import (
    FAST_RETRY,
    FAULT_TIMEOUT,
    TEST_TIMEOUT,
    KeyPair,
    generate_test_key,
    gsheets_client,
    sa_key,
    service_account_file,
    sheets_emulator,
)
from .server import SheetsEmulator
from .state import CellKey, ComputeHook, LoggedRequest, Sheet, Snapshot, StoredSpreadsheet
from .values import parse_raw, parse_user_entered

__all__ = [
    "CELL_LIMIT", "FAST_RETRY", "FAULT_TIMEOUT", "PROJECT_ID", "PROJECT_NUMBER", "SA_EMAIL",
    "TEST_TIMEOUT",
    "A1Range", "BadRange", "CellKey", "ComputeHook", "Fault", "HTTPReply", "Invalid", "KeyPair",
    "LoggedRequest", "Sheet", "SheetsEmulator", "Snapshot", "StoredSpreadsheet", "a1",
    "col_index", "col_letters", "engine_compute", "generate_test_key", "google_error",
    "gsheets_client", "make_http_client_class", "parse_a1", "parse_raw", "parse_user_entered",
    "quote_sheet", "sa_key", "service_account_file", "sheets_emulator", "shift_formula",
]
