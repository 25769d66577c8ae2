"""A window of the profile ring as a flame Profile (and heatmap points), counted on the
chunks' columns by stack id: window, CPU, pid/tid, comm and the perf event select rows with
numpy, and the Python work is per distinct stack, not per sample. Chunks without columns
(folded stacks, text that is not migrated) are read sample by sample through ring_samples."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np

from corescope.analysis.flame import UNKNOWN_PID, Profile, is_idle
from corescope.analysis.subsecond import Heatmap
from corescope.model.common import Diagnostic
from corescope.model.profiles import ProfileChunk, StackSample
from corescope.runner import Runner
from corescope.sources.folded import EVENT as FOLDED_EVENT
from corescope.store import profile_columns as pcols
from corescope.store import profile_query
from corescope.store.db import Store
from corescope.store.profile_query import NoSuchCpu, Progress

__all__ = ["EventPick", "NoSuchCpu", "ring_profile"]


class EventPick:
    """One perf event per graph, as stackcollapse-perf.pl draws: the one named, or the first
    one seen; samples of the others are counted (the JSON lists every event present) but not
    drawn. Folded stacks carry no event and are always drawn."""

    def __init__(self, name: str | None) -> None:
        self.asked = name
        self.chosen: str | None = name
        self.present: Counter[str] = Counter()

    def keep(self, s: StackSample) -> bool:
        ev = s.event
        self.present[ev] += s.count
        if ev == FOLDED_EVENT:
            return True
        if self.chosen is None:
            self.chosen = ev
        return ev == self.chosen

    def filter(self, stream: Iterator[tuple[StackSample, float | None]]
               ) -> Iterator[tuple[StackSample, float | None]]:
        keep = self.keep
        return ((s, t) for s, t in stream if keep(s))

    def keep_rows(self, cols: pcols.Columns, rows: np.ndarray) -> np.ndarray:
        """`keep` on a chunk's rows at once: the rows drawn, in order."""
        ev = cols.col("event")[rows]
        first, gid = _first_seen(ev)
        counts = np.bincount(gid, weights=cols.col("count")[rows]).tolist()
        names = [cols.strings[e] for e in ev[first].tolist()]
        for name, k in zip(names, counts, strict=True):
            self.present[name] += int(k)
        if self.chosen is None:
            # the first row not of folded stacks names the event
            self.chosen = next((n for n in names if n != FOLDED_EVENT), None)
        drawn = [cols.string_id(n) for n in (self.chosen, FOLDED_EVENT) if n is not None]
        return rows[np.isin(ev, drawn)]


def ring_profile(store: Store, runner: Runner, wall_start: float, wall_end: float,
                 cpu: int | None = None, diags: list[Diagnostic] | None = None,
                 progress: Progress | None = None,
                 chunks: list[ProfileChunk] | None = None, whole: bool = False, *,
                 pid: int | None = None, comm: str | None = None,
                 include_idle: bool = False, heat: Heatmap | None = None,
                 migrate: bool = True, weight: str = "samples", by_thread: bool = False,
                 pick: EventPick | None = None) -> Profile:
    """The Profile of the window (and the heatmap points, when `heat` is given) that adding
    every sample of `ring_samples`, filtered by pid (or tid), comm and `pick`, would make,
    counted by stack id on the chunks' columns. Chunks without columns are read sample by
    sample."""
    diags = diags if diags is not None else []
    prof = Profile(include_idle=include_idle, weight=weight, by_thread=by_thread)
    for chunk, _src, cols, win in profile_query.to_read(store, runner, wall_start, wall_end, diags,
                                           progress, chunks, whole, migrate):
        if cols is not None:
            assert win is not None
            rows = profile_query.rows_of(cols, chunk, win, cpu)
            _add_rows(prof, cols, rows, chunk.clock_offset, pid, comm, heat, pick)
            continue
        for s, t in profile_query.ring_samples(store, runner, wall_start, wall_end, cpu,
                                               diags, None, [chunk], whole, migrate=False):
            if pid is not None and s.pid != pid and s.tid != pid:
                continue
            if comm is not None and s.comm != comm:
                continue
            if pick is not None and not pick.keep(s):
                continue
            idle = prof.add(s)
            if heat is not None:
                tt = t if t is not None else s.time
                if tt is not None:
                    heat.add(tt, idle)
    return prof


def _first_seen(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row of each distinct key's first occurrence, each row's group), groups numbered in
    order of first occurrence: the order counting sample by sample would meet them in.
    `keys`: one column, or rows of several (packed into one integer when their ranges fit:
    a 1-d sort is several times faster than numpy's row-wise unique)."""
    if keys.ndim == 2:
        keys = _packed(keys)
    _u, first, inv = np.unique(keys, return_index=True, return_inverse=True,
                               axis=0 if keys.ndim == 2 else None)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[np.asarray(inv).reshape(-1)]


def _packed(keys: np.ndarray) -> np.ndarray:
    """Rows of integer columns as one int64 each (mixed radix over each column's range), or
    the rows as they are when the ranges do not fit in 63 bits."""
    if not keys.size:
        return keys
    lo = keys.min(axis=0)
    spans = (keys.max(axis=0) - lo + 1).tolist()
    total = 1
    for s in spans:
        total *= int(s)
    if total >= 1 << 63:
        return keys
    out = np.zeros(keys.shape[0], dtype=np.int64)
    for j, s in enumerate(spans):
        out = out * int(s) + (keys[:, j] - lo[j])
    return out


def _add_rows(prof: Profile, cols: pcols.Columns, rows: np.ndarray, offset: float,
              pid: int | None, comm: str | None, heat: Heatmap | None,
              pick: EventPick | None) -> None:
    """Profile.add of every row, in the order the rows come (first seen first in every
    table), with numpy doing the per-sample sums."""
    if pid is not None and rows.size:
        rows = rows[(cols.col("pid")[rows] == pid) | (cols.col("tid")[rows] == pid)]
    if comm is not None and rows.size:
        rows = rows[cols.stack_comms()[cols.col("stack")[rows]] == cols.string_id(comm)]
    if pick is not None and rows.size:
        rows = pick.keep_rows(cols, rows)
    if not rows.size:
        return
    sc = cols.col("stack")[rows]
    n = cols.col("count")[rows]
    w = cols.col("weight")[rows] if prof.weight == "period" else n
    prof.samples += int(n.sum())
    prof.total_weight += int(w.sum())
    ev = cols.col("event")[rows]
    first, gid = _first_seen(ev)
    for e, k in zip(ev[first].tolist(), np.bincount(gid, weights=n).tolist(), strict=True):
        prof.events[cols.strings[e]] += int(k)
    t = cols.col("time")[rows]
    finite = t[np.isfinite(t)]
    if finite.size:
        lo_t, hi_t = float(finite.min()), float(finite.max())
        if prof.first_time is None or lo_t < prof.first_time:
            prof.first_time = lo_t
        if prof.last_time is None or hi_t > prof.last_time:
            prof.last_time = hi_t
    pids = cols.col("pid")[rows]
    known = cols.col("pid_known")[rows]
    parts = [sc.astype(np.int64), pids, known.astype(np.int64)]
    tids = cols.col("tid")[rows] if prof.by_thread else None
    if tids is not None:
        parts.append(tids)
    first, gid = _first_seen(np.stack(parts, axis=1))
    sums = np.bincount(gid, weights=n).tolist()
    wsums = sums if w is n else np.bincount(gid, weights=w).tolist()
    idle_g = np.zeros(first.size, dtype=bool)
    memo = cols.memo
    stacks, threads = prof.stacks, prof.threads
    g_tids = tids[first].tolist() if tids is not None else None
    for g, (sid, p, k) in enumerate(zip(sc[first].tolist(), pids[first].tolist(),
                                        known[first].tolist(), strict=True)):
        c, frames = cols.stack(sid)
        # is_idle looks at the pid only for "no process" (0, -1): one answer per stack each way
        key = (sid, p in (0, -1))
        idle = memo.get(key)
        if idle is None:
            idle = memo[key] = is_idle(StackSample(c, p, p, None, None, "", frames))
        idle_g[g] = idle
        wk = int(wsums[g])
        if idle:
            prof.idle_samples += int(sums[g])
            prof.idle_weight += wk
            if not prof.include_idle:
                continue
        pk = p if k else UNKNOWN_PID
        stacks[(c, pk, frames)] += wk
        if g_tids is not None:
            threads[(c, pk, g_tids[g], frames)] += wk
    if heat is not None:
        heat.add_many(t + offset, idle_g[gid])

