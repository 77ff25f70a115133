"""Atomic file output: write beside the target under a temporary name, then rename.

An interrupted or failed write never leaves half a file and never clobbers the user's; the
result gets the permissions a plain open() would have given it (mkstemp's 0600 would not).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sheetgen.errors import OutputError


def _mode_for(target: Path) -> int:
    if target.exists():
        return stat.S_IMODE(target.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_write(target: Path, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside target; when the block succeeds it replaces target."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    except OSError as exc:
        raise OutputError(f"cannot write to {target.parent}: {exc.strerror or exc}") from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
