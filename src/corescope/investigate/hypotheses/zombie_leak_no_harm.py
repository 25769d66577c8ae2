"""zombie_leak_no_harm: dying memcgs growing toward (or past) the threshold, with no hot core
and no incident yet: a warning with the projected crossing."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Declared, Hypothesis
from corescope.investigate.hypotheses.common import fact, leak_source_facts
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "zombie_leak_no_harm"
DECLARED = Declared(
    primary=False, rank=0, leak=True,
    advice="fix the restarts of {culprit} before the count reaches the threshold; watch `corescope "
           "zombies`")
WITHIN_S = 7 * 86400.0  # a crossing further away than a week is not worth a warning


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
    # seconds until the projected crossing (None: no projection)
    left = None if g.projected_threshold_at is None else g.projected_threshold_at - c.t
    soon = left is not None and left <= WITHIN_S
    # "no harm yet" is the other side of zombie_memcg_leak: harm is what that hypothesis
    # supports (a saturated core walking the memcgs, before incidents it can cause), so the
    # two never both stand or both fall; a neighbour's kernel work, a device's own failure
    # or an OOM kill is not the leak's harm
    from corescope.investigate.hypotheses import zombie_memcg_leak

    harm = zombie_memcg_leak.evaluate(inv, thr).verdict == SUPPORTED
    if harm and (g.crossed or (growing and soon)):
        return Hypothesis(NAME, RULED_OUT, 0.0, ev, "no hot core and no incident",
                          "there is harm already: see zombie_memcg_leak")
    if g.crossed or (growing and soon):
        score = 0.9 if g.crossed or left is None else round(0.5 + 0.4 * (1 - left / WITHIN_S), 4)
        source, facts = leak_source_facts(inv)
        ev |= facts
        return Hypothesis(NAME, SUPPORTED, score, ev,
                          "growth stopping, or a hot core / NIC incident appearing",
                          f"{c.dying} dying memcgs, growing {g.per_hour or 0:.0f}/h"
                          + (", past the threshold" if g.crossed else "")
                          + (f"; leaking source {source}" if source else ""),
                          culprit=source)
    return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                      f"growth of {thr.warn_min_per_hour:g}+/h projecting a crossing within "
                      "a week", "not growing toward the threshold")
