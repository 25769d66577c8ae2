"""Hot-core episodes, and what coarser monitors would have shown of them.

An episode is a run of consecutive samples in which one CPU's `mode` time (kernel time =
sys + irq + soft by default) stays at or above a threshold for at least a minimum duration.
For each one we also compute the machine-wide average over the same seconds (spatial masking)
and what a monitor sampling every 30 s or 60 s would have reported (temporal masking): the
counter delta over each aligned 30/60 s window the episode touches, highest window reported.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np

from corescope.analysis.usage import bound_of, hot_floor, lowest_hot_floor, mode_pct, usage_of
from corescope.model.cores import (
    COMPOSITE_MODES,
    DEFAULT_MIN_DURATION,
    DEFAULT_MODE,
    DEFAULT_THRESHOLD,
    MODES,
    CoreSample,
    CpuUsage,
    Episode,
)
from corescope.model.matrix import UNKNOWN_BOUND, CoreMatrix, sorted_unique

EPISODE_MODES = (*COMPOSITE_MODES, *MODES)
_REPORT_MODES = ("usr", "sys", "irq", "soft", "iowait", "steal", "idle")
# Python 3.12's sum() of floats compensates rounding; before, it adds left to right as numpy
_COMPENSATED_SUM = sys.version_info >= (3, 12)


def find_episodes(
    samples: Sequence[CoreSample],
    threshold: float = DEFAULT_THRESHOLD,
    min_duration: float = DEFAULT_MIN_DURATION,
    mode: str = DEFAULT_MODE,
) -> list[Episode]:
    """Episodes in a list of samples (or a CoreMatrix), oldest first."""
    return find_episodes_matrix(as_matrix(samples), threshold, min_duration, mode)


def coarse_view(
    samples: Sequence[CoreSample], cpu: int, start: float, end: float, window: float, mode: str
) -> tuple[float, float]:
    """(core %, machine %) that a monitor taking one counter delta per aligned `window` would
    have reported, over the recorded part of each window touching [start, end]; the highest."""
    return coarse_view_matrix(as_matrix(samples), cpu, start, end, window, mode)


def covered_spans(samples: Sequence[CoreSample]) -> list[tuple[float, float]]:
    """The stretches of time the record covers: runs of consecutive samples."""
    return covered_spans_matrix(as_matrix(samples))


def as_matrix(samples: Sequence[CoreSample]) -> CoreMatrix:
    return samples if isinstance(samples, CoreMatrix) else CoreMatrix.from_samples(samples)


# --- on the matrix ----------------------------------------------------------------------------

def gaps(m: CoreMatrix) -> np.ndarray:
    """gaps[k] (k >= 1): samples k-1 and k are not consecutive, because more time passed
    between them than ~2 intervals. gaps[0] is True (nothing before the first sample)."""
    out = np.ones(len(m), bool)
    if len(m) > 1:
        iv = np.maximum(np.maximum(m.interval_s[1:], m.interval_s[:-1]), 1e-3)
        out[1:] = (m.t[1:] - m.t[:-1]) > 2.5 * iv
    return out


def covered_spans_matrix(m: CoreMatrix) -> list[tuple[float, float]]:
    if not len(m):
        return []
    first = np.flatnonzero(gaps(m))
    last = np.append(first[1:] - 1, len(m) - 1)
    return list(zip((m.t[first] - m.interval_s[first]).tolist(), m.t[last].tolist(),
                    strict=True))


def is_hot(u: CpuUsage, threshold: float, mode: str) -> bool:
    """One CPU's interval is hot: usage.hot_floor's rule (steal discounted) on its usage."""
    return u.ticks > 0 and u.mode_pct(mode) >= hot_floor(threshold, mode, u.pct["steal"])


def hot_mask(m: CoreMatrix, threshold: float, mode: str, chunk: int = 8192) -> np.ndarray:
    """[ncpu, n] bool (CPU-major, as stored): CPU online, a non-empty interval, and `mode` %
    at or above threshold, with usage_of's arithmetic on whole planes, a chunk at a time."""
    key = ("hot", float(threshold), mode)
    cached = m.cached(key)
    if cached is not None:
        return cached
    present = m.present.T
    hot = np.zeros(present.shape, bool)
    for k0, k1 in _candidate_runs(m, threshold, mode, chunk):
        sl = slice(k0, k1)
        ticks = m.cells(sl).transpose(1, 2, 0)
        itv, pct = mode_pct(ticks, mode)
        floor = hot_floor(threshold, mode, mode_pct(ticks, "steal")[1])
        ok = present[:, sl] & (itv > 0)
        hot[:, sl] = ok & (pct >= floor)
        if mode in COMPOSITE_MODES and _COMPENSATED_SUM:
            # Python's sum() (3.12+) may round a 3-term sum differently in the last bit:
            # decide cells this close to the threshold exactly as usage_of does
            near = ok & (np.abs(pct - floor) <= 1e-9 * (1 + abs(threshold)))
            for i, k in zip(*np.nonzero(near), strict=True):
                row = tuple(m.cells(slice(k0 + k, k0 + k + 1))[:, i, 0].tolist())
                hot[i, k0 + k] = is_hot(usage_of(0, row), threshold, mode)
    m.cell_cache[key] = hot
    return hot


# how far below the threshold a zone bound must be to rule a segment out: more than any
# rounding of a composite mode's sum
_BOUND_SLACK = 1e-6


def _candidate_runs(m: CoreMatrix, threshold: float, mode: str,
                    chunk: int) -> list[tuple[int, int]]:
    """Runs [k0, k1) of samples that may hold a cell at or above threshold, at most `chunk`
    long: every sample without a zone map, else the segments whose bound does not rule them
    out (the bounds are per CPU per mode maxima, so any threshold is tested correctly)."""
    n = len(m)
    z = m.zone
    if z is None:
        spans = [(0, n)]
    else:
        b = z.bounds
        unknown = (b[..., [MODES.index(p) for p in COMPOSITE_MODES.get(mode, (mode,))]]
                   == UNKNOWN_BOUND).any(axis=-1)
        floor = lowest_hot_floor(threshold, mode, b[..., MODES.index("steal")].astype(float))
        maybe = ((bound_of(b, mode) > floor - _BOUND_SLACK) | unknown).any(axis=1)
        ends = np.append(z.starts[1:], n)
        spans = []
        for k0, k1 in zip(z.starts[maybe].tolist(), ends[maybe].tolist(), strict=True):
            if spans and spans[-1][1] == k0:
                spans[-1] = (spans[-1][0], k1)
            else:
                spans.append((k0, k1))
    return [(a, min(a + chunk, z1)) for a0, z1 in spans for a in range(a0, z1, chunk)]


def find_episodes_matrix(
    m: CoreMatrix,
    threshold: float = DEFAULT_THRESHOLD,
    min_duration: float = DEFAULT_MIN_DURATION,
    mode: str = DEFAULT_MODE,
) -> list[Episode]:
    """find_episodes on a CoreMatrix (sorted by time): runs of consecutive hot samples per CPU,
    found with array operations; only the samples inside episodes are looked at one by one."""
    if mode not in EPISODE_MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(EPISODE_MODES)}")
    if not len(m):
        return []
    hot = hot_mask(m, threshold, mode)
    brk = gaps(m)
    key = (float(threshold), float(min_duration), mode)
    runs: dict[tuple[int, int, int], Episode | None] = {}
    inherited = _inherited_runs(m, key)
    episodes: list[Episode] = []
    # CPU-major, then time, as the per-CPU scan found them; only the CPUs hot at least once
    # (usually few), and of each only its hot samples (usually few of a day's)
    for i in np.flatnonzero(hot.any(axis=1)).tolist():
        ks = np.flatnonzero(hot[i])
        # a run starts at its CPU's first hot sample, after a sample that was not hot, or
        # after a gap; it ends just before the next run starts, or at the last hot sample
        new = np.ones(len(ks), bool)
        new[1:] = (np.diff(ks) != 1) | brk[ks[1:]]
        first = np.flatnonzero(new)
        ends = np.append(ks[first[1:] - 1], ks[-1])
        for k0, k1 in zip(ks[first].tolist(), ends.tolist(), strict=True):
            known = inherited(i, k0, k1) if inherited else _UNKNOWN
            ep = (_episode(m, i, k0, k1, threshold, min_duration, mode) if known is _UNKNOWN
                  else cast("Episode | None", known))
            runs[(i, k0, k1)] = ep
            if ep is not None:
                episodes.append(ep)
    m.run_cache[key] = runs  # type: ignore[assignment]
    episodes.sort(key=lambda e: (e.start, e.cpu))
    return episodes


_UNKNOWN = object()  # a run the parent's search does not vouch for
_COARSE = (30.0, 60.0)  # the windows _episode's coarse views read


def _inherited_runs(m: CoreMatrix, key: tuple[float, float, str]
                    ) -> Callable[[int, int, int], object] | None:
    """When `m` is a time slice of a matrix already searched with the same parameters (the
    window inside its context): a lookup of the parent's episode for a run of `m`, or
    _UNKNOWN. The parent's is the slice's own exactly when the parent found the same run
    (same CPU, same first and last sample: it did not start before the slice or end after
    it) and every sample its 30 s and 60 s views read lies in the slice: then _episode reads
    the same cells, sums them in the same order, and the slice's search is spared it."""
    up = m.parent_offset()
    if up is None:
        return None
    parent, lo = up
    found = parent.run_cache.get(key)
    if not found:
        return None
    hi = lo + len(m)
    mids, order = parent.midpoints()

    def lookup(i: int, k0: int, k1: int) -> object:
        ep = found.get((i, k0 + lo, k1 + lo), _UNKNOWN)
        if ep is _UNKNOWN:
            return ep
        start, end = float(m.t[k0] - m.interval_s[k0]), float(m.t[k1])
        for w in _COARSE:
            a, z = np.searchsorted(mids, [math.floor(start / w) * w,
                                          (math.floor(max(start, end - 1e-9) / w) + 1) * w],
                                   side="left")
            idx = order[a:z]
            if len(idx) and (int(idx.min()) < lo or int(idx.max()) >= hi):
                return _UNKNOWN
        return ep

    return lookup


def _episode(m: CoreMatrix, i: int, k0: int, k1: int, threshold: float, min_duration: float,
             mode: str) -> Episode | None:
    start = float(m.t[k0] - m.interval_s[k0])
    end = float(m.t[k1])
    if end - start < min_duration - 1e-6:
        return None
    cpu = int(m.cpus[i])
    usages = [usage_of(cpu, tuple(r)) for r in m.cells(slice(k0, k1 + 1))[:, i].T.tolist()]
    values = [u.mode_pct(mode) for u in usages]
    by_mode = {}
    for md in _REPORT_MODES:
        vals = [u.pct[md] for u in usages]
        by_mode[md] = {"peak": max(vals), "mean": sum(vals) / len(vals)}
    machine = [usage_of(-1, tuple(r)).mode_pct(mode)
               for r in m.machine_rows(slice(k0, k1 + 1)).tolist()]
    seen30, mseen30 = coarse_view_matrix(m, cpu, start, end, 30.0, mode)
    seen60, mseen60 = coarse_view_matrix(m, cpu, start, end, 60.0, mode)
    return Episode(
        cpu=cpu, start=start, end=end, mode=mode, threshold_pct=threshold,
        peak_pct=max(values), mean_pct=sum(values) / len(values),
        machine_avg_pct=sum(machine) / len(machine),
        seen_at_30s_pct=seen30, seen_at_60s_pct=seen60,
        machine_seen_at_30s_pct=mseen30, machine_seen_at_60s_pct=mseen60,
        samples=k1 - k0 + 1, by_mode=by_mode,
    )


def coarse_view_matrix(m: CoreMatrix, cpu: int, start: float, end: float, window: float,
                       mode: str) -> tuple[float, float]:
    """coarse_view on a CoreMatrix: each window's samples found by binary search on the
    (sorted) sample midpoints, their ticks summed as integers, exactly."""
    best_core = best_machine = 0.0
    if not len(m) or not (math.isfinite(start) and math.isfinite(end)):
        return best_core, best_machine
    hits = np.flatnonzero(m.cpus == cpu)
    col = int(hits[0]) if len(hits) else None
    first = math.floor(start / window)
    last = math.floor(max(start, end - 1e-9) / window)
    # windows with no sample are skipped outright: a long span costs what its samples cost
    for b in _windows_with_samples(m.midpoints()[0], first, last, window):
        if col is not None:
            core = _window_pct(m, window, b, col, mode)
            if core is not None:
                best_core = max(best_core, core)
        machine = _window_pct(m, window, b, None, mode)
        if machine is not None:
            best_machine = max(best_machine, machine)
    return best_core, best_machine


_WINDOW_CACHE_MAX = 200_000  # entries (~160 bytes each): past it, windows are summed again


def _window_pct(m: CoreMatrix, window: float, b: int, col: int | None,
                mode: str) -> float | None:
    """`mode`'s % over coarse window `b` (its samples' ticks summed) of CPU column `col`, or
    of the machine when None; None where no sample of it has that CPU (or any CPU) online.
    Kept on the matrix: the episodes of every threshold, and neighbouring episodes, read the
    same windows."""
    key = (window, b, col, mode)
    cache = m.window_cache
    if key in cache:
        return cache[key]
    mids, order = m.midpoints()
    # a sample belongs to the window holding its midpoint
    a, z = np.searchsorted(mids, [b * window, (b + 1) * window], side="left")
    idx = order[a:z]
    got: float | None = None
    if col is not None:
        if len(idx) and m.present[idx, col].any():
            d = m.cells(idx)[:, col].sum(axis=1, dtype=np.int64)
            got = usage_of(int(m.cpus[col]), tuple(d.tolist())).mode_pct(mode)
    elif len(idx) and m.present[idx].any():
        got = usage_of(-1, tuple(m.machine_rows(idx).sum(axis=0).tolist())).mode_pct(mode)
    if len(cache) < _WINDOW_CACHE_MAX:
        cache[key] = got
    return got


def _windows_with_samples(mids: np.ndarray, first: int, last: int,
                          window: float) -> list[int]:
    if last - first < 64:
        return list(range(first, last + 1))
    a, z = np.searchsorted(mids, [first * window, (last + 1) * window], side="left")
    found = sorted_unique(np.floor(mids[a:z] / window).astype(np.int64))
    # ±1: the division may round across a boundary; the search in the caller decides
    near = sorted_unique(np.concatenate([found - 1, found, found + 1]))
    return near[(near >= first) & (near <= last)].tolist()
