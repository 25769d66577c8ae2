"""Glue for `report` and `doctor`: read events, per-core samples and interrupt maps from the
store, and hand them to the pure correlation in analysis/correlate."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from corescope.analysis import correlate
from corescope.analysis.episodes import coarse_view, covered_spans, find_episodes
from corescope.analysis.usage import machine_usage, usage_of
from corescope.model.cores import CoreSample, Episode
from corescope.model.events import CorrelationSummary, Incident, KernelEvent, QueueIrq
from corescope.rootfs import Root
from corescope.sources import interrupts as irqs
from corescope.sources.netdev import list_ifaces
from corescope.store import events as store_events
from corescope.store.db import Store
from corescope.store.series import read_samples

# seconds of per-core record kept before the window, for the 60 s view
CONTEXT_S = 60.0
# with no stored interrupt map, the live one stands in only for events this recent
LIVE_MAP_MAX_AGE_S = 600.0


@dataclass
class Timeline:
    incidents: list[Incident]
    summary: CorrelationSummary
    episodes: list[Episode]
    samples: list[CoreSample]
    span: tuple[float, float] | None
    lost_records: int
    irq_maps: dict[int, list[QueueIrq]] = field(default_factory=dict)  # by event index


def live_queue_map(root: Root) -> list[QueueIrq]:
    """The interrupt map now (affinity-based), for when the store holds none."""
    try:
        cur = irqs.parse_proc_interrupts(root.read_text("/proc/interrupts"))
    except OSError:
        return []
    return irqs.live_queue_map(root, cur, None, set(list_ifaces(root)))


class ServingLookup:
    """CPUs serving an event's queue from the interrupt map in force at the event's time."""

    def __init__(self, store: Store | None, root: Root | None) -> None:
        self.store = store
        self.root = root
        self._live: list[QueueIrq] | None = None

    def map_at(self, t: float) -> list[QueueIrq]:
        qmap = store_events.irq_map_at(self.store, t) if self.store is not None else []
        # today's affinity says nothing certain about an old event: use it for recent ones only
        recent = time.time() - t <= LIVE_MAP_MAX_AGE_S
        if not qmap and recent and self.root is not None and self.root.is_live:
            if self._live is None:
                self._live = live_queue_map(self.root)
            qmap = self._live
        return qmap

    def __call__(self, event: KernelEvent) -> frozenset[int] | None:
        if event.iface is None or event.queue is None:
            return None
        return irqs.serving_cpus(self.map_at(event.time), event.iface, event.queue)


def build_timeline(store: Store, t0: float, t1: float, *, root: Root | None = None,
                   window_s: float = correlate.DEFAULT_WINDOW_S,
                   events: list[KernelEvent] | None = None,
                   episodes: list[Episode] | None = None, seed: int = 0,
                   only_incidents: bool = True) -> Timeline:
    evs = events if events is not None else store_events.read_events(store, t0, t1)
    samples = read_samples(store, t0 - window_s - CONTEXT_S, t1 + 1)
    eps = episodes if episodes is not None else find_episodes(samples)
    span = (samples[0].t - samples[0].interval_s, samples[-1].t) if samples else None
    lookup = ServingLookup(store, root)
    incs = correlate.incidents(evs, eps, window_s, serving=lookup,
                               only_incidents=only_incidents)
    summary = correlate.summarize(incs, eps, span, window_s, seed=seed,
                                  covered=covered_spans(samples))
    maps = {i: lookup.map_at(inc.event.time) for i, inc in enumerate(incs)}
    return Timeline(incidents=incs, summary=summary, episodes=eps, samples=samples, span=span,
                    lost_records=store_events.lost_records(store, t0, t1), irq_maps=maps)


def _kernel_pct(d: tuple[int, ...]) -> float:
    return usage_of(-1, d).mode_pct("kernel")


def resolution_view(samples: list[CoreSample], cpu: int, t: float, window_s: float
                    ) -> dict[str, Any]:
    """The same seconds before `t` on `cpu`, at 1 s and as a 30 s / 60 s sampler saw them
    (kernel time = sys + irq + soft, the episode mode), plus the machine-wide view."""
    series = []
    for s in samples:
        if t - window_s < s.t <= t + 0.5 and cpu in s.deltas:
            series.append({
                "t": round(s.t, 3),
                "kernel_pct": round(_kernel_pct(s.deltas[cpu]), 1),
                "machine_kernel_pct": round(machine_usage(s).mode_pct("kernel"), 1),
            })
    # the same definition as `cores`: epoch-aligned monitor windows touching these seconds
    c30, m30 = coarse_view(samples, cpu, t - window_s, t, 30.0, "kernel")
    c60, m60 = coarse_view(samples, cpu, t - window_s, t, 60.0, "kernel")

    def r(x: float) -> float | None:
        return round(x, 1) if series else None

    return {
        "cpu": cpu,
        "series_1s": series,
        "peak_1s_pct": max((p["kernel_pct"] for p in series), default=None),
        "at_30s_pct": r(c30),
        "at_60s_pct": r(c60),
        "machine_peak_1s_pct": max((p["machine_kernel_pct"] for p in series), default=None),
        "machine_at_30s_pct": r(m30),
        "machine_at_60s_pct": r(m60),
    }
