"""Evidence from the live node, read once when `collect()` is called: per-core samples taken
for a few seconds, the kernel ring, the memory-cgroup census, the stat-read cost, restart
counts from systemd and the container runtimes, and today's interrupt map."""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Iterable, Iterator
from typing import TYPE_CHECKING

from corescope.analysis.event_focus import EventBudget, FocusedEvents, focus
from corescope.evidence.base import (
    CgroupState,
    Coverage,
    JournalRestartEntry,
    RestartEvidence,
    Span,
)
from corescope.evidence.store import V2_BASIS
from corescope.model.cgroups import ChurnCount, MemcgCensus, StatReadCost
from corescope.model.common import Diagnostic, SensorStatus
from corescope.model.cores import CoreSample
from corescope.model.events import KernelEvent, KmsgRecord, QueueIrq, SoftirqSample
from corescope.model.pressure import PressureSummary
from corescope.rootfs import Root
from corescope.runner import Runner

if TYPE_CHECKING:  # the live node has no stacks: the record is named, never made here
    from corescope.model.profiles import StackSample

# today's interrupt affinity says nothing certain about an old event: only recent ones
LIVE_MAP_MAX_AGE_S = 600.0
STAT_PROBE_READS = 5


class LiveEvidence:
    name = "live"

    def __init__(self, root: Root, runner: Runner, *, history_s: float = 24 * 3600.0) -> None:
        self.root = root
        self.runner = runner
        self.history_s = history_s
        self.samples: list[CoreSample] = []
        # the ring's records with their wall times, classified when first asked for: doctor
        # asks only for those the store does not already hold
        self._ring: list[tuple[float, KmsgRecord]] = []
        self._classified: dict[int, KernelEvent] = {}
        self.state: CgroupState | None = None
        self.restart_ev = RestartEvidence()
        self._statuses: list[SensorStatus] = []
        self._irq_map: list[QueueIrq] | None = None
        self.softirq_rows: list[SoftirqSample] = []
        self.sampled: tuple[float, float] | None = None

    # --- reading the node, once -------------------------------------------------------------

    def sample_cores(self, seconds: float) -> None:
        from corescope.sources.frames import has_frames
        from corescope.sources.sampling import sample_cores

        start = time.time()
        soft0 = self._read_softirqs()
        m0 = time.monotonic()
        self.samples = sample_cores(self.root, seconds)
        soft1 = self._read_softirqs()
        m1 = time.monotonic()
        end = time.time()
        if self.samples and has_frames(self.root):  # a replay runs on its own clock
            start = self.samples[0].t - self.samples[0].interval_s
            end = self.samples[-1].t
        self.sampled = (start, end)
        if soft0 is not None and soft1 is not None and m1 > m0:
            from corescope.sources.interrupts import softirq_delta

            d = softirq_delta(soft0, soft1)
            self.softirq_rows = [SoftirqSample(end, m1 - m0, d.get("NET_RX", {}),
                                               d.get("NET_TX", {}))]

    def _read_softirqs(self) -> dict[str, dict[int, int]] | None:
        """/proc/softirqs of the running kernel (a captured tree's copy never moves)."""
        if not self.root.is_live:
            return None
        from corescope.sources.interrupts import parse_softirqs

        try:
            soft, _ = parse_softirqs(self.root.read_text("/proc/softirqs"))
        except OSError:
            return None
        return soft or None

    def read_kernel_ring(self, skew_s: float | None = None) -> None:
        """Read what the ring holds. `skew_s`: kmsg − CLOCK_MONOTONIC as a recorder learned
        it this boot; without it the newest line bounds it from below (as in SkewBound)."""
        from corescope.sources.kmsg_reader import KmsgReader, open_kmsg

        if not self.root.is_live:
            self._statuses.append(SensorStatus("kernel ring", False,
                                               "kernel ring not read (--root replay)"))
            return
        try:
            fd = open_kmsg(self.root, from_end=False)
        except OSError as exc:
            self._statuses.append(SensorStatus(
                "kernel ring", False, f"kernel ring unreadable ({exc.strerror}): needs root "
                "or dmesg_restrict=0"))
            return
        try:
            records = KmsgReader(lambda n: os.read(fd, n)).read_available(max_records=200_000)
        finally:
            os.close(fd)
        self.take_ring(records, skew_s)
        self._statuses.append(SensorStatus("kernel ring", True,
                                           f"read {len(records)} records from the kernel ring"))

    def take_ring(self, records: list[KmsgRecord], skew_s: float | None = None) -> None:
        """The ring's records as read (see read_kernel_ring), placed on the wall clock."""
        from corescope.sources.kmsg_clock import anchor_clock

        if skew_s is None:
            newest = max((r.usec for r in records if r.usec is not None), default=None)
            # a line stamped "after" now proves the kernel's clock ahead; else assume none
            skew_s = 0.0 if newest is None else max(
                0.0, newest / 1e6 - time.clock_gettime(time.CLOCK_MONOTONIC))
        anchor = anchor_clock(skew_s=skew_s)
        # /dev/kmsg always stamps records; one without a clock has no place on a timeline
        self._ring = [(anchor.wall_of(r.usec), r) for r in records if r.usec is not None]
        self._classified = {}

    def _event(self, k: int) -> KernelEvent:
        e = self._classified.get(k)
        if e is None:
            # the classifier (its patterns compiled at import) loads for the first record
            # asked for: none when the store holds the whole ring
            from corescope.analysis.classify import classify_record

            wall, rec = self._ring[k]
            e = self._classified[k] = classify_record(rec, wall)
        return e

    def _joined(self, ks: Iterable[int]) -> list[KernelEvent]:
        """The records at `ks` (in ring order), classified, the lines of one report joined
        into the event of its first line as the saved-log reader does (analysis.reports):
        one machine check is one event here too."""
        from corescope.analysis.reports import join_reports

        return join_reports(self._event(k) for k in ks)

    @property
    def kernel_events(self) -> list[KernelEvent]:
        """Every record of the ring, classified."""
        return self._joined(range(len(self._ring)))

    def read_cgroups(self, now: float | None = None) -> None:
        from corescope.sources import cgroups as cg

        now = time.time() if now is None else now
        layout, diags = cg.read_layout(self.root)
        res = cg.take_census(self.root, layout, now)
        diags += res.diagnostics
        census = res.census
        if census is None:
            why = "; ".join(d.message for d in res.diagnostics if d.source == "census") or \
                "memory controller not readable"
            self._statuses.append(SensorStatus("memcg_census", False,
                                               f"{why}: zombie memcgs not measured"))
        else:
            detail = (f"{census.hierarchy} memory hierarchy at {layout.memory_mount}: "
                      f"{census.kernel_count} memcgs held by the kernel, {census.live} live, "
                      f"{census.dying} dying")
            if self.root.is_live and os.geteuid() != 0:
                detail += " (not root: showing what is readable)"
            self._statuses.append(SensorStatus("memcg_census", True, detail))
        locations = []
        walked = False
        if layout.memory == "v2" and layout.memory_mount:
            from corescope.analysis.zombies import rank_locations

            locations = rank_locations(cg.walk_cgroup_stats(self.root.path(layout.memory_mount)))
            walked = True
        costs, d = cg.probe_stat_read(self.root, layout, STAT_PROBE_READS, now,
                                      census.dying if census else None)
        diags += d
        self.state = CgroupState(layout=layout, census=census, locations=locations,
                                 location_basis=V2_BASIS if walked else "",
                                 stat_costs=list(costs), live_walk=walked, diagnostics=diags)

    def read_restarts(self, now: float | None = None) -> None:
        """systemctl, the journal, crictl and docker describe this machine: asked only when
        the root is the live system, never for a replayed tree."""
        from corescope.sources import units

        now = time.time() if now is None else now
        if not self.root.is_live:
            self._statuses.append(SensorStatus(
                "restarts", False, f"--root {self.root.base} is a captured tree: live "
                "systemctl/crictl/docker not asked"))
            return
        ev = units.collect(self.root, self.runner, now, journal_since=now - self.history_s)
        self._statuses += ev.statuses
        if self.state is not None:
            self.state.diagnostics += ev.diagnostics
        self.restart_ev = RestartEvidence(
            records=list(ev.records),
            journal=[JournalRestartEntry(j.t, j.unit, j.n_restarts) for j in ev.journal])

    def collect(self, seconds: float) -> LiveEvidence:
        """Everything doctor reads from the node."""
        self.sample_cores(seconds)
        self.read_kernel_ring()
        self.read_cgroups()
        self.read_restarts()
        return self

    # --- the Evidence protocol --------------------------------------------------------------

    def coverage(self) -> Coverage:
        cores = None
        if self.samples:
            cores = Span(self.samples[0].t - self.samples[0].interval_s, self.samples[-1].t)
        evs = [wall for wall, _ in self._ring]
        cen = self.state.census if self.state else None
        return Coverage(
            cores=cores,
            events=Span(min(evs), max(evs)) if evs else None,
            censuses=Span(cen.t, cen.t) if cen else None,
            cpus=tuple(self.samples[-1].cpus) if self.samples else (),
        )

    def core_samples(self, t0: float, t1: float) -> list[CoreSample]:
        return [s for s in self.samples if t0 <= s.t <= t1]

    def events(self, t0: float, t1: float,
               held: Collection[tuple[int | None, int | None]] = ()) -> list[KernelEvent]:
        """The ring's events in [t0, t1], but for records whose (seq, usec) is in `held`
        (the store has them): those are neither returned nor classified."""
        return self._joined(k for k, (wall, r) in enumerate(self._ring)
                            if t0 <= wall <= t1 and (r.seq, r.usec) not in held)

    def focused_events(self, t0: float, t1: float, budget: EventBudget | None
                       ) -> FocusedEvents:
        return focus(self.events(t0, t1), budget)

    def event(self, event_id: int) -> KernelEvent | None:
        return None  # live ring records have no stored id

    def lost_records(self, t0: float, t1: float) -> int:
        return 0

    def stacks(self, t0: float, t1: float, cpu: int | None = None,
               diags: list[Diagnostic] | None = None) -> Iterator[tuple[StackSample, float]]:
        return iter(())  # stacks are kept by `record`'s ring, not read live

    def censuses(self, t0: float, t1: float) -> list[MemcgCensus]:
        c = self.state.census if self.state else None
        return [c] if c is not None and t0 <= c.t <= t1 else []

    def churn(self, t0: float, t1: float) -> list[ChurnCount]:
        return []

    def stat_costs(self, t0: float, t1: float) -> list[StatReadCost]:
        return [s for s in (self.state.stat_costs if self.state else []) if t0 <= s.t <= t1]

    def cgroup_state(self, t: float) -> CgroupState | None:
        return self.state

    def irq_map_at(self, t: float) -> list[QueueIrq]:
        if not self.root.is_live or time.time() - t > LIVE_MAP_MAX_AGE_S:
            return []
        if self._irq_map is None:
            from corescope.sources import interrupts as irqs
            from corescope.sources.netdev import list_ifaces

            try:
                cur = irqs.parse_proc_interrupts(self.root.read_text("/proc/interrupts"))
                self._irq_map = irqs.live_queue_map(self.root, cur, None,
                                                    set(list_ifaces(self.root)))
            except OSError:
                self._irq_map = []
        return self._irq_map

    def softirqs(self, t0: float, t1: float) -> list[SoftirqSample]:
        return [s for s in self.softirq_rows if t0 <= s.t <= t1]

    def restarts(self, t0: float, t1: float) -> RestartEvidence:
        return self.restart_ev

    def pressure(self, t0: float, t1: float) -> PressureSummary | None:
        return None

    def statuses(self) -> list[SensorStatus]:
        return list(self._statuses)

    def close(self) -> None:
        pass
