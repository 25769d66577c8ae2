"""Per-core CPU time: raw counters, per-interval deltas, percentages, and hot-core episodes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# /proc/stat cpu line fields, in kernel order (USER_HZ ticks). guest is already inside user,
# guest_nice inside nice.
FIELDS: tuple[str, ...] = (
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice",
)

# Percentage modes, named as mpstat names them.
MODES: tuple[str, ...] = (
    "usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "gnice", "idle",
)

# Modes an episode can be defined on. "kernel" is the default: system + irq + softirq.
COMPOSITE_MODES: dict[str, tuple[str, ...]] = {
    "kernel": ("sys", "irq", "soft"),
    "busy": ("usr", "nice", "sys", "irq", "soft", "steal"),
    "user": ("usr", "nice"),
}


# An episode by default: kernel time >= 90% of a core for >= 2 s.
DEFAULT_THRESHOLD = 90.0
DEFAULT_MIN_DURATION = 2.0
DEFAULT_MODE = "kernel"


@dataclass(frozen=True)
class CoreSample:
    """Per-CPU tick deltas over one interval, already clamped (no negative deltas).

    `t` is the wall-clock end of the interval (UTC epoch seconds); `interval_s` is measured on
    the monotonic clock. `deltas[cpu]` is in FIELDS order. Offline CPUs are absent.
    """

    t: float
    interval_s: float
    deltas: Mapping[int, tuple[int, ...]]

    @property
    def cpus(self) -> list[int]:
        return sorted(self.deltas)


@dataclass(frozen=True)
class CpuUsage:
    """Percentages of one CPU over one interval, with sysstat's arithmetic."""

    cpu: int
    ticks: int  # the interval in ticks (sysstat's itv)
    pct: dict[str, float]

    def mode_pct(self, mode: str) -> float:
        parts = COMPOSITE_MODES.get(mode)
        if parts is None:
            return self.pct[mode]
        return sum(self.pct[p] for p in parts)


@dataclass(frozen=True)
class Episode:
    """A core whose `mode` time stayed ≥ threshold for at least the minimum duration."""

    cpu: int
    start: float
    end: float
    mode: str
    threshold_pct: float
    peak_pct: float
    mean_pct: float
    machine_avg_pct: float
    seen_at_30s_pct: float
    seen_at_60s_pct: float
    machine_seen_at_30s_pct: float
    machine_seen_at_60s_pct: float
    samples: int
    by_mode: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return self.end - self.start
