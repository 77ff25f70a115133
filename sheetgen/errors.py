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

import functools
import re
import signal
from collections.abc import Callable
from typing import Any, TypeVar

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


#: A CLI option in a message: --force, --spare-rows.
_OPTION = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
#: CLI flags that are True/False keyword arguments in the Python API.
_SWITCHES = frozenset({"force", "in-place", "allow-loss", "replace", "tp-gather", "block"})

F = TypeVar("F", bound=Callable[..., Any])


def in_api_words(message: str) -> str:
    """A message written for the CLI, in the Python API's words: `--force` becomes
    `force=True`, `--spare-rows` becomes `spare_rows` (the keyword argument's name)."""
    def word(m: re.Match[str]) -> str:
        name = m.group(1)
        return f"{name.replace('-', '_')}=True" if name in _SWITCHES else name.replace("-", "_")

    return _OPTION.sub(word, message)


def api_words(f: F) -> F:
    """`f` as the public API gives it (`sheetgen.build` ...): a SheetgenError it raises names
    keyword arguments, not CLI options. The CLI calls the undecorated functions."""
    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return f(*args, **kwargs)
        except SheetgenError as exc:
            if exc.args and isinstance(exc.args[0], str):
                exc.args = (in_api_words(exc.args[0]), *exc.args[1:])
            raise

    return wrapper  # type: ignore[return-value]
