"""hypervisor_steal: time the hypervisor took from a vCPU (steal), seen per core per second."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Hypothesis
from corescope.investigate.hypotheses.common import fact, mean_of, preceded
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "hypervisor_steal"
STEAL_PCT = 30.0  # a core losing this much of a second to the hypervisor, for 2 s or more


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    if not inv.samples:
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {}, "per-core samples of the window")
    from corescope.analysis.episodes import find_episodes

    eps = find_episodes(inv.samples, STEAL_PCT, 2.0, "steal")
    near = [e for _v, e in preceded(inv)]
    steal_on_hot = max((mean_of(e, "steal") for e in near), default=0.0)
    ev = {"steal_episodes": fact(len(eps), "episodes", f"per-core record (steal >= "
                                 f"{STEAL_PCT:g}% for >= 2 s)"),
          "steal_on_hot_cores_mean": fact(steal_on_hot, "%", "per-core record")}
    if not eps and steal_on_hot < STEAL_PCT:
        return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                          f"a core losing >= {STEAL_PCT:g}% of its time to the hypervisor",
                          "no steal time worth the name")
    worst = max(eps, key=lambda e: e.mean_pct) if eps else None
    ev["worst_steal_pct"] = fact(worst.mean_pct if worst else steal_on_hot, "%",
                                 "per-core record")
    score = round(min(1.0, 0.5 + (worst.mean_pct if worst else steal_on_hot) / 200), 4)
    return Hypothesis(NAME, SUPPORTED, score, ev,
                      "steal falling to zero while the symptoms go on",
                      f"cpu{worst.cpu if worst else '?'} lost "
                      f"{(worst.mean_pct if worst else steal_on_hot):.0f}% to the hypervisor",
                      hot_cpu=worst.cpu if worst else None)
