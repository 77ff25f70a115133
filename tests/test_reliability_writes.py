"""Nothing is lost or clobbered: full disks, interrupts, racing writers, unsafe backups.

The full disk is simulated deterministically (tests/faults.py: every file opened for writing
shares a byte budget, and the write past it fails with ENOSPC), with budgets placed in each
phase of a write; where this runs as root with mount(8), a real 1 MB tmpfs is used too.
Interrupts are real signals sent to a real `sheetgen build` subprocess while it is writing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import openpyxl
import pytest
from helpers import one_line_error, run

import sheetgen.writers.fill
import sheetgen.writers.xlsx
from sheetgen.files.atomic import STALE_AFTER_S, TEMP_MARK, QuietFile, TargetExists, atomic_write

FAULTS = Path(__file__).with_name("faults.py")
BIG_ROWS = 5_501  # above xlsx.CONSTANT_MEMORY_ROWS: xlsxwriter streams rows to scratch files
#: A build still writing when a test signals or kills it (60,000 rows made the suite minutes
#: slower; the SIGINT failures it was meant to fix came from SIGINT ignored in the child).
RUNNING_ROWS = BIG_ROWS


def shapes_file(folder: Path, rows: int) -> Path:
    path = folder / "shapes.csv"
    path.write_text("m,k,n\n" + "".join(f"{1 + i % 997},{4096 + i},{8192}\n"
                                          for i in range(rows)))
    return path


def plan_workbook(path: Path, rows: int = 3) -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "plan"
    ws.append(["m", "k", "n"])
    for i in range(rows):
        ws.append([2 ** i, 4096, 4096])
    wb.save(path)
    return path


def listing(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def sheetgen_env(tmpdir: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmpdir)}


def faulty(budget: int, args: list[str], cwd: Path, tmpdir: Path,
           report: bool = False) -> subprocess.CompletedProcess[str]:
    env = sheetgen_env(tmpdir) | ({"SHEETGEN_FAULTS_REPORT": "1"} if report else {})
    return subprocess.run([sys.executable, str(FAULTS), str(budget), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def written(result: subprocess.CompletedProcess[str]) -> int:
    match = re.search(r"written=(\d+)", result.stderr)
    assert result.returncode == 0 and match, result.stderr
    return int(match.group(1))


def assert_full_disk_reported(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Exception ignored" not in result.stderr and "Traceback" not in result.stderr, \
        result.stderr
    progress = ("writing: ",)  # a slow build reports progress on a pipe (cli.common)
    errors = "".join(x for x in result.stderr.splitlines(True) if not x.startswith(progress))
    one_line_error(errors, "no space left", *needles)


# --- disk full ------------------------------------------------------------------------------

@pytest.mark.parametrize("big", [False, True], ids=["in-memory", "constant-memory"])
def test_full_disk_during_build_one_error_line_and_nothing_left(tmp_path: Path, big: bool):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    args = ["build", "out.xlsx"]
    if big:
        args += ["--shapes", str(shapes_file(tmp_path, BIG_ROWS))]
    total = written(faulty(-1, args, tmp_path, tmpdir, report=True))
    (tmp_path / "out.xlsx").unlink()
    before = listing(tmp_path)
    # budgets in every phase: xlsxwriter's scratch files, its XML parts, the zip's last bytes
    fractions = (0.0, 0.4, 0.8, 0.96, 0.999) if big else (0.0, 0.5, 0.999)
    for fraction in fractions:
        result = faulty(int(total * fraction), args, tmp_path, tmpdir)
        assert_full_disk_reported(result, "out.xlsx")
        assert listing(tmpdir) == [], (fraction, listing(tmpdir))
        assert listing(tmp_path) == before, fraction
        if big and fraction == 0.0:  # the first bytes go to xlsxwriter's scratch files:
            assert "TMPDIR" in result.stderr  # the message says so


def test_full_disk_during_fill_in_place_keeps_the_workbook_and_leaves_no_backup(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    theirs = plan_workbook(tmp_path / "plan.xlsx")
    original = theirs.read_bytes()
    # 0: the backup copy itself fails; size + 100: the backup is made, then the save fails
    for budget in (0, len(original) // 2, len(original) + 100):
        result = faulty(budget, ["fill", "plan.xlsx", "--in-place"], tmp_path, tmpdir)
        assert_full_disk_reported(result, "plan.xlsx")
        if budget < len(original):
            assert "was not changed" in result.stderr
        assert theirs.read_bytes() == original
        assert listing(tmp_path) == ["plan.xlsx", "tmp"], budget  # no .bak, empty or not
        assert listing(tmpdir) == []


def _mount_tmpfs(where: Path, size: str = "1m") -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True)
    return done.returncode == 0


@contextlib.contextmanager
def tmpfs(where: Path):
    if not _mount_tmpfs(where):
        pytest.skip("needs root and mount(8) for a real tmpfs")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def test_real_full_tmpfs(tmp_path: Path):
    with tmpfs(tmp_path / "small") as small:
        tmpdir = tmp_path / "tmp"
        tmpdir.mkdir()
        result = subprocess.run(["sheetgen", "build", str(small / "out.xlsx"), "--shapes",
                                 str(shapes_file(tmp_path, BIG_ROWS))], capture_output=True,
                                text=True, env=sheetgen_env(tmpdir), timeout=300)
        assert_full_disk_reported(result, "out.xlsx")
        assert listing(small) == [] and listing(tmpdir) == []


# --- interrupts -----------------------------------------------------------------------------

def _writing(tmpdir: Path, out_dir: Path, target: str) -> bool:
    """A build is writing: its scratch folder holds data and its temporary is beside OUT."""
    scratch = [p for p in tmpdir.glob("sheetgen-scratch-*/*") if p.name != ".lock"]
    beside = list(out_dir.glob(f".{target}{TEMP_MARK}*"))
    return bool(beside) and any(p.stat().st_size > 0 for p in scratch if p.exists())


def _start_big_build(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    shapes = shapes_file(tmp_path, RUNNING_ROWS)
    proc = subprocess.Popen(["sheetgen", "build", "out.xlsx", "--shapes", str(shapes), *extra],
                            cwd=tmp_path, env=sheetgen_env(tmpdir), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240
    while not _writing(tmpdir, tmp_path, "out.xlsx"):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the build never started writing"
        time.sleep(0.02)
    return proc, tmpdir


@pytest.mark.parametrize(("sig", "status", "word"), [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "terminated"),
])
def test_signal_mid_build_leaves_nothing_and_keeps_the_old_file(tmp_path: Path, sig, status,
                                                                  word):
    (tmp_path / "out.xlsx").write_bytes(b"the old workbook")
    proc, tmpdir = _start_big_build(tmp_path, "--force")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == status, (out, err)
    assert err.strip() == f"Error: {word}", err
    assert listing(tmpdir) == []
    assert listing(tmp_path) == ["out.xlsx", "shapes.csv", "tmp"]
    assert (tmp_path / "out.xlsx").read_bytes() == b"the old workbook"


def _age(path: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past), follow_symlinks=False)


def test_killed_build_leftovers_are_cleaned_by_the_next_build_but_live_ones_are_not(
        tmp_path: Path):
    proc, tmpdir = _start_big_build(tmp_path)
    proc.kill()  # SIGKILL: no cleanup is possible
    # the next build need not be long: every build, small or big, cleans a dead one's
    # temporary beside OUT (atomic_write) and scratch folder in TMPDIR (private_tempdir)
    shapes_file(tmp_path, 3)
    proc.communicate(timeout=60)
    stale_temp = next(tmp_path.glob(f".out.xlsx{TEMP_MARK}*"))
    stale_scratch = next(tmpdir.glob("sheetgen-scratch-*"))
    # a live build's temporary (its lock held), and a hidden file that is not sheetgen's
    live = tmp_path / f".out.xlsx{TEMP_MARK}live.tmp.xlsx"
    live.write_bytes(b"in use")
    foreign = tmp_path / ".out.xlsx.abcdefgh.tmp.xlsx"
    foreign.write_bytes(b"someone else's")
    for path in (stale_temp, stale_scratch / ".lock", live, foreign):
        _age(path, STALE_AFTER_S + 60)
    with open(live, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = subprocess.run(["sheetgen", "build", "out.xlsx", "--shapes", "shapes.csv"],
                              cwd=tmp_path, env=sheetgen_env(tmpdir), capture_output=True,
                              text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not stale_temp.exists() and not stale_scratch.exists()
    assert live.read_bytes() == b"in use" and foreign.read_bytes() == b"someone else's"
    assert listing(tmpdir) == []


# --- racing writers -------------------------------------------------------------------------

def test_file_appearing_during_build_is_never_replaced(tmp_path: Path, monkeypatch):
    out = tmp_path / "out.xlsx"
    real = sheetgen.writers.xlsx._write_workbook

    def meanwhile(*args, **kwargs):
        out.write_bytes(b"written by someone else meanwhile")
        return real(*args, **kwargs)

    monkeypatch.setattr(sheetgen.writers.xlsx, "_write_workbook", meanwhile)
    result = run("build", str(out))
    assert result.exit_code == 2
    one_line_error(result.output, "appeared while", "--force")
    assert out.read_bytes() == b"written by someone else meanwhile"
    assert listing(tmp_path) == ["out.xlsx"]
    assert run("build", str(out), "--force").exit_code == 0  # --force does replace it
    assert out.read_bytes()[:2] == b"PK"


def test_two_builds_racing_on_one_path_exactly_one_wins(tmp_path: Path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    procs = [subprocess.Popen(["sheetgen", "build", "out.xlsx"], cwd=tmp_path,
                              env=sheetgen_env(tmpdir), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = sorted(r[0] for r in results)
    assert codes == [0, 2], results
    loser = next(r for r in results if r[0] == 2)
    line = one_line_error(loser[2])
    assert "already exists" in line or "appeared while" in line
    wb = openpyxl.load_workbook(tmp_path / "out.xlsx", read_only=True)  # the sheet list only
    assert wb.sheetnames[0] == "Inputs"
    wb.close()
    assert listing(tmp_path) == ["out.xlsx", "tmp"] and listing(tmpdir) == []


def test_atomic_write_without_replace_refuses_a_target_that_appeared(tmp_path: Path):
    target = tmp_path / "t.bin"
    with pytest.raises(TargetExists), atomic_write(target) as tmp:
        tmp.write_bytes(b"new")
        target.write_bytes(b"old")
    assert target.read_bytes() == b"old" and listing(tmp_path) == ["t.bin"]
    with atomic_write(target, replace=True) as tmp:
        tmp.write_bytes(b"new")
    assert target.read_bytes() == b"new" and listing(tmp_path) == ["t.bin"]


def test_quiet_file_drops_writes_after_a_failure_but_keeps_the_position(tmp_path: Path):
    class Full:
        def write(self, data):
            raise OSError(28, "No space left on device")

        def close(self):
            pass

    f = QuietFile(Full())  # type: ignore[arg-type]
    with pytest.raises(OSError):
        f.write(b"abc")
    assert f.write(b"defg") == 4 and f.tell() == 4  # ZipFile's offsets still add up
    f.flush()
    f.close()
    assert f.error is not None and f.error.errno == 28


# --- fill backups ---------------------------------------------------------------------------

def test_symlinked_backup_is_never_followed(tmp_path: Path):
    theirs = plan_workbook(tmp_path / "plan.xlsx")
    original = theirs.read_bytes()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "plan.xlsx.bak").symlink_to(victim)
    result = run("fill", str(theirs), "--in-place")
    assert result.exit_code == 0, result.output
    assert victim.read_text() == "precious"
    assert (tmp_path / "plan.xlsx.bak").is_symlink()
    assert (tmp_path / "plan.xlsx.bak.2").read_bytes() == original
    assert "plan.xlsx.bak.2" in result.output


def test_dangling_symlink_backup_creates_nothing_through_it(tmp_path: Path):
    theirs = plan_workbook(tmp_path / "plan.xlsx")
    (tmp_path / "plan.xlsx.bak").symlink_to(tmp_path / "nowhere" / "x")
    (tmp_path / "nowhere").mkdir()
    assert run("fill", str(theirs), "--in-place").exit_code == 0
    assert listing(tmp_path / "nowhere") == []
    assert (tmp_path / "plan.xlsx.bak.2").stat().st_size > 0


def test_second_in_place_replace_keeps_the_pristine_backup(tmp_path: Path):
    theirs = plan_workbook(tmp_path / "plan.xlsx")
    original = theirs.read_bytes()
    assert run("fill", str(theirs), "--in-place").exit_code == 0
    first_fill = theirs.read_bytes()
    result = run("fill", str(theirs), "--in-place", "--replace")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "plan.xlsx.bak").read_bytes() == original
    assert (tmp_path / "plan.xlsx.bak.2").read_bytes() == first_fill
    assert "backup of the original: " in result.output and "plan.xlsx.bak.2" in result.output
    assert listing(tmp_path) == ["plan.xlsx", "plan.xlsx.bak", "plan.xlsx.bak.2"]


def test_in_place_on_a_symlinked_workbook_is_refused(tmp_path: Path):
    real = plan_workbook(tmp_path / "real.xlsx")
    link = tmp_path / "plan.xlsx"
    link.symlink_to(real)
    before = real.read_bytes()
    result = run("fill", str(link), "--in-place")
    assert result.exit_code == 2
    one_line_error(result.output, "symbolic link", "real.xlsx")
    assert real.read_bytes() == before and link.is_symlink()


def test_in_place_refuses_a_workbook_saved_while_fill_ran(tmp_path: Path, monkeypatch):
    theirs = plan_workbook(tmp_path / "plan.xlsx")
    import sheetgen.writers.into_workbook

    real = sheetgen.writers.into_workbook.write_into

    saved = {}

    def user_saves_meanwhile(*args, **kwargs):
        plan_workbook(theirs, rows=5)  # the user saved a newer version
        saved["bytes"] = theirs.read_bytes()
        return real(*args, **kwargs)

    monkeypatch.setattr(sheetgen.writers.into_workbook, "write_into", user_saves_meanwhile)
    result = run("fill", str(theirs), "--in-place")
    assert result.exit_code == 2
    one_line_error(result.output, "changed while fill was running")
    assert theirs.read_bytes() == saved["bytes"]
    assert listing(tmp_path) == ["plan.xlsx"]  # the redundant backup went too
