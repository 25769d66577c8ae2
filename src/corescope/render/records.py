"""The JSON form of each model record: where rounding and ISO times happen. Records hold
numbers; `as_json` turns one (or a dict/list holding some, such as a finding's evidence)
into the documented JSON shapes."""

from __future__ import annotations

import importlib
from functools import singledispatch
from typing import Any

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
    late = _LATE.get(type(obj).__module__)
    if late is not None:
        # the first record of a late-registered kind: load its forms, then dispatch again.
        # The import system's module lock makes a second thread wait for the first one's
        # import to finish, so no thread sees the kind before its forms are registered.
        importlib.import_module(late)
        if as_json.dispatch(type(obj)) is not _DEFAULT:
            return as_json(obj)
    return obj


# Records whose JSON forms live in their own module, registered on first use: a command that
# shows no zombie report (`events --file`) neither defines the cgroup records nor their forms.
_LATE = {"corescope.model.cgroups": "corescope.render.records_cgroups",
         "corescope.analysis.zombies": "corescope.render.records_cgroups"}
_DEFAULT = as_json.dispatch(object)


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
