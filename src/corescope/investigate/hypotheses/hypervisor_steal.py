"""hypervisor_steal: time the hypervisor took from a vCPU (steal), seen per core per second.
It explains the NIC stalls that follow steal on a core serving the stalled queue."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Declared, Hypothesis
from corescope.investigate.hypotheses.common import (
    STEAL_PCT,
    after_steal,
    fact,
    mean_of,
    preceded,
    steal_episodes,
)
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "hypervisor_steal"
DECLARED = Declared(
    primary=True, rank=5, explains=("incidents_after_steal",),
    advice="the host does not run this vCPU: move the instance (stop/start) or ask the provider")


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    if not inv.samples:
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {}, "per-core samples of the window")
    eps = steal_episodes(inv)
    near = [e for _v, e in preceded(inv)]
    steal_on_hot = max((mean_of(e, "steal") for e in near), default=0.0)
    stalled = after_steal(inv, eps)
    ev = {"steal_episodes": fact(len(eps), "episodes", f"per-core record (steal >= "
                                 f"{STEAL_PCT:g}% for >= 2 s)"),
          "steal_on_hot_cores_mean": fact(steal_on_hot, "%", "per-core record"),
          "incidents_after_steal": fact(len(stalled), "events", "correlation (steal on a CPU "
                                        "serving the stalled queue)")}
    if not eps and steal_on_hot < STEAL_PCT:
        return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                          f"a core losing >= {STEAL_PCT:g}% of its time to the hypervisor",
                          "no steal time worth the name")
    # the core that matters: the one whose steal preceded the stalls, else the worst
    cpus = {s.cpu for s in eps for v in stalled
            if s.start <= v.incident.event.time
            and s.end >= v.incident.event.time - inv.correlation_window_s}
    pool = [s for s in eps if s.cpu in cpus] or eps
    worst = max(pool, key=lambda e: e.mean_pct) if pool else None
    pct = worst.mean_pct if worst else steal_on_hot
    ev["worst_steal_pct"] = fact(pct, "%", "per-core record")
    score = round(min(1.0, 0.5 + pct / 200), 4)
    return Hypothesis(NAME, SUPPORTED, score, ev,
                      "steal falling to zero while the symptoms go on",
                      f"cpu{worst.cpu if worst else '?'} lost {pct:.0f}% to the hypervisor"
                      + (f" before {len(stalled)} NIC stalls" if stalled else ""),
                      hot_cpu=worst.cpu if worst else None)
