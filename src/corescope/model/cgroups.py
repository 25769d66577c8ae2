"""Memory-cgroup records: layout, census, per-subtree dying counts, churn, restart evidence,
stat-read cost, growth and suspects. Plain frozen data, no I/O.

Paths of cgroups are relative to the root of their hierarchy: "/" is the root cgroup,
"/corescope-lab/agent" a child of a child.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Lab cgroups and files live under this name, and nothing else is ever touched by the lab.
LAB_NAME = "corescope-lab"


@dataclass(frozen=True)
class CgroupMount:
    """One cgroup filesystem mount, from /proc/self/mountinfo or /proc/mounts."""

    mountpoint: str
    fstype: str  # "cgroup" (v1) or "cgroup2"
    root: str = "/"  # the hierarchy path mounted here ("/" unless a container's view)
    controllers: tuple[str, ...] = ()  # v1: from the super options (memory, cpu, name=...)


@dataclass(frozen=True)
class CgroupLayout:
    """Which cgroup versions are mounted, and which hierarchy holds the memory controller."""

    kind: str  # "v1" | "v2" | "hybrid" | "none"
    memory: str | None  # "v1" | "v2" | None when no memory controller is mounted
    memory_mount: str | None  # mountpoint of the hierarchy with memory (host path)
    memory_mount_root: str = "/"
    v2_mount: str | None = None
    v1_mounts: tuple[tuple[str, str], ...] = ()  # (controller, mountpoint)


@dataclass(frozen=True)
class ProcCgroupsRow:
    """A row of /proc/cgroups."""

    subsys: str
    hierarchy: int
    num_cgroups: int
    enabled: bool


@dataclass(frozen=True)
class CgroupStat:
    """A v2 cgroup.stat file. `subsys`/`dying_subsys` hold 6.12+ nr_[dying_]subsys_<ctrl>;
    `unreadable` the keys whose line held no readable count, each with its line number."""

    nr_descendants: int | None = None
    nr_dying_descendants: int | None = None
    subsys: dict[str, int] = field(default_factory=dict)
    dying_subsys: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, int] = field(default_factory=dict)

    def dying_memory(self) -> int | None:
        """Dying memcgs at and below this cgroup; falls back to dying cgroups of any kind."""
        if "memory" in self.dying_subsys:
            return self.dying_subsys["memory"]
        return self.nr_dying_descendants


@dataclass(frozen=True)
class MemcgCensus:
    """One count of memory cgroups: the kernel's (dying included) against the live ones."""

    t: float
    layout: str  # CgroupLayout.kind
    hierarchy: str | None  # "v1" | "v2": where memory sits
    kernel_count: int | None
    live: int | None
    dying: int | None
    source: str  # how the numbers were obtained, in words
    walk_ms: float = 0.0
    boot_id: str = ""
    uptime_s: float | None = None
    stable: bool = True  # the kernel count did not move while the live tree was walked
    proc_cgroups_count: int | None = None  # /proc/cgroups memory num_cgroups, cross-check
    churn_interval_s: float = 0.0  # the interval its churn counts cover (0: no churn taken)


@dataclass(frozen=True)
class Location:
    """Where dying cgroups sit (v2): a cgroup's own excess over its children's counts."""

    path: str
    dying: int  # own excess: nr_dying here minus the sum of the children's
    subtree_dying: int
    live_descendants: int | None = None


@dataclass(frozen=True)
class ChurnCount:
    """Child cgroups a parent gained and lost over one census interval."""

    t: float
    parent: str
    created: int
    removed: int
    children: int  # live children at the census
    interval_s: float
    method: str  # "inotify" (every mkdir/rmdir seen) or "snapshot" (lower bound)


@dataclass(frozen=True)
class ParentChurn:
    """Churn of one parent over the stored window, in rates."""

    parent: str
    created: int
    removed: int
    span_s: float
    created_per_hour: float
    removed_per_hour: float
    active_fraction: float  # share of census intervals in which the parent churned
    intervals: int
    method: str


# a crash loop as the kubelet reports a container's state: waiting to be restarted after
# failing, or just terminated in error (`kubectl get pods` STATUS, the JSON's state reason)
KUBELET_LOOPING = frozenset({"CrashLoopBackOff", "Error", "OOMKilled", "RunContainerError",
                             "ContainerCannotRun"})


@dataclass(frozen=True)
class RestartRecord:
    """Restart evidence for one unit or container at one moment."""

    t: float
    kind: str  # "systemd-unit" | "container" | "docker-container" | "pod"
    name: str
    restarts: int | None
    state: str = ""
    cgroup: str | None = None  # the cgroup path or a key to match churn parents with
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StatReadCost:
    """Median time to read one root memory stat file (what kubelet/cAdvisor repeats)."""

    t: float
    file: str  # "memory.stat" | "memory.numa_stat"
    median_ms: float
    max_ms: float
    reads: int
    dying: int | None = None


@dataclass(frozen=True)
class Thresholds:
    """When zombies hurt: `max_dying`, or dying ≥ `ratio` × live once dying ≥ `ratio_min_dying`
    (on a near-empty hierarchy the ratio alone says nothing)."""

    max_dying: int = 10_000
    ratio: float = 50.0
    ratio_min_dying: int = 1_000
    # doctor warns before the threshold when stored growth is at least this fast and
    # projects the crossing within this time (a slow trickle that memory pressure reclaims
    # is not a leak worth waking anyone for)
    warn_min_per_hour: float = 200.0
    warn_within_s: float = 48 * 3600.0
    # stat-read cost: high at this median, or grown by this factor since first seen
    stat_high_ms: float = 50.0
    stat_growth_factor: float = 3.0

    def limit(self, live: int | None) -> tuple[int, str]:
        """The dying count at which the first rule fires, and the rule in words."""
        best, rule = self.max_dying, f"dying >= {self.max_dying}"
        if live:
            by_ratio = max(int(self.ratio * live + 0.999999), self.ratio_min_dying)
            if by_ratio < best:
                best = by_ratio
                rule = (f"dying >= {self.ratio:g}x live ({live}) "
                        f"and >= {self.ratio_min_dying}")
        return best, rule


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class Growth:
    """How fast dying memcgs grow, and when the threshold is (or was) reached."""

    per_hour: float | None
    method: str  # "theil-sen" | "since-boot" | "none"
    points: int
    span_s: float
    threshold: int
    threshold_rule: str
    crossed: bool
    projected_threshold_at: float | None  # wall time; now when already crossed


@dataclass(frozen=True)
class Suspect:
    name: str
    kind: str  # "cgroup-parent" | "systemd-unit" | "container" | "docker-container"
    score: float  # 0..1: how much of the growth its churn/restarts can explain
    evidence: dict[str, Any] = field(default_factory=dict)
