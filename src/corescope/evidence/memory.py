"""Evidence held in memory: records already parsed from saved artifacts (a log given to
`events --file`), or built by tests. Answers every question from the lists it was given."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from corescope.analysis.event_focus import EventBudget, FocusedEvents, focus
from corescope.evidence.base import CgroupState, Coverage, RestartEvidence, Span

if TYPE_CHECKING:  # annotations only: `events --file` holds only kernel events
    from corescope.model.cgroups import ChurnCount, MemcgCensus, StatReadCost
    from corescope.model.common import Diagnostic, SensorStatus
    from corescope.model.cores import CoreSample
    from corescope.model.events import KernelEvent, QueueIrq, SoftirqSample
    from corescope.model.pressure import PressureSummary
    from corescope.model.profiles import StackSample


def _span(times: list[float]) -> Span | None:
    return Span(min(times), max(times)) if times else None


@dataclass
class MemoryEvidence:
    name: str = "artifacts"
    samples: list[CoreSample] = field(default_factory=list)
    kernel_events: list[KernelEvent] = field(default_factory=list)
    census_rows: list[MemcgCensus] = field(default_factory=list)
    churn_rows: list[ChurnCount] = field(default_factory=list)
    irq_maps: list[tuple[float, list[QueueIrq]]] = field(default_factory=list)
    softirq_rows: list[SoftirqSample] = field(default_factory=list)
    restart_ev: RestartEvidence = field(default_factory=RestartEvidence)
    stack_rows: list[tuple[StackSample, float]] = field(default_factory=list)
    sensor_statuses: list[SensorStatus] = field(default_factory=list)
    lost: int = 0

    def coverage(self) -> Coverage:
        cores = None
        if self.samples:
            cores = Span(self.samples[0].t - self.samples[0].interval_s, self.samples[-1].t)
        return Coverage(cores=cores,
                        events=_span([e.time for e in self.kernel_events]),
                        censuses=_span([c.t for c in self.census_rows]),
                        profiles=_span([w for _s, w in self.stack_rows]),
                        cpus=tuple(self.samples[-1].cpus) if self.samples else ())

    def core_samples(self, t0: float, t1: float) -> list[CoreSample]:
        return [s for s in self.samples if t0 <= s.t <= t1]

    def events(self, t0: float, t1: float) -> list[KernelEvent]:
        return [e for e in self.kernel_events if t0 <= e.time <= t1]

    def focused_events(self, t0: float, t1: float, budget: EventBudget | None
                       ) -> FocusedEvents:
        return focus(self.events(t0, t1), budget)

    def event(self, event_id: int) -> KernelEvent | None:
        return next((e for e in self.kernel_events if e.id == event_id), None)

    def lost_records(self, t0: float, t1: float) -> int:
        return self.lost

    def stacks(self, t0: float, t1: float, cpu: int | None = None,
               diags: list[Diagnostic] | None = None) -> Iterator[tuple[StackSample, float]]:
        return ((s, w) for s, w in self.stack_rows
                if t0 <= w < t1 and (cpu is None or s.cpu == cpu))

    def censuses(self, t0: float, t1: float) -> list[MemcgCensus]:
        return [c for c in self.census_rows if t0 <= c.t <= t1]

    def churn(self, t0: float, t1: float) -> list[ChurnCount]:
        return [c for c in self.churn_rows if t0 <= c.t <= t1]

    def stat_costs(self, t0: float, t1: float) -> list[StatReadCost]:
        return []

    def cgroup_state(self, t: float) -> CgroupState | None:
        before = [c for c in self.census_rows if c.t <= t]
        if not before:
            return None
        c = before[-1]
        from corescope.model.cgroups import CgroupLayout

        return CgroupState(CgroupLayout(kind=c.layout, memory=c.hierarchy, memory_mount=None), c)

    def irq_map_at(self, t: float) -> list[QueueIrq]:
        """The newest map at or before t, else the oldest after it."""
        if not self.irq_maps:
            return []
        maps = sorted(self.irq_maps, key=lambda m: m[0])
        i = bisect.bisect_right([m[0] for m in maps], t)
        return list(maps[i - 1][1] if i else maps[0][1])

    def softirqs(self, t0: float, t1: float) -> list[SoftirqSample]:
        return [s for s in self.softirq_rows if t0 <= s.t <= t1]

    def restarts(self, t0: float, t1: float) -> RestartEvidence:
        return RestartEvidence(
            records=[r for r in self.restart_ev.records if t0 <= r.t <= t1],
            journal=[j for j in self.restart_ev.journal if t0 <= j.t <= t1])

    def pressure(self, t0: float, t1: float) -> PressureSummary | None:
        return None

    def statuses(self) -> list[SensorStatus]:
        return list(self.sensor_statuses)

    def close(self) -> None:
        pass
