"""Zombie memcg analysis: growth and projection, where they sit, which source leaks them.

Pure functions over model records; nothing here reads the live system.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from corescope.model.cgroups import (
    DEFAULT_THRESHOLDS,
    KUBELET_LOOPING,
    CgroupLayout,
    CgroupStat,
    ChurnCount,
    Growth,
    Location,
    MemcgCensus,
    ParentChurn,
    RestartRecord,
    StatReadCost,
    Suspect,
    Thresholds,
)
from corescope.model.common import Diagnostic, Finding, SensorStatus
from corescope.timeparse import format_duration

MAX_THEIL_SEN_POINTS = 300  # O(n²) pairs: subsample long histories evenly
MIN_HISTORY_POINTS = 3
MIN_HISTORY_SPAN_S = 5.0


# --- growth ---------------------------------------------------------------------------------


def theil_sen_slope(points: Sequence[tuple[float, float]]) -> float | None:
    """Median of pairwise slopes (robust to a cleanup or a burst); None below two distinct
    times."""
    pts = sorted(points)
    if len(pts) > MAX_THEIL_SEN_POINTS:
        step = (len(pts) - 1) / (MAX_THEIL_SEN_POINTS - 1)
        pts = [pts[round(i * step)] for i in range(MAX_THEIL_SEN_POINTS)]
    slopes: list[float] = []
    for i in range(len(pts)):
        ti, yi = pts[i]
        for j in range(i + 1, len(pts)):
            tj, yj = pts[j]
            if tj > ti:
                slopes.append((yj - yi) / (tj - ti))
    if not slopes:
        return None
    slopes.sort()
    n = len(slopes)
    return slopes[n // 2] if n % 2 else (slopes[n // 2 - 1] + slopes[n // 2]) / 2.0


def growth(current: MemcgCensus | None, history: Sequence[MemcgCensus],
           thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Growth:
    """Growth per hour from stored censuses of this boot (Theil–Sen), else since boot
    (dying ÷ uptime); and when the threshold will be (or was) crossed."""
    live = current.live if current else None
    limit, rule = thresholds.limit(live)
    if current is None or current.dying is None:
        return Growth(None, "none", 0, 0.0, limit, rule, False, None)
    same_boot = [c for c in history if c.dying is not None
                 and (not current.boot_id or not c.boot_id or c.boot_id == current.boot_id)]
    if all(abs(c.t - current.t) > 1e-6 for c in same_boot):
        same_boot = [*same_boot, current]
    span = (max(c.t for c in same_boot) - min(c.t for c in same_boot)) if same_boot else 0.0
    per_hour: float | None = None
    method = "none"
    points = len(same_boot)
    if points >= MIN_HISTORY_POINTS and span >= MIN_HISTORY_SPAN_S:
        slope = theil_sen_slope([(c.t, float(c.dying or 0)) for c in same_boot])
        if slope is not None:
            per_hour, method = slope * 3600.0, "theil-sen"
    if per_hour is None and current.uptime_s:
        per_hour, method = current.dying / (current.uptime_s / 3600.0), "since-boot"
        points, span = 1, current.uptime_s
    crossed = current.dying >= limit
    at: float | None = None
    if crossed:
        at = current.t
    elif per_hour is not None and per_hour > 0:
        at = current.t + (limit - current.dying) / per_hour * 3600.0
    return Growth(per_hour, method, points, span, limit, rule, crossed, at)


# --- where ----------------------------------------------------------------------------------


def _parent(path: str) -> str | None:
    if path == "/":
        return None
    head = path.rsplit("/", 1)[0]
    return head or "/"


def rank_locations(stats: dict[str, CgroupStat], top: int = 10) -> list[Location]:
    """v2: each cgroup's own excess of dying descendants over its live children's counts.
    The dying cgroups counted there have this cgroup as their nearest live ancestor; rank
    by excess, deeper first on ties (the deepest cgroup is the most specific answer)."""
    child_sum: dict[str, int] = defaultdict(int)
    for path, st in stats.items():
        p = _parent(path)
        d = st.dying_memory()
        if p is not None and p in stats and d is not None:
            # a live child's subtree count plus nothing for itself (it is live)
            child_sum[p] += d
    out: list[Location] = []
    for path, st in stats.items():
        d = st.dying_memory()
        if d is None:
            continue
        own = d - child_sum.get(path, 0)
        if own > 0:
            live = st.subsys.get("memory")
            out.append(Location(path, own, d, (live - 1) if live is not None
                                else st.nr_descendants))
    out.sort(key=lambda loc: (-loc.dying, -loc.path.count("/"), loc.path))
    return out[:top]


# --- churn and restarts ---------------------------------------------------------------------


def aggregate_churn(rows: Sequence[ChurnCount], span_s: float, intervals: int
                    ) -> list[ParentChurn]:
    """Per parent over the window: totals, rates per hour, and in how many census intervals
    it churned (a crash loop churns in every one)."""
    by: dict[str, list[ChurnCount]] = defaultdict(list)
    for r in rows:
        by[r.parent].append(r)
    if span_s <= 0:  # no census says how long was watched: the rows' own intervals
        span_s = sum({r.t: r.interval_s for r in rows}.values())
    span = max(span_s, 1e-9)
    out: list[ParentChurn] = []
    for parent, rs in by.items():
        created = sum(r.created for r in rs)
        removed = sum(r.removed for r in rs)
        active = sum(1 for r in rs if r.created or r.removed)
        methods = sorted({r.method for r in rs})
        out.append(ParentChurn(
            parent=parent, created=created, removed=removed, span_s=span,
            created_per_hour=created / span * 3600.0, removed_per_hour=removed / span * 3600.0,
            active_fraction=min(1.0, active / intervals) if intervals else 1.0,
            intervals=active, method="+".join(methods),
        ))
    out.sort(key=lambda c: (-c.removed_per_hour, -c.created_per_hour, c.parent))
    return out


@dataclass(frozen=True)
class RestartRate:
    kind: str
    name: str
    restarts: int | None
    per_hour: float | None
    # "observed" (counter delta over the window) | "journal" | "attempt-spacing" (the
    # creation times of the attempts one listing shows) | "since-start" (the counter's
    # own start: a pod's) | "since-boot"
    basis: str
    state: str
    cgroup: str | None
    detail: dict[str, Any] = field(default_factory=dict)


def restart_rates(records: Sequence[RestartRecord], uptime_s: float | None,
                  journal: Sequence[tuple[float, str, int | None]] = ()) -> list[RestartRate]:
    """Restarts per hour per unit/container: the counter's rise over stored snapshots, or
    (one snapshot) its value over the uptime. Journal entries (t, unit, n) add timing."""
    by: dict[tuple[str, str], list[RestartRecord]] = defaultdict(list)
    for r in records:
        by[(r.kind, r.name)].append(r)
    jby: dict[str, list[tuple[float, int | None]]] = defaultdict(list)
    for t, unit, n in journal:
        jby[unit].append((t, n))
    out: list[RestartRate] = []
    for (kind, name), rs in by.items():
        rs = sorted(rs, key=lambda r: r.t)
        last = rs[-1]
        counted = [r for r in rs if r.restarts is not None]
        per_hour: float | None = None
        basis = "none"
        if len(counted) >= 2 and counted[-1].t > counted[0].t:
            rise = (counted[-1].restarts or 0) - (counted[0].restarts or 0)
            if rise < 0:  # counter reset (unit reloaded, pod recreated): count from zero
                rise = counted[-1].restarts or 0
            per_hour = rise / (counted[-1].t - counted[0].t) * 3600.0
            basis = "observed"
        js = jby.get(name, [])
        if len(js) >= 2:
            js.sort()
            span = js[-1][0] - js[0][0]
            if span > 0:
                jr = (len(js) - 1) / span * 3600.0
                if per_hour is None or basis != "observed":
                    per_hour, basis = jr, "journal"
        spaced = _attempt_rate(last)
        if spaced is not None and (per_hour is None or basis not in ("observed", "journal")):
            per_hour, basis = spaced, "attempt-spacing"
        counted_s = _counted_span(last)
        if per_hour is None and last.restarts is not None and counted_s:
            # the counter's own start (a pod's restartCount counts from the pod's start)
            per_hour = last.restarts / (counted_s / 3600.0)
            basis = "since-start"
        if per_hour is None and last.restarts is not None and uptime_s:
            per_hour = last.restarts / (uptime_s / 3600.0)
            basis = "since-boot"
        if not (last.restarts or per_hour) and last.state not in _LOOPING_NO_COUNT:
            continue  # never restarted: not a suspect
        out.append(RestartRate(kind, name, last.restarts, per_hour, basis, last.state,
                               last.cgroup, dict(last.detail)))
    return out


def _attempt_rate(r: RestartRecord) -> float | None:
    """Restarts per hour from the spacing of the attempts one listing shows (`crictl ps -a`
    keeps exited attempts beside the running one): gaps between attempt numbers over the
    seconds between their creation."""
    span, gaps = r.detail.get("attempt_span_s"), r.detail.get("attempt_gaps")
    if not (isinstance(span, int | float) and isinstance(gaps, int)) or isinstance(gaps, bool):
        return None
    if span <= 0 or gaps <= 0:
        return None
    at, ago = r.detail.get("last_attempt_at"), r.detail.get("last_attempt_ago_s")
    if isinstance(at, int | float) and r.t > 0:
        ago = r.t - at
    if not isinstance(ago, int | float) or ago < 0:
        ago = 0.0
    # the newest attempt has run far longer than the loop's own spacing: it stopped looping
    if ago > max(STOPPED_LOOP_S, 10.0 * span / gaps):
        return None
    # the seconds the newest attempt has run so far count too: one quick crash followed
    # by minutes of running is not a restart every few seconds
    return gaps / (span + ago) * 3600.0


# an attempt running this long after the last restarts is not a loop any more
STOPPED_LOOP_S = 3600.0


def _counted_span(r: RestartRecord) -> float | None:
    """Seconds the record's restart counter covers, when its source says: `counted_s` (a
    pod's AGE in `kubectl get pods`) or `counted_since` (its start time, an epoch)."""
    span = r.detail.get("counted_s")
    if span is None and isinstance(since := r.detail.get("counted_since"), int | float):
        span = r.t - since
    if isinstance(span, int | float) and not isinstance(span, bool) and 60.0 <= span < 1e10:
        return float(span)
    return None  # under a minute, a rate would be noise


_LOOPING_STATES = {"auto-restart", "restarting", "CONTAINER_EXITED", "activating",
                   *KUBELET_LOOPING}


# states that say a restart loop even with no count (`docker ps`: "Restarting (1) 4
# seconds ago"; systemd between attempts; the kubelet backing off)
_LOOPING_NO_COUNT = frozenset({"restarting", "auto-restart", "CrashLoopBackOff"})


def _matches(churn_parent: str, rate: RestartRate) -> bool:
    key = rate.cgroup
    if not key:
        return False
    if key.startswith("/"):
        return churn_parent == key or churn_parent.startswith(key + "/")
    leaf = churn_parent.rsplit("/", 1)[-1]
    # CRI pod uid: cgroupfs names "pod<uid>", the systemd driver "...-pod<uid_with_>.slice"
    return key in leaf or key.replace("-", "_") in leaf


def rank_suspects(growth_per_hour: float | None, churn: Sequence[ParentChurn],
                  rates: Sequence[RestartRate], top: int = 10) -> list[Suspect]:
    """Score = how much of the zombie growth a source can explain × its share of all churn
    (or restarts) × how steadily it churns. A source that removes cgroups at least as fast as
    zombies appear, and does so in every interval, is the likeliest leak."""
    g = growth_per_hour if growth_per_hour and growth_per_hour > 0 else None
    total_removed = sum(c.removed_per_hour for c in churn) or 0.0
    total_restarts = sum(r.per_hour or 0.0 for r in rates) or 0.0
    suspects: list[Suspect] = []
    used: set[str] = set()

    def explains(rate: float) -> float:
        return min(1.0, rate / g) if g else 0.0

    for r in sorted(rates, key=lambda r: -(r.per_hour or 0.0)):
        rate = r.per_hour or 0.0
        share = rate / total_restarts if total_restarts else 0.0
        loop = 1.0 if r.state in _LOOPING_STATES else 0.7
        certainty = 1.0 if r.basis in ("observed", "journal") else 0.8
        score = (explains(rate) if g else 0.25) * share * loop * certainty
        ev: dict[str, Any] = {
            "restarts": r.restarts, "restarts_per_hour": round(rate, 2),
            "rate_basis": r.basis, "state": r.state, **r.detail,
        }
        if r.cgroup:
            ev["cgroup"] = r.cgroup
        matched = [c for c in churn if _matches(c.parent, r)]
        if matched:
            best = max(matched, key=lambda c: c.removed_per_hour)
            used.update(c.parent for c in matched)
            cshare = best.removed_per_hour / total_removed if total_removed else 0.0
            score = max(score, _churn_score(best, g, cshare))
            ev["churn"] = _churn_evidence(best, g)
        if g:
            ev["explains_pct_of_growth"] = round(100.0 * explains(rate), 1)
        suspects.append(Suspect(r.name, r.kind, min(1.0, score), ev))
    for c in churn:
        if c.parent in used or (c.removed == 0 and c.created == 0):
            continue
        share = c.removed_per_hour / total_removed if total_removed else 0.0
        suspects.append(Suspect(c.parent, "cgroup-parent", _churn_score(c, g, share),
                                _churn_evidence(c, g)))
    suspects.sort(key=lambda s: (-s.score, s.name))
    return suspects[:top]


def _churn_score(c: ParentChurn, g: float | None, share: float) -> float:
    steady = 0.5 + 0.5 * c.active_fraction
    if not g:
        return 0.25 * share * steady  # churn without growth: not leaking now
    return min(1.0, min(1.0, c.removed_per_hour / g) * share * steady)


def _churn_evidence(c: ParentChurn, g: float | None) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "removed_per_hour": round(c.removed_per_hour, 1),
        "created_per_hour": round(c.created_per_hour, 1),
        "removed": c.removed, "created": c.created, "window_s": round(c.span_s, 1),
        "active_fraction": round(c.active_fraction, 3), "method": c.method,
    }
    if g:
        ev["explains_pct_of_growth"] = round(100.0 * min(1.0, c.removed_per_hour / g), 1)
    return ev


# --- stat read cost -------------------------------------------------------------------------


def stat_cost_summary(current: Sequence[StatReadCost], history: Sequence[StatReadCost],
                      thresholds: Thresholds = DEFAULT_THRESHOLDS) -> dict[str, Any]:
    """Per root stat file: the median now, the first one ever stored, and a flag when it is
    high or has grown since first seen."""
    out: dict[str, Any] = {}
    first: dict[str, StatReadCost] = {}
    for h in sorted(history, key=lambda h: h.t):
        first.setdefault(h.file, h)
    for c in current:
        f = first.get(c.file)
        flag = None
        if c.median_ms >= thresholds.stat_high_ms:
            flag = f"high: {c.median_ms:.1f} ms per read (>= {thresholds.stat_high_ms:g} ms)"
        elif (f is not None and f.median_ms > 0
              and c.median_ms >= thresholds.stat_growth_factor * f.median_ms
              and c.median_ms - f.median_ms >= 1.0):
            flag = (f"grown {c.median_ms / f.median_ms:.1f}x since first seen "
                    f"({f.median_ms:.3f} -> {c.median_ms:.3f} ms)")
        out[c.file] = {
            "median": round(c.median_ms, 4), "max": round(c.max_ms, 4), "reads": c.reads,
            "first_seen": round(f.median_ms, 4) if f else None,
            "first_seen_t": f.t if f else None, "flag": flag,
        }
    return out


# --- report ---------------------------------------------------------------------------------


@dataclass
class ZombieReport:
    layout: CgroupLayout
    census: MemcgCensus | None
    growth: Growth
    locations: list[Location]
    churn: list[ParentChurn]
    suspects: list[Suspect]
    stat_read: dict[str, Any]
    statuses: list[SensorStatus] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    location_basis: str = ""


def locations_from_churn(churn: Sequence[ParentChurn], top: int = 10) -> list[Location]:
    """v1 has no per-subtree dying count: where child cgroups were removed is where dying
    ones can sit. `dying` is the number removed there (an upper bound on its zombies)."""
    return [Location(c.parent, c.removed, c.removed, None) for c in churn if c.removed][:top]


ADVICE: tuple[str, ...] = (
    "Stop the source first: disable or fix the crash-looping unit or container named in "
    "the suspects (e.g. `systemctl disable --now UNIT`). Caveat: make sure nothing needs "
    "it; every other remedy below only clears the backlog and the count grows back.",
    "Delete the files whose page cache pins the dying memcgs (logs, temp or state files the "
    "looping workload wrote). Caveat: only files nothing still needs; memcgs pinned by "
    "shared files, shmem or mapped pages stay.",
    "`sync; echo 1 > /proc/sys/vm/drop_caches` frees clean page cache (2 or 3 also frees "
    "dentries and inodes, which pin some memcgs). Caveat: machine-wide; evicts useful "
    "cache and causes a burst of I/O afterwards; dirty, mapped and shmem pages are not freed.",
    "cgroup v1: have the runtime write 0 to `memory.force_empty` of a cgroup before removing "
    "it. Caveat: only works on live cgroups, not on ones already dying, and it is a "
    "synchronous reclaim that can stall the caller.",
    "cgroup v2 (5.19+): `echo SIZE > memory.reclaim` in the parent of the dying cgroups "
    "reclaims their charged pages. Caveat: it also reclaims from the live siblings under "
    "that parent, which may hurt their performance.",
    "A reboot clears every zombie. Caveat: they come back at the same rate unless the "
    "source is stopped (in the incident, about a week later).",
    "corescope reports; it never runs any of these on its own.",
)


def zombie_finding(report: ZombieReport, thresholds: Thresholds = DEFAULT_THRESHOLDS
                   ) -> Finding | None:
    """`zombie_memcg_leak` when the threshold is crossed (critical), or when stored growth
    is fast and projects a crossing soon (warning)."""
    c, g = report.census, report.growth
    if c is None or c.dying is None:
        return None
    severity: str | None = None
    if g.crossed:
        severity = "critical"
        summary = (f"{c.dying} dying memory cgroups held by the kernel against {c.live} live "
                   f"({g.threshold_rule})")
    elif (g.method == "theil-sen" and g.per_hour is not None
          and g.per_hour >= thresholds.warn_min_per_hour
          and g.projected_threshold_at is not None
          and g.projected_threshold_at - c.t <= thresholds.warn_within_s):
        severity = "warning"
        eta = format_duration(max(0.0, g.projected_threshold_at - c.t))
        summary = (f"dying memory cgroups grow {g.per_hour:.0f}/h ({c.dying} now, {c.live} "
                   f"live); {g.threshold_rule} in about {eta}")
    if severity is None:
        return None
    top = report.suspects[0] if report.suspects else None
    if top is not None and top.score > 0:
        summary += f"; top suspect {top.kind} {top.name}"
    return Finding(
        kind="zombie_memcg_leak", severity=severity, summary=summary,
        evidence={
            "layout": report.layout.kind,
            "memory": c,
            "growth": g,
            "locations": list(report.locations[:5]),
            "suspects": list(report.suspects[:5]),
            "stat_read_ms": report.stat_read,
            "advice": list(ADVICE),
        },
    )


def stat_cost_finding(report: ZombieReport) -> Finding | None:
    flagged = {f: v for f, v in report.stat_read.items() if v.get("flag")}
    if not flagged:
        return None
    words = "; ".join(f"{f}: {v['flag']}" for f, v in flagged.items())
    return Finding(
        kind="memcg_stat_read_slow", severity="warning",
        summary=f"reading the root memory stats is slow ({words}); kubelet/cAdvisor repeat "
        "this read every 10-15 s, and the memcg walk behind it visits dying cgroups",
        evidence={"stat_read_ms": report.stat_read,
                  "dying": report.census.dying if report.census else None},
    )
