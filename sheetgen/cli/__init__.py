"""The `sheetgen` command: a thin click layer over the library, one module per concern.

`common` holds the group, the one-line error handling and the shared options; each other
module registers its commands on the group when imported. The one entry point is
sheetgen.console.main (it imports this package inside its Ctrl-C guard).
"""

from __future__ import annotations

from sheetgen.cli import (  # noqa: F401  (register the commands)
    checking,
    measure,
    terminal,
    transformer,
    workbooks,
)
from sheetgen.cli.common import UserError, cli, progress_bar, user_errors
from sheetgen.cli.terminal import show_json, show_table

__all__ = ["UserError", "cli", "progress_bar", "show_json", "show_table", "user_errors"]
