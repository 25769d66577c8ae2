"""The JSON form of each model record: where rounding and ISO times happen. Records hold
numbers; `as_json` turns one (or a dict/list holding some, such as a finding's evidence)
into the documented JSON shapes."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from corescope.analysis.zombies import ZombieReport
from corescope.model.cgroups import CgroupLayout, Growth, Location, MemcgCensus, Suspect
from corescope.model.common import Finding, SensorStatus
from corescope.model.cores import Episode
from corescope.model.events import CorrelationSummary, KernelEvent, PrecedingEpisode, QueueIrq
from corescope.timeparse import iso


def _r(x: float | None, n: int) -> float | None:
    return None if x is None else round(x, n)


@singledispatch
def as_json(obj: Any) -> Any:
    """Containers recursively; anything else as it is (already JSON)."""
    if isinstance(obj, dict):
        return {k: as_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [as_json(v) for v in obj]
    return obj


@as_json.register
def _(s: SensorStatus) -> dict[str, Any]:
    return {"ok": s.ok, "detail": s.detail}


@as_json.register
def _(f: Finding) -> dict[str, Any]:
    return {"kind": f.kind, "severity": f.severity, "summary": f.summary,
            "evidence": as_json(f.evidence)}


@as_json.register
def _(e: Episode) -> dict[str, Any]:
    return {
        "cpu": e.cpu,
        "start": round(e.start, 3),
        "end": round(e.end, 3),
        "duration_s": round(e.duration_s, 3),
        "mode": e.mode,
        "threshold_pct": e.threshold_pct,
        "peak_pct": round(e.peak_pct, 2),
        "mean_pct": round(e.mean_pct, 2),
        "machine_avg_pct": round(e.machine_avg_pct, 2),
        "seen_at_30s_pct": round(e.seen_at_30s_pct, 2),
        "seen_at_60s_pct": round(e.seen_at_60s_pct, 2),
        "machine_seen_at_30s_pct": round(e.machine_seen_at_30s_pct, 2),
        "machine_seen_at_60s_pct": round(e.machine_seen_at_60s_pct, 2),
        "samples": e.samples,
        "by_mode": {m: {k: round(v, 2) for k, v in d.items()} for m, d in e.by_mode.items()},
    }


@as_json.register
def _(e: KernelEvent) -> dict[str, Any]:
    return {
        "id": e.id, "time": round(e.time, 6), "time_iso": iso(e.time), "kind": e.kind,
        "driver": e.driver, "device": e.device, "fields": e.fields, "lab": e.lab,
        "raw": e.raw, "mono_usec": e.mono_usec, "seq": e.seq, "level": e.level,
        "source": e.source,
    }


@as_json.register
def _(q: QueueIrq) -> dict[str, Any]:
    return {"iface": q.iface, "queue": q.queue, "irq": q.irq, "name": q.name,
            "direction": q.direction, "cpus": list(q.cpus), "basis": q.basis}


@as_json.register
def _(p: PrecedingEpisode) -> dict[str, Any]:
    return {"cpu": p.cpu, "start": round(p.start, 3), "end": round(p.end, 3),
            "lead_s": round(p.lead_s, 3), "serves_queue": p.serves_queue,
            "peak_pct": _r(p.peak_pct, 2)}


@as_json.register
def _(s: CorrelationSummary) -> dict[str, Any]:
    return {
        "events": s.events,
        "preceded": s.preceded,
        "preceded_fraction": _r(s.preceded_fraction, 4),
        "base_rate": _r(s.base_rate, 4),
        "base_samples": s.base_samples,
        "lift": _r(s.preceded_fraction / s.base_rate, 4)
        if s.preceded_fraction is not None and s.base_rate else None,
        "p_value": _r(s.p_value, 6),
        "median_lead_s": _r(s.median_lead_s, 3),
        "top_cpu": s.top_cpu,
        "top_cpu_count": s.top_cpu_count,
        "serves_queue_fraction": _r(s.serves_queue_fraction, 4),
        "window_s": s.window_s,
    }


@as_json.register
def _(lay: CgroupLayout) -> dict[str, Any]:
    return {"kind": lay.kind, "memory": lay.memory, "memory_mount": lay.memory_mount,
            "memory_mount_root": lay.memory_mount_root, "v2_mount": lay.v2_mount,
            "v1_mounts": dict(lay.v1_mounts)}


@as_json.register
def _(c: MemcgCensus) -> dict[str, Any]:
    return {
        "kernel_count": c.kernel_count, "live": c.live, "dying": c.dying, "source": c.source,
        "hierarchy": c.hierarchy,
        "ratio": round(c.dying / c.live, 2) if c.dying is not None and c.live else None,
        "stable": c.stable, "walk_ms": round(c.walk_ms, 3),
        "proc_cgroups_count": c.proc_cgroups_count, "t": c.t,
    }


@as_json.register
def _(loc: Location) -> dict[str, Any]:
    return {"path": loc.path, "dying": loc.dying, "subtree_dying": loc.subtree_dying,
            "live_descendants": loc.live_descendants}


@as_json.register
def _(g: Growth) -> dict[str, Any]:
    at = g.projected_threshold_at
    return {
        "per_hour": _r(g.per_hour, 2),
        "projected_threshold_at": None if at is None else iso(at),
        "projected_threshold_epoch": at,
        "method": g.method, "points": g.points, "span_s": round(g.span_s, 1),
        "threshold": g.threshold, "threshold_rule": g.threshold_rule, "crossed": g.crossed,
    }


@as_json.register
def _(s: Suspect) -> dict[str, Any]:
    return {"name": s.name, "kind": s.kind, "score": round(s.score, 3),
            "evidence": as_json(s.evidence)}


@as_json.register
def _(z: ZombieReport) -> dict[str, Any]:
    c = z.census
    mem: dict[str, Any] = ({"kernel_count": None, "live": None, "dying": None,
                            "source": "not measured"} if c is None else as_json(c))
    mem["mount"] = z.layout.memory_mount
    return {
        "layout": z.layout.kind,
        "memory": mem,
        "growth": as_json(z.growth),
        "locations": [as_json(loc) for loc in z.locations],
        "location_basis": z.location_basis,
        "suspects": [as_json(s) for s in z.suspects],
        "stat_read_ms": z.stat_read,
        "churn": [{"parent": ch.parent, "created_per_hour": round(ch.created_per_hour, 1),
                   "removed_per_hour": round(ch.removed_per_hour, 1),
                   "created": ch.created, "removed": ch.removed,
                   "active_fraction": round(ch.active_fraction, 3), "method": ch.method}
                  for ch in z.churn[:20]],
        "layout_detail": as_json(z.layout),
        "sensors": {s.name: as_json(s) for s in z.statuses},
        "diagnostics": [str(d) for d in z.diagnostics[:50]],
    }
