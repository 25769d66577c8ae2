"""Faults while `record` runs, made for real (issue 23 items 6, 12, 16, 19): the store
directory deleted or moved away, store files made immutable (chattr +i), the recorder's perf
child killed with SIGKILL, a small tmpfs filled up. Each case checks what `record` says, that
it exits 1 (never SIGBUS, never 0) and that what was already stored is still there."""

from __future__ import annotations

import errno
import itertools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from corescope.store.db import Store
from corescope.store.series import read_samples
from live.conftest import need_tool, profile_chunks, wait_for
from support import popen_cli

STORE_FILES = ("corescope.db", "corescope.db-wal", "corescope.db-shm", "cores.journal")
CORES_ONLY = ("--no-profile", "--no-kmsg", "--no-census", "--no-netdev", "--no-pressure")


def _start(store: Path, *options: str) -> subprocess.Popen[str]:
    proc = popen_cli("record", "--store", str(store), "--interval", "0.1s", *options)
    # started once the store and the journal exist (the status line is printed then)
    assert wait_for(lambda: (store / "cores.journal").exists() or proc.poll() is not None,
                    30), "record did not start"
    assert proc.poll() is None, proc.communicate()
    return proc


def _end(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def _samples(store: Path) -> list[float]:
    with Store.open(store, create=False) as s:
        return [x.t for x in read_samples(s, 0, 2e9)]


def _largest_gap(times: list[float]) -> float:
    return max((b - a for a, b in itertools.pairwise(times)), default=0.0)


def test_store_directory_deleted_is_said_and_recording_goes_on_in_a_new_one(
        tmp_path: Path) -> None:
    store = tmp_path / "store"
    proc = _start(store, "--duration", "7s", *CORES_ONLY)
    time.sleep(1.5)
    shutil.rmtree(store)
    deleted = time.time()
    err = _end(proc)
    assert proc.returncode == 1, err
    assert f"the store directory {store} was deleted while recording" in err, err
    assert "made the store directory again (0700); restarting on a fresh store" in err, err
    assert "data was lost" in err and "more before the store was started again" in err, err
    assert (store.stat().st_mode & 0o777) == 0o700
    # the new store holds what was recorded after the restart, to the end of the duration
    after = _samples(store)
    assert after and after[0] > deleted and after[-1] - after[0] > 1.0, after[:3]


def test_store_directory_moved_keeps_what_was_recorded_there(tmp_path: Path) -> None:
    store, aside = tmp_path / "store", tmp_path / "store.moved"
    proc = _start(store, "--duration", "6s", *CORES_ONLY)
    time.sleep(2.0)
    os.rename(store, aside)
    moved = time.time()
    err = _end(proc)
    assert proc.returncode == 1, err
    assert f"was moved to {aside} while recording" in err and "what was recorded is there" \
        in err, err
    before = _samples(aside)
    # every sample up to the move is in the moved store: no gap, from the start to the move
    assert before and before[-1] >= moved - 0.5 and _largest_gap(before) < 0.5, before[-3:]
    assert _samples(store), "recording did not go on in a fresh store"


@pytest.fixture
def chattr_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory on a filesystem where chattr +i works: tmp_path, or else a loop-mounted
    ext4 image made here (tmpfs before 6.0, overlayfs and others have no inode flags)."""
    need_tool("chattr")
    probe = tmp_path / "probe"
    probe.write_bytes(b"x")
    works = subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode == 0
    if works:
        subprocess.run(["chattr", "-i", str(probe)], check=True)
        probe.unlink()
        yield tmp_path
        return
    need_tool("mkfs.ext4")
    image, mnt = tmp_path / "ext4.img", tmp_path / "mnt"
    with image.open("wb") as f:
        f.truncate(32 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    mnt.mkdir()
    subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _chattr(sign: str, store: Path) -> None:
    files = [str(store / n) for n in STORE_FILES if (store / n).exists()]
    subprocess.run(["chattr", f"{sign}i", *files], check=True)


def test_immutable_store_files_degrade_without_sigbus(chattr_dir: Path) -> None:
    """Every store file immutable for a few seconds, written back to disk meanwhile (so the
    next write into a mapped page faults): the recorder says so, keeps going, resumes when
    the files are writable again and exits 1; nothing stored before is lost."""
    store = chattr_dir / "store"
    proc = _start(store, "--duration", "9s", "--no-profile", "--no-census", "--no-netdev")
    try:
        time.sleep(1.5)
        _chattr("+", store)
        frozen = time.time()
        os.sync()  # the dirty pages are written back: a write to a mapped one now faults
        time.sleep(4.0)
        assert proc.poll() is None, "the recorder died with the files immutable"
    finally:
        _chattr("-", store)
    err = _end(proc)
    assert proc.returncode == 1, (proc.returncode, err)  # -7 / 135 would be SIGBUS
    assert "is immutable (chattr); recording goes on" in err, err
    assert "writable again" in err, err
    times = _samples(store)
    # what was recorded before the files were frozen is all there
    assert times and times[0] < frozen - 1.0 and \
        _largest_gap([t for t in times if t < frozen]) < 0.5, times[:3]
    # and recording resumed after they were writable again
    assert times[-1] > frozen + 4.0


def _perf_of(store: Path) -> int | None:
    """The pid of the recorder's `perf record` writing into this store's ring."""
    prefix = f"{store}/profiles/chunk-".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if comm == "perf" and b"record" in argv and any(a.startswith(prefix) for a in argv):
            return int(pid)
    return None


def test_perf_killed_from_outside_is_a_loss(tmp_path: Path) -> None:
    need_tool("perf")
    store = tmp_path / "store"
    proc = _start(store, "--duration", "9s", "--profile-chunk", "5s", "--no-kmsg",
                  "--no-census", "--no-netdev", "--no-pressure")
    assert wait_for(lambda: profile_chunks(store), 15), "no first chunk"
    kept = profile_chunks(store)
    pid = _perf_of(store)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    err = _end(proc)
    assert proc.returncode == 1, err
    assert "perf record exited with code -9" in err, err
    assert "sensor profile: perf record died 1 time" in err and "data was lost" in err, err
    assert set(kept) <= set(profile_chunks(store))  # the chunk stored before the kill is kept


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m,mode=0700", "corescope-test",
                    str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt: Path) -> Path:
    filler = mnt / "filler"
    with filler.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def test_disk_full_mid_run_counts_exactly_and_shows_the_profile_degraded(
        small_fs: Path) -> None:
    """The disk fills while recording, for longer than a fold and a profile chunk: cores
    samples whose fold is refused wait in the journal and are stored once space is back
    (the report does not call them missing), the profile sensor is shown failing while its
    chunks cannot be stored, and the run exits 1."""
    need_tool("perf")
    store = small_fs / "store"
    proc = _start(store, "--duration", "11s", "--profile-chunk", "5s", "--no-kmsg",
                  "--no-census", "--no-netdev", "--no-pressure")
    try:
        time.sleep(1.0)
        _fill(small_fs)
        time.sleep(7.0)  # a fold (every 6 s at 0.1 s) and a chunk's end meet the full disk
    finally:
        (small_fs / "filler").unlink(missing_ok=True)
    err = _end(proc)
    assert proc.returncode == 1, err
    assert "sensor profile:" in err and "profile chunks cannot be stored" in err, err
    # (the cores sensor's folds may or may not meet the full disk: SQLite reuses its WAL)
    times = _samples(store)
    if "samples whose write failed are not in the store" not in err:
        # then none is missing: the series has no hole, from the start to the end
        assert _largest_gap(times) < 0.5, _largest_gap(times)
    assert times[-1] - times[0] > 8.0
