"""The per-core series: tick deltas per CPU per sample, stored compactly.

Each sample is committed at once as a small raw row (`core_recent`), so a `kill -9` loses
nothing already sampled. Every BLOCK_SAMPLES samples the raw rows are folded, in one
transaction, into a columnar zstd block (`core_blocks`): per field, per CPU, the run of
deltas across the block. Tick deltas at 1 s are small and columns such as nice, steal and guest
are mostly zero, so a busy 96-core machine costs a few bytes per core-second.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import zstandard

from corescope.model.common import Diagnostic
from corescope.model.cores import CoreSample
from corescope.model.matrix import NF, CoreMatrix
from corescope.model.packed import PackedRows
from corescope.store.db import Store

DDL = """
CREATE TABLE IF NOT EXISTS core_recent (
    t REAL PRIMARY KEY,
    interval_s REAL NOT NULL,
    payload BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS core_blocks (
    t0 REAL NOT NULL,
    t1 REAL NOT NULL,
    n INTEGER NOT NULL,
    payload BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS core_blocks_t1 ON core_blocks (t1);
"""

BLOCK_SAMPLES = 60
_MAGIC = b"CS1"
_HEADER = struct.Struct("<3sBHHd")  # magic, value width, samples, cpus, t0
_ZC = zstandard.ZstdCompressor(level=12)
_ZD = zstandard.ZstdDecompressor()


class SeriesFormatError(ValueError):
    """A stored block or row that cannot be decoded."""


# --- raw rows (one per sample) ---------------------------------------------------------------

def _encode_row(sample: CoreSample) -> bytes:
    d = sample.deltas
    if isinstance(d, PackedRows) and isinstance(d.flat, np.ndarray):  # the sampling hot path
        return array("I", [len(d.ids), *d.ids]).tobytes() + d.flat.astype(np.uint32).tobytes()
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

_WIDTH_DTYPE = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32)}


def encode_arrays(t: np.ndarray, interval_s: np.ndarray, cpus: np.ndarray, ticks: np.ndarray,
                  present: np.ndarray) -> bytes:
    """The block of n samples given as arrays (see CoreMatrix; absent cells are ignored)."""
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
    return _ZC.compress(b"".join((
        _HEADER.pack(_MAGIC, width, n, ncpu, t0),
        np.asarray(cpus, np.uint16).tobytes(),
        offs.astype(np.uint32).tobytes(),
        ivs.astype(np.uint32).tobytes(),
        # presence bitmap per sample (CPUs go offline); all-ones is cheap after compression
        np.packbits(present, axis=1, bitorder="little").tobytes(),
        vals.astype(_WIDTH_DTYPE[width]).tobytes(),
    )))


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


def decode_arrays(payload: bytes) -> CoreMatrix:
    """One block as a CoreMatrix; ticks in the block's own (narrowest) unsigned type."""
    try:
        raw = _ZD.decompress(payload)
        magic, width, n, ncpu, t0 = _HEADER.unpack_from(raw, 0)
    except (zstandard.ZstdError, struct.error) as exc:
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
    dtype = _WIDTH_DTYPE[width]
    cells = int(present.sum())
    if len(raw) - pos != NF * cells * width:
        raise SeriesFormatError("series block length mismatch")
    if ncpu > 1 and not (np.diff(cpus) > 0).all():
        raise SeriesFormatError("series block CPU list not ascending")
    vals = np.frombuffer(buf, dtype, NF * cells, pos)
    # columns run field-major, then CPU, then sample
    if cells == n * ncpu:  # every CPU online throughout: the matrix layout as it is
        fields = vals.reshape(NF, ncpu, n)
    else:  # scatter them back under the bitmap
        fields = np.zeros((NF, ncpu, n), dtype)
        fields[:, present.T] = vals.reshape(NF, cells)
    return CoreMatrix(t=t0 + offs / 1000.0, interval_s=ivs / 1e6, cpus=cpus, fields=fields,
                      present=present)


def decode_block(payload: bytes) -> list[CoreSample]:
    return decode_arrays(payload).to_samples()


# --- writing and reading ---------------------------------------------------------------------

# Sample times must be real epoch seconds before 2106 (blocks keep ms offsets in 32 bits), and
# intervals positive and under 71 minutes (µs in 32 bits). Anything else is a broken clock or a
# broken capture, and one such row must never stop a block from being written or read.
MAX_T = float(1 << 32)
MAX_INTERVAL_S = (1 << 32) / 1e6 - 1
# a block never spans more than this, so its ms offsets fit whatever the gaps between samples
MAX_BLOCK_SPAN_S = 86400.0


class InvalidSample(ValueError):
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
    """Appends samples; folds raw rows into a block every `block_samples` samples."""

    def __init__(self, store: Store, block_samples: int = BLOCK_SAMPLES) -> None:
        self.store = store
        self.block_samples = block_samples
        self._pending = store.query("SELECT COUNT(*) FROM core_recent")[0][0]

    def append(self, sample: CoreSample) -> None:
        """Store one sample. Raises InvalidSample (storing nothing) for an unusable time."""
        why = check_sample_time(sample.t, sample.interval_s)
        if why is not None:
            raise InvalidSample(why)
        row = (sample.t, sample.interval_s, _encode_row(sample))
        # one statement is its own transaction (the connection is in autocommit mode): as
        # atomic and as durable as BEGIN/INSERT/COMMIT, and two statements fewer each tick
        with self.store.lock:
            self.store.conn.execute(_APPEND, row)
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
                c.execute(
                    "INSERT INTO core_blocks (t0, t1, n, payload) VALUES (?, ?, ?, ?)",
                    (float(m.t[start]), float(m.t[end - 1]), end - start,
                     encode_arrays(m.t[start:end], m.interval_s[start:end], m.cpus,
                                   m.ticks[start:end], m.present[start:end])),
                )
            start = end
        return n

    def flush(self) -> None:
        """Fold every raw row into blocks (one transaction: all or nothing). A row that cannot
        be decoded or stored (written by an older, unchecked version) is dropped, not kept
        forever in the way of every later fold."""
        with self.store.write() as c:
            rows = c.execute("SELECT t, interval_s, payload FROM core_recent ORDER BY t").fetchall()
            if not rows:
                return
            good: list[CoreSample] = []
            for t, iv, payload in rows:
                try:
                    if check_sample_time(t, iv) is None:
                        good.append(_decode_row(t, iv, payload))
                except SeriesFormatError:
                    pass
            for group in _block_groups(good):
                c.execute(
                    "INSERT INTO core_blocks (t0, t1, n, payload) VALUES (?, ?, ?, ?)",
                    (group[0].t, group[-1].t, len(group), encode_block(group)),
                )
            c.execute("DELETE FROM core_recent")
        self._pending = 0


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
    """Appends decoded blocks into one preallocated matrix; the CPU axis and the tick type
    grow only when a block brings a new CPU (hotplug) or a bigger delta, which is rare."""

    def __init__(self, capacity: int) -> None:
        self.cap = max(capacity, 1)
        self.n = 0
        self.cpus: list[int] = []
        self.col: dict[int, int] = {}
        self.t = np.empty(self.cap)
        self.iv = np.empty(self.cap)
        self.fields = np.zeros((NF, 0, self.cap), np.uint8)
        self.present = np.zeros((self.cap, 0), bool)

    def add(self, m: CoreMatrix) -> None:
        k = len(m)
        if not k:
            return
        cpu_list = m.cpus.tolist()
        new = [c for c in cpu_list if c not in self.col]
        if new or m.fields.dtype.itemsize > self.fields.dtype.itemsize:
            self._regrow(new, np.promote_types(self.fields.dtype, m.fields.dtype))
        if self.n + k > self.cap:
            self._resize(max(self.n + k, self.cap * 2))
        sl = slice(self.n, self.n + k)
        self.t[sl], self.iv[sl] = m.t, m.interval_s
        if cpu_list == self.cpus:
            self.fields[:, :, sl], self.present[sl] = m.fields, m.present
        else:
            idx = np.array([self.col[c] for c in cpu_list], np.int64)
            self.fields[:, idx, sl] = m.fields
            self.present[sl, idx] = m.present
        self.n += k

    def _regrow(self, new: list[int], dtype: np.dtype) -> None:
        cpus = sorted([*self.cpus, *new])
        idx = np.array([cpus.index(c) for c in self.cpus], np.int64)
        fields = np.zeros((NF, len(cpus), self.cap), dtype)
        present = np.zeros((self.cap, len(cpus)), bool)
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

    def build(self, diagnostics: list[Diagnostic]) -> CoreMatrix:
        n = self.n
        order = np.argsort(self.t[:n], kind="stable")
        sel: slice | np.ndarray = slice(0, n) if (order == np.arange(n)).all() else order
        return CoreMatrix(t=self.t[sel], interval_s=self.iv[sel],
                          cpus=np.array(self.cpus, np.int64), fields=self.fields[:, :, sel],
                          present=self.present[sel], diagnostics=diagnostics)


def _valid_times(t: np.ndarray, iv: np.ndarray) -> np.ndarray:
    return (np.isfinite(t) & (t > 0) & (t < MAX_T) & np.isfinite(iv) & (iv > 0)
            & (iv <= MAX_INTERVAL_S))


def read_matrix(store: Store, t0: float, t1: float) -> CoreMatrix:
    """Samples whose end time lies in [t0, t1], oldest first, as arrays, decoded block by
    block. A block or row that cannot be decoded is skipped and named in `diagnostics`."""
    diags: list[Diagnostic] = []
    (nblk,) = store.query(
        "SELECT COALESCE(SUM(n), 0) FROM core_blocks WHERE t1 >= ? AND t0 <= ?", (t0, t1))[0]
    (nrow,) = store.query("SELECT COUNT(*) FROM core_recent WHERE t BETWEEN ? AND ?",
                          (t0, t1))[0]
    out = _MatrixBuilder(int(nblk) + int(nrow))
    with store.lock:
        cur = store.conn.execute(
            "SELECT rowid, payload FROM core_blocks WHERE t1 >= ? AND t0 <= ? ORDER BY t1",
            (t0, t1))
        for rowid, payload in cur:  # one block in memory at a time
            try:
                m = decode_arrays(payload)
            except SeriesFormatError as exc:
                diags.append(Diagnostic("store core_blocks", f"block {rowid} skipped: {exc}"))
                continue
            keep = _valid_times(m.t, m.interval_s)
            if not keep.all():
                diags.append(Diagnostic("store core_blocks", f"block {rowid}: "
                                        f"{int((~keep).sum())} samples with unusable times "
                                        "skipped"))
            keep &= (m.t >= t0) & (m.t <= t1)
            out.add(m if keep.all() else m.rows(keep))
        rows = store.conn.execute(
            "SELECT t, interval_s, payload FROM core_recent WHERE t BETWEEN ? AND ? ORDER BY t",
            (t0, t1)).fetchall()
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
    return out.build(diags)


def read_samples(store: Store, t0: float, t1: float) -> list[CoreSample]:
    """Samples whose end time lies in [t0, t1], oldest first."""
    return read_matrix(store, t0, t1).to_samples()


def time_span(store: Store) -> tuple[float, float] | None:
    """Oldest and newest sample time in the store, or None when empty."""
    lo_hi = store.query(
        "SELECT MIN(t), MAX(t) FROM (SELECT t0 AS t FROM core_blocks UNION ALL "
        "SELECT t1 FROM core_blocks UNION ALL SELECT t FROM core_recent) "
        "WHERE t > 0 AND t < ?", (MAX_T,)
    )[0]
    return None if lo_hi[0] is None else (lo_hi[0], lo_hi[1])


def retain(store: Store, cutoff: float) -> None:
    with store.write() as c:
        c.execute("DELETE FROM core_blocks WHERE t1 < ?", (cutoff,))
        c.execute("DELETE FROM core_recent WHERE t < ?", (cutoff,))


def count_core_seconds(samples: Iterable[CoreSample]) -> float:
    return sum(s.interval_s * len(s.deltas) for s in samples)
