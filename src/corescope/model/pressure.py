"""Pressure records: PSI per resource, run-queue wait per CPU, reclaim counters.

All counters are cumulative as the kernel keeps them (readers take deltas), so a record
survives a restart of the agent and a lost tick costs resolution, not totals."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Psi:
    """One line of /proc/pressure/<resource>: `some` or `full`."""

    avg10: float
    avg60: float
    avg300: float
    total_us: int  # stall time since boot, microseconds


@dataclass(frozen=True)
class PsiSample:
    t: float
    resource: str  # "cpu" | "memory" | "io"
    some: Psi | None
    full: Psi | None


@dataclass(frozen=True)
class RunQueue:
    """One CPU's /proc/schedstat line: time its tasks ran and waited to run, since boot."""

    cpu: int
    run_ns: int
    wait_ns: int
    timeslices: int


@dataclass(frozen=True)
class SchedstatSample:
    t: float
    version: int | None
    cpus: tuple[RunQueue, ...]


@dataclass(frozen=True)
class VmstatSample:
    """The reclaim, compaction, allocation-stall and OOM counters of /proc/vmstat."""

    t: float
    counters: dict[str, int]


@dataclass(frozen=True)
class PressureSummary:
    """The window's worst pressure readings (None: not recorded)."""

    cpu_some_avg10_max: float | None = None  # % (PSI)
    memory_some_avg10_max: float | None = None
    memory_full_avg10_max: float | None = None
    runq_wait_share_max: float | None = None  # seconds waited per CPU-second, worst CPU
    runq_wait_cpu: int | None = None
    runq_wait_share_median: float | None = None  # the median CPU's worst wait: spread or one
    pgscan_per_s_max: float | None = None  # vmstat pgscan_* rate
    allocstall_per_s_max: float | None = None
    compact_stall_per_s_max: float | None = None
    oom_kills: int | None = None  # vmstat oom_kill delta over the window
