"""The zombie-memcg part of an investigation: the census against history, growth and its
projection, where the dying memcgs sit, which source leaks them, and the stat-read cost."""

from __future__ import annotations

from corescope.analysis.zombies import (
    ZombieReport,
    aggregate_churn,
    growth,
    locations_from_churn,
    rank_suspects,
    restart_rates,
    stat_cost_summary,
)
from corescope.evidence.base import Evidence, RestartEvidence
from corescope.model.cgroups import DEFAULT_THRESHOLDS, CgroupLayout, Thresholds

CHURN_BASIS = ("v1 has no per-subtree dying count: parents where child cgroups were "
               "removed, with how many (an upper bound on the zombies there)")
NO_CHURN_BASIS = ("v1 has no per-subtree dying count and no churn is stored: run "
                  "`corescope record` to locate by churn")
WATCHED_NO_CHURN_BASIS = ("v1 has no per-subtree dying count, and no child cgroup was "
                          "removed while churn was watched in this window")
NO_LAYOUT = CgroupLayout(kind="none", memory=None, memory_mount=None)


def zombie_report(ev: Evidence, t0: float, t1: float, restarts: RestartEvidence,
                  thresholds: Thresholds = DEFAULT_THRESHOLDS) -> ZombieReport:
    state = ev.cgroup_state(t1)
    current = state.census if state else None
    history = ev.censuses(t0, t1)
    if current is not None and current.boot_id:
        history = [h for h in history if not h.boot_id or h.boot_id == current.boot_id]
    g = growth(current, history, thresholds)
    # churn rows exist only for parents that churned; the censuses say which intervals
    # were watched at all, so the rates divide by the watched time
    watched = [h for h in history if h.churn_interval_s > 0]
    churn = aggregate_churn(ev.churn(t0, t1), sum(h.churn_interval_s for h in watched),
                            len(watched))
    if state is not None and state.locations:
        locations, basis = list(state.locations), state.location_basis
    elif churn:
        locations, basis = locations_from_churn(churn), CHURN_BASIS
    else:
        locations, basis = [], WATCHED_NO_CHURN_BASIS if watched else NO_CHURN_BASIS
    journal = [(j.t, j.unit, j.n_restarts) for j in restarts.journal]
    rates = restart_rates(restarts.records, current.uptime_s if current else None, journal)
    suspects = rank_suspects(g.per_hour, churn, rates)
    stat_read = stat_cost_summary(state.stat_costs if state else [],
                                  ev.stat_costs(float("-inf"), t1), thresholds)
    return ZombieReport(state.layout if state else NO_LAYOUT, current, g, locations, churn,
                        suspects, stat_read, [], list(state.diagnostics) if state else [],
                        basis)
