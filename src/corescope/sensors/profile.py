"""The profile-ring sensor: runs `perf record -a -g` in rotating chunks on its own thread,
indexes each finished chunk, and keeps the ring inside its age and byte budgets."""

from __future__ import annotations

import sys
import threading
import time

from corescope.model.common import SensorStatus
from corescope.model.profiles import ProfileChunk
from corescope.sensors.base import Sensor, SensorEnv
from corescope.sources import perf
from corescope.store import profiles as ring
from corescope.store.db import Store
from corescope.timeparse import format_duration


class ProfileSensor(Sensor):
    name = "profile"
    interval_s = 5.0

    def __init__(self, env: SensorEnv) -> None:
        super().__init__(env)
        self._ring: perf.PerfRing | None = None
        self._store: Store | None = None
        self._problems: list[str] = []
        self._lock = threading.Lock()

    def open(self, store: Store) -> SensorStatus:
        o = self.env.options
        self._store = store
        directory = ring.profile_dir(store.directory)
        ring.sweep_orphans(store)  # a killed recorder leaves raw chunks behind
        why = perf.probe(self.env.runner, directory, o.profile_hz)
        if why is not None:
            return SensorStatus(self.name, False, f"{why}; CPU stacks are not recorded")
        rss = int(o.extra.get("profile_rss_limit", perf.DEFAULT_RSS_LIMIT))
        self._ring = perf.PerfRing(
            self.env.runner, directory, ring.PROFILE_DIR, hz=o.profile_hz,
            chunk_s=o.profile_chunk_s, on_chunk=self._on_chunk, on_problem=self._on_problem,
            rss_limit=rss,
        )
        self._ring.start()
        return SensorStatus(
            self.name, True,
            f"perf record -a -g at {o.profile_hz} Hz in {format_duration(o.profile_chunk_s)} "
            f"chunks (keep {format_duration(o.profile_retain_s)}, "
            f"{o.profile_max_bytes // 1_000_000} MB)",
        )

    def _on_chunk(self, chunk: ProfileChunk) -> None:
        assert self._store is not None
        o = self.env.options
        ring.add_chunk(self._store, chunk)
        self.env.tap.chunk(chunk)
        ring.enforce(self._store, time.time(), o.profile_retain_s, o.profile_max_bytes)

    def _on_problem(self, message: str) -> None:
        with self._lock:
            self._problems.append(message)
        print(f"corescope record: profile: {message}", file=sys.stderr, flush=True)

    def tick(self, wall: float, mono: float) -> None:
        # the work happens on the ring's thread; here we only notice that it stopped
        if self._ring is not None and not self._ring.alive:
            raise RuntimeError(self._ring.last_error or "the profile ring stopped")

    def close(self) -> None:
        if self._ring is not None:
            self._ring.stop()  # finishes and indexes the chunk in progress
            self._ring = None


def build(env: SensorEnv) -> list[Sensor]:
    if not env.options.profile:
        return []
    return [ProfileSensor(env)]
