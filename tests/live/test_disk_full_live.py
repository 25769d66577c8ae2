"""A full disk when `record` starts, on a real (small tmpfs) filesystem: the sensors keep
retrying, the kernel log lines read meanwhile are stored once space is back, `record` says
what was lost and exits 1."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import popen_cli, run_cli, run_cli_json


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "corescope-test", str(mnt)],
                   check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(mnt: Path, leave: int) -> Path:
    """Fill the filesystem, then give back `leave` bytes."""
    filler = mnt / "filler"
    block = b"\0" * 65536
    with filler.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def _write_kmsg(text: str) -> None:
    fd = os.open("/dev/kmsg", os.O_WRONLY)
    try:
        os.write(fd, f"<6>{text}\n".encode())
    finally:
        os.close(fd)


def _stored(store: Path, since: float, needle: str) -> list[str]:
    out = run_cli_json("events", "--json", "--all", "--store", str(store), "--since",
                       f"{since:.3f}")
    return [e["raw"] for e in out["events"] if needle in e["raw"]]


def test_full_disk_at_start_is_retried_reported_and_exits_1(small_fs: Path) -> None:
    store = small_fs / "store"
    run_cli("record", "--store", str(store), "--duration", "1s", "--no-profile", "--no-census",
            "--no-netdev", "--no-kmsg", check=True)  # the store exists; then the disk fills
    filler = _fill(small_fs, leave=48 * 1024)
    run = uuid.uuid4().hex[:12]
    t0 = time.time()
    rec = popen_cli("record", "--store", str(store), "--interval", "0.2s", "--no-profile",
                    "--no-census", "--no-netdev")
    try:
        time.sleep(3.0)
        assert rec.poll() is None, rec.communicate()
        _write_kmsg(f"corescope-test disk-full {run} while-full")
        time.sleep(3.0)  # ticks fail against the full disk
        filler.unlink()
        _write_kmsg(f"corescope-test disk-full {run} after-space-freed")
        deadline = time.monotonic() + 30
        while len(got := _stored(store, t0 - 60, run)) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        rec.send_signal(signal.SIGTERM)
        _, err = rec.communicate(timeout=30)
    # the kernel-log sensor stayed on: both lines stored once, the one read while full too
    assert sorted(got) == sorted(f"corescope-test disk-full {run} {p}"
                                 for p in ("while-full", "after-space-freed")), err
    # record said what was lost, and when, and exited 1
    assert rec.returncode == 1, err
    # the cores sensor either starts and its ticks fail, or (its journal needs room to be
    # made) it fails to start with the reason and is retried until it starts
    assert "sensor cores" in err and ("ticks failed" in err or (
        "started" in err and "late" in err and "No space left" in err)), err
    assert "data was lost" in err
    # per-core samples resumed once space was back
    cores = run_cli_json("cores", "--store", str(store), "--last", "1m", "--json")
    assert cores["cpus"], cores
