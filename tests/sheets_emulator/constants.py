"""Identities and limits the emulator shares with the tests: the test service account, the
project, Google's token audience and API hosts, the OAuth scopes that read or write, and
Google's cell limit per spreadsheet."""

from __future__ import annotations

SA_EMAIL = "sheetgen-test@proj.iam.gserviceaccount.com"
PROJECT_ID = "proj"
PROJECT_NUMBER = "123456789012"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
GOOGLE_API_PREFIXES = ("https://sheets.googleapis.com", "https://www.googleapis.com")
SHEETS_SCOPES = {
    "https://www.googleapis.com/auth/spreadsheets",
    "https://www.googleapis.com/auth/drive",
    "https://www.googleapis.com/auth/drive.file",
}
READ_SCOPES = SHEETS_SCOPES | {
    "https://www.googleapis.com/auth/spreadsheets.readonly",
    "https://www.googleapis.com/auth/drive.readonly",
}

CELL_LIMIT = 10_000_000  # cells per spreadsheet, all tabs together
