"""Doctor check for zombie memory cgroups, and the report `corescope zombies` shows.

It counts memcgs now, reads the stored census history for growth and churn, asks systemd and
the container runtimes about restarts, times the root memory stat read, and turns that into
a `zombie_memcg_leak` finding with advice. It never acts on its own.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from corescope.analysis.zombies import (
    ZombieReport,
    aggregate_churn,
    growth,
    locations_from_churn,
    rank_locations,
    rank_suspects,
    restart_rates,
    stat_cost_finding,
    stat_cost_summary,
    zombie_finding,
)
from corescope.checks.base import CheckResult, DoctorContext
from corescope.model.cgroups import (
    DEFAULT_THRESHOLDS,
    ChurnCount,
    MemcgCensus,
    RestartRecord,
    Thresholds,
)
from corescope.model.common import SensorStatus
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sources import cgroups as cg
from corescope.sources import units
from corescope.store import census as census_store
from corescope.store.db import Store

DEFAULT_WINDOW_S = 24 * 3600.0


def build_report(root: Root, runner: Runner, store: Store | None, now: float | None = None,
                 thresholds: Thresholds = DEFAULT_THRESHOLDS, window_s: float = DEFAULT_WINDOW_S,
                 extra_history: Sequence[MemcgCensus] = (),
                 extra_churn: Sequence[ChurnCount] = (),
                 extra_restarts: Sequence[RestartRecord] = (),
                 probe_reads: int = 5, ask_tools: bool | None = None) -> ZombieReport:
    """Everything `zombies` and `doctor` show, from the live system plus the store.
    `ask_tools` (systemctl, crictl, docker) defaults to whether `root` is the live system:
    those tools describe this machine, not a replayed tree."""
    now = time.time() if now is None else now
    layout, diags = cg.read_layout(root)
    res = cg.take_census(root, layout, now)
    diags += res.diagnostics
    current = res.census
    statuses: list[SensorStatus] = []
    if current is None:
        why = "; ".join(d.message for d in res.diagnostics if d.source == "census") or \
            "memory controller not readable"
        statuses.append(SensorStatus("memcg_census", False, f"{why}: zombie memcgs not "
                                     "measured"))
    else:
        detail = (f"{current.hierarchy} memory hierarchy at {layout.memory_mount}: "
                  f"{current.kernel_count} memcgs held by the kernel, {current.live} live, "
                  f"{current.dying} dying")
        if not root.is_live or os.geteuid() == 0:
            statuses.append(SensorStatus("memcg_census", True, detail))
        else:
            statuses.append(SensorStatus("memcg_census", True, detail + " (not root: showing "
                                         "what is readable)"))

    history: list[MemcgCensus] = list(extra_history)
    churn_rows: list[ChurnCount] = list(extra_churn)
    stat_hist = []
    restarts: list[RestartRecord] = list(extra_restarts)
    if store is not None:
        t0 = now - window_s
        history = census_store.read_censuses(store, t0, now) + history
        churn_rows = census_store.read_churn(store, t0, now) + churn_rows
        stat_hist = census_store.read_stat_costs(store, 0.0, now)
        restarts = census_store.read_restarts(store, t0, now) + restarts
    if current is not None and current.boot_id:
        history = [h for h in history if not h.boot_id or h.boot_id == current.boot_id]
    g = growth(current, history, thresholds)

    # churn rows exist only for parents that churned; the censuses say which intervals
    # were watched at all, so the rates divide by the watched time
    watched = [h for h in history if h.churn_interval_s > 0]
    churn = aggregate_churn(churn_rows, sum(h.churn_interval_s for h in watched), len(watched))

    locations = []
    basis = ""
    if layout.memory == "v2" and layout.memory_mount:
        locations = rank_locations(cg.walk_cgroup_stats(root.path(layout.memory_mount)))
        basis = "v2 cgroup.stat: own dying excess over the children's counts"
    elif churn:
        locations = locations_from_churn(churn)
        basis = ("v1 has no per-subtree dying count: parents where child cgroups were "
                 "removed, with how many (an upper bound on the zombies there)")
    else:
        basis = ("v1 has no per-subtree dying count and no churn is stored: run "
                 "`corescope record` to locate by churn")

    journal: list[tuple[float, str, int | None]] = []
    if ask_tools is None:
        ask_tools = root.is_live
        if not ask_tools:
            statuses.append(SensorStatus("restarts", False, f"--root {root.base} is a "
                                         "captured tree: live systemctl/crictl/docker not "
                                         "asked"))
    if ask_tools:
        ev = units.collect(root, runner, now, journal_since=now - window_s)
        statuses += ev.statuses
        diags += ev.diagnostics
        restarts += ev.records
        journal = [(j.t, j.unit, j.n_restarts) for j in ev.journal]
    rates = restart_rates(restarts, current.uptime_s if current else None, journal)
    suspects = rank_suspects(g.per_hour, churn, rates)

    costs, d = cg.probe_stat_read(root, layout, probe_reads, now,
                                  current.dying if current else None)
    diags += d
    stat_read = stat_cost_summary(costs, stat_hist, thresholds)
    return ZombieReport(layout, current, g, locations, churn, suspects, stat_read, statuses,
                        diags, basis)


def check(ctx: DoctorContext) -> CheckResult:
    # the stored history doctor looks at is the user's --since window
    report = build_report(ctx.root, ctx.runner, ctx.store, now=ctx.end,
                          window_s=max(ctx.end - ctx.since, 0.0))
    ctx.shared["zombies"] = report
    result = CheckResult(sensors=list(report.statuses))
    for f in (zombie_finding(report), stat_cost_finding(report)):
        if f is not None:
            result.findings.append(f)
    return result
