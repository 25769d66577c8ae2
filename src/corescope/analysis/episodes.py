"""Hot-core episodes, and what coarser monitors would have shown of them.

An episode is a run of consecutive samples in which one CPU's `mode` time (kernel time =
sys + irq + soft by default) stays at or above a threshold for at least a minimum duration.
For each one we also compute the machine-wide average over the same seconds (spatial masking)
and what a monitor sampling every 30 s or 60 s would have reported (temporal masking): the
counter delta over each aligned 30/60 s window the episode touches, highest window reported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from corescope.analysis.usage import machine_usage, sample_usage, sum_deltas, usage_of
from corescope.model.cores import COMPOSITE_MODES, MODES, CoreSample, CpuUsage, Episode

DEFAULT_THRESHOLD = 90.0
DEFAULT_MIN_DURATION = 2.0
DEFAULT_MODE = "kernel"
EPISODE_MODES = (*COMPOSITE_MODES, *MODES)
_REPORT_MODES = ("usr", "sys", "irq", "soft", "iowait", "steal", "idle")


def _gap(prev: CoreSample, cur: CoreSample) -> bool:
    """Samples are not consecutive when more time passed than ~2 intervals."""
    return cur.t - prev.t > 2.5 * max(cur.interval_s, prev.interval_s, 1e-3)


def find_episodes(
    samples: Sequence[CoreSample],
    threshold: float = DEFAULT_THRESHOLD,
    min_duration: float = DEFAULT_MIN_DURATION,
    mode: str = DEFAULT_MODE,
) -> list[Episode]:
    if mode not in EPISODE_MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(EPISODE_MODES)}")
    samples = sorted(samples, key=lambda s: s.t)
    usages = [sample_usage(s) for s in samples]
    cpus = sorted({c for s in samples for c in s.deltas})
    episodes: list[Episode] = []
    for cpu in cpus:
        run: list[int] = []
        for k, s in enumerate(samples):
            u = usages[k].get(cpu)
            hot = u is not None and u.ticks > 0 and u.mode_pct(mode) >= threshold
            if hot and run and _gap(samples[run[-1]], s):
                episodes.extend(_close(run, cpu, samples, usages, threshold, min_duration, mode))
                run = []
            if hot:
                run.append(k)
            elif run:
                episodes.extend(_close(run, cpu, samples, usages, threshold, min_duration, mode))
                run = []
        if run:
            episodes.extend(_close(run, cpu, samples, usages, threshold, min_duration, mode))
    episodes.sort(key=lambda e: (e.start, e.cpu))
    return episodes


def _close(
    run: list[int], cpu: int, samples: Sequence[CoreSample],
    usages: list[dict[int, CpuUsage]], threshold: float, min_duration: float, mode: str,
) -> list[Episode]:
    first, last = samples[run[0]], samples[run[-1]]
    start, end = first.t - first.interval_s, last.t
    if end - start < min_duration - 1e-6:
        return []
    values = [usages[k][cpu].mode_pct(mode) for k in run]
    by_mode = {}
    for m in _REPORT_MODES:
        vals = [usages[k][cpu].pct[m] for k in run]
        by_mode[m] = {"peak": max(vals), "mean": sum(vals) / len(vals)}
    machine = [machine_usage(samples[k]).mode_pct(mode) for k in run]
    seen30, mseen30 = coarse_view(samples, cpu, start, end, 30.0, mode)
    seen60, mseen60 = coarse_view(samples, cpu, start, end, 60.0, mode)
    return [
        Episode(
            cpu=cpu, start=start, end=end, mode=mode, threshold_pct=threshold,
            peak_pct=max(values), mean_pct=sum(values) / len(values),
            machine_avg_pct=sum(machine) / len(machine),
            seen_at_30s_pct=seen30, seen_at_60s_pct=seen60,
            machine_seen_at_30s_pct=mseen30, machine_seen_at_60s_pct=mseen60,
            samples=len(run), by_mode=by_mode,
        )
    ]


def coarse_view(
    samples: Sequence[CoreSample], cpu: int, start: float, end: float, window: float, mode: str
) -> tuple[float, float]:
    """(core %, machine %) that a monitor taking one counter delta per aligned `window` would
    have reported, over the recorded part of each window touching [start, end]; the highest."""
    best_core = best_machine = 0.0
    first = math.floor(start / window)
    last = math.floor(max(start, end - 1e-9) / window)
    for b in range(first, last + 1):
        lo, hi = b * window, (b + 1) * window
        # a sample belongs to the window holding its midpoint
        inside = [s for s in samples if lo <= s.t - s.interval_s / 2 < hi]
        core_rows = [s.deltas[cpu] for s in inside if cpu in s.deltas]
        if core_rows:
            best_core = max(best_core, usage_of(cpu, sum_deltas(core_rows)).mode_pct(mode))
        all_rows = [d for s in inside for d in s.deltas.values()]
        if all_rows:
            best_machine = max(best_machine, usage_of(-1, sum_deltas(all_rows)).mode_pct(mode))
    return best_core, best_machine


def covered_spans(samples: Sequence[CoreSample]) -> list[tuple[float, float]]:
    """The stretches of time the record covers: runs of consecutive samples."""
    spans: list[tuple[float, float]] = []
    prev: CoreSample | None = None
    for s in sorted(samples, key=lambda x: x.t):
        if prev is None or _gap(prev, s):
            spans.append((s.t - s.interval_s, s.t))
        else:
            spans[-1] = (spans[-1][0], s.t)
        prev = s
    return spans
