"""The per-core series: tick deltas per CPU per sample, stored compactly.

Each sample is committed at once as a small raw row (`core_recent`), so a `kill -9` loses
nothing already sampled. That table is keyed by time WITHOUT ROWID: one b-tree, so a commit
writes one page rather than a table page and its key index's page (schema version 4).
Every BLOCK_SAMPLES samples the raw rows are folded, in one transaction, into a columnar
zstd block (`core_blocks`): per field, per CPU, the run of deltas across the block. Tick
deltas at 1 s are small and columns such as nice, steal and guest are mostly zero, so a busy
96-core machine costs a few bytes per core-second.
"""

from __future__ import annotations

import math
import os
import sqlite3
import struct
import threading
import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import zstandard

from corescope.errors import InvalidInput, StoreFault
from corescope.model.common import Diagnostic
from corescope.model.cores import MODES, CoreSample
from corescope.model.matrix import NF, UNKNOWN_BOUND, CoreMatrix, LazyCoreMatrix, Zone
from corescope.model.packed import PackedRows
from corescope.store import journal
from corescope.store.db import Store

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

BLOCK_SAMPLES = 60
_MAGIC = b"CS1"
_HEADER = struct.Struct("<3sBHHd")  # magic, value width, samples, cpus, t0
# zstandard's contexts are not thread-safe (two serve requests decoding at once crashed the
# process in the C backend): each thread gets its own pair.
_CODECS = threading.local()


def _zc() -> zstandard.ZstdCompressor:
    c = getattr(_CODECS, "zc", None)
    if c is None:
        c = _CODECS.zc = zstandard.ZstdCompressor(level=12)
    return c


def _zd() -> zstandard.ZstdDecompressor:
    d = getattr(_CODECS, "zd", None)
    if d is None:
        d = _CODECS.zd = zstandard.ZstdDecompressor()
    return d


class SeriesFormatError(StoreFault, ValueError):
    """A stored block or row that cannot be decoded."""


# --- raw rows (one per sample) ---------------------------------------------------------------

_prefix: tuple[tuple[int, ...], bytes] = ((), b"")  # the last CPU list and its encoding


def _ids_prefix(ids: tuple[int, ...]) -> bytes:
    """The row's head: how many CPUs, then their ids (the same every tick, so kept)."""
    global _prefix
    if _prefix[0] != ids:
        _prefix = (ids, array("I", [len(ids), *ids]).tobytes())
    return _prefix[1]


def _encode_row(sample: CoreSample) -> bytes:
    d = sample.deltas
    if isinstance(d, PackedRows):  # the sampling hot path
        if isinstance(d.flat, array) and d.flat.typecode == "I":  # a few CPUs
            return _ids_prefix(d.ids) + d.flat.tobytes()
        if isinstance(d.flat, np.ndarray):
            return _ids_prefix(d.ids) + d.flat.astype(np.uint32).tobytes()
    cpus = sample.cpus
    values = array("I", [len(cpus), *cpus])
    for cpu in cpus:
        values.extend(d[cpu])
    return values.tobytes()


def _row_arrays(payload: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(cpu ids, [ncpu, NF] ticks) of one raw row."""
    if not isinstance(payload, bytes) or len(payload) < 4 or len(payload) % 4:
        raise SeriesFormatError("corrupt raw sample row")
    values = np.frombuffer(payload, np.uint32)
    n = int(values[0])
    if len(values) != 1 + n + n * NF:
        raise SeriesFormatError("raw sample row length mismatch")
    return values[1 : 1 + n].astype(np.int64), values[1 + n :].reshape(n, NF)


def _decode_row(t: float, interval_s: float, payload: bytes) -> CoreSample:
    cpus, ticks = _row_arrays(payload)
    return CoreSample(t=t, interval_s=interval_s, deltas=PackedRows(cpus.tolist(), ticks))


# --- columnar blocks -------------------------------------------------------------------------

_WIDTH_DTYPE: dict[int, np.dtype] = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16),
                                     4: np.dtype(np.uint32)}


def _block_parts(t: np.ndarray, interval_s: np.ndarray, cpus: np.ndarray, ticks: np.ndarray,
                 present: np.ndarray) -> tuple[bytes, bytes]:
    """(the block's header: everything but the tick columns, the tick columns)."""
    n, ncpu = present.shape
    if n == 0:
        raise ValueError("empty block")
    if n > 0xFFFF or ncpu > 0xFFFF:
        raise ValueError("block too large")
    t = np.asarray(t, np.float64)
    t0 = float(t[0])
    vals = ticks.transpose(2, 1, 0)[:, present.T]  # [field, present cells, cpu-major]
    biggest = int(vals.max()) if vals.size else 0
    if biggest >= 1 << 32 or (vals.size and int(vals.min()) < 0):
        raise ValueError("tick delta out of range")
    width = 1 if biggest < 256 else 2 if biggest < 65536 else 4
    # sample times as ms offsets from t0, intervals in µs: exact enough, small numbers
    offs = np.rint((t - t0) * 1000)
    ivs = np.rint(np.asarray(interval_s, np.float64) * 1e6)
    for name, a in (("time", offs), ("interval", ivs)):
        if not (np.isfinite(a).all() and (a >= 0).all() and (a < 1 << 32).all()):
            raise ValueError(f"sample {name} out of range for a block")
    head = b"".join((
        _HEADER.pack(_MAGIC, width, n, ncpu, t0),
        np.asarray(cpus, np.uint16).tobytes(),
        offs.astype(np.uint32).tobytes(),
        ivs.astype(np.uint32).tobytes(),
        # presence bitmap per sample (CPUs go offline); all-ones is cheap after compression
        np.packbits(present, axis=1, bitorder="little").tobytes(),
    ))
    return head, vals.astype(_WIDTH_DTYPE[width]).tobytes()


def encode_arrays(t: np.ndarray, interval_s: np.ndarray, cpus: np.ndarray, ticks: np.ndarray,
                  present: np.ndarray) -> bytes:
    """The block of n samples given as arrays (see CoreMatrix; absent cells are ignored)."""
    head, vals = _block_parts(t, interval_s, cpus, ticks, present)
    return _zc().compress(head + vals)


def encode_block(samples: list[CoreSample]) -> bytes:
    """Columnar, zstd-compressed encoding of consecutive samples."""
    if not samples:
        raise ValueError("empty block")
    m = CoreMatrix.from_samples(samples)
    # kept in the order given: the writer folds rows already sorted by time
    order = sorted(range(len(samples)), key=lambda k: samples[k].t)
    if order != list(range(len(samples))):
        raise ValueError("block samples out of time order")
    return encode_arrays(m.t, m.interval_s, m.cpus, m.ticks, m.present)


class _Head(NamedTuple):
    width: int
    cpus: np.ndarray
    t: np.ndarray
    interval_s: np.ndarray
    present: np.ndarray
    end: int  # where the tick columns (or a zone map's bounds) start


def _decode_head(raw: bytes) -> _Head:
    """The header of a decompressed block (or zone map)."""
    try:
        magic, width, n, ncpu, t0 = _HEADER.unpack_from(raw, 0)
    except struct.error as exc:
        raise SeriesFormatError(f"corrupt series block: {exc}") from exc
    if magic != _MAGIC or width not in _WIDTH_DTYPE:
        raise SeriesFormatError("not a series block")
    nbytes = (ncpu + 7) // 8
    pos = _HEADER.size
    need = pos + 2 * ncpu + 8 * n + nbytes * n
    if len(raw) < need:
        raise SeriesFormatError("series block truncated")
    buf = memoryview(raw)
    cpus = np.frombuffer(buf, np.uint16, ncpu, pos).astype(np.int64)
    pos += 2 * ncpu
    offs = np.frombuffer(buf, np.uint32, n, pos)
    pos += 4 * n
    ivs = np.frombuffer(buf, np.uint32, n, pos)
    pos += 4 * n
    bits = np.frombuffer(buf, np.uint8, n * nbytes, pos).reshape(n, nbytes)
    present = np.unpackbits(bits, axis=1, count=ncpu, bitorder="little").astype(bool)
    pos += n * nbytes
    if ncpu > 1 and not (np.diff(cpus) > 0).all():
        raise SeriesFormatError("series block CPU list not ascending")
    return _Head(width, cpus, t0 + offs / 1000.0, ivs / 1e6, present, pos)


def decode_arrays(payload: bytes) -> CoreMatrix:
    """One block as a CoreMatrix; ticks in the block's own (narrowest) unsigned type."""
    try:
        raw = _zd().decompress(payload)
    except zstandard.ZstdError as exc:
        raise SeriesFormatError(f"corrupt series block: {exc}") from exc
    h = _decode_head(raw)
    n, ncpu = h.present.shape
    dtype = _WIDTH_DTYPE[h.width]
    cells = int(h.present.sum())
    if len(raw) - h.end != NF * cells * h.width:
        raise SeriesFormatError("series block length mismatch")
    vals = np.frombuffer(memoryview(raw), dtype, NF * cells, h.end)
    # columns run field-major, then CPU, then sample
    if cells == n * ncpu:  # every CPU online throughout: the matrix layout as it is
        fields = vals.reshape(NF, ncpu, n)
    else:  # scatter them back under the bitmap
        fields = np.zeros((NF, ncpu, n), dtype)
        fields[:, h.present.T] = vals.reshape(NF, cells)
    return CoreMatrix(t=h.t, interval_s=h.interval_s, cpus=h.cpus, fields=fields,
                      present=h.present)


def decode_block(payload: bytes) -> list[CoreSample]:
    return decode_arrays(payload).to_samples()


# --- zone maps: a per-block summary written with the block ------------------------------------
# The block's header (times, intervals, CPUs, presence: no tick columns), then per CPU per
# base mode one byte strictly above its highest % (analysis.usage.mode_bounds). A query learns
# the shape of the whole window from these and decodes only the blocks whose bounds do not
# rule out what it looks for.


def encode_zone(head: bytes, ticks: np.ndarray, present: np.ndarray) -> bytes:
    from corescope.analysis.usage import mode_bounds  # the arithmetic the search uses

    b = mode_bounds(np.asarray(ticks).transpose(2, 1, 0), np.asarray(present, bool))
    return _zc().compress(head + b.tobytes())


class ZoneMap(NamedTuple):
    head: _Head
    bounds: np.ndarray  # uint8 [cpus, MODES]


def decode_zone(blob: object) -> ZoneMap | None:
    """A block's zone map, or None for a block stored without one (older stores) or with one
    this version cannot read: that block is then decoded in full, as before."""
    return _zone_of(_unzip_zone(blob))


def _unzip_zone(blob: object) -> bytes | None:
    if not isinstance(blob, bytes):
        return None
    try:
        return _zd().decompress(blob)
    except zstandard.ZstdError:
        return None


def _zone_of(raw: bytes | None) -> ZoneMap | None:
    if raw is None:
        return None
    try:
        h = _decode_head(raw)
    except SeriesFormatError:
        return None
    if len(raw) - h.end != len(h.cpus) * len(MODES):
        return None
    bounds = np.frombuffer(memoryview(raw), np.uint8, offset=h.end)
    return ZoneMap(h, bounds.reshape(len(h.cpus), len(MODES)))


class _ZoneRun(NamedTuple):
    """The zone maps of consecutive blocks laid out alike (same value width, sample count,
    CPU list, length): decoded together, as arrays with one more axis, block first. Each
    block's values are what _zone_of gives it, with the same arithmetic."""

    width: int
    cpus: np.ndarray
    end: int
    t: np.ndarray  # [blocks, n]
    interval_s: np.ndarray  # [blocks, n]
    present: np.ndarray  # [blocks, n, cpus]
    bounds: np.ndarray  # [blocks, cpus, MODES]

    def zone(self, j: int) -> ZoneMap:
        return ZoneMap(_Head(self.width, self.cpus, self.t[j], self.interval_s[j],
                             self.present[j], self.end), self.bounds[j])


def _zone_runs(raws: list[bytes | None]) -> list[tuple[int, int, _ZoneRun | None]]:
    """(lo, hi, run): raws[lo:hi] decoded together, or run None where they have no usable
    zone map (one at a time then, as decode_zone reads them). The day's 1,440 headers of a
    busy node are one run: a few array operations instead of a dozen per block."""
    out: list[tuple[int, int, _ZoneRun | None]] = []
    lo = 0
    while lo < len(raws):
        first = raws[lo]
        h = _zone_of(first)
        if first is None or h is None or not len(h.head.t):
            out.append((lo, lo + 1, None))
            lo += 1
            continue
        # the same bytes up to the CPU list's end (but t0) and the same length: the same
        # layout, and the same checks pass
        key, cpu_end, size = first[:8], 16 + 2 * len(h.head.cpus), len(first)
        cpu_list = first[16:cpu_end]
        hi = lo + 1
        while hi < len(raws):
            r = raws[hi]
            if r is None or len(r) != size or r[:8] != key or r[16:cpu_end] != cpu_list:
                break
            hi += 1
        out.append((lo, hi, _decode_run(raws[lo:hi], h)))  # type: ignore[arg-type]
        lo = hi
    return out


def _decode_run(raws: list[bytes], first: ZoneMap) -> _ZoneRun:
    h = first.head
    n, ncpu = h.present.shape
    g, size = len(raws), len(raws[0])
    a = np.frombuffer(b"".join(raws), np.uint8).reshape(g, size)

    def column(pos: int, count: int, dtype: np.dtype | type) -> np.ndarray:
        width = np.dtype(dtype).itemsize
        return np.ascontiguousarray(a[:, pos : pos + count * width]).view(dtype)

    t0 = column(8, 1, np.dtype("<f8"))  # the header's little-endian double, [g, 1]
    pos = _HEADER.size + 2 * ncpu
    offs = column(pos, n, np.uint32)
    ivs = column(pos + 4 * n, n, np.uint32)
    nbytes = (ncpu + 7) // 8
    bits = a[:, pos + 8 * n : h.end].reshape(g, n, nbytes)
    # the unpacked bits are 0 or 1: the same bytes read as bool, not copied (8 MB a day)
    present = np.unpackbits(bits, axis=2, count=ncpu, bitorder="little").view(bool)
    return _ZoneRun(h.width, h.cpus, h.end, t0 + offs / 1000.0, ivs / 1e6, present,
                    a[:, h.end :].reshape(g, ncpu, len(MODES)))


def block_row(t: np.ndarray, interval_s: np.ndarray, cpus: np.ndarray, ticks: np.ndarray,
              present: np.ndarray) -> tuple[float, float, int, bytes, bytes]:
    """(t0, t1, n, payload, zone): a core_blocks row for these samples (see encode_arrays)."""
    head, vals = _block_parts(t, interval_s, cpus, ticks, present)
    return (float(t[0]), float(t[-1]), len(t), _zc().compress(head + vals),
            encode_zone(head, ticks, present))


INSERT_BLOCK = "INSERT INTO core_blocks (t0, t1, n, payload, zone) VALUES (?, ?, ?, ?, ?)"


# --- writing and reading ---------------------------------------------------------------------

# Sample times must be real epoch seconds before 2106 (blocks keep ms offsets in 32 bits), and
# intervals positive and under 71 minutes (µs in 32 bits). Anything else is a broken clock or a
# broken capture, and one such row must never stop a block from being written or read.
MAX_T = float(1 << 32)
MAX_INTERVAL_S = (1 << 32) / 1e6 - 1
# a block never spans more than this, so its ms offsets fit whatever the gaps between samples
MAX_BLOCK_SPAN_S = 86400.0


class InvalidSample(InvalidInput, ValueError):
    """A sample whose time or interval cannot be stored; the message says which and why."""


def check_sample_time(t: float, interval_s: float) -> str | None:
    """Why a sample time/interval is unusable, or None when it is fine."""
    if not (isinstance(t, float | int) and math.isfinite(t) and 0 < t < MAX_T):
        return f"sample time {t!r} is not an epoch time before 2106"
    if not (isinstance(interval_s, float | int) and math.isfinite(interval_s)
            and 0 < interval_s <= MAX_INTERVAL_S):
        return f"sample interval {interval_s!r} s is not between 0 and {MAX_INTERVAL_S:.0f} s"
    return None


_APPEND = "INSERT OR REPLACE INTO core_recent (t, interval_s, payload) VALUES (?, ?, ?)"


class SeriesWriter:
    """Appends samples; folds raw rows into a block every `block_samples` samples.

    With `journal_cpus` (the recorder's live path) the raw rows go to the store's journal
    (store/journal.py: one pwrite, no commit) and the fold commits them; rows from a previous
    run's journal or `core_recent` are folded first, each exactly once. Without it (or when
    another recorder holds the journal, or it cannot be made) each row is committed to
    `core_recent` on its own, as before."""

    def __init__(self, store: Store, block_samples: int = BLOCK_SAMPLES,
                 journal_cpus: int | None = None) -> None:
        self.store = store
        self.block_samples = block_samples
        self._pending = store.query("SELECT COUNT(*) FROM core_recent")[0][0]
        self._cursor = store.conn.cursor()  # one per tick would be allocated and dropped
        self._journal: journal.JournalWriter | None = None
        # why samples are not journalled, or what was wrong with the last run's journal
        self.journal_note: str | None = None
        # said once when the journal stops taking rows mid-run (the sensor passes it on)
        self.notes: list[str] = []
        self._fault_said = False
        if journal_cpus is not None:
            self._open_journal(journal_cpus)

    def _open_journal(self, ncpu: int) -> None:
        try:
            j = journal.JournalWriter.lock(self.store.directory)
        except OSError as exc:
            self.journal_note = f"{exc}; each sample is committed to SQLite instead"
            return
        try:
            old = journal.read(self.store.directory)
            if old.diagnostics:  # the rows before the damage are stored below
                self.journal_note = "the last run's journal: " + "; ".join(
                    d.message for d in old.diagnostics)
            folded = self._folded()
            # what the last run left (a kill -9, a crash between fold and reset) and any
            # core_recent rows (older versions, a full journal): stored once, now
            self._fold(old.unfolded(folded), (old.epoch, len(old.rows)))
            epoch = (max(old.epoch, journal.parse_folded(folded)[0]) + 1) & 0xFFFFFFFF
            # four minutes of rows: a fold the store refuses for a while loses nothing
            j.create(epoch, journal.capacity_for(max(ncpu, os.cpu_count() or 1),
                                                 4 * self.block_samples))
        except OSError as exc:  # no room for the file, say: recording goes on without it
            j.close()
            self.journal_note = f"cannot make the journal: {exc}; each sample is committed " \
                                "to SQLite instead"
            return
        except BaseException:
            j.close()
            raise
        self._journal = j

    def _folded(self) -> str | None:
        rows = self.store.query("SELECT value FROM store_meta WHERE key = ?",
                                (journal.FOLDED_KEY,))
        return rows[0][0] if rows else None

    def append(self, sample: CoreSample) -> None:
        """Store one sample. Raises InvalidSample (storing nothing) for an unusable time."""
        why = check_sample_time(sample.t, sample.interval_s)
        if why is not None:
            raise InvalidSample(why)
        payload = _encode_row(sample)
        j = self._journal
        if j is None or not j.append(sample.t, sample.interval_s, payload):
            if j is not None and j.fault is not None and not self._fault_said:
                self._fault_said = True
                self.journal_note = (f"the journal {j.path} cannot be written "
                                     f"({j.fault.strerror or j.fault}); each sample is "
                                     "committed to SQLite instead")
                self.notes.append(self.journal_note)
            # one statement is its own transaction (the connection is in autocommit mode):
            # as atomic and as durable as BEGIN/INSERT/COMMIT, and two statements fewer
            with self.store.lock:
                self.store.check_mapped()
                self._cursor.execute(_APPEND, (sample.t, sample.interval_s, payload))
        self._pending += 1
        if self._pending >= self.block_samples:
            self.flush()

    def append_many(self, samples: Sequence[CoreSample]) -> int:
        """Finished samples (an import, a list or a CoreMatrix) straight into blocks, one
        transaction per block: no raw rows, since nothing is being sampled that a crash could
        lose. Samples with an unusable time are left out; returns how many were stored."""
        self.flush()
        m = samples if isinstance(samples, CoreMatrix) else CoreMatrix.from_samples(samples)
        if not len(m):
            return 0
        order = np.argsort(m.t, kind="stable")
        m = m.rows(order)
        ok = np.array([check_sample_time(float(t), float(iv)) is None
                       for t, iv in zip(m.t, m.interval_s, strict=True)], bool)
        m = m.rows(ok)
        start = 0
        n = len(m)
        while start < n:
            # at most block_samples per block, spanning at most MAX_BLOCK_SPAN_S
            end = min(n, start + self.block_samples)
            end = start + max(1, int(np.searchsorted(m.t[start:end],
                                                      m.t[start] + MAX_BLOCK_SPAN_S, "right")))
            with self.store.write() as c:
                c.execute(INSERT_BLOCK, block_row(m.t[start:end], m.interval_s[start:end],
                                                  m.cpus, m.ticks[start:end],
                                                  m.present[start:end]))
            start = end
        return n

    def flush(self) -> None:
        """Fold every raw row into blocks (one transaction: all or nothing). A row that cannot
        be decoded or stored (written by an older, unchecked version) is dropped, not kept
        forever in the way of every later fold."""
        j = self._journal
        if j is None or not j.rows:
            self._fold([], None)
            return
        self._fold(j.rows, (j.epoch, len(j.rows)))
        j.reset()  # after the commit: a crash in between is what FOLDED_KEY is for

    def _fold(self, extra: list[tuple[float, float, bytes]],
              done: tuple[int, int] | None) -> None:
        """Fold core_recent's rows and `extra` (journal rows) into blocks; with `done`
        (journal epoch, rows), record in the same transaction that those rows are stored."""
        with self.store.write() as c:
            rows = c.execute("SELECT t, interval_s, payload FROM core_recent ORDER BY t").fetchall()
            had_recent = bool(rows)
            if extra:
                rows = sorted(rows + list(extra), key=lambda r: r[0]) if rows else list(extra)
            if rows:
                self._store_rows(c, rows)
            if had_recent:
                c.execute("DELETE FROM core_recent")
            if done is not None and done[1]:
                c.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)",
                          (journal.FOLDED_KEY, f"{done[0]} {done[1]}"))
        self._pending = 0

    @staticmethod
    def _store_rows(c: sqlite3.Connection, rows: list[tuple]) -> None:
        m = _one_run(rows)
        if m is not None:  # the usual minute: one block, straight from the rows' bytes
            c.execute(INSERT_BLOCK, block_row(m.t, m.interval_s, m.cpus, m.ticks, m.present))
            return
        good: list[CoreSample] = []
        for t, iv, payload in rows:
            try:
                if check_sample_time(t, iv) is None:
                    good.append(_decode_row(t, iv, payload))
            except SeriesFormatError:
                pass
        for group in _block_groups(good):
            if sorted(s.t for s in group) != [s.t for s in group]:
                raise ValueError("block samples out of time order")
            m = CoreMatrix.from_samples(group)
            c.execute(INSERT_BLOCK, block_row(m.t, m.interval_s, m.cpus, m.ticks, m.present))

    def close(self) -> None:
        """Fold what is left and let go of the journal (its file stays, empty)."""
        try:
            self.flush()
        finally:
            if self._journal is not None:
                self._journal.close()
                self._journal = None


def _one_run(rows: list[tuple]) -> CoreMatrix | None:
    """Raw rows (sorted by time) as one block's matrix when they are what one run of the
    sampler writes: every time usable, every row from the same CPUs (ascending), within one
    block's span. The same matrix the per-sample fold builds, without a Python object per
    sample and CPU; None for anything else, which that fold handles."""
    first = rows[0][2]
    if not isinstance(first, bytes) or len(first) < 4 or len(rows) > 0xFFFF:
        return None
    ncpu = int.from_bytes(first[:4], "little")
    size = 4 * (1 + ncpu + ncpu * NF)
    head = first[: 4 * (1 + ncpu)]
    for t, iv, payload in rows:
        if not (isinstance(payload, bytes) and len(payload) == size
                and payload.startswith(head)) or check_sample_time(t, iv) is not None:
            return None
    if rows[-1][0] - rows[0][0] > MAX_BLOCK_SPAN_S:
        return None
    values = np.frombuffer(b"".join(r[2] for r in rows), np.uint32).reshape(len(rows), -1)
    cpus = values[0, 1 : 1 + ncpu].astype(np.int64)
    if ncpu == 0 or (ncpu > 1 and not (np.diff(cpus) > 0).all()):
        return None
    return CoreMatrix.from_ticks(
        np.array([r[0] for r in rows], np.float64), np.array([r[1] for r in rows], np.float64),
        cpus, values[:, 1 + ncpu :].reshape(len(rows), ncpu, NF),
        np.ones((len(rows), ncpu), bool))


def _block_groups(samples: list[CoreSample]) -> Iterator[list[CoreSample]]:
    """Consecutive runs of at most 0xFFFF samples spanning at most MAX_BLOCK_SPAN_S."""
    group: list[CoreSample] = []
    for s in samples:
        if group and (s.t - group[0].t > MAX_BLOCK_SPAN_S or len(group) >= 0xFFFF):
            yield group
            group = []
        group.append(s)
    if group:
        yield group


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
        self._make_room(cpu_list, _WIDTH_DTYPE[h.width], k)
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

    def add_run(self, run: _ZoneRun, a: int, b: int, rowids: list[int]) -> None:
        """add_zoned of every sample of blocks a..b-1 of a run (rowids theirs), at once: the
        same arrays as adding them one by one."""
        g, n = b - a, run.t.shape[1]
        k = g * n
        cpu_list = run.cpus.tolist()
        self._make_room(cpu_list, _WIDTH_DTYPE[run.width], k)
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
    raws = [_unzip_zone(b[3]) for b in blocks]
    runs = _zone_runs(raws)
    zones = {lo: _zone_of(raws[lo]) for lo, _, run in runs if run is None}
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
            cpus, ticks = _row_arrays(payload)
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
