"""Exceptions sheetgen raises for problems a user can fix.

    SheetgenError              any user-facing error; the CLI prints its message as one line
    ├── InputError             bad shapes, options or dimensions (names the row/column/field)
    ├── PresetError            a GPU preset file is missing, malformed or out of range
    ├── OutputError            the output path cannot be written, or would clobber a file
    ├── WorkbookError          a workbook cannot be read or evaluated
    └── SheetsError            Google Sheets access failed (credentials, sharing, quota, API)

Programming errors stay ordinary Python exceptions so they surface as tracebacks in tests.
"""

from __future__ import annotations

import signal

#: The exit status of a user error (a SheetgenError, or bad usage): one `Error:` line.
USER_ERROR_EXIT = 2
#: The exit status of an interrupted command: 130, what shells report for a Ctrl-C'd one.
INTERRUPTED_EXIT = 128 + signal.SIGINT


class SheetgenError(Exception):
    """A problem the user can fix; its message is shown as one line, exit status 2."""

    exit_code = USER_ERROR_EXIT


class InputError(SheetgenError):
    """Bad user input: shapes, dimensions, options."""


class PresetError(SheetgenError):
    """A GPU preset is missing, malformed or out of range."""


class OutputError(SheetgenError):
    """The output cannot be written, or writing it would clobber an existing file."""


class WorkbookError(SheetgenError):
    """A workbook cannot be opened, parsed or evaluated."""


class SheetsError(SheetgenError):
    """Google Sheets access failed."""
