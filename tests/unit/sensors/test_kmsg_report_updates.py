"""A report whose further lines the recorder reads in a later batch: the head it stored first
gets the fields those lines carry (the queue of an Intel TX hang's `Tx Queue <2>` line, the
line count, an OOM kill's victim). Records in /dev/kmsg's format (`level,seq,usec,-;text`),
each line of the report its own record as the console prints them."""

from __future__ import annotations

import errno
from pathlib import Path

from corescope.analysis.classify import classify_record
from corescope.analysis.reports import ReportJoiner
from corescope.model.events import KmsgRecord
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sensors.kmsg import KmsgSensor
from corescope.sources.kmsg_clock import ClockAnchor
from corescope.sources.kmsg_reader import KmsgReader
from corescope.store import events as store_events
from corescope.store.db import Store

# intel/igb/igb_main.c igb_clean_tx_irq, each dump line a record of its own
_HANG = ["igb 0000:01:00.0 eth0: Detected Tx Unit Hang",
         "  Tx Queue             <2>",
         "  TDH                  <c6>",
         "  TDT                  <c6>"]
# mm/oom_kill.c (4.x): the choice, then the victim
_OOM = ["Out of memory: Kill process 4711 (java) score 905 or sacrifice child",
        "Killed process 4712 (sh) total-vm:106064kB, anon-rss:180kB, file-rss:4kB, "
        "shmem-rss:0kB"]


def _events(lines: list[str], seq0: int) -> list:  # type: ignore[type-arg]
    return [classify_record(KmsgRecord(m, 5_000_000 + i, seq0 + i, 4), 100.0 + i * 1e-3)
            for i, m in enumerate(lines)]


def test_the_joiner_returns_the_grown_head_once() -> None:
    j = ReportJoiner()
    (head,) = j.feed(_events(_HANG[:1], 1))
    assert "queue" not in head.fields and j.take_updates() == []
    rest = j.feed(_events(_HANG[1:], 2))
    assert [e.fields for e in rest] == [{"part_of": "nic_tx_stall"}] * 3
    (grown,) = j.take_updates()
    assert (grown.seq, grown.fields["queue"], grown.fields["lines"]) == (1, 2, 4)
    assert j.take_updates() == []


def test_a_split_oom_kill_names_the_victim_on_the_stored_head() -> None:
    j = ReportJoiner()
    j.feed(_events(_OOM[:1], 1))
    j.feed(_events(_OOM[1:], 2))
    (grown,) = j.take_updates()
    assert (grown.fields["pid"], grown.fields["comm"], grown.fields["selected_pid"]) == \
        (4712, "sh", 4711)


def test_the_recorder_rewrites_the_stored_head(tmp_path: Path) -> None:
    script: list[bytes] = []

    def read(n: int) -> bytes:
        if not script:
            raise BlockingIOError(errno.EAGAIN, "EAGAIN")
        return script.pop(0)

    def kmsg(seq: int, text: str) -> bytes:
        return f"4,{seq},{5_000_000 + seq},-;{text}\n".encode()

    with Store.open(tmp_path / "s") as store:
        sensor = KmsgSensor(SensorEnv(Root(), Runner(), tmp_path, RecordOptions()))
        sensor._store = store
        sensor.boot_id = "boot"
        sensor._reader = KmsgReader(read)
        sensor.anchor = ClockAnchor(offset_s=1000.0, error_s=0, method="monotonic",
                                    taken_wall=0)
        script.append(kmsg(1, _HANG[0]))
        assert [e.kind for e in sensor.drain()] == ["nic_tx_stall"]
        script.extend(kmsg(2 + i, m) for i, m in enumerate(_HANG[1:]))
        assert [e.kind for e in sensor.drain()] == ["other"] * 3
        evs = store_events.read_events(store, 0, 2e10)
        assert [e.seq for e in evs] == [1, 2, 3, 4]
        head = evs[0]
        assert (head.kind, head.fields["queue"], head.fields["lines"]) == ("nic_tx_stall", 2, 4)
        assert all(e.fields == {"part_of": "nic_tx_stall"} for e in evs[1:])
