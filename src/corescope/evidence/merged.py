"""Store + live, as `doctor` reads them: the stored record, then what the live read adds
(newer samples, ring records the store lacks, today's census and restart counts)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from corescope.analysis.event_focus import EventBudget, FocusedEvents, focus
from corescope.evidence.base import CgroupState, Coverage, Evidence, RestartEvidence, Span
from corescope.evidence.live import LiveEvidence
from corescope.model.cgroups import ChurnCount, MemcgCensus, StatReadCost
from corescope.model.common import Diagnostic, SensorStatus
from corescope.model.cores import CoreSample
from corescope.model.events import KernelEvent, QueueIrq, SoftirqSample
from corescope.model.pressure import PressureSummary

if TYPE_CHECKING:  # stacks come from the store, which loads the record when it reads them
    from corescope.model.matrix import CoreMatrix
    from corescope.model.profiles import StackSample


def _union(a: Span | None, b: Span | None) -> Span | None:
    if a is None or b is None:
        return a or b
    return Span(min(a.start, b.start), max(a.end, b.end))


class MergedEvidence:
    name = "store+live"

    def __init__(self, store: Evidence, live: LiveEvidence) -> None:
        self.stored = store
        self.live = live

    def coverage(self) -> Coverage:
        a, b = self.stored.coverage(), self.live.coverage()
        return Coverage(cores=_union(a.cores, b.cores), events=_union(a.events, b.events),
                        censuses=_union(a.censuses, b.censuses), profiles=a.profiles,
                        cpus=b.cpus or a.cpus)

    def core_samples(self, t0: float, t1: float) -> CoreMatrix | list[CoreSample]:
        stored = self.stored.core_samples(t0, t1)
        live = self.live.core_samples(t0, t1)
        if stored:
            live = [s for s in live if s.t > stored[-1].t]
        return stored + list(live)  # a stored CoreMatrix stays one (its __add__)

    def events(self, t0: float, t1: float) -> list[KernelEvent]:
        stored = self.stored.events(t0, t1)
        seen = {(e.seq, e.mono_usec) for e in stored if e.seq is not None}
        # ring records the store holds are left out before they are classified (a recorder
        # that ran all along holds them all)
        ring = self.live.events(t0, t1, held=seen)
        return sorted(stored + ring, key=lambda e: e.time)

    def focused_events(self, t0: float, t1: float, budget: EventBudget | None
                       ) -> FocusedEvents:
        return focus(self.events(t0, t1), budget)

    def event(self, event_id: int) -> KernelEvent | None:
        return self.stored.event(event_id)

    def lost_records(self, t0: float, t1: float) -> int:
        return self.stored.lost_records(t0, t1)

    def stacks(self, t0: float, t1: float, cpu: int | None = None,
               diags: list[Diagnostic] | None = None
               ) -> Iterator[tuple[StackSample, float | None]]:
        return self.stored.stacks(t0, t1, cpu, diags)

    def censuses(self, t0: float, t1: float) -> list[MemcgCensus]:
        stored = self.stored.censuses(t0, t1)
        live = [c for c in self.live.censuses(t0, t1)
                if not stored or c.t > stored[-1].t]
        return stored + live

    def churn(self, t0: float, t1: float) -> list[ChurnCount]:
        return self.stored.churn(t0, t1)

    def stat_costs(self, t0: float, t1: float) -> list[StatReadCost]:
        return self.stored.stat_costs(t0, t1) + self.live.stat_costs(t0, t1)

    def cgroup_state(self, t: float) -> CgroupState | None:
        live = self.live.cgroup_state(t)
        stored = self.stored.cgroup_state(t)
        if live is None or live.census is None:
            return stored or live
        return live

    def irq_map_at(self, t: float) -> list[QueueIrq]:
        return self.stored.irq_map_at(t) or self.live.irq_map_at(t)

    def softirqs(self, t0: float, t1: float) -> list[SoftirqSample]:
        stored = self.stored.softirqs(t0, t1)
        live = [s for s in self.live.softirqs(t0, t1) if not stored or s.t > stored[-1].t]
        return stored + live

    def restarts(self, t0: float, t1: float) -> RestartEvidence:
        a, b = self.stored.restarts(t0, t1), self.live.restarts(t0, t1)
        return RestartEvidence(records=a.records + b.records, journal=a.journal + b.journal)

    def pressure(self, t0: float, t1: float) -> PressureSummary | None:
        return self.stored.pressure(t0, t1)

    def statuses(self) -> list[SensorStatus]:
        return self.stored.statuses() + self.live.statuses()

    def close(self) -> None:
        self.stored.close()
