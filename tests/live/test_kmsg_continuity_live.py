"""Kernel log continuity on the real /dev/kmsg: `record` is stopped, restarted and killed
around lines written to the kernel log, and every line is stored exactly once; `record`
itself writes nothing to the kernel log unless asked (--kmsg-clock-check)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from corescope.sources.kmsg_reader import KmsgReader, open_kmsg
from corescope.store import events as store_events
from corescope.store.db import Store
from live.conftest import need_tool, recording_process
from support import cli_env, run_cli_json

RECORD = ("--no-profile", "--no-census", "--no-netdev")


def _write(text: str) -> None:
    # a fresh descriptor per line: the kernel rate-limits writes per open file
    fd = os.open("/dev/kmsg", os.O_WRONLY)
    try:
        os.write(fd, f"<6>{text}\n".encode())
    finally:
        os.close(fd)


def _ring() -> list:
    fd = open_kmsg(from_end=False)
    try:
        return KmsgReader(lambda n: os.read(fd, n)).read_available(max_records=1_000_000)
    finally:
        os.close(fd)


def _stored(store: Path) -> list:
    with Store.open(store, create=False) as s:
        return store_events.read_events(s, 0, 2e10)


def test_every_line_stored_exactly_once_across_restarts_and_a_kill(tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:12]
    store = tmp_path / "store"
    written: list[str] = []

    def write(phase: str, n: int = 4) -> None:
        for i in range(n):
            line = f"corescope-test continuity {run} {phase} {i}"
            _write(line)
            written.append(line)

    write("before-first-start")  # the first start imports what the ring holds
    with recording_process(store, *RECORD):
        write("while-recording-1")
        time.sleep(0.5)
    write("restart-gap")  # nobody reads: the restart resumes after the last stored record
    with recording_process(store, *RECORD) as rec:
        write("while-recording-2")
        time.sleep(1.0)  # streamed and committed before the kill
        rec.proc.send_signal(signal.SIGKILL)
        rec.proc.wait(timeout=10)
        write("after-kill")  # written before the killed recorder's successor starts
    with recording_process(store, *RECORD):
        write("while-recording-3")
        time.sleep(0.5)

    ours = Counter(e.raw for e in _stored(store) if run in e.raw)
    assert set(ours) == set(written), sorted(set(written) - set(ours))
    assert all(n == 1 for n in ours.values()), [k for k, n in ours.items() if n > 1]

    # not only ours: every record the ring holds from our first line to our last is stored
    # once (other writers' lines in between too; later ones are outside the test's window)
    ring = _ring()
    first = next(r.seq for r in ring if written[0] in r.message)
    last = next(r.seq for r in ring if written[-1] in r.message)
    held = {r.seq for r in ring if first <= r.seq <= last}
    stored = Counter(e.seq for e in _stored(store) if e.seq is not None
                     and first <= e.seq <= last)
    assert held == set(stored) and max(stored.values()) == 1

    out = run_cli_json("events", "--json", "--all", "--store", str(store), "--since", "10m")
    assert out["lost_records"] == 0
    assert sum(1 for e in out["events"] if run in e["raw"]) == len(written)


def _kmsg_writes(tmp_path: Path, name: str, *options: str) -> list[str]:
    """Run `record` briefly under strace; the opens of /dev/kmsg for writing it made."""
    strace = need_tool("strace")
    log = tmp_path / f"{name}.strace"
    proc = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=open,openat", "-o", str(log), sys.executable, "-m",
         "corescope", "record", "--store", str(tmp_path / name), *RECORD, "--duration", "3s",
         *options], env=cli_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    opens = [ln for ln in log.read_text().splitlines() if '"/dev/kmsg"' in ln]
    assert opens, "strace saw no open of /dev/kmsg at all: the check would prove nothing"
    return [ln for ln in opens if "O_WRONLY" in ln or "O_RDWR" in ln]


def test_record_writes_nothing_to_the_kernel_log_unless_asked(tmp_path: Path) -> None:
    assert _kmsg_writes(tmp_path, "plain") == []
    # the opt-in clock check writes exactly one marker (one open for writing)
    assert len(_kmsg_writes(tmp_path, "checked", "--kmsg-clock-check")) == 1
    with Store.open(tmp_path / "checked", create=False) as s:
        rows = s.query("SELECT method FROM kmsg_log WHERE what = 'anchor'")
    assert ("marker",) in rows
