"""Files kept open and re-read with pread (rootfs.KeptFile): each read sees the file as it is
now, a large file is read whole, and what read_capped refuses is refused."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pytest

from corescope.rootfs import KeptFile


def test_each_read_sees_the_file_now(tmp_path: Path) -> None:
    f = tmp_path / "cgroups"
    f.write_text("memory\t4\t23\t1\n")
    kept = KeptFile(f)
    try:
        assert kept.read() == b"memory\t4\t23\t1\n"
        f.write_text("memory\t4\t24\t1\n")  # rewritten in place, as the kernel regenerates it
        assert kept.read() == b"memory\t4\t24\t1\n"
        big = b"x" * 70_000  # more than one first-size read: grows until one read holds it
        f.write_bytes(big)
        assert kept.read() == big
        f.write_bytes(b"")
        assert kept.read() == b""
    finally:
        kept.close()
    kept.close()  # twice is harmless


def test_limit_and_refusals(tmp_path: Path) -> None:
    f = tmp_path / "big"
    f.write_bytes(b"1" * 100)
    kept = KeptFile(f, limit=100)
    assert kept.read() == b"1" * 100
    f.write_bytes(b"1" * 101)
    with pytest.raises(OSError) as exc:
        kept.read()
    assert exc.value.errno == errno.EFBIG
    kept.close()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="FIFO"):
        KeptFile(fifo)  # never waits for a writer, never reads a pipe as a counter file
    with pytest.raises(OSError, match="directory"):
        KeptFile(tmp_path)
    with pytest.raises(FileNotFoundError):
        KeptFile(tmp_path / "missing")


def test_live_proc_file_is_regenerated() -> None:
    # /proc/uptime moves every 10 ms: a kept fd re-read from offset 0 sees it move
    kept = KeptFile("/proc/uptime")
    try:
        first = later = float(kept.read().split()[0])
        for _ in range(100):
            time.sleep(0.02)
            later = float(kept.read().split()[0])
            if later > first:
                break
        assert later > first
    finally:
        kept.close()
