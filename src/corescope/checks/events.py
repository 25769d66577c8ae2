"""Doctor check: kernel events in the window (stored, plus the kernel's own ring when it can
be read), and `event_after_hot_core` when a saturated core preceded one."""

from __future__ import annotations

import os

from corescope.analysis import correlate
from corescope.analysis.classify import classify_record
from corescope.analysis.episodes import find_episodes
from corescope.checks.base import CheckResult, DoctorContext
from corescope.incidents import ServingLookup
from corescope.model.common import Finding, SensorStatus
from corescope.model.cores import Episode
from corescope.model.events import Incident, KernelEvent
from corescope.sources.kmsg import KmsgReader, anchor_clock, open_kmsg
from corescope.store import events as store_events
from corescope.store.series import read_samples
from corescope.timeparse import iso

_CRITICAL = {"nic_tx_stall", "nic_reset", "nic_tx_timeout", "nic_keepalive_timeout",
             "soft_lockup", "hard_lockup", "rcu_stall", "hung_task"}


def ring_events(ctx: DoctorContext) -> tuple[list[KernelEvent], str]:
    """Every record the kernel still holds, classified (doctor works without a recorder)."""
    if not ctx.root.is_live:
        return [], "kernel ring not read (--root replay)"
    try:
        fd = open_kmsg(ctx.root, from_end=False)
    except OSError as exc:
        return [], f"kernel ring unreadable ({exc.strerror}): needs root or dmesg_restrict=0"
    try:
        reader = KmsgReader(lambda n: os.read(fd, n))
        records = reader.read_available(max_records=200_000)
    finally:
        os.close(fd)
    anchor = anchor_clock()
    return [classify_record(r, anchor.wall_of(r.usec or 0)) for r in records], \
        f"read {len(records)} records from the kernel ring"


def _episodes(ctx: DoctorContext) -> list[Episode]:
    eps = ctx.shared.get("episodes")
    if isinstance(eps, list):
        return eps
    if ctx.store is not None:
        return find_episodes(read_samples(ctx.store, ctx.since - correlate.DEFAULT_WINDOW_S,
                                          ctx.end + 1))
    return []


def incident_finding(inc: Incident) -> Finding:
    e = inc.event
    where = " ".join(x for x in (e.driver, e.device, e.iface) if x)
    q = f" queue {e.queue}" if e.queue is not None else ""
    lab = " [lab]" if e.lab else ""
    near = inc.nearest
    if near is None:
        return Finding(
            kind="kernel_event",
            severity="critical" if e.kind in _CRITICAL else "warning",
            summary=f"{e.kind}{lab} at {iso(e.time)} on {where or 'the kernel'}{q}: {e.raw[:120]}",
            evidence={"event": e.to_json(), "related": len(inc.related)},
        )
    serves = {True: "which serves this queue's IRQ", False: "which does not serve this "
              "queue's IRQ", None: "(queue IRQ mapping unknown)"}[near.serves_queue]
    return Finding(
        kind="event_after_hot_core",
        severity="critical",
        summary=(f"{e.kind}{lab} at {iso(e.time)} on {where or 'the kernel'}{q} came "
                 f"{near.lead_s:.1f}s after cpu{near.cpu} was saturated "
                 f"({near.end - near.start:.1f}s episode) {serves}: the event is likely the "
                 "victim of a starved core, not a network fault"),
        evidence={"event": e.to_json(),
                  "preceding_episodes": [p.to_json() for p in inc.preceding]},
    )


def check(ctx: DoctorContext) -> CheckResult:
    result = CheckResult()
    stored = (store_events.read_events(ctx.store, ctx.since, ctx.end + 1)
              if ctx.store is not None else [])
    ring, ring_note = ring_events(ctx)
    seen = {(e.seq, e.mono_usec) for e in stored if e.seq is not None}
    events = stored + [e for e in ring if ctx.since <= e.time <= ctx.end + 1
                       and (e.seq, e.mono_usec) not in seen]
    lost = store_events.lost_records(ctx.store, ctx.since, ctx.end + 1) if ctx.store else 0
    n_inc = sum(1 for e in events if e.is_incident)
    detail = (f"{len(stored)} stored events since {iso(ctx.since)}; {ring_note}; "
              f"{n_inc} incident lines")
    if lost:
        detail += f"; {lost} kernel log records were lost (overwritten before read)"
    result.sensors.append(SensorStatus("events", bool(stored) or bool(ring), detail))
    episodes = _episodes(ctx)
    lookup = ServingLookup(ctx.store, ctx.root)
    incs = correlate.incidents(events, episodes, serving=lookup)
    ctx.shared["incidents"] = incs
    # A lab line (corescope-lab) is classified like a real one, but on its own it is not a
    # finding: the marker exists so that a node's log never misleads anyone later. It is one
    # when a hot core preceded it, which is the lab's whole reproduction.
    lab_only = [i for i in incs if i.event.lab and not i.preceding]
    if lab_only:
        result.sensors[-1] = SensorStatus(
            "events", result.sensors[-1].ok,
            result.sensors[-1].detail + f"; {len(lab_only)} corescope-lab incidents without a "
            "preceding hot core (lab lines, not counted as findings)")
    result.findings.extend(incident_finding(i) for i in incs if i not in lab_only)
    return result
