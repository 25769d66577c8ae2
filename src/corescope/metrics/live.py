"""Live metrics state, fed by the recorder's sensors through the Tap, read by the exporter.

Why a ring of 1 s ratios: Prometheus scrapes every 15–60 s and averages anything in between
away. The max gauge keeps, per CPU and mode, the highest 1 s ratio of the trailing window, so
any scrape interval up to that window still sees a 4 s spike. Updating costs one small numpy
pass per tick on the sampling thread; everything else (maxima, growth, formatting) happens at
scrape time on the exporter's thread, from a copy taken under a short lock.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from corescope.analysis.episodes import DEFAULT_MIN_DURATION, DEFAULT_THRESHOLD
from corescope.analysis.usage import hot_floor, mode_ticks
from corescope.analysis.zombies import growth
from corescope.model.cgroups import MemcgCensus, RestartRecord, StatReadCost
from corescope.model.cores import FIELDS, CoreSample
from corescope.model.events import KernelEvent
from corescope.sensors.base import Tap

# Modes exported, as `mode` label values: kernel = sys + irq + soft (the episode default),
# user = usr + nice (guest excluded, as mpstat does).
MODES: tuple[str, ...] = ("kernel", "user", "sys", "irq", "soft", "iowait", "steal")
KERNEL = 0
STEAL = MODES.index("steal")
SATURATED_RATIO = DEFAULT_THRESHOLD / 100.0  # the `cores` episode threshold (90 %)
EPISODE_MIN_S = DEFAULT_MIN_DURATION  # and its minimum duration (2 s)
CENSUS_HISTORY = 360  # an hour of censuses at the default 10 s, for the growth slope



def mode_ratios(deltas: np.ndarray) -> np.ndarray:
    """(n, 10) tick deltas in FIELDS order → (n, len(MODES)) ratios 0–1, with usage's one
    percentage rule (a tickless CPU is idle: 0 in every exported mode)."""
    itv, parts = mode_ticks(deltas, MODES)
    inv = np.divide(1.0, itv, out=np.zeros(itv.shape), where=itv > 0)
    return np.stack(parts, axis=1) * inv[:, None]


def _matrix(sample: CoreSample) -> tuple[tuple[int, ...], np.ndarray]:
    rows = sample.deltas
    flat = getattr(rows, "flat", None)
    ids = getattr(rows, "ids", None)
    if ids is not None and isinstance(flat, np.ndarray):
        return tuple(ids), flat.reshape(len(ids), len(FIELDS))
    if ids is not None and isinstance(flat, array) and flat.typecode == "I":  # a few CPUs
        return tuple(ids), np.frombuffer(flat, np.uint32).astype(np.int64).reshape(
            len(ids), len(FIELDS))
    cpus = tuple(sorted(rows))
    return cpus, np.array([rows[c] for c in cpus], dtype=np.int64).reshape(len(cpus),
                                                                          len(FIELDS))


@dataclass
class Snapshot:
    """What one scrape shows; plain values, copied out from under the lock."""

    now: float
    cpus: tuple[int, ...]
    ratio_max: np.ndarray  # (cpus, MODES); NaN where nothing is in the window
    saturated_s: np.ndarray  # (cpus, MODES)
    episodes: np.ndarray  # (cpus,)
    census: MemcgCensus | None
    growth_per_hour: float | None
    dying_limit: int | None
    projected_crossing: float | None
    events: dict[tuple[str, str], int]
    restarts: dict[tuple[str, str], int]
    stat_costs: dict[str, float]
    sensors: dict[str, bool]
    info: dict[str, Any] = field(default_factory=dict)  # LiveMetrics.info itself: read only


class LiveMetrics(Tap):
    def __init__(self, window_s: float = 60.0, interval_s: float = 1.0,
                 clock: Callable[[], float] | None = None) -> None:
        import time

        self.window_s = window_s
        self._clock = clock or time.time
        # 1 s ratios: sub-second ticks are summed until a second is covered
        self._step_s = max(1.0, interval_s)
        slots = math.ceil(window_s / self._step_s) + 2
        self._lock = threading.Lock()
        self._row: dict[int, int] = {}
        self._order_cache: tuple[tuple[int, ...], np.ndarray] | None = None
        self._ring = np.full((0, len(MODES), slots), np.nan)
        self._t = np.full(slots, -np.inf)  # end time of each slot
        self._pos = 0
        self._sat = np.zeros((0, len(MODES)))
        self._run = np.zeros(0)
        self._counted = np.zeros(0, dtype=bool)
        self._episodes = np.zeros(0, dtype=np.int64)
        self._acc: np.ndarray | None = None
        self._acc_ids: tuple[int, ...] = ()
        self._acc_s = 0.0
        self._last_push_t: float | None = None
        self._census: MemcgCensus | None = None
        self._census_hist: deque[MemcgCensus] = deque(maxlen=CENSUS_HISTORY)
        self._growth_cache: tuple[float, Any] | None = None
        self._events: dict[tuple[str, str], int] = {}
        self._restarts: dict[tuple[str, str], int] = {}
        self._stat: dict[str, float] = {}
        self.sensor_health: Callable[[], Mapping[str, bool]] = dict
        self.info: dict[str, Any] = {}  # replaced, never changed in place: set_info
        # bumped on every change a scrape would show, so the exporter can serve its last
        # render while nothing changed (see state_key)
        self._version = 0

    # --- fed on the sensors' threads -------------------------------------------------------

    def cores(self, sample: CoreSample) -> None:
        ids, d = _matrix(sample)
        if not ids:
            return
        if self._acc is not None and self._acc_ids == ids:
            self._acc = self._acc + d
            self._acc_s += sample.interval_s
        else:  # first tick, or the CPU set changed (hotplug): start a fresh second
            self._acc, self._acc_ids, self._acc_s = d.copy(), ids, sample.interval_s
        if self._acc_s < self._step_s * 0.95:
            return
        ratios = mode_ratios(self._acc)
        dt = self._acc_s
        self._acc, self._acc_s = None, 0.0
        with self._lock:
            self._push(ids, ratios, dt, sample.t)
            self._version += 1

    def _rows_for(self, ids: tuple[int, ...]) -> np.ndarray:
        new = [c for c in ids if c not in self._row]
        if new:
            for c in new:
                self._row[c] = len(self._row)
            extra = len(new)
            self._ring = np.concatenate(
                [self._ring, np.full((extra, len(MODES), self._t.size), np.nan)])
            self._sat = np.concatenate([self._sat, np.zeros((extra, len(MODES)))])
            self._run = np.concatenate([self._run, np.zeros(extra)])
            self._counted = np.concatenate([self._counted, np.zeros(extra, dtype=bool)])
            self._episodes = np.concatenate([self._episodes, np.zeros(extra, dtype=np.int64)])
        return np.fromiter((self._row[c] for c in ids), dtype=np.intp, count=len(ids))

    def _push(self, ids: tuple[int, ...], ratios: np.ndarray, dt: float, t: float) -> None:
        rows = self._rows_for(ids)
        pos = self._pos
        self._ring[:, :, pos] = np.nan  # CPUs absent this second (offline) show nothing
        self._ring[rows, :, pos] = ratios
        self._t[pos] = t
        self._pos = (pos + 1) % self._t.size
        # usage.hot_floor's rule on ratios: each mode but steal against the unstolen time
        hot = ratios * 100.0 >= hot_floor(DEFAULT_THRESHOLD, "kernel",
                                          ratios[:, [STEAL]] * 100.0)
        hot[:, STEAL] = ratios[:, STEAL] >= SATURATED_RATIO
        self._sat[rows] += hot * dt
        # an episode: kernel time ≥ threshold for ≥ the minimum duration, counted once; a gap
        # in sampling (a stopped recorder, a long stall) breaks the run as `cores` does
        gap = self._last_push_t is not None and t - self._last_push_t > 2.5 * self._step_s
        self._last_push_t = t
        k = hot[:, KERNEL]
        run = np.where(k, (0.0 if gap else self._run[rows]) + dt, 0.0)
        self._run[rows] = run
        counted = self._counted[rows] & k
        if gap:
            counted[:] = False
        new = (run >= EPISODE_MIN_S - 1e-6) & ~counted
        self._episodes[rows] += new
        self._counted[rows] = counted | new

    def census(self, census: MemcgCensus) -> None:
        with self._lock:
            self._census = census
            self._census_hist.append(census)
            self._version += 1

    def stat_costs(self, costs: Sequence[StatReadCost]) -> None:
        with self._lock:
            for c in costs:
                self._stat[c.file] = c.median_ms / 1000.0
            self._version += 1

    def restarts(self, records: Sequence[RestartRecord]) -> None:
        with self._lock:
            for r in records:
                if r.restarts is not None:
                    key = (r.name, r.kind)
                    # systemd's NRestarts and a container's attempt count only grow; keep
                    # the highest seen so the counter never goes backwards on a bad read
                    self._restarts[key] = max(self._restarts.get(key, 0), r.restarts)
            self._version += 1

    def events(self, events: Sequence[KernelEvent]) -> None:
        with self._lock:
            for e in events:
                iface = e.fields.get("iface") if isinstance(e.fields, dict) else None
                key = (e.kind, str(iface) if iface else "")
                self._events[key] = self._events.get(key, 0) + 1
            self._version += 1

    def set_info(self, key: str, value: Any) -> None:
        """node_info, inventory, diagnosis: refreshed on the slow thread."""
        with self._lock:
            self.info = {**self.info, key: value}
            self._version += 1

    # --- read on the exporter's thread -----------------------------------------------------

    def state_key(self) -> tuple[Any, ...]:
        """Equal keys, equal snapshots: the same updates seen, the same sensor health, info
        and second (the trailing window ages out on the clock, a second at a time)."""
        return (self._version, tuple(sorted(self.sensor_health().items())),
                math.floor(self._clock() / self._step_s))

    def snapshot(self) -> Snapshot:
        now = self._clock()
        # the window is judged on the samples' own wall times, so a stalled recorder ages out
        since = now - self.window_s - self._step_s
        with self._lock:
            cpus, order = self._order()
            live = self._t > since
            # fmax ignores NaN (a CPU absent that second) unless all are NaN; one ufunc call,
            # as a scrape a second finds numpy's Python-level nan* wrappers cold every time
            ratio_max = (np.fmax.reduce(self._ring[order][:, :, live], axis=2) if live.any()
                         else np.full((len(cpus), len(MODES)), np.nan))
            sat = self._sat[order]
            episodes = self._episodes[order]
            census = self._census
            hist = list(self._census_hist)
            events = dict(self._events)
            restarts = dict(self._restarts)
            stat = dict(self._stat)
        per_hour, limit, crossing = self._growth(census, hist)
        return Snapshot(now=now, cpus=cpus, ratio_max=ratio_max, saturated_s=sat,
                        episodes=episodes, census=census, growth_per_hour=per_hour,
                        dying_limit=limit, projected_crossing=crossing, events=events,
                        restarts=restarts, stat_costs=stat,
                        sensors=dict(self.sensor_health()), info=self.info)

    def _order(self) -> tuple[tuple[int, ...], np.ndarray]:
        """CPUs in order, and their rows (fancy indexing copies: the arrays handed out are
        the scrape's own)."""
        if self._order_cache is None or len(self._order_cache[0]) != len(self._row):
            cpus = tuple(sorted(self._row))
            self._order_cache = (cpus, np.fromiter((self._row[c] for c in cpus),
                                                   dtype=np.intp, count=len(cpus)))
        return self._order_cache

    def _growth(self, census: MemcgCensus | None, hist: list[MemcgCensus]
                ) -> tuple[float | None, int | None, float | None]:
        if census is None:
            return None, None, None
        cache = self._growth_cache
        if cache is not None and cache[0] == census.t:
            g = cache[1]
        else:
            g = growth(census, hist)  # Theil–Sen: at scrape time, never on the sampler
            self._growth_cache = (census.t, g)
        return g.per_hour, g.threshold, g.projected_threshold_at
