"""The per-core series: tick deltas per CPU per sample, stored compactly.

Each sample is committed at once as a small raw row (`core_recent`), so a `kill -9` loses
nothing already sampled. That table is keyed by time WITHOUT ROWID: one b-tree, so a commit
writes one page rather than a table page and its key index's page (schema version 4).
Every BLOCK_SAMPLES samples the raw rows are folded, in one transaction, into a columnar
zstd block (`core_blocks`): per field, per CPU, the run of deltas across the block. Tick
deltas at 1 s are small and columns such as nice, steal and guest are mostly zero, so a busy
96-core machine costs a few bytes per core-second.

This module holds the tables and reads them; the byte forms are store/series_codec.py, the
zone maps store/series_zones.py, the writer store/series_writer.py.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from corescope.model.common import Diagnostic
from corescope.model.cores import MODES, CoreSample
from corescope.model.matrix import NF, UNKNOWN_BOUND, CoreMatrix, LazyCoreMatrix, Zone
from corescope.store import journal
from corescope.store.db import Store
from corescope.store.series_codec import (
    MAX_INTERVAL_S,
    MAX_T,
    WIDTH_DTYPE,
    SeriesFormatError,
    check_sample_time,
    decode_arrays,
    row_arrays,
)
from corescope.store.series_zones import ZoneMap, ZoneRun, unzip_zone, zone_of, zone_runs

DDL = """
CREATE TABLE IF NOT EXISTS core_recent (
    t REAL PRIMARY KEY,
    interval_s REAL NOT NULL,
    payload BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS core_blocks (
    t0 REAL NOT NULL,
    t1 REAL NOT NULL,
    n INTEGER NOT NULL,
    zone BLOB,  -- before the payload, so reading it does not walk the payload's pages
    payload BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS core_blocks_t1 ON core_blocks (t1);
"""


class _MatrixBuilder:
    """Appends blocks into one preallocated matrix; the CPU axis and the tick type grow only
    when a block brings a new CPU (hotplug) or a bigger delta, which is rare. A block with a
    zone map is added by its header only: its ticks are decoded when something reads them."""

    def __init__(self, capacity: int) -> None:
        self.cap = max(capacity, 1)
        self.n = 0
        self.cpus: list[int] = []
        self.col: dict[int, int] = {}
        self.t = np.empty(self.cap)
        self.iv = np.empty(self.cap)
        self.fields = np.zeros((NF, 0, self.cap), np.uint8)
        self.present = np.zeros((self.cap, 0), bool)
        # (first sample of each block, their CPUs, their bounds [blocks, cpus, MODES] or None)
        self.zones: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
        self.lazy: list[_LazyBlock] = []
        self.decoded = 0  # blocks added with their ticks (no zone map, raw rows)

    def _make_room(self, cpu_list: list[int], dtype: np.dtype, k: int) -> None:
        new = [] if cpu_list == self.cpus else [c for c in cpu_list if c not in self.col]
        if new or dtype.itemsize > self.fields.dtype.itemsize:
            self._regrow(new, np.promote_types(self.fields.dtype, dtype))
        if self.n + k > self.cap:
            self._resize(max(self.n + k, self.cap * 2))

    def _columns(self, cpu_list: list[int]) -> slice | np.ndarray:
        if cpu_list == self.cpus:
            return slice(None)
        return np.array([self.col[c] for c in cpu_list], np.int64)

    def add(self, m: CoreMatrix, bounds: np.ndarray | None = None) -> None:
        """Append a decoded block; `bounds` its zone map ([its cpus, MODES]; None: none)."""
        k = len(m)
        if not k:
            return
        cpu_list = m.cpus.tolist()
        self._make_room(cpu_list, m.fields.dtype, k)
        self.zones.append((np.array([self.n], np.int64), m.cpus,
                           None if bounds is None else bounds[None]))
        self.decoded += 1
        sl = slice(self.n, self.n + k)
        self.t[sl], self.iv[sl] = m.t, m.interval_s
        idx = self._columns(cpu_list)
        self.fields[:, idx, sl] = m.fields
        self.present[sl, idx] = m.present
        self.n += k

    def add_zoned(self, zone: ZoneMap, keep: np.ndarray | None, rowid: int) -> None:
        """Append a block by its zone map (the samples `keep` selects; None: all); its
        ticks stay compressed until read."""
        h = zone.head
        k = len(h.t) if keep is None else int(keep.sum())
        if not k:
            return
        cpu_list = h.cpus.tolist()
        self._make_room(cpu_list, WIDTH_DTYPE[h.width], k)
        self.zones.append((np.array([self.n], np.int64), h.cpus, zone.bounds[None]))
        sl = slice(self.n, self.n + k)
        part = None if keep is None or k == len(keep) else keep
        if part is None:
            self.t[sl], self.iv[sl], present = h.t, h.interval_s, h.present
        else:
            self.t[sl], self.iv[sl], present = h.t[part], h.interval_s[part], h.present[part]
        self.present[sl, self._columns(cpu_list)] = present
        self.lazy.append(_LazyBlock(self.n, k, h.cpus, part, rowid))
        self.n += k

    def add_run(self, run: ZoneRun, a: int, b: int, rowids: list[int]) -> None:
        """add_zoned of every sample of blocks a..b-1 of a run (rowids theirs), at once: the
        same arrays as adding them one by one."""
        g, n = b - a, run.t.shape[1]
        k = g * n
        cpu_list = run.cpus.tolist()
        self._make_room(cpu_list, WIDTH_DTYPE[run.width], k)
        starts = self.n + n * np.arange(g, dtype=np.int64)
        self.zones.append((starts, run.cpus, run.bounds[a:b]))
        sl = slice(self.n, self.n + k)
        self.t[sl], self.iv[sl] = run.t[a:b].ravel(), run.interval_s[a:b].ravel()
        self.present[sl, self._columns(cpu_list)] = run.present[a:b].reshape(k, -1)
        self.lazy.extend(_LazyBlock(int(s), n, run.cpus, None, r)
                         for s, r in zip(starts.tolist(), rowids, strict=True))
        self.n += k

    def _regrow(self, new: list[int], dtype: np.dtype) -> None:
        cpus = sorted([*self.cpus, *new])
        idx = np.array([cpus.index(c) for c in self.cpus], np.int64)
        fields = np.zeros((NF, len(cpus), self.cap), dtype)
        present = np.zeros((self.cap, len(cpus)), bool)
        if self.decoded:  # only decoded blocks have ticks here yet
            fields[:, idx] = self.fields
        present[:, idx] = self.present
        self.cpus, self.col = cpus, {c: i for i, c in enumerate(cpus)}
        self.fields, self.present = fields, present

    def _resize(self, cap: int) -> None:
        t, iv, fields, present = self.t, self.iv, self.fields, self.present
        self.t, self.iv = np.empty(cap), np.empty(cap)
        self.fields = np.zeros((NF, fields.shape[1], cap), fields.dtype)
        self.present = np.zeros((cap, present.shape[1]), bool)
        n = self.n
        self.t[:n], self.iv[:n], self.fields[:, :, :n], self.present[:n] = \
            t[:n], iv[:n], fields[:, :, :n], present[:n]
        self.cap = cap

    def build(self, diagnostics: list[Diagnostic], payloads: _Payloads) -> CoreMatrix:
        n = self.n
        order = np.argsort(self.t[:n], kind="stable")
        in_order = bool((order == np.arange(n)).all())
        kw = dict(t=self.t[:n], interval_s=self.iv[:n], cpus=np.array(self.cpus, np.int64),
                  present=self.present[:n], diagnostics=diagnostics,
                  zone=self._zone() if in_order else None)
        if self.lazy:
            source = _BlockSource(self, diagnostics, payloads)
            if in_order:
                return LazyCoreMatrix(source=source, dtype=self.fields.dtype,
                                      **kw)  # type: ignore[arg-type]
            # overlapping blocks: decoded now, then sorted
            m = CoreMatrix(fields=source(0, n), **kw)  # type: ignore[arg-type]
        else:
            m = CoreMatrix(fields=self.fields[:, :, :n], **kw)  # type: ignore[arg-type]
        return m if in_order else m.rows(order)

    def _zone(self) -> Zone | None:
        """Segments in the final CPU columns; a CPU a block did not have gets bound 0 (it
        had no cell there), a block without a zone map UNKNOWN_BOUND throughout."""
        if not self.zones or all(b is None for _, _, b in self.zones):
            return None
        cpus = np.array(self.cpus, np.int64)
        starts = np.concatenate([k for k, _, _ in self.zones])
        bounds = np.zeros((len(starts), len(cpus), len(MODES)), np.uint8)
        s = 0
        for k, bcpus, b in self.zones:
            # a block with every CPU (the usual case) is a plain copy, not a gather
            idx = slice(None) if len(bcpus) == len(cpus) else np.searchsorted(cpus, bcpus)
            bounds[s : s + len(k), idx] = UNKNOWN_BOUND if b is None else b
            s += len(k)
        return Zone(starts, bounds)


class _LazyBlock(NamedTuple):
    start: int  # first sample in the matrix
    n: int
    cpus: np.ndarray
    keep: np.ndarray | None  # which of the block's samples were kept (None: all)
    rowid: int


class _Payloads:
    """Blocks' compressed ticks by rowid, read from the store when they are decoded: a query
    reads the zone maps of its whole window but the payloads of few blocks. The store's
    connection stays open while a matrix may still ask (see Store.pin): commands render
    their matrix after closing their evidence."""

    _BATCH = 500  # rowids per query (well under SQLite's bound on parameters)

    def __init__(self, store: Store) -> None:
        self.store = store
        store.pin()
        weakref.finalize(self, store.unpin)

    def __call__(self, rowids: list[int]) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        for k in range(0, len(rowids), self._BATCH):
            part = rowids[k : k + self._BATCH]
            sql = ("SELECT rowid, payload FROM core_blocks WHERE rowid IN "
                   f"({','.join('?' * len(part))})")
            with self.store.lock:
                self.store.check_mapped()
                out.update(self.store.conn.execute(sql, part).fetchall())
        return out


class _BlockSource:
    """The ticks of samples lo..hi-1 of a lazily read matrix: the blocks holding them are
    read and decoded (each once, while only parts of the window are asked for) and laid out
    in the matrix's columns. A block that turns out corrupt (or was deleted since its zone
    map was read) is skipped with a diagnostic, and its samples no longer count as online."""

    def __init__(self, b: _MatrixBuilder, diagnostics: list[Diagnostic],
                 payloads: _Payloads) -> None:
        self.payloads = payloads
        self.blocks = b.lazy
        self.starts = np.array([x.start for x in b.lazy], np.int64)
        # blocks added decoded (no zone map, raw rows) sit in the builder's array
        self.eager = b.fields if b.decoded else None
        self.present, self.columns, self.dtype = b.present, b._columns, b.fields.dtype
        self.ncpu = len(b.cpus)
        self.diagnostics = diagnostics
        self.cache: dict[int, np.ndarray] = {}

    def __call__(self, lo: int, hi: int) -> np.ndarray:
        out = np.zeros((NF, self.ncpu, hi - lo), self.dtype)
        if self.eager is not None:
            out[:] = self.eager[:, :, lo:hi]
        whole = hi - lo >= int(self.present.shape[0]) // 2  # no point keeping these
        i0 = max(0, int(np.searchsorted(self.starts, lo, side="right")) - 1)
        i1 = int(np.searchsorted(self.starts, hi, side="left"))
        touched = [i for i in range(i0, i1) if max(lo, self.blocks[i].start)
                   < min(hi, self.blocks[i].start + self.blocks[i].n)]
        # every payload these samples need, in one query
        fetched = self.payloads([self.blocks[i].rowid for i in touched
                                 if i not in self.cache])
        for i in touched:
            blk = self.blocks[i]
            a, z = max(lo, blk.start), min(hi, blk.start + blk.n)
            ticks = self.cache.get(i)
            if ticks is None:
                ticks = self._decode(blk, fetched.get(blk.rowid))
                if not whole:
                    self.cache[i] = ticks
            out[:, self.columns(blk.cpus.tolist()), a - lo : z - lo] = \
                ticks[:, :, a - blk.start : z - blk.start]
        return out

    def _decode(self, b: _LazyBlock, payload: bytes | None) -> np.ndarray:
        try:
            if payload is None:
                raise SeriesFormatError("deleted from the store since the query began")
            m = decode_arrays(payload)
            if not np.array_equal(m.cpus, b.cpus) or \
                    len(m) != (b.n if b.keep is None else len(b.keep)):
                raise SeriesFormatError("block does not match its zone map")
        except SeriesFormatError as exc:
            # the zone map said these samples exist; without their ticks they are not online
            self.present[b.start : b.start + b.n] = False
            self.diagnostics.append(Diagnostic("store core_blocks",
                                               f"block {b.rowid} skipped: {exc}"))
            return np.zeros((NF, len(b.cpus), b.n), self.dtype)
        return m.fields if b.keep is None else m.fields[:, :, b.keep]


def _valid_times(t: np.ndarray, iv: np.ndarray) -> np.ndarray:
    return (np.isfinite(t) & (t > 0) & (t < MAX_T) & np.isfinite(iv) & (iv > 0)
            & (iv <= MAX_INTERVAL_S))


_ALL = None  # add_zoned: every sample of the block


def read_matrix(store: Store, t0: float, t1: float) -> CoreMatrix:
    """Samples whose end time lies in [t0, t1], oldest first, as arrays, decoded block by
    block. A block or row that cannot be decoded is skipped and named in `diagnostics`."""
    diags: list[Diagnostic] = []
    jr = journal.read(store.directory)  # before the snapshot: see store/journal.py
    with store.lock, _snapshot(store):
        # the payloads are read when their blocks are decoded (see _Payloads)
        blocks = store.conn.execute(
            "SELECT rowid, t0, t1, zone, n FROM core_blocks WHERE t1 >= ? AND t0 <= ? "
            "ORDER BY t1", (t0, t1)).fetchall()
        rows = store.conn.execute(
            "SELECT t, interval_s, payload FROM core_recent WHERE t BETWEEN ? AND ? ORDER BY t",
            (t0, t1)).fetchall()
        extra = _journal_rows(store, jr, diags)
    extra = [r for r in extra if t0 <= r[0] <= t1]
    if extra:
        rows = sorted(rows + extra, key=lambda r: r[0]) if rows else extra
    out = _MatrixBuilder(sum(int(b[4]) for b in blocks) + len(rows))
    payloads = _Payloads(store)
    # the blocks stay compressed (decoded when read); their zone maps say what they hold
    raws = [unzip_zone(b[3]) for b in blocks]
    runs = zone_runs(raws)
    zones = {lo: zone_of(raws[lo]) for lo, _, run in runs if run is None}
    # blocks without a usable zone map (older stores) are decoded now, in full
    now = payloads([blocks[lo][0] for lo, z in zones.items() if z is None])
    for lo, hi, run in runs:
        if run is None:
            _add_block(out, blocks[lo], zones[lo], now.get(blocks[lo][0]), t0, t1, diags)
            continue
        part = blocks[lo:hi]
        b0 = np.array([b[1] for b in part], np.float64)
        b1 = np.array([b[2] for b in part], np.float64)
        usual = _usual(b0, b1, run.interval_s, t0, t1).tolist()
        j = 0
        while j < len(part):
            if not usual[j]:
                _add_block(out, part[j], run.zone(j), None, t0, t1, diags)
                j += 1
                continue
            e = j + 1
            while e < len(part) and usual[e]:
                e += 1
            out.add_run(run, j, e, [b[0] for b in part[j:e]])
            j = e
    for t, iv, payload in rows:
        why = check_sample_time(t, iv)
        try:
            if why is not None:
                raise SeriesFormatError(why)
            cpus, ticks = row_arrays(payload)
        except SeriesFormatError as exc:
            diags.append(Diagnostic("store core_recent", f"sample at {t!r} skipped: {exc}"))
            continue
        order = np.argsort(cpus, kind="stable")
        out.add(CoreMatrix(t=np.array([t], np.float64), interval_s=np.array([iv], np.float64),
                           cpus=cpus[order], fields=ticks[order].T[:, :, None],
                           present=np.ones((1, len(cpus)), bool)))
    return out.build(diags, payloads)


def _usual(b0: np.ndarray, b1: np.ndarray, iv: np.ndarray, t0: float, t1: float
           ) -> np.ndarray:
    """Per block: well inside the window, every time usable (the stored times are the
    columns' to within half a millisecond), so every sample is kept as it is."""
    return ((t0 <= b0 - 0.001) & (b1 + 0.001 <= t1) & (b0 > 1.0) & (b1 < MAX_T - 1)
            & (iv.min(axis=1) > 0) & (iv.max(axis=1) <= MAX_INTERVAL_S))


def _add_block(out: _MatrixBuilder, block: tuple, zone: ZoneMap | None,
               payload: bytes | None, t0: float, t1: float, diags: list[Diagnostic]) -> None:
    """One block, by its zone map when it has one, else decoded in full (`payload` read for
    it: None if it has gone since)."""
    rowid, b0, b1 = block[:3]
    if zone is not None:
        m_t, m_iv = zone.head.t, zone.head.interval_s
        if _usual(np.array([b0]), np.array([b1]), m_iv[None], t0, t1)[0]:
            out.add_zoned(zone, _ALL, rowid)
            return
    else:  # stored without a zone map (an older store): decoded now, in full
        try:
            if payload is None:
                raise SeriesFormatError("deleted from the store since the query began")
            m = decode_arrays(payload)
        except SeriesFormatError as exc:
            diags.append(Diagnostic("store core_blocks", f"block {rowid} skipped: {exc}"))
            return
        m_t, m_iv = m.t, m.interval_s
    keep = _valid_times(m_t, m_iv)
    if not keep.all():
        diags.append(Diagnostic("store core_blocks", f"block {rowid}: "
                                f"{int((~keep).sum())} samples with unusable times skipped"))
    keep &= (m_t >= t0) & (m_t <= t1)
    if zone is not None:
        # a block's bounds hold for any subset of its samples
        out.add_zoned(zone, keep, rowid)
    else:
        out.add(m if keep.all() else m.rows(keep))


def read_samples(store: Store, t0: float, t1: float) -> list[CoreSample]:
    """Samples whose end time lies in [t0, t1], oldest first."""
    return read_matrix(store, t0, t1).to_samples()


@contextmanager
def _snapshot(store: Store) -> Iterator[None]:
    """One read transaction (one WAL snapshot) for several SELECTs, so a fold committing
    between them is seen entirely or not at all. Inside a write: that transaction."""
    own = not store.conn.in_transaction
    if own:
        store.check_mapped()
        store.conn.execute("BEGIN")
    try:
        yield
    finally:
        if own:
            store.conn.execute("COMMIT")


def _journal_rows(store: Store, jr: journal.JournalRead,
                  diags: list[Diagnostic]) -> list[tuple[float, float, bytes]]:
    """The journal's rows no fold has stored (store.lock held, in the reader's snapshot);
    its problems go to `diags` unless every row it could read is stored anyway (a reader
    that raced a fold)."""
    got = store.conn.execute("SELECT value FROM store_meta WHERE key = ?",
                             (journal.FOLDED_KEY,)).fetchall()
    folded = got[0][0] if got else None
    rows = jr.unfolded(folded)
    epoch, count = journal.parse_folded(folded)
    if jr.diagnostics and not (epoch == jr.epoch and count >= len(jr.rows)):
        diags.extend(jr.diagnostics)
    return rows


def time_span(store: Store) -> tuple[float, float] | None:
    """Oldest and newest sample time in the store, or None when empty."""
    jr = journal.read(store.directory)
    with store.lock, _snapshot(store):
        lo_hi = store.conn.execute(
            "SELECT MIN(t), MAX(t) FROM (SELECT t0 AS t FROM core_blocks UNION ALL "
            "SELECT t1 FROM core_blocks UNION ALL SELECT t FROM core_recent) "
            "WHERE t > 0 AND t < ?", (MAX_T,)).fetchone()
        extra = [r[0] for r in _journal_rows(store, jr, []) if 0 < r[0] < MAX_T]
    lo, hi = lo_hi
    if extra:
        lo = min(extra) if lo is None else min(lo, min(extra))
        hi = max(extra) if hi is None else max(hi, max(extra))
    return None if lo is None else (lo, hi)


def retain(store: Store, cutoff: float) -> None:
    with store.write() as c:
        c.execute("DELETE FROM core_blocks WHERE t1 < ?", (cutoff,))
        c.execute("DELETE FROM core_recent WHERE t < ?", (cutoff,))


def count_core_seconds(samples: Iterable[CoreSample]) -> float:
    return sum(s.interval_s * len(s.deltas) for s in samples)
