"""The JSON forms of the memory-cgroup records and the zombie report, registered with
`records.as_json` when the first such record is rendered (or when this module is imported)."""

from __future__ import annotations

from typing import Any

from corescope.analysis.zombies import ZombieReport
from corescope.model.cgroups import CgroupLayout, Growth, Location, MemcgCensus, Suspect
from corescope.render.records import _r, as_json
from corescope.timeparse import iso


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
