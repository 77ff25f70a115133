"""The `sheetgen` console script's entry point: a Ctrl-C at any moment is one Error line.

Why a module of its own: the script runs `from <module> import main` before main() starts,
and importing `sheetgen.cli` takes most of the start-up (click and every command module), so
a Ctrl-C during that import used to print Python's traceback. This module imports only `sys`
and sheetgen.errors (standard library only); main() imports the CLI inside the same guard
that catches the interrupt, and the CLI itself turns a later Ctrl-C into `Error: interrupted`,
exit 130 (sheetgen/cli/common.py). What is left uncovered is the interpreter's own start-up,
before any sheetgen code runs. This is the one entry point (`python -m sheetgen` calls it too).
"""

from __future__ import annotations

import sys

from sheetgen.errors import INTERRUPTED_EXIT


def main() -> None:
    """Run the CLI; an interrupt before it takes over signals ends as the CLI's own would."""
    try:
        from sheetgen.cli import cli

        cli()
    except KeyboardInterrupt:
        # Raised outside click's handling: while the CLI is imported, or between bytecodes
        # before and after click's main. (SIGTERM and SIGHUP keep their default action until
        # the CLI installs its handlers: the process ends quietly, with nothing written yet.)
        sys.stderr.write("Error: interrupted\n")
        sys.stderr.flush()
        sys.exit(INTERRUPTED_EXIT)
