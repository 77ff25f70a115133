"""Run the sheetgen CLI on a simulated full disk (deterministic, no mount needed).

    python tests/faults.py BUDGET sheetgen-arguments...

Every file opened for writing shares a budget of BUDGET bytes; the write that would pass it
fails with ENOSPC, as on a full disk, and so do that file's later flush and close (a real
file's buffered data cannot be flushed either). BUDGET -1 means no limit; with
SHEETGEN_FAULTS_REPORT set, the bytes written are printed to stderr at exit, so a test can
place budgets in each phase of a write (xlsxwriter's scratch files, the zip, a backup).
"""

from __future__ import annotations

import atexit
import builtins
import errno
import os
import sys
from typing import Any

_real_open = builtins.open
_state = {"left": -1, "written": 0}


def _enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class Budgeted:
    """A writable file whose writes draw on the shared budget."""

    def __init__(self, f: Any) -> None:
        self._f = f
        self._failed = False

    def write(self, data: Any) -> int:
        n = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
        if _state["left"] >= 0 and n > _state["left"]:
            self._failed = True
            raise _enospc()
        if _state["left"] >= 0:
            _state["left"] -= n
        _state["written"] += n
        return self._f.write(data)

    def flush(self) -> None:
        if self._failed and not self._f.closed:
            raise _enospc()
        self._f.flush()

    def close(self) -> None:
        if self._f.closed:
            return
        self._f.close()
        if self._failed:
            raise _enospc()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)

    def __iter__(self) -> Any:
        return iter(self._f)

    def __enter__(self) -> Budgeted:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # like io's finaliser: an unflushable file complains
        self.close()


def budgeted_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
    f = _real_open(file, mode, *args, **kwargs)
    if any(c in mode for c in "wax+"):
        return Budgeted(f)
    return f


def main() -> None:
    _state["left"] = int(sys.argv[1])
    builtins.open = budgeted_open
    if os.environ.get("SHEETGEN_FAULTS_REPORT"):
        atexit.register(lambda: print(f"written={_state['written']}", file=sys.stderr))
    sys.argv = ["sheetgen", *sys.argv[2:]]
    from sheetgen.console import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
