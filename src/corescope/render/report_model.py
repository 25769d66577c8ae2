"""The data the incident page draws, laid out from an Investigation (issue 8's one picture)
and, when given, a diagnosis (issue 9's verdict, chain and hypotheses).

Nothing here decides anything about the incident: it rounds, packs and bounds what the
Investigation found so that one HTML file can carry a 96-CPU hour. Two things are read
from the evidence besides the Investigation itself, because a page needs pictures the
investigation does not: the flame graphs a click opens (per incident, per minute of each
hot CPU, and the baseline) and the zombie census series for the trend.

Size bounds (a 96-CPU hour stays under 5 MB): the heatmap is one byte per core-second,
base64; every flame graph is cut to its heaviest `max_nodes` frames."""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from corescope.analysis.flame import Profile, diff_folded
from corescope.analysis.usage import mode_ticks
from corescope.investigate.flame import found_baseline
from corescope.model.matrix import CoreMatrix
from corescope.render.flamedata import flame_data
from corescope.render.json_contract import profiles_json
from corescope.render.records import as_json

if TYPE_CHECKING:
    from corescope.evidence.profiles import ProfileSource

NO_DATA = 255  # heatmap byte for "no sample this second"
NO_BASELINE = "no profile before the window"  # a flame shown without a diff says why
PAGE_SCHEMA = 1


@dataclass(frozen=True)
class Limits:
    incident_flames: int = 8  # incidents that get their own "before" flame (and a diff)
    hot_cpus: int = 2  # CPUs that get one flame per minute of the window
    column_s: float = 60.0  # the per-CPU flame columns
    before_s: float = 120.0  # the rewind before an incident
    hot_core_s: float = 180.0  # the hot-core chart: this long before the first incident
    baseline_gap_s: float = 600.0  # the baseline ends this long before the rewind starts
    max_nodes: int = 1500  # per incident flame
    column_nodes: int = 400  # per per-minute flame
    max_events: int = 2000  # markers and list rows


def _r(x: float | None, n: int = 1) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return round(x, n)


# ─── heatmap ────────────────────────────────────────────────────────────────────────────

def heatmap(samples: Sequence[Any], cpus: list[int], mode: str, start: float,
            end: float) -> dict[str, Any]:
    """cores × seconds of `mode` %, one byte per cell (NO_DATA where a CPU has no sample),
    plus the machine-average row (sum of counters, as mpstat's `all`). Vectorised over the
    CoreMatrix of the samples: a 96-CPU hour is one numpy pass."""
    m = samples if isinstance(samples, CoreMatrix) else CoreMatrix.from_samples(samples)
    step = float(np.median(m.interval_s)) if len(m) else 1.0
    step = step if step > 0 else 1.0
    t0 = math.floor(start)
    ncol = max(1, math.ceil((end - t0) / step))
    grid = np.full((len(cpus), ncol), NO_DATA, dtype=np.uint8)
    machine = np.full(ncol, NO_DATA, dtype=np.uint8)
    if len(m):
        itv_t, (part_t,) = mode_ticks(m.ticks, (mode,))
        itv, part = itv_t.astype(np.float64), part_t.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            pct = np.where(itv > 0, 100.0 * part / itv, 0.0)
            mpct = np.where(itv.sum(axis=1) > 0,
                            100.0 * part.sum(axis=1) / itv.sum(axis=1), 0.0)
        col = np.floor((m.t - m.interval_s / 2 - t0) / step).astype(np.int64)
        ok = (col >= 0) & (col < ncol)
        cells = np.clip(np.rint(pct), 0, 100).astype(np.uint8)
        row_of = {c: i for i, c in enumerate(cpus)}
        for j, c in enumerate(m.cpus.tolist()):
            r = row_of.get(c)
            if r is None:
                continue
            sel = ok & m.present[:, j]
            grid[r, col[sel]] = cells[sel, j]
        machine[col[ok]] = np.clip(np.rint(mpct[ok]), 0, 100).astype(np.uint8)
    return {"start": t0, "step_s": step, "columns": ncol, "cpus": cpus, "mode": mode,
            "cells": base64.b64encode(grid.tobytes()).decode(),
            "machine": base64.b64encode(machine.tobytes()).decode(), "no_data": NO_DATA,
            "_grid": grid, "_machine": machine}


# ─── flames ─────────────────────────────────────────────────────────────────────────────

def flame_entry(fid: str, kind: str, cpu: int | None, lo: float, hi: float, prof: Profile,
           max_nodes: int, baseline: Profile | None = None, note: str = "",
           **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": fid, "kind": kind, "cpu": cpu, "start": _r(lo, 3),
                           "end": _r(hi, 3), "samples": prof.samples,
                           "busy": prof.busy_samples,
                           "data": flame_data(prof.folded(), max_nodes=max_nodes), **extra}
    if baseline is not None:
        out["diff"] = flame_data(diff_folded(prof, baseline), diff=True, max_nodes=max_nodes)
        out["baseline"] = {"samples": baseline.samples, "note": note}
    return out


# (sample, wall time; None for folded stacks, which have no time)
StacksFn = Callable[[float, float, int | None], Iterable[tuple[Any, float | None]]]


def _column_flames(stacks: StacksFn, cpu: int, start: float, end: float, col_s: float,
                   max_nodes: int) -> list[dict[str, Any]]:
    """One flame per `col_s` column of `cpu`, from one pass over its stacks."""
    t0 = math.floor(start / col_s) * col_s
    cols: dict[int, Profile] = {}
    for sample, wall in stacks(start, end, cpu):
        if wall is None:  # a folded stack: no time to place it in a column
            continue
        k = int((wall - t0) // col_s)
        prof = cols.get(k)
        if prof is None:
            prof = cols[k] = Profile()
        prof.add(sample)
    return [flame_entry(f"cpu{cpu}-col{k}", "column", cpu, t0 + k * col_s, t0 + (k + 1) * col_s,
                   prof, max_nodes)
            for k, prof in sorted(cols.items()) if prof.busy_samples]


# ─── the page ───────────────────────────────────────────────────────────────────────────

def _event(e: Any) -> dict[str, Any]:
    return {"id": e.id, "t": _r(e.time, 3), "kind": e.kind, "driver": e.driver,
            "device": e.device, "iface": e.iface, "queue": e.queue, "lab": e.lab,
            "incident": e.is_incident,
            "raw": e.raw[:500]}


def _grid_row(hm: dict[str, Any], grid: np.ndarray, cpu: int) -> np.ndarray | None:
    try:
        return grid[hm["cpus"].index(cpu)]
    except ValueError:
        return None


def _series(hm: dict[str, Any], row: np.ndarray, lo: float, hi: float) -> list[list[float]]:
    t0, step = hm["start"], hm["step_s"]
    a, b = max(0, int((lo - t0) // step)), min(len(row), int((hi - t0) // step) + 1)
    return [[round(t0 + (i + 1) * step, 3), int(row[i])] for i in range(a, b)
            if row[i] != NO_DATA]


def _coarse(hm: dict[str, Any], row: np.ndarray, lo: float, hi: float,
            width: float) -> list[list[float]]:
    """What an epoch-aligned `width` sampler showed: [bucket start, mean of its seconds]
    for every bucket touching [lo, hi], over the whole bucket (as `cores` computes it)."""
    t0, step = hm["start"], hm["step_s"]
    out = []
    k = math.floor(lo / width) * width
    while k < hi:
        a, b = max(0, int((k - t0) // step)), min(len(row), int((k + width - t0) // step))
        vals = row[a:b]
        vals = vals[vals != NO_DATA]
        if len(vals):
            out.append([k, round(float(vals.mean()), 1)])
        k += width
    return out


def _hot_core(view: Any, hm: dict[str, Any], grid: np.ndarray, machine: np.ndarray,
              before_s: float) -> dict[str, Any] | None:
    """The hot core around an incident: its 1 s series for `before_s` before the event, the
    30 s and 60 s samplers' view of the same seconds, and the machine average."""
    res = view.resolution
    if res is None or not res.series_1s:
        return None
    row = _grid_row(hm, grid, res.cpu)
    if row is None:
        return None
    t = view.incident.event.time
    lo, hi = t - before_s, t + 5
    return {"cpu": res.cpu, "event_id": view.incident.event.id, "event_t": _r(t, 3),
            "start": _r(lo, 3), "end": _r(hi, 3),
            "series_1s": _series(hm, row, lo, hi), "machine_1s": _series(hm, machine, lo, hi),
            "series_30s": _coarse(hm, row, lo, hi, 30.0),
            "series_60s": _coarse(hm, row, lo, hi, 60.0),
            "peak_1s_pct": _r(res.peak_1s_pct), "at_30s_pct": _r(res.at_30s_pct),
            "at_60s_pct": _r(res.at_60s_pct), "machine_peak_1s_pct": _r(res.machine_peak_1s_pct),
            "machine_at_30s_pct": _r(res.machine_at_30s_pct),
            "machine_at_60s_pct": _r(res.machine_at_60s_pct)}


def _incident(view: Any) -> dict[str, Any]:
    inc = view.incident
    return {"event": _event(inc.event),
            "preceding": [{"cpu": p.cpu, "start": _r(p.start, 3), "end": _r(p.end, 3),
                           "lead_s": _r(p.lead_s, 2), "serves_queue": p.serves_queue,
                           "peak_pct": _r(p.peak_pct)} for p in inc.preceding],
            "related": len(inc.related),
            "nearest_cpu": inc.nearest.cpu if inc.nearest is not None else None,
            "interrupt_map": [as_json(q) for q in view.interrupt_map]}


def _zombies(inv: Any, censuses: list[Any]) -> dict[str, Any] | None:
    z = inv.zombies
    if z is None:
        return None
    j = as_json(z)
    trend = [[_r(c.t, 1), c.dying] for c in censuses if c.dying is not None]
    g = j.get("growth", {})
    return {"memory": j.get("memory"), "growth": g, "locations": j.get("locations", [])[:20],
            "location_basis": j.get("location_basis", ""),
            "suspects": j.get("suspects", [])[:10], "trend": trend[-2000:],
            "layout": j.get("layout")}


def build(inv: Any, *, profiles: ProfileSource | None = None,
          censuses: list[Any] | None = None, diagnosis: dict[str, Any] | None = None,
          title: str = "corescope incident report", generated: float | None = None,
          limits: Limits = Limits()) -> dict[str, Any]:
    """The page data. `inv` is an Investigation; `profiles` the stacks of the same evidence
    (None: no flame graphs beyond the Investigation's own);
    `censuses` the census rows of the window (the zombie trend); `diagnosis` the
    `diagnose --json` dict when there is one."""
    L = limits
    # the heatmap spans what was recorded in the window, not the empty rest of it
    lo, hi = inv.window.start, inv.window.end
    if len(inv.samples):
        first, last = inv.samples[0], inv.samples[len(inv.samples) - 1]
        lo = max(lo, first.t - first.interval_s - 1.0)
        hi = min(hi, last.t + 1.0)
    hm = heatmap(inv.samples, list(inv.cpus), inv.params.mode, lo, max(hi, lo + 1.0))
    grid, machine = hm.pop("_grid"), hm.pop("_machine")
    # every incident line first, then the other lines up to the budget, in time order
    incs = [e for e in inv.events if e.is_incident][: L.max_events]
    rest = [e for e in inv.events if not e.is_incident][: L.max_events - len(incs)]
    events = [_event(e) for e in sorted(incs + rest, key=lambda e: e.time)]
    incidents = [_incident(v) for v in inv.incidents]
    hot = next((h for h in (_hot_core(v, hm, grid, machine, L.hot_core_s)
                            for v in inv.incidents) if h), None)

    flames: list[dict[str, Any]] = []
    # the Investigation's own "before each incident" profiles, with a diff when we can read
    # a baseline from the same evidence
    for hp in inv.profiles[: L.incident_flames]:
        base = None
        note = ""
        if profiles is not None:
            # the one automatic baseline (investigate.flame), as `flame --diff auto` takes it
            found = found_baseline(profiles, hp.start, hp.end, hp.cpu, L.baseline_gap_s)
            base = found.profile if found is not None else None
            note = found.window.note if found is not None else NO_BASELINE
        flames.append(flame_entry(f"inc{hp.event_id}-cpu{hp.cpu}", "incident", hp.cpu, hp.start,
                             hp.end, hp.profile, L.max_nodes, base, note,
                             event_id=hp.event_id, baseline_note=note))
    # no incident had a hot core before it: the longest saturations' own stacks (what the
    # diagnosis read), so the page shows what ran on the hot core all the same
    for hp in inv.episode_profiles[: L.incident_flames]:
        flames.append(flame_entry(f"ep-cpu{hp.cpu}-{int(hp.start)}", "episode", hp.cpu,
                                  hp.start, hp.end, hp.profile, L.max_nodes,
                                  basis=hp.basis))
    if profiles is not None:
        hot_cpus: list[int] = []
        for v in inv.incidents:
            if v.incident.nearest is not None and v.incident.nearest.cpu not in hot_cpus:
                hot_cpus.append(v.incident.nearest.cpu)
        for ep in sorted(inv.episodes, key=lambda e: -(e.end - e.start)):
            if ep.cpu not in hot_cpus:
                hot_cpus.append(ep.cpu)
        for cpu in hot_cpus[: L.hot_cpus]:
            flames.extend(_column_flames(profiles.samples, cpu, inv.window.start, inv.window.end,
                                         L.column_s, L.column_nodes))

    statuses = [{"name": s.name, "ok": s.ok, "detail": s.detail} for s in inv.statuses]
    corr = as_json(inv.correlation)
    return {
        "schema": PAGE_SCHEMA,
        "title": title,
        "generated": _r(generated, 0),
        "source": inv.source,
        "window": {"start": _r(inv.window.start, 3), "end": _r(inv.window.end, 3)},
        "params": {"mode": inv.params.mode, "threshold_pct": inv.params.threshold_pct,
                   "min_duration_s": inv.params.min_duration_s},
        "diagnosis": diagnosis,
        "summary": corr,
        "heatmap": hm,
        "events": events,
        "events_total": len(inv.events) + sum(inv.events_omitted.values()),
        "incidents": incidents,
        "episodes": [as_json(e) for e in inv.episodes[:500]],
        "hot_core": hot,
        "zombies": _zombies(inv, censuses or []),
        "flames": flames,
        # `analyze --json`'s profiles: each hot core's top processes, functions, stacks and
        # the memcg walker, with or without an incident after it
        "hot_core_stacks": profiles_json(inv)[: L.incident_flames],
        "findings": [as_json(f) for f in inv.findings][:50],
        "sensors": statuses,
        "lost_records": inv.lost_records,
    }
