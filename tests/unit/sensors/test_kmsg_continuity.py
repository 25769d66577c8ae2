"""Kernel log continuity without a kernel: the reader resumes after a stored sequence number,
counts a restart gap as lost, and the store's cursor survives retention. (The live test in
tests/live/test_kmsg_continuity_live.py proves the same on the real /dev/kmsg.)"""

from __future__ import annotations

import errno
from pathlib import Path

from corescope.model.events import KernelEvent
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sensors.kmsg import KmsgSensor
from corescope.sources.kmsg_clock import ClockAnchor
from corescope.sources.kmsg_reader import KmsgReader
from corescope.store import events as store_events
from corescope.store.db import Store


def _rec(seq: int, msg: str = "x") -> bytes:
    return f"6,{seq},{seq * 1000},-;{msg} {seq}\n".encode()


def _reader(seqs: list[int], resume_after: int | None) -> KmsgReader:
    script: list[bytes] = [_rec(s) for s in seqs]

    def read(n: int) -> bytes:
        if not script:
            raise BlockingIOError(errno.EAGAIN, "EAGAIN")
        return script.pop(0)

    return KmsgReader(read, resume_after=resume_after)


def test_reader_skips_what_was_stored_and_counts_nothing_lost() -> None:
    reader = _reader(list(range(10, 31)), resume_after=20)
    got = reader.read_available()
    assert [r.seq for r in got] == list(range(21, 31))
    assert reader.skipped == 11 and reader.first_seq == 10
    assert reader.lost_records == 0 and reader.diagnostics == []


def test_reader_counts_a_restart_gap_as_lost() -> None:
    # stored through 20; the ring wrapped while the recorder was down: it now starts at 25
    reader = _reader([25, 26, 27], resume_after=20)
    assert [r.seq for r in reader.read_available()] == [25, 26, 27]
    assert reader.lost_records == 4  # 21..24


def test_first_start_counts_nothing_lost() -> None:
    reader = _reader([100, 101], resume_after=None)
    assert len(reader.read_available()) == 2
    assert reader.lost_records == 0 and reader.first_seq == 100


def _event(seq: int, t: float) -> KernelEvent:
    return KernelEvent(time=t, kind="other", raw=f"line {seq}", seq=seq, mono_usec=seq)


def test_cursor_moves_with_inserts_and_outlives_retention(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        assert store_events.resume_seq(store, "boot-a") is None
        store_events.insert_events(store, [_event(5, 100), _event(7, 101)], "boot-a")
        store_events.insert_events(store, [_event(3, 50)], "boot-b")
        assert store_events.resume_seq(store, "boot-a") == 7
        assert store_events.resume_seq(store, "boot-b") == 3
        # an older batch (read twice) never moves the cursor back
        store_events.insert_events(store, [_event(6, 100)], "boot-a")
        assert store_events.resume_seq(store, "boot-a") == 7
        # retention deletes the rows, not where reading stopped
        store_events.retain(store, 1e9)
        assert store_events.read_events(store, 0, 2e9) == []
        assert store_events.resume_seq(store, "boot-a") == 7
        # rows without seq (NIC counters) or without boot id do not touch cursors
        store_events.insert_events(store, [KernelEvent(time=1, kind="other", raw="c")])
        assert store_events.resume_seq(store, "boot-a") == 7


def test_resume_reads_stores_written_before_the_cursor_existed(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        store_events.insert_events(store, [_event(9, 100)], "boot-a")
        with store.write() as c:
            c.execute("DELETE FROM kmsg_cursor")
        assert store_events.resume_seq(store, "boot-a") == 9


def test_sensor_restart_gap_is_stored_as_loss(tmp_path: Path) -> None:
    """The sensor's batch step after a restart: only new records are stored, the gap is
    stored as loss and reported by losses()."""
    with Store.open(tmp_path / "s") as store:
        store_events.insert_events(store, [_event(s, 100 + s) for s in range(1, 21)], "boot")
        sensor = KmsgSensor(SensorEnv(Root(), Runner(), tmp_path, RecordOptions()))
        sensor._store = store
        sensor.boot_id = "boot"
        sensor._reader = _reader([25, 26], store_events.resume_seq(store, "boot"))
        sensor.anchor = ClockAnchor(offset_s=1000.0, error_s=0, method="monotonic",
                                    taken_wall=0)
        assert [e.seq for e in sensor.drain()] == [25, 26]
        assert store_events.lost_records(store, 0, 2e10) == 4
        assert store_events.resume_seq(store, "boot") == 26
        assert len(store_events.read_events(store, 0, 2e10)) == 22
        assert sensor.losses() == ["4 kernel log records left the ring before they were read"]


def test_default_options_never_write_the_kernel_log() -> None:
    assert RecordOptions().kmsg_clock_check is False
