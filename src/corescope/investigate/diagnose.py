"""diagnose(inv): every hypothesis, the root-cause verdict and the causal chain.

The verdict is the supported root cause with the highest score (ties: the order below, the
incident's own chain first). A leak with no harm, a crash loop and a healthy node are
verdicts only when nothing worse is supported and no incident is left unexplained.
Confidence is the winner's score weighed by how surprising the correlation is: the fraction
of incidents a hot core preceded against the base rate at random instants (1 − p-value),
when there are incidents."""

from __future__ import annotations

import importlib
import statistics
from dataclasses import replace

from corescope.investigate.diagnosis import (
    RULED_OUT,
    SUPPORTED,
    Diagnosis,
    Fact,
    Hypothesis,
    Link,
    Verdict,
)
from corescope.investigate.hypotheses import HYPOTHESIS_MODULES, declared
from corescope.investigate.hypotheses.common import (
    benign_incidents,
    fact,
    healed_by,
    preceded,
    preceded_on,
    real_incidents,
    starvable,
)
from corescope.investigate.model import IncidentView, Investigation
from corescope.model.cgroups import Thresholds
from corescope.model.events import PrecedingEpisode

# What each hypothesis module declares (its DECLARED), gathered once.
_DECLARED = declared()
# root causes that explain incidents, strongest claim first on equal scores; then those that
# stand only when none of these does
PRIMARY = tuple(sorted((n for n, d in _DECLARED.items() if d.primary),
                       key=lambda n: _DECLARED[n].rank))
FALLBACK = tuple(sorted((n for n, d in _DECLARED.items() if not d.primary),
                        key=lambda n: _DECLARED[n].rank))
# root causes whose claim is "a saturated core preceded the incidents": weighed by how
# surprising that correlation is
CORRELATED = tuple(n for n, d in _DECLARED.items() if d.correlated)
LEAKS = tuple(n for n, d in _DECLARED.items() if d.leak)
# the evidence that counts the incidents each root cause accounts for. A cause that explains
# the node's incidents outranks one that is only present (CPU contention or memory stalls
# beside NIC resets a starved core preceded): scores say how sure each claim is, not how
# much of what happened it explains.
EXPLAINS = {n: d.explains for n, d in _DECLARED.items() if d.explains}


def explained(h: Hypothesis) -> int:
    """How many of the window's incidents a hypothesis accounts for (from its evidence)."""
    n = 0
    for key in EXPLAINS.get(h.name, ()):
        f = h.evidence.get(key)
        if f is not None and isinstance(f.value, int | float) and not isinstance(f.value, bool):
            n += int(f.value)
    return n


def evaluate_all(inv: Investigation, thr: Thresholds) -> list[Hypothesis]:
    out = []
    for name in HYPOTHESIS_MODULES:
        out.append(importlib.import_module(name).evaluate(inv, thr))
    return consistent(out)


def consistent(hyps: list[Hypothesis]) -> list[Hypothesis]:
    """The verdicts, made to agree with each other: `healthy` says nothing is wrong, so it
    cannot stand supported beside any supported cause (contention, a crash loop, a leak
    past the threshold...). Each hypothesis is judged alone; this is where they meet."""
    wrong = [h.name for h in hyps if h.verdict == SUPPORTED and h.name != "healthy"]
    if not wrong:
        return hyps
    return [replace(h, verdict=RULED_OUT, score=0.0,
                    would_change=f"{', '.join(wrong)} ruled out",
                    summary=f"not healthy: {', '.join(wrong)} supported"
                    + (f" (alone it read: {h.summary})" if h.summary else ""))
            if h.name == "healthy" and h.verdict == SUPPORTED else h for h in hyps]


def diagnose(inv: Investigation, thr: Thresholds) -> Diagnosis:
    d = _diagnose(inv, thr)
    benign = tuple(_benign_line(inv, v) for v in benign_incidents(inv))
    if benign:
        d = replace(d, verdict=replace(d.verdict, benign_events=benign))
    n = inv.node
    if n is not None and n.narrowed:
        d = replace(d, node={"name": n.name, "basis": n.basis,
                             "nodes_listed": len(n.nodes_listed),
                             "records_of_other_nodes": len(n.dropped)})
    return d


def _benign_line(inv: Investigation, v: IncidentView) -> str:
    from corescope.timeparse import iso

    e = v.incident.event
    where = " ".join(x for x in (e.driver, e.device, e.iface) if x) or "the NIC"
    core = ("a busy core before it cannot cause it" if v.incident.preceding
            else "no starved core")
    return (f"{e.kind} at {iso(e.time)} on {where}: {healed_by(inv, v)}, no hardware "
            f"error, {core}, no repeat")


def _diagnose(inv: Investigation, thr: Thresholds) -> Diagnosis:
    hyps = evaluate_all(inv, thr)
    by = {h.name: h for h in hyps}
    supported = [by[n] for n in PRIMARY if n in by and by[n].verdict == SUPPORTED]
    winner: Hypothesis | None = None
    if real_incidents(inv):
        supported = [h for h in supported if explained(h) > 0] or supported
    if supported:
        winner = max(supported, key=lambda h: (h.score, -PRIMARY.index(h.name)))
    elif not real_incidents(inv):
        # a leak warning, a crash loop or a healthy node explains no incident: with
        # incidents that no cause accounts for, the answer is undetermined (what was seen
        # is still told), not the fallback
        winner = next((by[n] for n in FALLBACK if n in by and by[n].verdict == SUPPORTED),
                      None)
    if winner is None:
        # no cause named, but what was seen is still told: a saturated core before the
        # NIC incidents, whatever ran there
        near = [(v, e) for v, e in preceded(inv) if starvable(v)]
        cpu = near[0][1].cpu if near else None
        chain = _saturation_links(inv, cpu) + _nic_links(inv, cpu) if cpu is not None else []
        verdict = Verdict("undetermined", None, cpu, None, 0.0)
        return Diagnosis(verdict, tuple(chain), tuple(hyps))
    conf = winner.score
    s = inv.correlation
    if winner.name in CORRELATED and s.events and s.p_value is not None:
        conf *= 0.5 + 0.5 * (1.0 - s.p_value)
    crash = by.get("crash_loop")
    culprit = winner.culprit
    if winner.name in LEAKS and culprit is None and crash is not None \
            and crash.verdict == SUPPORTED:
        # the loop that restarts is the leak's source, harm or not
        culprit = crash.culprit
    verdict = Verdict(winner.name, culprit, winner.hot_cpu, winner.walker,
                      round(max(0.0, min(1.0, conf)), 4))
    return Diagnosis(verdict, tuple(chain_of(inv, verdict, by)), tuple(hyps))


def chain_of(inv: Investigation, v: Verdict, by: dict[str, Hypothesis]) -> list[Link]:
    if v.root_cause == "zombie_memcg_leak":
        return _zombie_chain(inv, v, by)
    if v.root_cause == "irq_softirq_saturation":
        return _softirq_chain(inv, v)
    h = by[v.root_cause]
    links = [Link(v.root_cause, h.summary, dict(h.evidence))]
    links += _nic_links(inv, v.hot_cpu) if v.root_cause in ("hardware_fault",) else []
    return links


def _zombie_chain(inv: Investigation, v: Verdict, by: dict[str, Hypothesis]) -> list[Link]:
    z = inv.zombies
    links: list[Link] = []
    if z is not None and z.suspects and v.culprit:
        top = next((s for s in z.suspects if s.name == v.culprit), z.suspects[0])
        e = top.evidence
        ev = {"source": fact(top.name, top.kind, "churn and restarts")}
        for k, unit in (("restarts_per_hour", "restarts/h"), ("removed_per_hour", "cgroups/h"),
                        ("explains_pct_of_growth", "%")):
            if isinstance(e.get(k), int | float):
                ev[k] = fact(e[k], unit, "churn and restarts")
        rate = e.get("restarts_per_hour", e.get("removed_per_hour"))
        links.append(Link("leaking_source", f"{top.name} ({top.kind}) restarts or churns"
                          + (f" {rate:.0f}/h" if isinstance(rate, int | float) else ""), ev))
    if z is not None and z.census is not None:
        g = z.growth
        ev2: dict[str, Fact] = {"dying": fact(z.census.dying, "memcgs", "memcg census"),
                                "live": fact(z.census.live, "memcgs", "memcg census")}
        if g.per_hour is not None:
            ev2["growth"] = fact(g.per_hour, "memcgs/hour", g.method)
        links.append(Link("dying_memcgs", f"{z.census.dying} dying memory cgroups against "
                          f"{z.census.live} live"
                          + (f", growing {g.per_hour:.0f}/h" if g.per_hour else ""), ev2))
    h = by["zombie_memcg_leak"]
    if v.walker is not None:
        share = h.evidence.get("walker_share_of_kernel_samples")
        links.append(Link("walker", f"{v.walker[0]} in {v.walker[1]} on cpu{v.hot_cpu}"
                          + (f" ({share.value:.0%} of its kernel-mode samples)" if share else ""),
                          {k: h.evidence[k] for k in h.evidence if k.startswith(("walker",
                                                                                   "busiest"))}))
    links += _saturation_links(inv, v.hot_cpu)
    links += _nic_links(inv, v.hot_cpu)
    return links


def _saturation_links(inv: Investigation, cpu: int | None) -> list[Link]:
    hot = preceded_on(inv, cpu) if cpu is not None else []
    eps = [e for _v, e in hot] or [e for e in inv.episodes if e.cpu == cpu]
    if not eps:
        return []
    longest = max(eps, key=lambda e: e.duration_s)
    ev = {"cpu": fact(cpu, "cpu", "per-core record"),
          "duration": fact(longest.duration_s, "s", "per-core record"),
          "peak_1s": fact(longest.peak_pct, "%", "per-core record at 1 s"),
          "seen_at_30s": fact(longest.seen_at_30s_pct, "%", "a 30 s sampler"),
          "seen_at_60s": fact(longest.seen_at_60s_pct, "%", "a 60 s sampler"),
          "machine_avg": fact(longest.machine_avg_pct, "%", "machine average"),
          "episodes": fact(len(eps), "episodes", "per-core record")}
    return [Link("core_saturated", f"cpu{cpu} at {longest.mean_pct:.0f}% {longest.mode} time "
                 f"for {longest.duration_s:.1f}s; a 30 s sampler showed "
                 f"{longest.seen_at_30s_pct:.0f}%, 60 s {longest.seen_at_60s_pct:.0f}%, the "
                 f"machine {longest.machine_avg_pct:.0f}%", ev)]


def _nic_links(inv: Investigation, cpu: int | None) -> list[Link]:
    incs = [view for view in real_incidents(inv)
            if view.incident.event.kind.startswith("nic_")]
    if not incs:
        return []
    links = []
    # a saturated core's incidents: those it preceded that starvation can cause (a device's
    # keep-alive watchdog after it is a coincidence, not a link of its chain)
    mine = [view for view in incs if starvable(view)
            and any(p.cpu == cpu for p in view.incident.preceding)] if cpu is not None else incs
    stall = next((view for view in (mine or incs) if view.incident.event.queue is not None),
                 None)
    if stall is not None:
        e = stall.incident.event
        on = _on(stall, cpu)
        served = on.serves_queue if on is not None else None
        links.append(Link("nic_queue_stall",
                          f"{e.iface or e.device or 'the NIC'} queue {e.queue}"
                          + {True: f", served by cpu{cpu}, stalls",
                             False: f", not served by cpu{cpu}, stalls",
                             None: " stalls (queue-to-CPU map unknown)"}[served],
                          {"iface": fact(e.iface, "", "kernel log"),
                           "queue": fact(e.queue, "", "kernel log"),
                           "served_by_hot_cpu": fact(served, "", "interrupt map")}))
    resets = [view for view in (mine or incs)
              if view.incident.event.kind == "nic_reset"
              or any(r.kind == "nic_reset" for r in view.incident.related)]
    leads = [on.lead_s for view in mine if (on := _on(view, cpu)) is not None]
    ev = {"resets": fact(len(resets), "bursts", "kernel log"),
          "incidents": fact(len(mine or incs), "events", "kernel log")}
    if leads:
        ev["median_lead"] = fact(statistics.median(leads), "s", "correlation")
    seen = mine or incs
    # the chain's last step keeps its name (the JSON contract) but says what happened: a
    # stall that no reset followed is not "0 NIC resets"
    what = (f"{len(resets)} NIC reset{'s' if len(resets) != 1 else ''}" if resets else
            f"no NIC reset; {len(seen)} NIC incident{'s' if len(seen) != 1 else ''} ("
            + ", ".join(sorted({view.incident.event.kind for view in seen})) + ")")
    links.append(Link("reset", what
                      + (f", {statistics.median(leads):.1f}s after the core saturated"
                         if leads else ""), ev))
    return links


def _on(view: IncidentView, cpu: int | None) -> PrecedingEpisode | None:
    """The episode on `cpu` before the incident (the nearest when no CPU is named)."""
    if cpu is None:
        return view.incident.nearest
    return min((p for p in view.incident.preceding if p.cpu == cpu),
               key=lambda p: p.lead_s, default=None)


def _softirq_chain(inv: Investigation, v: Verdict) -> list[Link]:
    links = []
    maps = [q for view in inv.incidents for q in view.interrupt_map]
    on = sorted({q.name for q in maps if v.hot_cpu in q.cpus})
    if on:
        links.append(Link("irq_affinity", f"{len(on)} NIC queue IRQs on cpu{v.hot_cpu}",
                          {"queue_irqs": fact(on[:32], "", "interrupt map")}))
    sat = _saturation_links(inv, v.hot_cpu)
    if sat:
        links.append(Link("softirq_saturation", sat[0].summary, sat[0].evidence))
    nic = _nic_links(inv, v.hot_cpu)
    if nic and nic[0].step == "nic_queue_stall":
        links.append(Link("watchdog_timeout", nic[0].summary, nic[0].evidence))
        nic = nic[1:]
    return links + nic
