"""The sensor contract the recorder schedules.

A sensor adapts one source to the store: `open` checks its capability (and says what will not
be measured if it cannot run), `tick` reads and writes once, `close` releases resources.
`open` returning ok=False means a missing capability (not retried); `open` raising means a
passing fault (a full disk, say) and the recorder retries it.
A sensor that streams (kmsg, perf) may run its own thread from `open`; it must stop it in
`close`. `tick` must never block for long: the recorder runs all sensors on one schedule.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from corescope.model.cgroups import MemcgCensus, RestartRecord, StatReadCost
from corescope.model.common import SensorStatus
from corescope.model.cores import CoreSample
from corescope.model.events import KernelEvent
from corescope.model.profiles import ProfileChunk
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors import options as opt
from corescope.store.db import Store


@dataclass(frozen=True)
class RecordOptions:
    """Every `corescope record` option, for every sensor (one place, so features don't clash).
    Each field's flag, type, default, range and help are declared once in sensors/options.py;
    `record` builds this from its click options, which are generated from those declarations."""

    interval_s: float = opt.INTERVAL.default
    retain_s: float = opt.RETAIN.default
    max_bytes: int = opt.MAX_BYTES.default
    duration_s: float | None = opt.DURATION.default
    census_interval_s: float = opt.CENSUS_INTERVAL.default
    census: bool = opt.CENSUS.default
    kmsg: bool = opt.KMSG.default
    kmsg_clock_check: bool = opt.KMSG_CLOCK_CHECK.default
    netdev: bool = opt.NETDEV.default
    netdev_interval_s: float = opt.NETDEV_INTERVAL.default
    profile: bool = opt.PROFILE.default
    profile_hz: int = opt.PROFILE_HZ.default
    profile_chunk_s: float = opt.PROFILE_CHUNK.default
    profile_retain_s: float = opt.PROFILE_RETAIN.default
    profile_max_bytes: int = opt.PROFILE_MAX_BYTES.default
    listen: str | None = opt.LISTEN.default
    metrics_max_window_s: float = opt.METRICS_MAX_WINDOW.default
    pyroscope_url: str | None = opt.PYROSCOPE_URL.default
    nice: int = opt.NICE.default
    lock_memory: bool = opt.LOCK_MEMORY.default
    pressure: bool = opt.PRESSURE.default
    pressure_interval_s: float = opt.PRESSURE_INTERVAL.default
    # knobs with no flag, for tests and experiments (profile_rss_limit)
    extra: dict[str, str] = field(default_factory=dict)


class Tap:
    """What sensors hand over, besides the store, as they produce it: the exporter and the
    profile pusher listen here. The default does nothing, so a recorder without `--listen`
    pays one no-op call per write. Taps are called on the sensor's thread and must not block.
    """

    def cores(self, sample: CoreSample) -> None:
        """One per-core interval, as just written."""

    def census(self, census: MemcgCensus) -> None:
        """One zombie memcg census."""

    def stat_costs(self, costs: Sequence[StatReadCost]) -> None:
        """The root stat-read cost probe."""

    def restarts(self, records: Sequence[RestartRecord]) -> None:
        """Units and containers that ever restarted, as last seen."""

    def events(self, events: Sequence[KernelEvent]) -> None:
        """Kernel (and NIC counter) events, as stored."""

    def chunk(self, chunk: ProfileChunk) -> None:
        """A finished, indexed profile-ring chunk (called on the ring's thread)."""


class Taps(Tap):
    """Several taps as one."""

    def __init__(self, taps: Sequence[Tap]) -> None:
        self.taps = list(taps)

    def cores(self, sample: CoreSample) -> None:
        for t in self.taps:
            t.cores(sample)

    def census(self, census: MemcgCensus) -> None:
        for t in self.taps:
            t.census(census)

    def stat_costs(self, costs: Sequence[StatReadCost]) -> None:
        for t in self.taps:
            t.stat_costs(costs)

    def restarts(self, records: Sequence[RestartRecord]) -> None:
        for t in self.taps:
            t.restarts(records)

    def events(self, events: Sequence[KernelEvent]) -> None:
        for t in self.taps:
            t.events(events)

    def chunk(self, chunk: ProfileChunk) -> None:
        for t in self.taps:
            t.chunk(chunk)


@dataclass(frozen=True)
class SensorEnv:
    """What a sensor may use: the filesystem root, the program runner, the store directory."""

    root: Root
    runner: Runner
    store_dir: Path
    options: RecordOptions
    tap: Tap = field(default_factory=Tap)


class Sensor(ABC):
    name: str = "sensor"
    interval_s: float = 1.0
    # False when a failed tick only delays data the sensor keeps and stores later (kmsg)
    tick_failure_loses_data: bool = True

    def __init__(self, env: SensorEnv) -> None:
        self.env = env

    @abstractmethod
    def open(self, store: Store) -> SensorStatus:
        """Check capability and prepare. Return ok=False (with why) to be left out."""

    @abstractmethod
    def tick(self, wall: float, mono: float) -> None:
        """Read once and write to the store."""

    def start_clock(self, mono: float) -> None:  # noqa: B027 - optional hook
        """Called once just before the schedule starts (e.g. to take a fresh baseline)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources, stop threads and child processes."""

    def losses(self) -> list[str]:
        """What this sensor read but could not keep during the run, one sentence each (the
        recorder counts failed ticks and failed starts itself)."""
        return []
