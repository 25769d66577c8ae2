"""The agent: runs every sensor on one monotonic schedule and feeds the store.

Sensors come from the modules in `sensors.SENSOR_MODULES`. A sensor that cannot run (a
missing capability) is left out with a message. A sensor whose start fails (it raised: a full
disk, say) is retried every few seconds; a sensor whose tick fails is reported once and
retried every tick, never allowed to stop the others. Either way the recorder keeps account
of what was lost (which sensor, how many ticks, from when to when) in `losses`, and of
faults that only delayed data in `faults`, so `record` can say so and exit non-zero.
Every few seconds it checks that the store it opened is still the one at its path and
writable (store/watch.py): a store deleted, moved or replaced stops the run (`store_lost`),
since whatever is written after that is written where nobody reads; files made immutable or
a read-only filesystem are said when they begin and end, and the sensors' failed writes are
counted as usual. Retention runs every minute so the store never grows without bound.
"""

from __future__ import annotations

import contextlib
import heapq
import importlib
import itertools
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from corescope.model.common import SensorStatus
from corescope.protect import MemoryGuard
from corescope.sensors import SENSOR_MODULES
from corescope.sensors.base import Sensor, SensorEnv
from corescope.store import retention
from corescope.store.db import Store, is_corruption
from corescope.store.watch import UNWRITABLE, StoreProblem, StoreWatch
from corescope.textsafe import clean
from corescope.timeparse import format_duration, iso

RETENTION_EVERY_S = 60.0
RETRY_START_S = 5.0
STORE_CHECK_S = 2.0  # a few system calls: see store/watch.py


@dataclass
class _Outage:
    """A sensor failing since `since` (wall): how many ticks or starts failed, and why."""

    since: float
    failed: int
    error: str


class StopEvent(threading.Event):
    """The recorder's stop flag, which its loop sleeps on between ticks. `wait` is one poll()
    on a pipe that `set` writes (from a signal handler or another thread): threading.Event's
    wait allocates a lock and takes two more each call, which at 1 Hz is a tenth of the
    agent's own cost."""

    def __init__(self) -> None:
        super().__init__()
        self._rfd, self._wfd = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._poller = select.poll()
        self._poller.register(self._rfd, select.POLLIN)

    def set(self) -> None:
        super().set()
        if self._wfd >= 0:
            with contextlib.suppress(OSError):  # full: a wake-up is already pending
                os.write(self._wfd, b"x")

    def clear(self) -> None:
        super().clear()
        with contextlib.suppress(OSError):  # empty: nothing was pending
            while self._rfd >= 0 and os.read(self._rfd, 512):
                pass

    def wait(self, timeout: float | None = None) -> bool:
        if self.is_set() or self._rfd < 0:
            return super().wait(timeout)
        # milliseconds, rounded up by poll(): never wakes before the tick is due
        self._poller.poll(None if timeout is None else max(0.0, timeout) * 1000.0)
        return self.is_set()

    def close(self) -> None:
        fds = (self._rfd, self._wfd)
        self._rfd = self._wfd = -1
        for fd in fds:
            if fd >= 0:
                os.close(fd)


def build_sensors(env: SensorEnv) -> list[Sensor]:
    sensors: list[Sensor] = []
    for name in SENSOR_MODULES:
        sensors.extend(importlib.import_module(name).build(env))
    return sensors


class Recorder:
    def __init__(self, env: SensorEnv, store: Store, sensors: list[Sensor],
                 log: Callable[[str], None] | None = None,
                 guard: MemoryGuard | None = None) -> None:
        self.env = env
        self.store = store
        self.sensors = sensors
        # exception texts and sensor details carry names from the node (NIC, unit, cgroup):
        # escaped, so none can write to the operator's terminal
        self.log = log or (lambda msg: print(clean(msg), file=sys.stderr, flush=True))
        self.stop_event = StopEvent()
        self.statuses: list[SensorStatus] = []
        self.guard = guard
        self.losses: list[str] = []  # what the run lost, one sentence each
        self.faults: list[str] = []  # what went wrong without losing data (it was delayed)
        self._outages: dict[str, _Outage] = {}
        self._retry: list[Sensor] = []  # sensors whose start failed: retried
        self._order = itertools.count()
        # set when SQLite reports the store damaged: the run stops so the caller can move the
        # store aside and start again on a fresh one
        self.store_corrupt: str | None = None
        # set when the store at its path is no longer the one opened: the run stops
        self.store_lost: StoreProblem | None = None
        self._watch: StoreWatch | None = None
        self._store_ok_at = time.time()
        self._unwritable: tuple[float, str] | None = None  # since when, and why
        self._started_wall = time.time()

    def open(self) -> list[SensorStatus]:
        try:
            self._watch = StoreWatch(self.store.directory)
        except OSError as exc:  # not fatal: the store opened, only its watch is missing
            self.log(f"corescope record: cannot watch the store directory: {exc}")
        active: list[Sensor] = []
        for sensor in self.sensors:
            try:
                status = sensor.open(self.store)
            except Exception as exc:  # a passing fault: retried from run()
                self._close_quietly(sensor)
                self._retry.append(sensor)
                self._outages[sensor.name] = _Outage(time.time(), 1, str(exc))
                status = SensorStatus(sensor.name, False, f"failed to start: {exc} (retrying "
                                      f"every {RETRY_START_S:g}s)")
            else:
                if status.ok:
                    active.append(sensor)
                else:
                    sensor.close()
            self.statuses.append(status)
        self.sensors = active
        return self.statuses

    def sensor_health(self) -> dict[str, bool]:
        """Each sensor asked for: up (started, and its last tick succeeded) or not."""
        running = {s.name for s in self.sensors}
        return {s.name: s.name in running and s.name not in self._outages
                for s in self.statuses}

    @property
    def retrying(self) -> list[str]:
        return [s.name for s in self._retry]

    def install_signal_handlers(self) -> None:
        def _stop(signum: int, _frame: object) -> None:
            self.stop_event.set()

        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _stop)

    def run(self, duration_s: float | None = None) -> None:
        start = time.monotonic()
        self._started_wall = self._store_ok_at = time.time()
        deadline = start + duration_s if duration_s else None
        for s in self.sensors:
            s.start_clock(start)
        # (due time, order, sensor): order breaks ties so sensors never compare
        queue = [(start + s.interval_s, next(self._order), s) for s in self.sensors]
        heapq.heapify(queue)
        next_retention = start + RETENTION_EVERY_S
        next_retry = start + RETRY_START_S
        next_check = start + STORE_CHECK_S
        try:
            while not self.stop_event.is_set():
                due = queue[0][0] if queue else start + 3600
                if self._retry:
                    due = min(due, next_retry)
                if deadline is not None and due > deadline:
                    self.stop_event.wait(max(0.0, deadline - time.monotonic()))
                    break
                wait = due - time.monotonic()
                if wait > 0 and self.stop_event.wait(wait):
                    break
                if self._retry and time.monotonic() >= next_retry:
                    self._retry_starts(queue)
                    next_retry = time.monotonic() + RETRY_START_S
                    continue
                due, order, sensor = heapq.heappop(queue)
                self._tick(sensor, time.time(), time.monotonic())
                # schedule on the grid, skipping missed slots rather than bursting
                nxt = due + sensor.interval_s
                now = time.monotonic()
                if nxt <= now:
                    nxt = due + sensor.interval_s * (1 + int((now - due) // sensor.interval_s))
                heapq.heappush(queue, (nxt, order, sensor))
                if now >= next_check:
                    self._check_store()
                    next_check = now + STORE_CHECK_S
                if now >= next_retention:
                    self._retention()
                    self._check_memory()
                    next_retention = now + RETENTION_EVERY_S
        finally:
            self.close()

    def _retry_starts(self, queue: list[tuple[float, int, Sensor]]) -> None:
        for sensor in list(self._retry):
            outage = self._outages[sensor.name]
            try:
                status = sensor.open(self.store)
            except Exception as exc:
                self._close_quietly(sensor)
                outage.failed += 1
                outage.error = str(exc)
                continue
            self._retry.remove(sensor)
            del self._outages[sensor.name]
            now = time.time()
            if not status.ok:
                sensor.close()
                self._lost(f"sensor {sensor.name} never started: {outage.error}; then: "
                           f"{status.detail}")
                continue
            self._lost(f"sensor {sensor.name} started {format_duration(now - outage.since)} "
                       f"late ({outage.failed} failed starts, {iso(outage.since)} to "
                       f"{iso(now)}: {outage.error}); nothing it measures was recorded then")
            self.sensors.append(sensor)
            mono = time.monotonic()
            sensor.start_clock(mono)
            heapq.heappush(queue, (mono + sensor.interval_s, next(self._order), sensor))

    def _check_store(self, closing: bool = False) -> None:
        """With `closing`, a lost store is said but not kept in `store_lost` (which makes
        `record` start again on a fresh store): the run is over anyway."""
        if self._watch is None or self.store_lost is not None:
            return
        now = time.time()
        problem = self._watch.check()
        if problem is None or problem.kind == UNWRITABLE:
            self._unwritable_now(problem, now)
            if problem is None:
                self._store_ok_at = now
            return
        since = f"in place at {iso(self._store_ok_at)}, noticed at {iso(now)}"
        then = "" if closing else "; stopping"
        if problem.moved_to is not None:
            # everything written until the sensors close lands in the moved directory
            self._fault(f"{problem.message} ({since}); what was recorded is there{then}")
        else:
            self._lost(f"{problem.message} ({since}); what was recorded into it since "
                       f"{iso(self._started_wall)} is gone with it{then}")
        if not closing:
            self.store_lost = problem
            self.stop_event.set()

    def _unwritable_now(self, problem: StoreProblem | None, now: float) -> None:
        """Say when the store becomes unwritable and when it is writable again (the
        sensors' own failures say what was lost meanwhile)."""
        if problem is not None and self._unwritable is None:
            self._unwritable = (now, problem.message)
            self.log(f"corescope record: {problem.message}; recording goes on, every write "
                     "the store refuses is counted")
        elif problem is None and self._unwritable is not None:
            since, why = self._unwritable
            self._unwritable = None
            self._fault(f"{why}, from {iso(since)} to {iso(now)} "
                        f"({format_duration(now - since)}); writable again")

    def _tick(self, sensor: Sensor, wall: float, mono: float) -> None:
        try:
            sensor.tick(wall, mono)
        except Exception as exc:
            if self._corrupt(exc):
                return
            outage = self._outages.get(sensor.name)
            if outage is None:
                self.log(f"corescope record: sensor {sensor.name} failed: {exc} (will retry)")
                outage = self._outages[sensor.name] = _Outage(wall, 0, "")
            outage.failed += 1
            outage.error = str(exc)
        else:
            outage = self._outages.pop(sensor.name, None)
            if outage is not None:
                self._outage_ended(sensor, outage, wall)

    def _outage_ended(self, sensor: Sensor, outage: _Outage, until: float | None) -> None:
        message = self._tick_loss(sensor, outage, until)
        if sensor.tick_failure_loses_data:
            self._lost(message)
        else:
            self._fault(message)

    @staticmethod
    def _tick_loss(sensor: Sensor, outage: _Outage, until: float | None) -> str:
        span = (f"from {iso(outage.since)} to {iso(until)} "
                f"({format_duration(until - outage.since)})" if until is not None
                else f"from {iso(outage.since)} to the end")
        what = ("what it measured then is missing" if sensor.tick_failure_loses_data
                else "its data was delayed; any that was lost is counted on its own line")
        return (f"sensor {sensor.name}: {outage.failed} ticks failed {span}: {outage.error}; "
                f"{what}")

    def _lost(self, message: str) -> None:
        self.losses.append(message)
        self.log(f"corescope record: {message}")

    def _fault(self, message: str) -> None:
        self.faults.append(message)
        self.log(f"corescope record: {message}")

    def _close_quietly(self, sensor: Sensor) -> None:
        try:
            sensor.close()
        except Exception as exc:
            if not self._corrupt(exc):
                self.log(f"corescope record: closing {sensor.name} failed: {exc}")

    def _check_memory(self) -> None:
        note = self.guard.check() if self.guard is not None else None
        if note:
            self.log(f"corescope record: {note}")

    def _retention(self) -> None:
        opts = self.env.options
        try:
            retention.enforce(self.store, time.time(), opts.retain_s, opts.max_bytes)
        except Exception as exc:
            if not self._corrupt(exc) and self._unwritable is None:
                self.log(f"corescope record: retention failed: {exc}")

    def _corrupt(self, exc: BaseException) -> bool:
        if not is_corruption(exc):
            return False
        if self.store_corrupt is None:
            self.store_corrupt = str(exc)
            self.log(f"corescope record: the store is corrupt ({exc}); stopping to move it "
                     "aside and record into a fresh store")
            self.stop_event.set()
        return True

    def close(self) -> None:
        for sensor in self.sensors:
            self._close_quietly(sensor)
        if self._watch is not None:
            if self.store_lost is None:
                self._check_store(closing=True)  # a fault since the last check is said too
            now = time.time()
            if self._unwritable is not None:
                since, why = self._unwritable
                self._fault(f"{why}, from {iso(since)} to the end "
                            f"({format_duration(now - since)})")
            self._watch.close()
            self._watch = None
        for sensor in self.sensors:
            outage = self._outages.pop(sensor.name, None)
            if outage is not None:
                self._outage_ended(sensor, outage, None)
            for loss in sensor.losses():
                self._lost(f"sensor {sensor.name}: {loss}")
        for sensor in self._retry:
            outage = self._outages.pop(sensor.name)
            self._lost(f"sensor {sensor.name} never started ({outage.failed} tries from "
                       f"{iso(outage.since)}): {outage.error}; nothing it measures was recorded")
        self._retry = []
        self.sensors = []  # close() runs once, even if called again
        if self.store_corrupt is None and self.store_lost is None:
            self._retention()
        self.stop_event.close()
