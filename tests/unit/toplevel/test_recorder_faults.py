"""The recorder's schedule under faults: a sensor whose start raises is retried until it
starts; a sensor whose ticks fail is retried every tick; both outages are reported as losses
with their span, and a clean run reports none. (Sensors here are scripted: the recorder's
bookkeeping is under test; the real full disk is tests/live/test_disk_full_live.py.) The
real cores sensor under a store that refuses writes (SQLite's own query_only refusal) or is
removed, moved or replaced while it records: the losses are counted exactly, the store's
disappearance stops the run (the rest, with chattr, perf and a full tmpfs, is
tests/live/test_record_faults_live.py)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from corescope import recorder
from corescope.model.common import SensorStatus
from corescope.model.cores import CoreSample
from corescope.recorder import Recorder
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors.base import RecordOptions, Sensor, SensorEnv, Tap
from corescope.sensors.cores import CoresSensor
from corescope.store.db import Store
from corescope.store.journal import JournalWriter
from corescope.store.series import read_samples
from corescope.store.watch import DB_GONE, GONE, REPLACED


class Scripted(Sensor):
    def __init__(self, env: SensorEnv, name: str, open_failures: int = 0,
                 failing_ticks: range = range(0)) -> None:
        super().__init__(env)
        self.name = name
        self.interval_s = 0.05
        self.open_failures = open_failures
        self.failing_ticks = failing_ticks
        self.opens = self.ticks = 0

    def open(self, store: Store) -> SensorStatus:
        self.opens += 1
        if self.opens <= self.open_failures:
            raise OSError(28, "No space left on device")
        return SensorStatus(self.name, True, "ok")

    def tick(self, wall: float, mono: float) -> None:
        self.ticks += 1
        if self.ticks in self.failing_ticks:
            raise OSError(28, "database or disk is full")


@pytest.fixture
def env(tmp_path: Path) -> SensorEnv:
    return SensorEnv(Root(), Runner(), tmp_path, RecordOptions())


def test_a_start_that_raises_is_retried_and_reported(env: SensorEnv, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recorder, "RETRY_START_S", 0.1)
    late = Scripted(env, "late", open_failures=2)
    steady = Scripted(env, "steady")
    logs: list[str] = []
    with Store.open(tmp_path / "s") as store:
        rec = Recorder(env, store, [late, steady], log=logs.append)
        statuses = rec.open()
        assert [s.ok for s in statuses] == [False, True] and rec.retrying == ["late"]
        rec.run(0.6)
    assert late.opens == 3 and late.ticks > 0
    assert len(rec.losses) == 1 and "sensor late started" in rec.losses[0]
    assert "2 failed starts" in rec.losses[0] and "No space left" in rec.losses[0]


def test_failing_ticks_are_one_outage_with_a_span(env: SensorEnv, tmp_path: Path) -> None:
    flaky = Scripted(env, "flaky", failing_ticks=range(2, 6))
    logs: list[str] = []
    with Store.open(tmp_path / "s") as store:
        rec = Recorder(env, store, [flaky], log=logs.append)
        rec.open()
        rec.run(0.5)
    assert len(rec.losses) == 1, rec.losses
    assert "sensor flaky: 4 ticks failed from " in rec.losses[0] and " to " in rec.losses[0]
    assert sum("failed: " in m for m in logs) == 1  # said once when it began, not per tick


def test_a_sensor_still_failing_at_the_end_and_one_never_started(
        env: SensorEnv, tmp_path: Path) -> None:
    broken = Scripted(env, "broken", failing_ticks=range(1, 10_000))
    never = Scripted(env, "never", open_failures=10_000)
    with Store.open(tmp_path / "s") as store:
        rec = Recorder(env, store, [broken, never], log=lambda m: None)
        rec.open()
        rec.run(0.3)
    assert any("sensor broken:" in m and "to the end" in m for m in rec.losses), rec.losses
    assert any("sensor never never started" in m for m in rec.losses), rec.losses


def test_a_clean_run_loses_nothing(env: SensorEnv, tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        rec = Recorder(env, store, [Scripted(env, "fine")], log=lambda m: None)
        rec.open()
        rec.run(0.3)
    assert rec.losses == []


def test_the_stop_event_wakes_a_sleeping_recorder_at_once() -> None:
    """The loop sleeps in one poll() until the next tick; set() from another thread (or a
    signal handler) must end that sleep, and clear() must not leave it woken for good."""
    import threading

    ev = recorder.StopEvent()
    try:
        assert ev.wait(0.01) is False
        woke: list[bool] = []
        sleeper = threading.Thread(target=lambda: woke.append(ev.wait(3600.0)), daemon=True)
        sleeper.start()
        ev.set()
        sleeper.join(20.0)  # an hour's sleep that set() did not end would still be running
        assert not sleeper.is_alive() and woke == [True]
        ev.clear()
        assert ev.wait(0.01) is False
    finally:
        ev.close()
    ev.set()  # after close: still a flag, no write to a closed descriptor
    assert ev.wait(0) is True


# --- the store under the recorder: refused writes counted exactly, the store gone ------------

class Fault(Sensor):
    """Does `action(store_dir)` at tick `at` and `undo` at tick `until`: a real refusal or
    removal, made between the recorder's real sensors' ticks."""

    def __init__(self, env: SensorEnv, at: int, action, until: int = 0,  # type: ignore[no-untyped-def]
                 undo=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(env)
        self.name = "fault"
        self.interval_s = 0.05
        self.at, self.action, self.until, self.undo = at, action, until, undo
        self.ticks = 0

    def open(self, store: Store) -> SensorStatus:
        self.store = store
        return SensorStatus(self.name, True, "ok")

    def tick(self, wall: float, mono: float) -> None:
        self.ticks += 1
        if self.ticks == self.at:
            self.action(self.store)
        elif self.ticks == self.until and self.undo is not None:
            self.undo(self.store)


class Taken(Tap):
    """Every per-core sample the cores sensor made, as handed to the live metrics."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def cores(self, sample: CoreSample) -> None:
        self.times.append(sample.t)


def _refuse(store: Store) -> None:
    store.conn.execute("PRAGMA query_only = 1")  # SQLite refuses every write from now on


def _accept(store: Store) -> None:
    store.conn.execute("PRAGMA query_only = 0")


def _cores(tmp_path: Path, tap: Tap, interval: float = 0.05) -> tuple[SensorEnv, CoresSensor]:
    env = SensorEnv(Root(), Runner(), tmp_path / "s", RecordOptions(interval_s=interval),
                    tap=tap)
    return env, CoresSensor(env)


def _stored_times(directory: Path) -> list[float]:
    with Store.open(directory, create=False) as store:
        return [s.t for s in read_samples(store, 0, 2e9)]


def _missing(taken: list[float], directory: Path) -> int:
    """Samples taken that the store does not hold (block times are kept to the µs)."""
    stored = sorted(_stored_times(directory))
    return sum(1 for t in taken if not any(abs(t - u) < 1e-3 for u in stored))


def test_failed_folds_of_journalled_samples_lose_nothing(tmp_path: Path) -> None:
    """Issue 23 item 19: the store refuses writes for a while; the cores ticks fail (the
    minute's fold is refused) but every row is in the journal and is folded once writes are
    accepted again: the end report must not call those samples missing."""
    taken = Taken()
    env, cores = _cores(tmp_path, taken)
    with Store.open(tmp_path / "s") as store:
        rec = Recorder(env, store, [cores, Fault(env, 8, _refuse, 16, _accept)],
                       log=lambda m: None)
        rec.open()
        assert cores._writer is not None
        cores._writer.block_samples = 4  # a fold every 4 samples: several refused ones
        rec.run(1.2)
    assert taken.times and _missing(taken.times, tmp_path / "s") == 0
    assert not any("cores" in m for m in rec.losses), rec.losses
    # the outage is still said, as a delay
    assert any("sensor cores:" in m and "ticks failed" in m for m in rec.faults), rec.faults


def test_samples_the_store_refused_are_counted_exactly(tmp_path: Path) -> None:
    """Without a journal (another recorder holds it) each sample is its own commit: the ones
    refused are lost, and the report says exactly how many, as the store shows."""
    taken = Taken()
    env, cores = _cores(tmp_path, taken)
    (tmp_path / "s").mkdir(mode=0o700)
    other = JournalWriter.lock(tmp_path / "s")
    try:
        with Store.open(tmp_path / "s") as store:
            rec = Recorder(env, store, [cores, Fault(env, 6, _refuse, 14, _accept)],
                           log=lambda m: None)
            rec.open()
            rec.run(1.0)
    finally:
        other.close()
    missing = _missing(taken.times, tmp_path / "s")
    assert missing > 0
    lines = [m for m in rec.losses if m.startswith("sensor cores: ")]
    assert len(lines) == 1 and f"{missing} of the {missing} samples whose write failed are " \
        "not in the store" in lines[0], (missing, rec.losses)


def test_a_journal_that_cannot_be_written_falls_back_to_sqlite(tmp_path: Path) -> None:
    """The journal's write fails (here: its descriptor is swapped for a read-only one, so
    the real pwrite fails with EBADF, as an immutable file's fails with EPERM): the rows go
    to SQLite, nothing is lost, and it is said once."""
    taken = Taken()
    env, cores = _cores(tmp_path, taken)
    with Store.open(tmp_path / "s") as store:
        rec = Recorder(env, store, [cores], log=lambda m: None)
        rec.open()
        assert cores._writer is not None and cores._writer._journal is not None
        j = cores._writer._journal
        ro = os.open(j.path, os.O_RDONLY)
        os.dup2(ro, j._fd)
        os.close(ro)
        rec.run(0.5)
    assert rec.losses == [] and taken.times
    assert _missing(taken.times, tmp_path / "s") == 0
    assert cores._writer is None  # closed
    assert j.fault is not None


def _watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, action) -> Recorder:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(recorder, "STORE_CHECK_S", 0.1)
    env, cores = _cores(tmp_path, Tap())
    logs: list[str] = []
    with Store.open(tmp_path / "s") as store:
        rec = Recorder(env, store, [cores, Fault(env, 4, action)], log=logs.append)
        rec.open()
        t0 = time.monotonic()
        rec.run(30.0)
        assert time.monotonic() - t0 < 20, "the recorder did not stop"
    return rec


def test_a_deleted_store_directory_stops_the_run_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23 item 6: `rm -rf` of the store while recording."""
    rec = _watched(tmp_path, monkeypatch, lambda s: shutil.rmtree(s.directory))
    assert rec.store_lost is not None and rec.store_lost.kind == GONE
    assert any("was deleted while recording" in m and "gone with it" in m
               for m in rec.losses), rec.losses


def test_a_moved_store_directory_is_named_and_keeps_what_was_recorded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = _watched(tmp_path, monkeypatch, lambda s: os.rename(s.directory, tmp_path / "old"))
    assert rec.store_lost is not None and rec.store_lost.kind == GONE
    assert rec.store_lost.moved_to == str(tmp_path / "old")
    assert any(f"moved to {tmp_path / 'old'}" in m for m in rec.faults), rec.faults
    assert _stored_times(tmp_path / "old")  # the samples are there, folded at the close


def test_a_replaced_store_directory_or_database_is_noticed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def replace(s: Store) -> None:
        os.rename(s.directory, tmp_path / "old")
        os.mkdir(s.directory, 0o700)

    rec = _watched(tmp_path, monkeypatch, replace)
    assert rec.store_lost is not None and rec.store_lost.kind == REPLACED
    rec = _watched(tmp_path / "b", monkeypatch,
                   lambda s: os.unlink(s.directory / "corescope.db"))
    assert rec.store_lost is not None and rec.store_lost.kind == DB_GONE


def test_the_default_log_escapes_what_the_node_named(env: SensorEnv, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A sensor failure's text carries names from the node (an interface, a unit, a cgroup
    path): printed raw, `\\x1b]0;...\\x07` would retitle the operator's terminal and a newline
    would forge a line. The recorder's own log (what `record` prints) escapes them."""

    class Hostile(Scripted):
        def tick(self, wall: float, mono: float) -> None:
            raise OSError(5, "read /sys/class/net/eth0\x1b]0;pwned\x07\ncorescope record: ok")

    with Store.open(tmp_path / "s") as store:
        rec = Recorder(env, store, [Hostile(env, "nic")])
        rec.open()
        rec.run(0.2)
    err = capsys.readouterr().err
    assert "sensor nic failed" in err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;pwned\\x07" in err
    assert "\ncorescope record: ok" not in err and "\\ncorescope record: ok" in err
