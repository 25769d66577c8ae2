"""Per-core samples as numpy arrays: the columnar form analysis reads a long window in.

A day of 96 CPUs at 1 s is 8.3 M (sample, CPU) rows; as `CoreSample` objects that is gigabytes,
as arrays it is the ten tick counters in the narrowest unsigned type that holds them. The
matrix is also a `Sequence[CoreSample]`, built one sample at a time on demand, so code written
for a list of samples keeps working on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np

from corescope.model.common import Diagnostic
from corescope.model.cores import FIELDS, MODES, CoreSample
from corescope.model.packed import PackedRows

NF = len(FIELDS)


def narrow_dtype(values: np.ndarray) -> np.dtype:
    """The narrowest unsigned type holding these (non-negative) tick deltas."""
    if values.size and int(values.min()) < 0:
        return np.dtype(np.int64)
    top = int(values.max()) if values.size else 0
    for t in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(t).max:
            return np.dtype(t)
    return np.dtype(np.uint64)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique of a 1-d integer array: its distinct values, ascending, same dtype. Written
    out because np.unique asks np.ma whether the array is masked, which imports numpy.ma
    (5-8 ms of a command's start-up) for arrays that never are."""
    a = np.sort(np.asarray(values).ravel())
    if a.size < 2:
        return a
    keep = np.empty(a.size, bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


UNKNOWN_BOUND = 255  # a zone-map cell that proves nothing: its samples are always examined


@dataclass(frozen=True, eq=False)
class Zone:
    """The zone map of a matrix: samples starts[s] .. starts[s+1]-1 form segment s (a stored
    block), and bounds[s, i, j] is an integer strictly above the highest MODES[j] % of CPU
    column i in that segment (see analysis.usage.mode_bounds; UNKNOWN_BOUND when it was not
    summarised). Lets an episode search skip segments that cannot hold a hot cell."""

    starts: np.ndarray  # int64 [nseg], ascending, starts[0] == 0
    bounds: np.ndarray  # uint8 [nseg, ncpu, len(MODES)]

    def rows(self, lo: int, hi: int) -> Zone | None:
        """The zone of samples lo..hi-1 (a time slice)."""
        if hi <= lo:
            return None
        first = int(np.searchsorted(self.starts, lo, side="right")) - 1
        last = int(np.searchsorted(self.starts, hi, side="left"))
        starts = np.maximum(self.starts[first:last], lo) - lo
        return Zone(starts, self.bounds[first:last])


@dataclass(eq=False)
class CoreMatrix(Sequence[CoreSample]):
    """`n` samples over the union of `cpus`, oldest first.

    t[k]            wall-clock end of sample k (epoch s), float64
    interval_s[k]   its length on the monotonic clock, float64
    cpus[i]         the CPU id of column i, ascending
    fields[f, i, k] tick delta of field f (FIELDS order); 0 where the CPU was absent. Stored
                    as the blocks store it (field, CPU, time), so decoding a block is a plain
                    copy and one mode of one CPU over a day is one contiguous run.
    ticks[k, i, f]  the same array viewed sample-major (a view, not a copy)
    present[k, i]   whether CPU cpus[i] was online in sample k
    """

    t: np.ndarray
    interval_s: np.ndarray
    cpus: np.ndarray
    fields: np.ndarray
    present: np.ndarray
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _machine: np.ndarray | None = field(default=None, repr=False)
    _mids: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    # per-cell results keyed by what computed them, [.., n]; a time slice of this matrix
    # looks in its parent's too (sliced views), so a window and its context are analysed once
    cell_cache: dict[object, np.ndarray] = field(default_factory=dict, repr=False)
    # per-run results of the episode search, keyed by its parameters then by (CPU column,
    # first sample, last sample): a time slice reuses its parent's (see analysis.episodes)
    run_cache: dict[object, dict[tuple[int, int, int], object]] = \
        field(default_factory=dict, repr=False)
    # the coarse sampler's % per window, keyed by (window length, window number, CPU column
    # or None for the machine, mode): the episodes of every threshold searched on this matrix
    # read the same few windows (see analysis.episodes.coarse_view_matrix)
    window_cache: dict[tuple[float, int, int | None, str], float | None] = \
        field(default_factory=dict, repr=False)
    _parent: tuple[CoreMatrix, slice] | None = field(default=None, repr=False)
    # per-segment summaries from the store (None: every sample is examined)
    zone: Zone | None = field(default=None, repr=False)

    # --- construction ------------------------------------------------------------------------

    @classmethod
    def empty(cls) -> CoreMatrix:
        return cls(t=np.zeros(0), interval_s=np.zeros(0), cpus=np.zeros(0, np.int64),
                   fields=np.zeros((NF, 0, 0), np.uint32), present=np.zeros((0, 0), bool))

    @classmethod
    def from_ticks(cls, t: np.ndarray, interval_s: np.ndarray, cpus: np.ndarray,
                   ticks: np.ndarray, present: np.ndarray) -> CoreMatrix:
        """From sample-major ticks[n, ncpu, NF] (stored field/CPU/time, in the narrowest type)."""
        fields = np.ascontiguousarray(ticks.transpose(2, 1, 0))
        return cls(t=t, interval_s=interval_s, cpus=cpus, present=present,
                   fields=fields.astype(narrow_dtype(fields), copy=False))

    @classmethod
    def from_samples(cls, samples: Iterable[CoreSample]) -> CoreMatrix:
        """From CoreSample objects, sorted by time (stably, as `sorted` would)."""
        ordered = sorted(samples, key=lambda s: s.t)
        cpus = sorted({c for s in ordered for c in s.deltas})
        col = {c: i for i, c in enumerate(cpus)}
        n = len(ordered)
        fields = np.zeros((NF, len(cpus), n), np.int64)
        present = np.zeros((n, len(cpus)), bool)
        for k, s in enumerate(ordered):
            for c, d in s.deltas.items():
                fields[:, col[c], k] = d
                present[k, col[c]] = True
        fields = fields.astype(narrow_dtype(fields))
        return cls(
            t=np.array([s.t for s in ordered], np.float64),
            interval_s=np.array([s.interval_s for s in ordered], np.float64),
            cpus=np.array(cpus, np.int64), fields=fields, present=present,
        )

    @classmethod
    def concat(cls, parts: Sequence[CoreMatrix]) -> CoreMatrix:
        """The samples of every part, in order given (parts should not overlap in time)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        cpus = sorted_unique(np.concatenate([p.cpus for p in parts]))
        dtype = np.result_type(*[p.tick_dtype for p in parts])
        n = sum(len(p) for p in parts)
        present = np.zeros((n, len(cpus)), bool)
        k = 0
        starts: list[np.ndarray] = []
        bounds: list[np.ndarray] = []
        placed: list[tuple[int, CoreMatrix, slice | np.ndarray]] = []
        for p in parts:
            pz = p.zone or Zone(np.zeros(1, np.int64),
                                np.full((1, len(p.cpus), len(MODES)), UNKNOWN_BOUND, np.uint8))
            # the same CPUs: plain (fast) slice copies, not gathers
            idx = slice(None) if len(p.cpus) == len(cpus) else np.searchsorted(cpus, p.cpus)
            if isinstance(idx, slice):
                b = pz.bounds
            else:
                b = np.zeros((len(pz.starts), len(cpus), len(MODES)), np.uint8)
                b[:, idx] = pz.bounds
            starts.append(pz.starts + k)
            bounds.append(b)
            present[k : k + len(p), idx] = p.present
            placed.append((k, p, idx))
            k += len(p)

        def source(lo: int, hi: int) -> np.ndarray:
            out = np.zeros((NF, len(cpus), hi - lo), dtype)
            for k0, p, idx in placed:
                a, z = max(lo, k0), min(hi, k0 + len(p))
                if a < z:
                    out[:, idx, a - lo : z - lo] = p.cells(slice(a - k0, z - k0))
            return out

        kw = dict(t=np.concatenate([p.t for p in parts]),
                  interval_s=np.concatenate([p.interval_s for p in parts]), cpus=cpus,
                  present=present, diagnostics=[d for p in parts for d in p.diagnostics],
                  zone=Zone(np.concatenate(starts), np.concatenate(bounds))
                  if any(p.zone is not None for p in parts) else None)
        if any(isinstance(p, LazyCoreMatrix) for p in parts):  # ticks taken when read
            return LazyCoreMatrix(source=source, dtype=dtype, **kw)  # type: ignore[arg-type]
        return cls(fields=source(0, n), **kw)  # type: ignore[arg-type]

    @property
    def tick_dtype(self) -> np.dtype:
        """The tick type (on a lazy matrix, without decoding anything)."""
        return self.fields.dtype

    # --- the Sequence[CoreSample] view -------------------------------------------------------

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @overload
    def __getitem__(self, k: int) -> CoreSample: ...
    @overload
    def __getitem__(self, k: slice) -> CoreMatrix: ...

    def __getitem__(self, k: int | slice) -> CoreSample | CoreMatrix:
        if isinstance(k, slice):
            return self.rows(k)
        n = len(self)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(k)
        mask = self.present[k]
        return CoreSample(t=float(self.t[k]), interval_s=float(self.interval_s[k]),
                          deltas=PackedRows(self.cpus[mask].tolist(),
                                            self.cells(slice(k, k + 1))[:, mask, 0].T))

    def __add__(self, other: Sequence[CoreSample]) -> CoreMatrix:
        """These samples, then `other`'s (as `list + list` would give)."""
        return CoreMatrix.concat([self, other if isinstance(other, CoreMatrix)
                                  else CoreMatrix.from_samples(other)])

    def __radd__(self, other: Sequence[CoreSample]) -> CoreMatrix:
        return CoreMatrix.concat([CoreMatrix.from_samples(other), self])

    def __iter__(self) -> Iterator[CoreSample]:
        for k in range(len(self)):
            yield self[k]

    def rows(self, sel: slice | np.ndarray) -> CoreMatrix:
        """The samples selected by a slice or index/boolean array (CPU columns unchanged)."""
        zone = None
        if self.zone is not None and isinstance(sel, slice):
            lo, hi, step = sel.indices(len(self))
            zone = self.zone.rows(lo, hi) if step == 1 else None
        return CoreMatrix(t=self.t[sel], interval_s=self.interval_s[sel], cpus=self.cpus,
                          fields=self.fields[:, :, sel], present=self.present[sel],
                          _parent=(self, sel) if isinstance(sel, slice) else None,
                          diagnostics=list(self.diagnostics), zone=zone)

    def between(self, t0: float, t1: float) -> CoreMatrix:
        """Samples whose end time lies in [t0, t1]."""
        lo = int(np.searchsorted(self.t, t0, side="left"))
        hi = int(np.searchsorted(self.t, t1, side="right"))
        return self.rows(slice(lo, hi))

    # --- derived columns ---------------------------------------------------------------------

    @property
    def ticks(self) -> np.ndarray:
        return self.fields.transpose(2, 1, 0)

    def online_cpus(self) -> list[int]:
        """CPUs online in at least one sample (what a list of samples would show)."""
        return self.cpus[self.present.any(axis=0)].tolist() if len(self) else []

    def machine_ticks(self) -> np.ndarray:
        """[n, NF] int64: mpstat's `all` row per sample, the sum over online CPUs."""
        if self._machine is None:
            cached = self.cached("machine")
            self._machine = cached.T if cached is not None else \
                np.ascontiguousarray(self.fields.sum(axis=1, dtype=np.int64).T)
            self.cell_cache["machine"] = self._machine.T  # [NF, n]: sliced on axis 1 too
        return self._machine

    def cells(self, sel: slice | np.ndarray) -> np.ndarray:
        """fields[:, :, sel]: on a matrix read lazily, only these samples' blocks are decoded
        (analysis that looks at a few samples of a long window goes through here)."""
        return self.fields[:, :, sel]

    def machine_rows(self, sel: slice | np.ndarray) -> np.ndarray:
        """machine_ticks()[sel] without summing the samples not asked for."""
        if self._machine is None and self.cached("machine") is None:
            return np.ascontiguousarray(self.cells(sel).sum(axis=1, dtype=np.int64).T)
        return self.machine_ticks()[sel]

    def cached(self, key: object) -> np.ndarray | None:
        """A per-cell result ([.., n], time on the last axis) computed on this matrix or on
        the matrix it is a time slice of."""
        hit = self.cell_cache.get(key)
        if hit is None and self._parent is not None:
            parent, sel = self._parent
            up = parent.cached(key)
            if up is not None:
                hit = self.cell_cache[key] = up[..., sel]
        return hit

    def parent_offset(self) -> tuple[CoreMatrix, int] | None:
        """(the matrix this one is a contiguous time slice of, where the slice starts in it),
        or None."""
        if self._parent is None:
            return None
        parent, sel = self._parent
        lo, _, step = sel.indices(len(parent))
        return (parent, lo) if step == 1 else None

    def midpoints(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted midpoints t - interval/2, the sample index of each): which samples fall in
        a time window is then a binary search, even where intervals vary."""
        if self._mids is None:
            mids = self.t - self.interval_s / 2
            order = np.argsort(mids, kind="stable")
            self._mids = (mids[order], order)
        return self._mids

    def to_samples(self) -> list[CoreSample]:
        return list(self)


class LazyCoreMatrix(CoreMatrix):
    """A CoreMatrix whose times, CPUs, presence and zone map are known but whose tick cells
    come on demand from `source(lo, hi)` ([NF, ncpu, hi-lo] for samples lo..hi-1, decoded
    from the blocks that hold them). `fields` takes them all, once, so code that reads it sees
    what an eager read gives; `cells(sel)` and time slices take only the samples they cover."""

    def __init__(self, *, source: Callable[[int, int], np.ndarray], dtype: np.dtype,
                 **kw: object) -> None:
        self._source = source
        self._dtype = np.dtype(dtype)
        self._fields: np.ndarray | None = None
        super().__init__(fields=None, **kw)  # type: ignore[arg-type]

    @property  # type: ignore[override]
    def fields(self) -> np.ndarray:
        f = self._fields
        if f is None:
            f = self._fields = self._source(0, len(self))
        return f

    @fields.setter
    def fields(self, value: np.ndarray | None) -> None:
        self._fields = value

    @property
    def tick_dtype(self) -> np.dtype:
        return self._dtype

    def _range(self, lo: int, hi: int) -> np.ndarray:
        if self._fields is not None:
            return self._fields[:, :, lo:hi]
        return self._source(lo, hi)

    def cells(self, sel: slice | np.ndarray) -> np.ndarray:
        if self._fields is not None:
            return self._fields[:, :, sel]
        if isinstance(sel, slice):
            lo, hi, step = sel.indices(len(self))
            return self._source(lo, max(lo, hi))[:, :, ::step] if step > 0 \
                else self.fields[:, :, sel]
        idx = np.flatnonzero(sel) if sel.dtype == bool else np.asarray(sel, np.int64)
        if not idx.size:
            return np.zeros((NF, len(self.cpus), 0), self._dtype)
        lo = int(idx.min())
        return self._source(lo, int(idx.max()) + 1)[:, :, idx - lo]

    def rows(self, sel: slice | np.ndarray) -> CoreMatrix:
        if self._fields is not None or not isinstance(sel, slice) \
                or sel.indices(len(self))[2] != 1:
            return super().rows(sel)
        lo, hi, _ = sel.indices(len(self))
        return LazyCoreMatrix(
            source=lambda a, b: self._range(lo + a, lo + b), dtype=self._dtype,
            t=self.t[sel], interval_s=self.interval_s[sel], cpus=self.cpus,
            present=self.present[sel], _parent=(self, sel),
            diagnostics=list(self.diagnostics),
            zone=self.zone.rows(lo, hi) if self.zone is not None else None)
