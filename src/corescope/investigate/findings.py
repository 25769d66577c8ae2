"""Findings: what an investigation found that someone should look at, most severe first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corescope.model.common import Finding
from corescope.timeparse import iso

if TYPE_CHECKING:
    from corescope.investigate.model import Investigation
    from corescope.model.cgroups import Thresholds
    from corescope.model.cores import Episode
    from corescope.model.events import Incident

# ENA resets a queue whose TX completions stall for 5 s: an episode that long is critical.
CRITICAL_S = 5.0
CRITICAL_EVENTS = frozenset({"nic_tx_stall", "nic_reset", "nic_tx_timeout",
                             "nic_keepalive_timeout", "soft_lockup", "hard_lockup",
                             "rcu_stall", "hung_task"})
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


def episode_finding(e: Episode) -> Finding:
    return Finding(
        kind="hot_core_episode",
        severity="critical" if e.duration_s >= CRITICAL_S else "warning",
        summary=(
            f"cpu{e.cpu} at {e.mean_pct:.0f}% {e.mode} time for {e.duration_s:.1f}s from "
            f"{iso(e.start)}, while the machine averaged {e.machine_avg_pct:.0f}% and a 30 s "
            f"monitor would have shown {e.seen_at_30s_pct:.0f}% for that core"
        ),
        evidence={"episode": e},
    )


def incident_finding(inc: Incident) -> Finding:
    e = inc.event
    where = " ".join(x for x in (e.driver, e.device, e.iface) if x)
    q = f" queue {e.queue}" if e.queue is not None else ""
    lab = " [lab]" if e.lab else ""
    near = inc.nearest
    if near is None:
        return Finding(
            kind="kernel_event",
            severity="critical" if e.kind in CRITICAL_EVENTS else "warning",
            summary=f"{e.kind}{lab} at {iso(e.time)} on {where or 'the kernel'}{q}: {e.raw[:120]}",
            evidence={"event": e, "related": len(inc.related)},
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
        evidence={"event": e, "preceding_episodes": list(inc.preceding)},
    )


def lab_only(inc: Incident) -> bool:
    """A lab line (corescope-lab) is classified like a real one, but on its own it is not a
    finding: the marker exists so that a node's log never misleads anyone later. It is one
    when a hot core preceded it, which is the lab's whole reproduction."""
    return inc.event.lab and not inc.preceding


def findings(inv: Investigation, thresholds: Thresholds | None) -> list[Finding]:
    """`thresholds` judge the zombie report; None only when the investigation has none."""
    out = [episode_finding(e) for e in inv.episodes]
    out += [incident_finding(v.incident) for v in inv.incidents if not lab_only(v.incident)]
    if inv.zombies is not None:
        from corescope.analysis.zombies import stat_cost_finding, zombie_finding
        from corescope.model.cgroups import DEFAULT_THRESHOLDS

        thresholds = thresholds or DEFAULT_THRESHOLDS

        out += [f for f in (zombie_finding(inv.zombies, thresholds),
                            stat_cost_finding(inv.zombies)) if f is not None]
    out.sort(key=lambda f: SEVERITY_ORDER.get(f.severity, 3))
    return out
