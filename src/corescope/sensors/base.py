"""The sensor contract the recorder schedules.

A sensor adapts one source to the store: `open` checks its capability (and says what will not
be measured if it cannot run), `tick` reads and writes once, `close` releases resources.
A sensor that streams (kmsg, perf) may run its own thread from `open`; it must stop it in
`close`. `tick` must never block for long: the recorder runs all sensors on one schedule.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from corescope.model.common import SensorStatus
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.store.db import Store


@dataclass(frozen=True)
class RecordOptions:
    """Every `corescope record` option, for every sensor (one place, so features don't clash)."""

    interval_s: float = 1.0
    retain_s: float = 24 * 3600.0
    max_bytes: int = 1 << 30
    duration_s: float | None = None
    # zombie memcg census (and restart evidence)
    census: bool = True
    census_interval_s: float = 10.0
    # kernel log, NIC counters, interrupts
    kmsg: bool = True
    netdev: bool = True
    netdev_interval_s: float = 5.0
    # perf profile ring
    profile: bool = True
    profile_hz: int = 49
    profile_chunk_s: float = 120.0
    profile_retain_s: float = 12 * 3600.0
    profile_max_bytes: int = 2 * 1000**3
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SensorEnv:
    """What a sensor may use: the filesystem root, the program runner, the store directory."""

    root: Root
    runner: Runner
    store_dir: Path
    options: RecordOptions


class Sensor(ABC):
    name: str = "sensor"
    interval_s: float = 1.0

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
