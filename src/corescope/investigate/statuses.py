"""Sensor lines an investigation derives from what it found, beside those the evidence
reported itself: every sensor is either measured or says what was not measured and why."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from corescope.model.common import SensorStatus
from corescope.timeparse import format_duration

if TYPE_CHECKING:
    from corescope.analysis.zombies import ZombieReport
    from corescope.investigate.model import Window
    from corescope.model.cores import CoreSample
    from corescope.model.events import KernelEvent


def derived_statuses(source: str, given: list[SensorStatus], window: Window,
                     samples: Sequence[CoreSample], events: list[KernelEvent], lost: int,
                     zombies: ZombieReport | None, omitted: int = 0) -> list[SensorStatus]:
    """`omitted`: kernel lines of the window counted but not held (the event budget)."""
    names = {s.name for s in given}
    out: list[SensorStatus] = []
    if samples:
        from corescope.analysis.episodes import as_matrix  # numpy: only with samples

        cpus = as_matrix(samples).online_cpus()
        span = samples[-1].t - (samples[0].t - samples[0].interval_s)
        out.append(SensorStatus("cores", True, f"{len(cpus)} CPUs, {len(samples)} samples "
                                f"over {format_duration(span)} ({source})"))
    else:
        out.append(SensorStatus("cores", False, "no per-core samples in the window: /proc/stat "
                                "unreadable and nothing recorded"))
    ring = next((s for s in given if s.name == "kernel ring"), None)
    n_inc = sum(1 for e in events if e.is_incident)
    detail = f"{len(events) + omitted} kernel events in the window, {n_inc} incident lines"
    if lost:
        detail += f"; {lost} kernel log records were lost (overwritten before read)"
    has_log = bool(events) or omitted > 0 or (ring is not None and ring.ok) \
        or source in ("store", "artifacts")
    if "events" not in names:  # the evidence may have said it has no kernel log at all
        out.append(SensorStatus("events", has_log, detail if has_log else
                                "no kernel log read: " + (ring.detail if ring else
                                                          "none stored")))
    if zombies is not None and "memcg_census" not in names:
        c = zombies.census
        if c is None or c.dying is None:
            out.append(SensorStatus("memcg_census", False, "no memcg census in the evidence: "
                                    "zombie memcgs not measured"))
        else:
            out.append(SensorStatus("memcg_census", True, f"{c.hierarchy} memory hierarchy: "
                                    f"{c.kernel_count} memcgs held by the kernel, {c.live} "
                                    f"live, {c.dying} dying ({source} census)"))
    return out
