"""zombie_leak_no_harm: dying memcgs growing toward (or past) the threshold, with no hot core
and no incident yet: a warning with the projected crossing."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Hypothesis
from corescope.investigate.hypotheses.common import (
    fact,
    find_walker,
    is_sys_episode,
    real_incidents,
    starvable,
)
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "zombie_leak_no_harm"
WITHIN_S = 7 * 86400.0  # a crossing further away than a week is not worth a warning


def walking_saturations(inv: Investigation) -> list[int]:
    """CPUs saturated in system time whose stacks walk the memcgs, or that have no stacks to
    say otherwise: the leak already costs a core there. A neighbour's kernel work (a backup's
    page-cache reads) whose stacks show no walk is not the leak's harm."""
    from corescope.investigate.hypotheses.zombie_memcg_leak import MIN_WALK_SHARE

    out = []
    for cpu in sorted({e.cpu for e in inv.episodes if is_sys_episode(e)}):
        profiles = [p for p in inv.profiles + inv.episode_profiles if p.cpu == cpu]
        if not any(p.profile.busy_samples for p in profiles):
            out.append(cpu)
            continue
        w = find_walker(profiles, cpu)
        if w is not None and w.share >= MIN_WALK_SHARE:
            out.append(cpu)
    return out


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    z = inv.zombies
    c = z.census if z is not None else None
    if z is None or c is None or c.dying is None:
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {}, "a memcg census")
    g = z.growth
    ev = {"dying": fact(c.dying, "memcgs", "memcg census"),
          "threshold": fact(g.threshold, "memcgs", g.threshold_rule)}
    if g.per_hour is not None:
        ev["growth"] = fact(g.per_hour, "memcgs/hour", f"census ({g.method})")
    if g.projected_threshold_at is not None:
        ev["projected_crossing"] = fact(g.projected_threshold_at, "epoch s", "growth")
    growing = g.per_hour is not None and g.per_hour >= thr.warn_min_per_hour
    soon = g.projected_threshold_at is not None and \
        g.projected_threshold_at - c.t <= WITHIN_S
    harm = [v for v in real_incidents(inv) if starvable(v)] or walking_saturations(inv)
    if harm and (g.crossed or (growing and soon)):
        return Hypothesis(NAME, RULED_OUT, 0.0, ev, "no hot core and no incident",
                          "there is harm already: see zombie_memcg_leak")
    if g.crossed or (growing and soon):
        score = 0.9 if g.crossed else round(0.5 + 0.4 * (1 - (g.projected_threshold_at - c.t)
                                                         / WITHIN_S), 4)
        top = z.suspects[0] if z.suspects and z.suspects[0].score > 0 else None
        return Hypothesis(NAME, SUPPORTED, score, ev,
                          "growth stopping, or a hot core / NIC incident appearing",
                          f"{c.dying} dying memcgs, growing {g.per_hour or 0:.0f}/h"
                          + (", past the threshold" if g.crossed else ""),
                          culprit=top.name if top else None)
    return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                      f"growth of {thr.warn_min_per_hour:g}+/h projecting a crossing within "
                      "a week", "not growing toward the threshold")
