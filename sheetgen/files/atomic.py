"""Atomic file output: nothing half-written, nothing clobbered, no temporaries left behind.

- The new file is written beside its target under a unique hidden name
  (`.NAME.sheetgen-XXXXXXXX.tmp.xlsx`) and moved into place at the end: with os.replace when
  overwriting is allowed (--force), else with os.link, which fails when the target exists, so
  without --force an existing file is never replaced, not even one that appeared while this
  write was running (another build racing on the same path gets an Error line, not a win).
- The writing process holds an flock on its temporaries for as long as it lives. One whose
  lock is free belongs to a process that died without cleaning up (SIGKILL, a power cut); the
  next write to the same target removes it. A live build's temporaries are never touched.
- `private_tempdir()`: a fresh directory for a library's own scratch files (xlsxwriter's
  XML parts), removed on every exit path, locked the same way.
- The result gets the permissions a plain open() would have given it (mkstemp's 0600 would
  not), or keeps the replaced file's.
- Interrupts (SIGINT, SIGTERM turned into an exception by the CLI) are held off while the
  file is moved into place and the temporaries are removed, so cleanup always completes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from sheetgen.errors import OutputError

try:  # POSIX: the locks that tell a live build's temporaries from a dead one's
    import fcntl
except ImportError:  # pragma: no cover - Windows: no stale-file cleaning
    fcntl = None  # type: ignore[assignment]

TEMP_MARK = ".sheetgen-"  # in every temporary name, so only sheetgen's are ever cleaned
SCRATCH_PREFIX = "sheetgen-scratch-"
STALE_AFTER_S = 60.0  # a temporary this old whose lock is free is a dead process's
_LOCK_NAME = ".lock"
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK,
                  errno.EXDEV}


class WriteFailed(OutputError):
    """Writing the target failed (full disk, I/O error); `reason` says why in a few words."""

    def __init__(self, target: Path, reason: str) -> None:
        super().__init__(f"cannot write {target}: {reason}")
        self.reason = reason


class TargetExists(OutputError):
    """The target appeared while the new file was being written; nothing was replaced."""


def check_destination(path: str | os.PathLike[str], force: bool, *, suffixes: tuple[str, ...],
                      example: str, kind: str = "output") -> Path:
    """The destination of a write, after refusing a directory, a wrong extension, a missing
    folder and (without force) an existing file: the same messages for every writer."""
    out = Path(path)
    if out.is_dir():
        raise OutputError(f"{out} is a directory; give a file name such as {out / example}")
    if out.suffix.lower() not in suffixes:
        raise OutputError(f"{out}: the {kind} file name must end in {', '.join(suffixes)}")
    if not out.parent.exists():
        raise OutputError(f"the folder {out.parent} does not exist; create it first or write "
                          "somewhere else")
    if out.exists() and not force:
        raise OutputError(f"{out} already exists; pass --force to overwrite it")
    return out


def check_writable_dir(folder: Path) -> None:
    """Refuse a folder sheetgen cannot create files in, saying why (read-only, permission)."""
    if os.access(folder, os.W_OK | os.X_OK):
        return
    if _read_only_fs(folder):
        raise OutputError(f"cannot write to {folder}: it is on a read-only file system")
    raise OutputError(f"cannot write to {folder}: permission denied")


def _read_only_fs(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def describe(exc: OSError, where: Path) -> str:
    """An OSError as the reason in one line (`read-only file system`, `no space left`...)."""
    where = Path(os.path.abspath(where))
    if exc.errno == errno.EROFS:
        return f"{where} is on a read-only file system"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on the device holding {where}"
    if exc.errno == errno.EFBIG:
        return f"file too large for the file system holding {where}"
    return exc.strerror or str(exc)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP off (they arrive afterwards) while a short step must
    finish."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() \
            is not threading.main_thread():
        yield
        return
    held = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _lock(fd: int) -> bool:
    """Take the exclusive lock on fd without waiting; False when someone holds it."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _is_stale(path: Path, lock_file: Path) -> bool:
    """A temporary of ours whose owner is gone: old enough, and its lock is free."""
    try:
        st = os.lstat(lock_file)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() \
                or time.time() - st.st_mtime < STALE_AFTER_S:
            return False
        fd = os.open(lock_file, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        same = os.fstat(fd).st_ino == st.st_ino
        return same and _lock(fd) and path.exists()
    finally:
        os.close(fd)


def clean_stale(target: Path) -> list[Path]:
    """Remove the temporaries earlier, dead sheetgen processes left beside target."""
    removed = []
    prefix = f".{target.name}{TEMP_MARK}"
    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent):
            path = Path(entry.path)
            if entry.name.startswith(prefix) and _is_stale(path, path):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
    return removed


def _mode_for(target: Path) -> int:
    if target.exists():
        return stat.S_IMODE(target.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _commit(tmp: Path, target: Path, replace: bool) -> None:
    """Move tmp into place: replace target, or (not replace) only if target does not exist."""
    if replace:
        os.replace(tmp, target)
        return
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise TargetExists(f"{target} appeared while sheetgen was writing it (another build?) "
                           "and was left as it is; pass --force to overwrite it") from None
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        # no hard links on this file system (FAT, some network shares): check, then rename
        if os.path.lexists(target):
            raise TargetExists(f"{target} appeared while sheetgen was writing it and was left "
                               "as it is; pass --force to overwrite it") from None
        os.rename(tmp, target)
        return
    os.unlink(tmp)


@contextlib.contextmanager
def atomic_write(target: Path, suffix: str = ".tmp", *, replace: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside target; when the block succeeds it becomes target.

    `replace`: overwrite an existing target (--force). Without it an existing target, even
    one that appears while the block runs, is never replaced: TargetExists is raised.
    """
    target = Path(target)
    clean_stale(target)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}{TEMP_MARK}", suffix=suffix,
                                    dir=target.parent)
    except OSError as exc:
        raise OutputError(f"cannot write to {target.parent}: "
                          f"{describe(exc, target.parent)}") from None
    tmp = Path(name)
    _lock(fd)  # held until this process closes fd: the file is in use
    try:
        yield tmp
        with signals_held():
            os.chmod(tmp, _mode_for(target))
            os.fsync(fd)  # the data is on disk before the name points at it
            _commit(tmp, target, replace)
            _fsync_dir(target.parent)
    except OSError as exc:
        raise WriteFailed(target, describe(exc, target.parent)) from None
    finally:
        with signals_held():
            with contextlib.suppress(OSError):
                tmp.unlink()
            os.close(fd)


@contextlib.contextmanager
def private_tempdir() -> Iterator[Path]:
    """A new directory in the system temp folder for a library's scratch files, removed on
    every exit path (and, after a SIGKILL, by the next sheetgen run's clean_scratch)."""
    base = Path(tempfile.gettempdir())
    clean_scratch(base)
    try:
        path = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=base))
        fd = os.open(path / _LOCK_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise OutputError(f"cannot create a temporary folder in {base}: "
                          f"{describe(exc, base)} (set TMPDIR to another folder)") from None
    _lock(fd)
    try:
        yield path
    finally:
        with signals_held():
            shutil.rmtree(path, ignore_errors=True)
            os.close(fd)


def clean_scratch(base: Path) -> None:
    """Remove scratch folders dead sheetgen processes left in base (never a live one's)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            path = Path(entry.path)
            if entry.name.startswith(SCRATCH_PREFIX) and entry.is_dir(follow_symlinks=False) \
                    and _is_stale(path, path / _LOCK_NAME):
                shutil.rmtree(path, ignore_errors=True)


class QuietFile:
    """A binary file that, after its first failed write (or once closed), drops everything.

    A zip writer (xlsxwriter's, openpyxl's) leaves its ZipFile open when a write fails, and
    ZipFile.__del__ later retries the central directory, printing "Exception ignored in
    ZipFile.__del__" on a full disk. Once one write has failed the file is discarded anyway,
    so later writes go nowhere (the position still advances, so the zip's arithmetic holds);
    `error` keeps the first failure.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._pos = 0
        self._closed = False
        self.error: OSError | None = None

    @property
    def dropping(self) -> bool:
        return self.error is not None or self._closed

    def _fail(self, exc: OSError) -> OSError:
        self.error = exc
        return exc

    def write(self, data: Any) -> int:
        n = len(data)
        if not self.dropping:
            try:
                self._raw.write(data)
            except OSError as exc:
                raise self._fail(exc) from None
        self._pos += n
        return n

    def flush(self) -> None:
        if not self.dropping:
            try:
                self._raw.flush()
            except OSError as exc:
                raise self._fail(exc) from None

    def seek(self, offset: int, whence: int = 0) -> int:
        if self.dropping:
            self._pos = offset if whence == 0 else self._pos + offset
            return self._pos
        try:
            self._pos = self._raw.seek(offset, whence)
        except OSError as exc:
            raise self._fail(exc) from None
        return self._pos

    def tell(self) -> int:
        return self._pos

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._raw.close()
        except OSError as exc:
            if self.error is None:
                self.error = exc
                raise

    def __enter__(self) -> QuietFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def quiet_file(path: Path) -> QuietFile:
    """Open path for writing as a QuietFile (see there)."""
    return QuietFile(open(path, "wb"))
