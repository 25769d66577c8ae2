"""The agent: runs every sensor on one monotonic schedule and feeds the store.

Sensors come from the modules in `sensors.SENSOR_MODULES`. A sensor that cannot run is left
out with a message; a sensor whose tick fails is reported once and retried, never allowed to
stop the others. Retention runs every minute so the store never grows without bound.
"""

from __future__ import annotations

import heapq
import importlib
import signal
import sys
import threading
import time
from collections.abc import Callable

from corescope.model.common import SensorStatus
from corescope.protect import MemoryGuard
from corescope.sensors import SENSOR_MODULES
from corescope.sensors.base import Sensor, SensorEnv
from corescope.store import retention
from corescope.store.db import Store

RETENTION_EVERY_S = 60.0


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
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.stop_event = threading.Event()
        self.statuses: list[SensorStatus] = []
        self._failing: set[str] = set()
        self.guard = guard

    def open(self) -> list[SensorStatus]:
        active: list[Sensor] = []
        for sensor in self.sensors:
            try:
                status = sensor.open(self.store)
            except Exception as exc:  # a broken sensor must not stop the recorder
                status = SensorStatus(sensor.name, False, f"failed to start: {exc}")
            self.statuses.append(status)
            if status.ok:
                active.append(sensor)
            else:
                sensor.close()
        self.sensors = active
        return self.statuses

    def sensor_health(self) -> dict[str, bool]:
        """Each sensor asked for: up (started, and its last tick succeeded) or not."""
        failing = set(self._failing)
        return {s.name: s.ok and s.name not in failing for s in self.statuses}

    def install_signal_handlers(self) -> None:
        def _stop(signum: int, _frame: object) -> None:
            self.stop_event.set()

        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _stop)

    def run(self, duration_s: float | None = None) -> None:
        start = time.monotonic()
        deadline = start + duration_s if duration_s else None
        for s in self.sensors:
            s.start_clock(start)
        # (due time, order, sensor): order breaks ties so sensors never compare
        queue = [(start + s.interval_s, i, s) for i, s in enumerate(self.sensors)]
        heapq.heapify(queue)
        next_retention = start + RETENTION_EVERY_S
        try:
            while not self.stop_event.is_set():
                due = queue[0][0] if queue else start + 3600
                if deadline is not None and due > deadline:
                    self.stop_event.wait(max(0.0, deadline - time.monotonic()))
                    break
                wait = due - time.monotonic()
                if wait > 0 and self.stop_event.wait(wait):
                    break
                due, order, sensor = heapq.heappop(queue)
                self._tick(sensor, time.time(), time.monotonic())
                # schedule on the grid, skipping missed slots rather than bursting
                nxt = due + sensor.interval_s
                now = time.monotonic()
                if nxt <= now:
                    nxt = due + sensor.interval_s * (1 + int((now - due) // sensor.interval_s))
                heapq.heappush(queue, (nxt, order, sensor))
                if now >= next_retention:
                    self._retention()
                    self._check_memory()
                    next_retention = now + RETENTION_EVERY_S
        finally:
            self.close()

    def _tick(self, sensor: Sensor, wall: float, mono: float) -> None:
        try:
            sensor.tick(wall, mono)
        except Exception as exc:
            if sensor.name not in self._failing:
                self.log(f"corescope record: sensor {sensor.name} failed: {exc} (will retry)")
                self._failing.add(sensor.name)
        else:
            self._failing.discard(sensor.name)

    def _check_memory(self) -> None:
        note = self.guard.check() if self.guard is not None else None
        if note:
            self.log(f"corescope record: {note}")

    def _retention(self) -> None:
        opts = self.env.options
        try:
            retention.enforce(self.store, time.time(), opts.retain_s, opts.max_bytes)
        except Exception as exc:
            self.log(f"corescope record: retention failed: {exc}")

    def close(self) -> None:
        for sensor in self.sensors:
            try:
                sensor.close()
            except Exception as exc:
                self.log(f"corescope record: closing {sensor.name} failed: {exc}")
        self._retention()
