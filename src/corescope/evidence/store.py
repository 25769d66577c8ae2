"""Evidence from a store: what `record` kept, or what `analyze` imported."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from corescope.analysis.event_focus import EventBudget, FocusedEvents
from corescope.evidence.base import (
    CgroupState,
    Coverage,
    JournalRestartEntry,
    RestartEvidence,
    Span,
)
from corescope.model.common import Diagnostic, SensorStatus
from corescope.model.events import KernelEvent, QueueIrq, SoftirqSample
from corescope.runner import Runner
from corescope.store import census as census_store
from corescope.store import events as store_events
from corescope.store import profiles as ring
from corescope.store.db import Store
from corescope.store.imports import read_imports
from corescope.store.meta import is_analyzed
from corescope.store.series import read_matrix, read_samples, time_span
from corescope.timeparse import format_duration

# annotations only: the cgroup, stack and pressure records load with the parts that read
# them, so `cores` does not define them at start-up
if TYPE_CHECKING:
    from corescope.model.cgroups import ChurnCount, MemcgCensus, StatReadCost
    from corescope.model.matrix import CoreMatrix
    from corescope.model.pressure import PressureSummary
    from corescope.model.profiles import StackSample

V2_BASIS = "v2 cgroup.stat: own dying excess over the children's counts"


def _perf_missing() -> str:
    from corescope.sources.perf import PERF_MISSING  # the perf runner loads only for this

    return PERF_MISSING


class StoreEvidence:
    name = "store"

    def __init__(self, store: Store, runner: Runner | None = None) -> None:
        self.store = store
        self.runner = runner or Runner()
        self._coverage: Coverage | None = None
        self._irq_maps: store_events.IrqMaps | None = None

    # --- coverage -----------------------------------------------------------------------

    def coverage(self) -> Coverage:
        if self._coverage is None:
            cores = time_span(self.store)
            ev = store_events.span(self.store)
            cen = census_store.span(self.store)
            n, oldest, newest, _size, _samples = ring.summary(self.store)
            cpus: tuple[int, ...] = ()
            if cores is not None:
                last = read_samples(self.store, cores[1], cores[1])
                cpus = tuple(last[-1].cpus) if last else ()
            self._coverage = Coverage(
                cores=Span(*cores) if cores else None,
                events=Span(*ev) if ev else None,
                censuses=Span(*cen) if cen else None,
                profiles=Span(oldest, newest) if n and oldest is not None
                and newest is not None else None,
                cpus=cpus,
            )
        return self._coverage

    # --- per-core, events, stacks ---------------------------------------------------------

    def core_samples(self, t0: float, t1: float) -> CoreMatrix:
        # a CoreMatrix: arrays decoded block by block, no Python object per sample
        return read_matrix(self.store, t0, t1)

    def events(self, t0: float, t1: float) -> list[KernelEvent]:
        return store_events.read_events(self.store, t0, t1)

    def focused_events(self, t0: float, t1: float, budget: EventBudget | None
                       ) -> FocusedEvents:
        return store_events.read_focused(self.store, t0, t1, budget)

    def event(self, event_id: int) -> KernelEvent | None:
        return store_events.get_event(self.store, event_id)

    def lost_records(self, t0: float, t1: float) -> int:
        return store_events.lost_records(self.store, t0, t1)

    def stacks(self, t0: float, t1: float, cpu: int | None = None,
               diags: list[Diagnostic] | None = None
               ) -> Iterator[tuple[StackSample, float | None]]:
        from corescope.evidence.profile_query import ring_samples  # only when stacks are asked

        return ring_samples(self.store, self.runner, t0, t1, cpu, diags)

    def irq_map_at(self, t: float) -> list[QueueIrq]:
        if self._irq_maps is None:
            self._irq_maps = store_events.IrqMaps(self.store)
        return self._irq_maps.at(t)

    def softirqs(self, t0: float, t1: float) -> list[SoftirqSample]:
        return [SoftirqSample(t, itv, rx, tx)
                for t, itv, rx, tx in store_events.read_softirqs(self.store, t0, t1)]

    # --- cgroups and restarts -------------------------------------------------------------

    def censuses(self, t0: float, t1: float) -> list[MemcgCensus]:
        return census_store.read_censuses(self.store, t0, t1)

    def churn(self, t0: float, t1: float) -> list[ChurnCount]:
        return census_store.read_churn(self.store, t0, t1)

    def stat_costs(self, t0: float, t1: float) -> list[StatReadCost]:
        return census_store.read_stat_costs(self.store, t0, t1)

    def cgroup_state(self, t: float) -> CgroupState | None:
        """The newest stored census at or before `t`, with the locations stored with it."""
        from corescope.model.cgroups import CgroupLayout

        rows = census_store.read_censuses(self.store, float("-inf"), t)
        if not rows:
            return None
        c = rows[-1]
        layout = CgroupLayout(kind=c.layout, memory=c.hierarchy, memory_mount=None)
        locs = census_store.read_locations(self.store, c.t, c.t)
        costs = census_store.read_stat_costs(self.store, float("-inf"), t)
        latest: dict[str, StatReadCost] = {}
        for s in costs:
            latest[s.file] = s
        return CgroupState(layout=layout, census=c, locations=locs,
                           location_basis=V2_BASIS if locs else "",
                           stat_costs=list(latest.values()))

    def restarts(self, t0: float, t1: float) -> RestartEvidence:
        recs = census_store.read_restarts(self.store, t0, t1)
        journal = [JournalRestartEntry(r.t, r.name, r.restarts) for r in recs
                   if r.detail.get("source") == "journal"]
        return RestartEvidence(records=[r for r in recs if r.detail.get("source") != "journal"],
                               journal=journal)

    # --- statuses -------------------------------------------------------------------------

    def pressure(self, t0: float, t1: float) -> PressureSummary | None:
        from corescope.analysis.pressure import summarize
        from corescope.store import pressure as ps

        return summarize(ps.read_psi(self.store, t0, t1), ps.read_schedstat(self.store, t0, t1),
                         ps.read_vmstat(self.store, t0, t1))

    def statuses(self) -> list[SensorStatus]:
        out = [SensorStatus("store", True, f"reading {self.store.directory}"),
               self._ring_status()]
        if is_analyzed(self.store) and self.coverage().events is None:
            # nothing imported was a kernel log: zero events means not looked, not quiet
            why = next((f"{r.file}: {r.reason}" for r in read_imports(self.store)
                        if r.status == "skipped" and r.reason and "kernel log" in r.reason),
                       None)
            out.append(SensorStatus("events", False, "no kernel log among the analyzed "
                                    "artifacts" + (f" ({why})" if why else "")
                                    + ": NIC, OOM and hardware incidents not measured"))
        return out

    def _ring_status(self) -> SensorStatus:
        name = "profile ring"
        perf_here = self.runner.which("perf") is not None
        n, oldest, newest, size, samples = ring.summary(self.store)
        if n == 0 or oldest is None or newest is None:
            if is_analyzed(self.store):
                return SensorStatus(name, False, "no perf script or folded stacks among the "
                                    "analyzed artifacts: stacks not measured")
            why = _perf_missing() if not perf_here else (
                "empty: `corescope record` has not finished a profile chunk yet "
                "(or ran with --no-profile)")
            return SensorStatus(name, False, why)
        age = max(0.0, time.time() - newest)
        detail = (f"{n} chunks, {format_duration(newest - oldest)} of stacks "
                  f"({samples} samples, {size / 1e6:.1f} MB), newest {format_duration(age)} ago")
        if not perf_here and ring.raw_chunks(self.store):
            # symbolised text chunks read without perf; raw perf.data (older stores) does not
            detail += f"; {_perf_missing()} (its perf.data chunks need perf script)"
            return SensorStatus(name, False, detail)
        return SensorStatus(name, True, detail)

    def close(self) -> None:
        self.store.close()
