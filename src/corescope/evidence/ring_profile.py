"""A window of the profile ring as a flame Profile (and heatmap points), counted on the
chunks' columns by stack id: window, CPU, pid/tid, comm and the perf event select rows with
numpy, idleness is decided per stack on the chunk's stack table, and the rows of every column
chunk in a run are grouped at once (numpy) by a stack id shared across chunks. The Python work
is per distinct stack of the window (and per entry of the Profile), not per sample. Chunks
without columns (folded stacks, text that is not migrated) are read sample by sample through
ring_samples."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np

from corescope.analysis.flame import IDLE_FUNCTIONS, IRQ_PREFIXES, UNKNOWN_PID, Profile
from corescope.analysis.subsecond import Heatmap
from corescope.evidence import profile_query
from corescope.evidence.event_pick import EventPick
from corescope.evidence.profile_query import NoSuchCpu, Progress
from corescope.model.common import Diagnostic
from corescope.model.profiles import Frame, ProfileChunk
from corescope.runner import Runner
from corescope.sources.folded import EVENT as FOLDED_EVENT
from corescope.store import profile_columns as pcols
from corescope.store.db import Store

__all__ = ["EventPick", "NoSuchCpu", "ring_profile"]


def _keep_rows(pick: EventPick, cols: pcols.Columns, rows: np.ndarray) -> np.ndarray:
    """`pick.keep` on a chunk's rows at once: the rows drawn, in order."""
    ev = cols.col("event")[rows]
    first, gid = _first_seen(ev)
    counts = np.bincount(gid, weights=cols.col("count")[rows]).tolist()
    names = [cols.strings[e] for e in ev[first].tolist()]
    for name, k in zip(names, counts, strict=True):
        pick.present[name] += int(k)
    if pick.chosen is None:
        # the first row not of folded stacks names the event
        pick.chosen = next((n for n in names if n != FOLDED_EVENT), None)
    drawn = [cols.string_id(n) for n in (pick.chosen, FOLDED_EVENT) if n is not None]
    return rows[np.isin(ev, drawn)]


def ring_profile(store: Store, runner: Runner, wall_start: float, wall_end: float,
                 cpu: int | None = None, diags: list[Diagnostic] | None = None,
                 progress: Progress | None = None,
                 chunks: list[ProfileChunk] | None = None, whole: bool = False, *,
                 pid: int | None = None, comm: str | None = None,
                 include_idle: bool = False, heat: Heatmap | None = None,
                 migrate: bool = True, weight: str = "samples", by_thread: bool = False,
                 pick: EventPick | None = None, stacks: bool = True) -> Profile:
    """The Profile of the window (and the heatmap points, when `heat` is given) that adding
    every sample of `ring_samples`, filtered by pid (or tid), comm and `pick`, would make,
    counted by stack id on the chunks' columns. Chunks without columns are read sample by
    sample. `stacks=False`: the counts and the heatmap only, no stack table (a heatmap)."""
    with _collector_paused():
        return _ring_profile(store, runner, wall_start, wall_end, cpu, diags, progress,
                             chunks, whole, pid, comm, include_idle, heat, migrate, weight,
                             by_thread, pick, stacks)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a query counts: it makes tens of thousands of
    tuples (stacks, Profile keys) and no cycles, and the collector's passes over them, each
    walking every object made so far, cost more than the counting."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _ring_profile(store: Store, runner: Runner, wall_start: float, wall_end: float,
                  cpu: int | None, diags: list[Diagnostic] | None, progress: Progress | None,
                  chunks: list[ProfileChunk] | None, whole: bool, pid: int | None,
                  comm: str | None, include_idle: bool, heat: Heatmap | None, migrate: bool,
                  weight: str, by_thread: bool, pick: EventPick | None, stacks: bool
                  ) -> Profile:
    diags = diags if diags is not None else []
    prof = Profile(include_idle=include_idle, weight=weight, by_thread=by_thread)
    batch = _Batch(prof, stacks)
    for chunk, _src, cols, win in profile_query.to_read(store, runner, wall_start, wall_end,
                                                        diags, progress, chunks, whole,
                                                        migrate):
        if cols is not None:
            assert win is not None
            rows = profile_query.rows_of(cols, chunk, win, cpu)
            batch.add(cols, rows, chunk.clock_offset, pid, comm, heat, pick)
            continue
        batch.flush()  # what came before this chunk goes into the Profile first
        for s, t in profile_query.ring_samples(store, runner, wall_start, wall_end, cpu,
                                               diags, None, [chunk], whole, migrate=False):
            if not s.matches(pid, comm) or (pick is not None and not pick.keep(s)):
                continue
            idle = prof.add(s)
            if heat is not None:
                tt = t if t is not None else s.time
                if tt is not None:
                    heat.add(tt, idle)
    batch.flush()
    return prof


def _first_seen(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row of each distinct key's first occurrence, each row's group), groups numbered in
    order of first occurrence: the order counting sample by sample would meet them in.
    `keys`: one column, or rows of several (packed into one integer when their ranges fit:
    a 1-d sort is several times faster than numpy's row-wise unique)."""
    if keys.ndim == 2:
        keys = _packed(keys)
    if keys.ndim == 1 and keys.size and keys.min() == keys.max():  # one event, say
        return np.zeros(1, dtype=np.int64), np.zeros(keys.size, dtype=np.int64)
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


def _sums(gid: np.ndarray, groups: int, w: np.ndarray) -> np.ndarray:
    """Per group, the sum of `w` (int64), exactly: bincount adds in float64, exact while
    every sum stays below 2**53 (periods of `cycles` can be large: then by sorting)."""
    if not w.size:
        return np.zeros(groups, dtype=np.int64)
    if int(np.abs(w).max()) * w.size < 1 << 53:
        return np.bincount(gid, weights=w, minlength=groups).astype(np.int64)
    order = np.argsort(gid, kind="stable")
    g = gid[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    out = np.zeros(groups, dtype=np.int64)
    out[g[starts]] = np.add.reduceat(w[order].astype(np.int64), starts)
    return out


# Frames of every chunk get one id per content (symbol, dso, kernel, inlined), process-wide,
# so a stack is the same key in every chunk: a chunk's stack table maps onto these ids once
# (kept with the chunk while serve keeps it decoded). Bounded: past the cap the table starts
# over, at the next query, under a new generation, and a chunk's mapping of an older one is
# made again. serve builds pages in several threads: the table is filled under a lock, and
# starting over makes a new table (never clears one a running query still reads).
class _FrameTable:
    __slots__ = ("codes", "frames", "generation", "ids")

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.ids: dict[tuple[str, str, bool, bool], int] = {}
        self.frames: list[Frame] = []
        self.codes: list[int] = []  # 1: an idle function, 2: an interrupt frame, 0: neither


_FRAME_MAX = 1_000_000
_TABLE = _FrameTable(0)
_TABLE_LOCK = threading.Lock()


def _frame_code(symbol: str) -> int:
    if symbol in IDLE_FUNCTIONS:
        return 1
    return 2 if symbol.startswith(IRQ_PREFIXES) else 0


class _ChunkStacks:
    """One chunk's stack table on the process-wide frame ids: per local stack its key (comm
    and its frame ids as bytes) and the stack's half of is_idle (whether it is idle when the
    process is swapper or not known), and whether its comm is swapper's."""

    __slots__ = ("comms", "generation", "gpos", "idle_if_swapper", "keys", "off", "swapper")

    def __init__(self, cols: pcols.Columns, table: _FrameTable) -> None:
        self.generation = table.generation
        s = cols.strings
        ids, frames, codes = table.ids, table.frames, table.codes
        mk = cols.intern
        local: list[int] = []
        with _TABLE_LOCK:  # one id per frame, whichever query meets it first
            for a, b, f in zip(cols.col("frame_sym").tolist(), cols.col("frame_dso").tolist(),
                               cols.col("frame_flags").tolist(), strict=True):
                key = (s[a], s[b], bool(f & 1), bool(f & 2))
                g = ids.get(key)
                if g is None:
                    g = ids[key] = len(frames)
                    frames.append(mk(*key))
                    codes.append(_frame_code(key[0]))
                local.append(g)
            local_code = np.asarray([codes[g] for g in local], dtype=np.int8)
        l2g = np.asarray(local, dtype=np.int32)
        sf = cols.col("stack_frames")
        off = cols.col("stack_off")
        gpos = l2g[sf] if sf.size else np.zeros(0, dtype=np.int32)
        blob = gpos.tobytes()
        comm_ids = cols.stack_comms()
        self.comms = [s[c] for c in comm_ids.tolist()]
        o = (off * 4).tolist()
        self.keys: list[tuple[str, bytes]] = [
            (c, blob[a:b]) for c, a, b in zip(self.comms, o[:-1], o[1:], strict=True)]
        self.off = off
        self.gpos = gpos
        # is_idle's walk, leaf first: the first idle or interrupt frame decides
        n = comm_ids.size
        lens = np.diff(off)
        code = local_code[sf] if sf.size else np.zeros(0, dtype=np.int8)
        hit = np.flatnonzero(code)
        seg = np.repeat(np.arange(n), lens)[hit]
        segs, first = np.unique(seg, return_index=True)
        idle = lens == 0
        idle[segs] = code[hit[first]] == 1
        self.idle_if_swapper = idle
        swap = np.fromiter((t.startswith("swapper") for t in s), dtype=bool, count=len(s))
        self.swapper = swap[comm_ids] if n else np.zeros(0, dtype=bool)


def _chunk_stacks(cols: pcols.Columns, table: _FrameTable) -> _ChunkStacks:
    got = cols.memo.get("stacks")
    if got is None or got.generation != table.generation:
        got = cols.memo["stacks"] = _ChunkStacks(cols, table)
    return got


class _Batch:
    """The rows of a run of column chunks, on stack ids shared across them, counted into the
    Profile at once by `flush`: the same entries, in the same order, as adding the samples
    one by one."""

    def __init__(self, prof: Profile, keep_stacks: bool) -> None:
        # the frame table starts over between queries, never within one (a key made under
        # one generation means other frames under the next)
        global _TABLE
        with _TABLE_LOCK:
            if len(_TABLE.frames) >= _FRAME_MAX:
                _TABLE = _FrameTable(_TABLE.generation + 1)
            self.table = _TABLE
        self.prof = prof
        self.keep_stacks = keep_stacks
        self.ids: dict[tuple[str, bytes], int] = {}  # stack key -> id in this query
        self.comm: list[str] = []
        self.frames: list[tuple[Frame, ...]] = []
        self.parts: list[dict[str, np.ndarray]] = []

    def add(self, cols: pcols.Columns, rows: np.ndarray, offset: float, pid: int | None,
            comm: str | None, heat: Heatmap | None, pick: EventPick | None) -> None:
        """The selected rows of one chunk: filtered by pid, comm and event, counted in the
        Profile's totals and the heatmap now, kept for the stack table."""
        if pid is not None and rows.size:
            rows = rows[(cols.col("pid")[rows] == pid) | (cols.col("tid")[rows] == pid)]
        if comm is not None and rows.size:
            rows = rows[cols.stack_comms()[cols.col("stack")[rows]] == cols.string_id(comm)]
        if pick is not None and rows.size:
            rows = _keep_rows(pick, cols, rows)
        if not rows.size:
            return
        prof = self.prof
        sc = cols.col("stack")[rows]
        n = cols.col("count")[rows]
        w = cols.col("weight")[rows] if prof.weight == "period" else n
        prof.samples += int(n.sum())
        prof.total_weight += int(w.sum())
        ev = cols.col("event")[rows]
        first, gid = _first_seen(ev)
        for e, k in zip(ev[first].tolist(), _sums(gid, first.size, n).tolist(), strict=True):
            prof.events[cols.strings[e]] += k
        t = cols.col("time")[rows]
        finite = t[np.isfinite(t)]
        if finite.size:
            lo_t, hi_t = float(finite.min()), float(finite.max())
            if prof.first_time is None or lo_t < prof.first_time:
                prof.first_time = lo_t
            if prof.last_time is None or hi_t > prof.last_time:
                prof.last_time = hi_t
        pids = cols.col("pid")[rows]
        cs = _chunk_stacks(cols, self.table)
        idle = cs.idle_if_swapper[sc] & (cs.swapper[sc] | (pids == 0) | (pids == -1))
        if idle.any():
            prof.idle_samples += int(n[idle].sum())
            prof.idle_weight += int(w[idle].sum())
        if heat is not None:
            heat.add_many(t + offset, idle)
        if not self.keep_stacks:
            return
        if not prof.include_idle:
            keep = ~idle
            sc, n, w, pids, rows = sc[keep], n[keep], w[keep], pids[keep], rows[keep]
            if not rows.size:
                return
        # the chunk's stacks on this query's ids: a new id for a stack no chunk had before
        used = np.flatnonzero(np.bincount(sc, minlength=len(cs.keys)))
        ids, keys, comms = self.ids, cs.keys, cs.comms
        lut = np.zeros(len(keys), dtype=np.int64)
        to_query = []
        new: list[int] = []
        for sid in used.tolist():
            key = keys[sid]
            q = ids.get(key)
            if q is None:
                q = ids[key] = len(self.comm)
                self.comm.append(comms[sid])
                new.append(sid)
            to_query.append(q)
        lut[used] = to_query
        if new:
            # frames of the new stacks, from the chunk's frame ids
            off = cs.off[new].tolist()
            ends = cs.off[np.asarray(new) + 1].tolist()
            gl = cs.gpos.tolist()
            fr = self.table.frames.__getitem__
            self.frames.extend(tuple(map(fr, gl[a:b])) for a, b in zip(off, ends, strict=True))
        part = {"stack": lut[sc],
                "pid": np.where(cols.col("pid_known")[rows] != 0, pids, UNKNOWN_PID),
                "w": w}
        if prof.by_thread:
            part["tid"] = cols.col("tid")[rows]
        self.parts.append(part)

    def flush(self) -> None:
        """Count the kept rows into the Profile: the stack totals (pids merged) now, on the
        stack ids; the (comm, pid, stack) entries, and per thread, when first asked for."""
        parts, self.parts = self.parts, []
        if not parts:
            return
        col: dict[str, Any] = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        prof = self.prof
        comm, frames = self.comm, self.frames
        if prof.pending is not None or prof._stacks:
            # a Profile that already had entries (a chunk read sample by sample came
            # before): counted in now, after them, and it counts its own totals
            prof.fill()
            self._stacks(col)
            prof.totals = None
            return
        st, w = col["stack"], col["w"]
        first = np.full(len(comm), st.size, dtype=np.int64)
        np.minimum.at(first, st, np.arange(st.size, dtype=np.int64))
        seen = np.flatnonzero(first < st.size)
        seen = seen[np.argsort(first[seen], kind="stable")]  # in order of first sight
        sums = _sums(st, len(comm), w)[seen].tolist()
        prof.totals = Counter(dict(zip([(comm[g], frames[g]) for g in seen.tolist()], sums,
                                       strict=True)))
        prof.pending = lambda: self._stacks(col)

    def _stacks(self, col: dict[str, np.ndarray]) -> None:
        prof = self.prof
        _count(prof._stacks, (col["stack"], col["pid"]), col["w"], self.comm, self.frames)
        if prof.by_thread:
            _count(prof._threads, (col["stack"], col["pid"], col["tid"]), col["w"],
                   self.comm, self.frames)


def _count(into: Counter[Any], keys: tuple[np.ndarray, ...], w: np.ndarray,
           comm: list[str], frames: list[tuple[Frame, ...]]) -> None:
    """into[(comm, *rest, frames)] += the weight of each distinct key (stack id first), in
    order of first occurrence."""
    first, gid = _first_seen(np.stack(keys, axis=1))
    sums = _sums(gid, first.size, w).tolist()
    cols = [k[first].tolist() for k in keys]
    made: list[tuple[Any, ...]]
    if len(cols) == 2:
        made = [(comm[s], p, frames[s]) for s, p in zip(*cols, strict=True)]
    else:
        made = [(comm[s], p, tid, frames[s]) for s, p, tid in zip(*cols, strict=True)]
    if into:
        into.update(dict(zip(made, sums, strict=True)))
    else:
        dict.update(into, zip(made, sums, strict=True))
