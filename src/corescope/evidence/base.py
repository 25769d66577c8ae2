"""The Evidence protocol: what an investigation may ask of a source of evidence.

Each implementation answers the same questions (what is covered and when, core samples in a
window, kernel events, stacks, censuses, the interrupt map at a time, NET_RX/NET_TX softirqs
per CPU, restart records, and sensor statuses with their reasons) from one place: the store,
the live node, saved artifacts, or a merge. Answers are model records; nothing here formats
or prints.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

# Annotations only: the records are defined where they are made, so a log-only
# investigation (`events --file`) does not define the cgroup and stack records at start-up.
if TYPE_CHECKING:
    from corescope.analysis.event_focus import EventBudget, FocusedEvents
    from corescope.model.cgroups import (
        CgroupLayout,
        ChurnCount,
        Location,
        MemcgCensus,
        RestartRecord,
        StatReadCost,
    )
    from corescope.model.common import Diagnostic, SensorStatus
    from corescope.model.cores import CoreSample
    from corescope.model.events import KernelEvent, QueueIrq, SoftirqSample
    from corescope.model.matrix import CoreMatrix
    from corescope.model.pressure import PressureSummary
    from corescope.model.profiles import StackSample


@dataclass(frozen=True)
class Span:
    """A stretch of time one kind of evidence covers (UTC epoch seconds)."""

    start: float
    end: float


@dataclass(frozen=True)
class Coverage:
    """What each kind of evidence covers. None: that kind is absent."""

    cores: Span | None = None
    events: Span | None = None
    censuses: Span | None = None
    profiles: Span | None = None
    cpus: tuple[int, ...] = ()

    @property
    def start(self) -> float | None:
        """The oldest time any kind of evidence reaches."""
        starts = [s.start for s in (self.cores, self.events, self.censuses, self.profiles)
                  if s is not None]
        return min(starts) if starts else None

    @property
    def end(self) -> float | None:
        """The newest time any kind of evidence reaches."""
        ends = [s.end for s in (self.cores, self.events, self.censuses, self.profiles)
                if s is not None]
        return max(ends) if ends else None

    @property
    def record_span(self) -> Span | None:
        """The per-core record's span, or else the union of whatever is covered."""
        if self.cores is not None:
            return self.cores
        spans = [s for s in (self.events, self.censuses, self.profiles) if s is not None]
        if not spans:
            return None
        return Span(min(s.start for s in spans), max(s.end for s in spans))


@dataclass(frozen=True)
class JournalRestartEntry:
    """One "Scheduled restart job" journal entry: when, which unit, the counter if given."""

    t: float
    unit: str
    n_restarts: int | None


@dataclass
class RestartEvidence:
    records: list[RestartRecord] = field(default_factory=list)
    journal: list[JournalRestartEntry] = field(default_factory=list)


@dataclass
class CgroupState:
    """The memory-cgroup picture at one moment: layout, the census, where the dying ones
    sit, and what reading the root memory stats cost."""

    layout: CgroupLayout
    census: MemcgCensus | None
    locations: list[Location] = field(default_factory=list)
    location_basis: str = ""  # how `locations` were found (empty: none found)
    stat_costs: list[StatReadCost] = field(default_factory=list)
    live_walk: bool = False  # locations come from walking the live v2 tree
    diagnostics: list[Diagnostic] = field(default_factory=list)


class Evidence(Protocol):
    """One source of evidence. `name` says which: "store", "live", "artifacts", "store+live"."""

    name: str

    def coverage(self) -> Coverage: ...

    def core_samples(self, t0: float, t1: float) -> CoreMatrix | list[CoreSample]:
        """The samples of [t0, t1): a CoreMatrix (arrays) from the store, a list elsewhere."""
        ...

    def events(self, t0: float, t1: float) -> list[KernelEvent]: ...

    def focused_events(self, t0: float, t1: float, budget: EventBudget | None
                       ) -> FocusedEvents:
        """The window's events an investigation holds (analysis.event_focus), the rest
        counted: read in one pass, never all held."""
        ...

    def event(self, event_id: int) -> KernelEvent | None: ...

    def lost_records(self, t0: float, t1: float) -> int: ...

    def stacks(self, t0: float, t1: float, cpu: int | None = None,
               diags: list[Diagnostic] | None = None
               ) -> Iterator[tuple[StackSample, float | None]]: ...  # None: folded, no time

    def censuses(self, t0: float, t1: float) -> list[MemcgCensus]: ...

    def churn(self, t0: float, t1: float) -> list[ChurnCount]: ...

    def stat_costs(self, t0: float, t1: float) -> list[StatReadCost]: ...

    def cgroup_state(self, t: float) -> CgroupState | None: ...

    def irq_map_at(self, t: float) -> list[QueueIrq]: ...

    def softirqs(self, t0: float, t1: float) -> list[SoftirqSample]:
        """Per-CPU NET_RX/NET_TX counts ending in [t0, t1]; empty: not measured then."""
        ...

    def restarts(self, t0: float, t1: float) -> RestartEvidence: ...

    def pressure(self, t0: float, t1: float) -> PressureSummary | None: ...

    def statuses(self) -> list[SensorStatus]: ...

    def close(self) -> None: ...
