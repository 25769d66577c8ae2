"""The JSON contract, built in one place. Every command's `--json` is a view of one
Investigation; each carries `"schema": 1`. Keys documented in docs/json.md (and its schemas,
docs/json/v1/) never disappear."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from corescope.investigate.model import SCHEMA
from corescope.render.records import as_json

if TYPE_CHECKING:  # annotations only: `events --json` needs none of the parts' records
    from corescope.analysis.flame import Profile
    from corescope.evidence.base import Coverage, Span
    from corescope.investigate.diagnosis import Diagnosis, Fact
    from corescope.investigate.model import HotCoreProfile, IncidentView, Investigation, Resolution
    from corescope.model.cores import CoreSample
    from corescope.model.events import KernelEvent


def _r(x: float | None, n: int = 3) -> float | None:
    return None if x is None else round(x, n)


def _median(values: list[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _span(s: Span | None) -> list[float] | None:
    return None if s is None else [round(s.start, 3), round(s.end, 3)]


def coverage_json(c: Coverage) -> dict[str, Any]:
    return {"cores": _span(c.cores), "events": _span(c.events), "censuses": _span(c.censuses),
            "profiles": _span(c.profiles), "cpus": list(c.cpus)}


def sensors_json(inv: Investigation) -> dict[str, Any]:
    return {s.name: as_json(s) for s in inv.statuses}


# --- cores -------------------------------------------------------------------------------------

def _intervals(s: Sequence[CoreSample]) -> list[float]:
    iv = getattr(s, "interval_s", None)  # a CoreMatrix holds them as one array
    return iv.tolist() if iv is not None else [x.interval_s for x in s]


def cores_json(inv: Investigation) -> dict[str, Any]:
    s = inv.samples
    return {
        "schema": SCHEMA,
        "cpus": inv.cpus,
        "interval_s": round(_median(_intervals(s)), 3) if s else None,
        "start": round(s[0].t - s[0].interval_s, 3) if s else None,
        "end": round(s[-1].t, 3) if s else None,
        "samples": len(s),
        "mode": inv.params.mode,
        "threshold_pct": inv.params.threshold_pct,
        "episodes": [as_json(e) for e in inv.episodes],
    }


# --- events ------------------------------------------------------------------------------------

def visible_events(inv: Investigation, kinds: Collection[str] = (),
                   show_all: bool = False) -> list[KernelEvent]:
    if kinds:
        return [e for e in inv.events if e.kind in kinds]
    return inv.events if show_all else [e for e in inv.events if e.kind != "other"]


def events_json(inv: Investigation, kinds: Collection[str] = (), show_all: bool = False
                ) -> dict[str, Any]:
    out = {
        "schema": SCHEMA,
        "events": [as_json(e) for e in visible_events(inv, kinds, show_all)],
        "lost_records": inv.lost_records,
        "source": inv.source,
        "since": round(inv.window.start, 3),
        "until": round(inv.window.end, 3),
    }
    if inv.events_omitted:  # lines counted by kind, not held (investigate's event budget)
        out["omitted"] = dict(sorted(inv.events_omitted.items()))
    return out


# --- report ------------------------------------------------------------------------------------

def resolution_json(r: Resolution) -> dict[str, Any]:
    def one(x: float | None) -> float | None:
        return None if x is None else round(x, 1)

    return {
        "cpu": r.cpu,
        "series_1s": [{"t": round(p.t, 3), "kernel_pct": round(p.kernel_pct, 1),
                       "machine_kernel_pct": round(p.machine_kernel_pct, 1)}
                      for p in r.series_1s],
        "peak_1s_pct": one(r.peak_1s_pct),
        "at_30s_pct": one(r.at_30s_pct),
        "at_60s_pct": one(r.at_60s_pct),
        "machine_peak_1s_pct": one(r.machine_peak_1s_pct),
        "machine_at_30s_pct": one(r.machine_at_30s_pct),
        "machine_at_60s_pct": one(r.machine_at_60s_pct),
    }


def incident_json(inv: Investigation, v: IncidentView) -> dict[str, Any]:
    from corescope.investigate.hypotheses.common import cores_seen_before

    inc = v.incident
    d: dict[str, Any] = {
        "event": as_json(inc.event),
        # false: the per-core record does not reach the correlation window before the event, so
        # an empty preceding_episodes means "not measured", not "no starved core"
        "cores_covered": cores_seen_before(inv, v),
        "preceding_episodes": [as_json(p) for p in inc.preceding],
        "related_events": [as_json(e) for e in inc.related],
        "interrupt_map": [as_json(q) for q in v.interrupt_map],
    }
    if v.resolution is not None:
        d["resolution"] = resolution_json(v.resolution)
    return d


def report_json(inv: Investigation) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "incidents": [incident_json(inv, v) for v in inv.incidents],
        "summary": as_json(inv.correlation),
        "lost_records": inv.lost_records,
        "record_span": None if inv.record_span is None
        else [round(inv.record_span[0], 3), round(inv.record_span[1], 3)],
        "profiles": profiles_json(inv),
        "diagnosis": diagnosis_json(inv.diagnosis),
    }


# --- zombies -----------------------------------------------------------------------------------

ZOMBIE_SENSORS = ("memcg_census", "systemd", "journal", "crictl", "docker", "restarts")
ZOMBIE_FINDINGS = ("zombie_memcg_leak", "memcg_stat_read_slow")


def zombies_json(inv: Investigation) -> dict[str, Any]:
    z = inv.zombies
    if z is None:
        return {"schema": SCHEMA, "memory": None}
    data = as_json(z)
    data["schema"] = SCHEMA
    data["sensors"] = {s.name: as_json(s) for s in inv.statuses
                       if s.name in ZOMBIE_SENSORS or s.name.startswith("restart")}
    data["findings"] = [as_json(f) for f in inv.findings if f.kind in ZOMBIE_FINDINGS]
    return data


# --- profiles ----------------------------------------------------------------------------------

def profile_summary_json(p: Profile, limit: int = 10) -> dict[str, Any]:
    return {
        "samples": p.samples,
        "busy_samples": p.busy_samples,
        "top_processes": [{"comm": s.comm, "samples": s.samples, "pct": round(s.pct, 2)}
                          for s in p.top_processes(limit)],
        "top_functions": [{"name": f.name, "kernel": f.kernel, "self_pct": round(f.self_pct, 2),
                           "total_pct": round(f.total_pct, 2)} for f in p.top_functions(limit)],
    }


# frames of a top stack shown, leaf first (the leaf and its callers say what ran)
STACK_FRAMES = 24


def hot_core_profile_json(h: HotCoreProfile) -> dict[str, Any]:
    """One hot core's stacks: before an incident (`basis` "incident", `event_id` set), over
    a saturation no incident followed (`basis` "episode", `event_id` null: a log without
    times, a hot core that broke nothing yet), or with no per-core record the CPU busiest in
    the kernel over the window (`basis` "stacks": a perf script alone). `top_stacks` and
    `walker` are of the saturated seconds when the profile has them."""
    from corescope.investigate.hypotheses.common import find_walker

    focus = h.during if h.during is not None and h.during.busy_samples else h.profile
    w = find_walker([h], h.cpu)
    return {"cpu": h.cpu, "start": round(h.start, 3), "end": round(h.end, 3),
            "event_id": h.event_id, "event_time": round(h.event_time, 6),
            "basis": h.basis,
            **profile_summary_json(h.profile),
            "top_stacks": [{"comm": s.comm, "samples": s.samples, "pct": round(s.pct, 2),
                            "frames": [{"name": f.symbol, "kernel": f.kernel}
                                       for f in s.frames[:STACK_FRAMES]]}
                           for s in focus.top_stacks(5)],
            "walker": None if w is None else {
                "comm": w.comm, "function": w.function, "walk_samples": w.walk_samples,
                "kernel_samples": w.kernel_samples, "share": round(w.share, 4)},
            "diagnostics": [str(d) for d in h.diagnostics]}


def hot_core_profiles(inv: Investigation) -> list[HotCoreProfile]:
    """Every hot core's stacks the investigation read: before its incidents, else (no
    incident had a hot core before it) over its longest saturations."""
    return [*inv.profiles, *inv.episode_profiles]


def profiles_json(inv: Investigation) -> list[dict[str, Any]]:
    return [hot_core_profile_json(h) for h in hot_core_profiles(inv)]


# --- diagnosis ---------------------------------------------------------------------------------

def _value(v: Any) -> Any:
    return round(v, 4) if isinstance(v, float) else v


def facts_json(facts: dict[str, Fact]) -> dict[str, Any]:
    return {k: {"value": _value(f.value), "unit": f.unit, "source": f.source}
            for k, f in facts.items()}


def diagnosis_json(d: Diagnosis | None) -> dict[str, Any] | None:
    if d is None:
        return None
    v = d.verdict
    verdict: dict[str, Any] = {
        "root_cause": v.root_cause, "culprit": v.culprit, "hot_cpu": v.hot_cpu,
        "walker": None if v.walker is None else {"comm": v.walker[0], "function": v.walker[1]},
        "confidence": round(v.confidence, 3)}
    # additive keys, present only when there is something to say
    if v.benign_events:
        verdict["benign_events"] = list(v.benign_events)
    out = {
        "schema": SCHEMA,
        "verdict": verdict,
        "chain": [{"step": link.step, "summary": link.summary,
                   "evidence": facts_json(link.evidence)} for link in d.chain],
        "hypotheses": [{"name": h.name, "verdict": h.verdict, "score": round(h.score, 3),
                        "summary": h.summary, "evidence": facts_json(h.evidence),
                        "would_change": h.would_change} for h in d.hypotheses],
    }
    if d.node is not None:
        out["node"] = dict(d.node)
    return out


# --- doctor and the whole investigation ------------------------------------------------------

def doctor_json(inv: Investigation, host: str, live: tuple[float, float]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "verdict": "findings" if inv.findings else "healthy",
        "host": host,
        "window": {"start": round(live[0], 3), "end": round(live[1], 3),
                   "since": round(inv.window.start, 3)},
        "sensors": sensors_json(inv),
        "findings": [as_json(f) for f in inv.findings],
        "profiles": profiles_json(inv),
        "diagnosis": diagnosis_json(inv.diagnosis),
    }


def investigation_json(inv: Investigation) -> dict[str, Any]:
    """Everything, as `analyze --json` prints it: each view's contract under its name."""
    return {
        "schema": SCHEMA,
        "source": inv.source,
        "window": {"start": round(inv.window.start, 3), "end": round(inv.window.end, 3)},
        "coverage": coverage_json(inv.coverage),
        "verdict": "findings" if inv.findings else "healthy",
        "sensors": sensors_json(inv),
        "findings": [as_json(f) for f in inv.findings],
        "cores": cores_json(inv),
        "events": events_json(inv),
        "report": report_json(inv),
        "zombies": zombies_json(inv),
        "profiles": profiles_json(inv),
        "diagnosis": diagnosis_json(inv.diagnosis),
        "diagnostics": [str(d) for d in inv.diagnostics[:50]],
    }
