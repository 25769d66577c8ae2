"""The recorder's schedule under faults: a sensor whose start raises is retried until it
starts; a sensor whose ticks fail is retried every tick; both outages are reported as losses
with their span, and a clean run reports none. (Sensors here are scripted: the recorder's
bookkeeping is under test; the real full disk is tests/live/test_disk_full_live.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from corescope import recorder
from corescope.model.common import SensorStatus
from corescope.recorder import Recorder
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors.base import RecordOptions, Sensor, SensorEnv
from corescope.store.db import Store


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
