"""The recorder's diagnosis thread (metrics.agent.diagnosis_gauge) reads kernel events
through store.events on its own connection: with the store's -shm made immutable (chattr
+i) and written back, that read must be the store's error, not a SIGBUS that kills the
recorder. Needs root (CAP_LINUX_IMMUTABLE) and a file system with inode flags."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from live.conftest import need_tool
from support import cli_env

# a writer (the recorder) and a reader that has read once; a commit moves the WAL on, so
# the reader's next snapshot must write its read mark into the mapped -shm
_CHILD = r"""
import os, subprocess, sys
from pathlib import Path
from corescope.store import events
from corescope.store.db import Store, StoreError
d = Path(sys.argv[1])
writer = Store.open(d)
with writer.write() as c:
    c.execute("CREATE TABLE filler (x)")
    c.executemany("INSERT INTO filler VALUES (?)", [(i,) for i in range(1000)])
reader = Store.open(d, create=False)
reader.query("SELECT count(*) FROM filler")
with writer.write() as c:
    c.execute("INSERT INTO filler VALUES (1)")
subprocess.run(["chattr", "+i", str(d / "corescope.db-shm")], check=True)
os.sync()  # the mapped pages are clean: a write into one now faults
read = {"read_events": lambda: events.read_events(reader, 0, 1e10),
        "read_focused": lambda: events.read_focused(reader, 0, 1e10, None)}[sys.argv[2]]
try:
    read()
    print(sys.argv[2], "read")
except StoreError as exc:
    print(sys.argv[2], "StoreError", exc)
# writable again before the connections close at exit (their close checkpoints into it)
subprocess.run(["chattr", "-i", str(d / "corescope.db-shm")], check=True)
"""


@pytest.mark.parametrize("reader", ["read_events", "read_focused"])
def test_event_reads_on_an_immutable_shm_are_an_error_not_sigbus(tmp_path: Path,
                                                                 reader: str) -> None:
    need_tool("chattr")
    probe = tmp_path / "probe"
    probe.write_bytes(b"x")
    if subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode != 0:
        pytest.fail(f"chattr +i does not work on {tmp_path}: run on a file system with "
                    "inode flags (ext4, xfs, btrfs)")
    subprocess.run(["chattr", "-i", str(probe)], check=True)
    store = tmp_path / "store"
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(store), reader], env=cli_env(),
                              capture_output=True, text=True, timeout=120)
    finally:
        subprocess.run(["chattr", "-i", str(store / "corescope.db-shm")], check=False,
                       capture_output=True)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])  # -7: SIGBUS
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith(reader + " "))
    assert "StoreError" in line and "immutable" in line, proc.stdout
