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
from corescope.timeparse import format_duration, iso

_LISTED = 5  # dropped chunks named one by one in the end report; the rest are counted


class ProfileSensor(Sensor):
    name = "profile"
    interval_s = 5.0
    # the ring works on its own thread; a failing tick says it is degraded, and losses()
    # says which chunks were dropped
    tick_failure_loses_data = False

    def __init__(self, env: SensorEnv) -> None:
        super().__init__(env)
        self._ring: perf.PerfRing | None = None
        self._store: Store | None = None
        self._problems: list[str] = []
        self._said_over_budget = False
        self._lock = threading.Lock()
        self._done: perf.PerfRing | None = None  # the ring, once stopped (for losses)

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
        ring.enforce(self._store, time.time(), o.profile_retain_s, o.profile_max_bytes,
                     warn=self._over_budget)

    def _over_budget(self, message: str) -> None:
        if not self._said_over_budget:  # once a run: every chunk would say it again
            self._said_over_budget = True
            self._on_problem(message)

    def _on_problem(self, message: str) -> None:
        with self._lock:
            self._problems.append(message)
        print(f"corescope record: profile: {message}", file=sys.stderr, flush=True)

    def tick(self, wall: float, mono: float) -> None:
        # the work happens on the ring's thread; here we only notice that it stopped, or
        # that its chunks cannot be stored (it is shown degraded until one is)
        if self._ring is None:
            return
        if not self._ring.alive:
            raise RuntimeError(self._ring.last_error or "the profile ring stopped")
        if self._ring.store_error is not None:
            raise RuntimeError(f"profile chunks cannot be stored: {self._ring.store_error}")

    def close(self) -> None:
        if self._ring is not None:
            self._ring.stop()  # finishes and indexes the chunk in progress
            self._done = self._ring
            self._ring = None

    def losses(self) -> list[str]:
        ring = self._done
        if ring is None:
            return []
        out = [f"chunk of stacks from {iso(lo)} to {iso(hi)} {why}; dropped"
               for lo, hi, why in ring.dropped[:_LISTED]]
        if len(ring.dropped) > _LISTED:
            rest = ring.dropped[_LISTED:]
            out.append(f"{len(rest)} more chunks dropped, {iso(rest[0][0])} to "
                       f"{iso(rest[-1][1])}")
        if ring.restarts:
            gap = (f"; no stacks were recorded for {ring.down_s:.1f}s while it was restarted"
                   if ring.down_s >= 0.05 else "")
            times = "1 time" if ring.restarts == 1 else f"{ring.restarts} times"
            out.append(f"perf record died {times} ({ring.last_error}){gap}")
        return out


def build(env: SensorEnv) -> list[Sensor]:
    if not env.options.profile:
        return []
    return [ProfileSensor(env)]
