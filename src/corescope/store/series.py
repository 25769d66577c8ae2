"""The per-core series: tick deltas per CPU per sample, stored compactly.

Each sample is committed at once as a small raw row (`core_recent`), so a `kill -9` loses
nothing already sampled. Every BLOCK_SAMPLES samples the raw rows are folded, in one
transaction, into a columnar zstd block (`core_blocks`): per field, per CPU, the run of
deltas across the block. Tick deltas at 1 s are small and columns such as nice, steal and guest
are mostly zero, so a busy 96-core machine costs a few bytes per core-second.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable

import numpy as np
import zstandard

from corescope.model.cores import FIELDS, CoreSample
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
_NF = len(FIELDS)
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


def _decode_row(t: float, interval_s: float, payload: bytes) -> CoreSample:
    values = array("I")
    values.frombytes(payload)
    n = values[0]
    cpus = values[1 : 1 + n]
    return CoreSample(t=t, interval_s=interval_s, deltas=PackedRows(cpus, values[1 + n :]))


# --- columnar blocks -------------------------------------------------------------------------

def encode_block(samples: list[CoreSample]) -> bytes:
    """Columnar, zstd-compressed encoding of consecutive samples."""
    if not samples:
        raise ValueError("empty block")
    cpus = sorted({c for s in samples for c in s.deltas})
    t0 = samples[0].t
    biggest = max((max(d) for s in samples for d in s.deltas.values()), default=0)
    width, code = (1, "B") if biggest < 256 else (2, "H") if biggest < 65536 else (4, "I")
    out = bytearray(_HEADER.pack(_MAGIC, width, len(samples), len(cpus), t0))
    out += array("H", cpus).tobytes()
    # sample times as ms offsets from t0, intervals in µs: exact enough, small numbers
    out += array("I", [round((s.t - t0) * 1000) for s in samples]).tobytes()
    out += array("I", [round(s.interval_s * 1e6) for s in samples]).tobytes()
    # presence bitmap per sample (CPUs go offline); all-ones is cheap after compression
    nbytes = (len(cpus) + 7) // 8
    for s in samples:
        bits = bytearray(nbytes)
        for i, c in enumerate(cpus):
            if c in s.deltas:
                bits[i >> 3] |= 1 << (i & 7)
        out += bits
    col = array(code)
    for f in range(_NF):
        for c in cpus:
            col.extend(s.deltas[c][f] for s in samples if c in s.deltas)
    out += col.tobytes()
    return _ZC.compress(bytes(out))


def decode_block(payload: bytes) -> list[CoreSample]:
    try:
        raw = _ZD.decompress(payload)
        magic, width, n, ncpu, t0 = _HEADER.unpack_from(raw, 0)
    except (zstandard.ZstdError, struct.error) as exc:
        raise SeriesFormatError(f"corrupt series block: {exc}") from exc
    if magic != _MAGIC:
        raise SeriesFormatError("not a series block")
    pos = _HEADER.size
    cpus = array("H")
    cpus.frombytes(raw[pos : pos + 2 * ncpu])
    pos += 2 * ncpu
    offs = array("I")
    offs.frombytes(raw[pos : pos + 4 * n])
    pos += 4 * n
    ivs = array("I")
    ivs.frombytes(raw[pos : pos + 4 * n])
    pos += 4 * n
    nbytes = (ncpu + 7) // 8
    present: list[set[int]] = []
    for k in range(n):
        bits = raw[pos + k * nbytes : pos + (k + 1) * nbytes]
        present.append({i for i in range(ncpu) if bits[i >> 3] >> (i & 7) & 1})
    pos += n * nbytes
    col = array({1: "B", 2: "H", 4: "I"}[width])
    col.frombytes(raw[pos:])
    # rebuild per-sample, per-cpu rows from the columns
    rows: list[dict[int, list[int]]] = [{} for _ in range(n)]
    holders = [[k for k in range(n) if i in present[k]] for i in range(ncpu)]
    idx = 0
    for _f in range(_NF):
        for i, c in enumerate(cpus):
            for k in holders[i]:
                rows[k].setdefault(c, []).append(col[idx])
                idx += 1
    if idx != len(col):
        raise SeriesFormatError("series block length mismatch")
    return [
        CoreSample(
            t=t0 + offs[k] / 1000.0,
            interval_s=ivs[k] / 1e6,
            deltas={c: tuple(v) for c, v in rows[k].items()},
        )
        for k in range(n)
    ]


# --- writing and reading ---------------------------------------------------------------------

class SeriesWriter:
    """Appends samples; folds raw rows into a block every `block_samples` samples."""

    def __init__(self, store: Store, block_samples: int = BLOCK_SAMPLES) -> None:
        self.store = store
        self.block_samples = block_samples
        self._pending = store.query("SELECT COUNT(*) FROM core_recent")[0][0]

    def append(self, sample: CoreSample) -> None:
        with self.store.write() as c:
            c.execute(
                "INSERT OR REPLACE INTO core_recent (t, interval_s, payload) VALUES (?, ?, ?)",
                (sample.t, sample.interval_s, _encode_row(sample)),
            )
        self._pending += 1
        if self._pending >= self.block_samples:
            self.flush()

    def flush(self) -> None:
        """Fold every raw row into one block (one transaction: all or nothing)."""
        with self.store.write() as c:
            rows = c.execute("SELECT t, interval_s, payload FROM core_recent ORDER BY t").fetchall()
            if rows:
                samples = [_decode_row(*r) for r in rows]
                c.execute(
                    "INSERT INTO core_blocks (t0, t1, n, payload) VALUES (?, ?, ?, ?)",
                    (samples[0].t, samples[-1].t, len(samples), encode_block(samples)),
                )
                c.execute("DELETE FROM core_recent WHERE t <= ?", (samples[-1].t,))
        self._pending = 0


def read_samples(store: Store, t0: float, t1: float) -> list[CoreSample]:
    """Samples whose end time lies in [t0, t1], oldest first."""
    out: list[CoreSample] = []
    for (payload,) in store.query(
        "SELECT payload FROM core_blocks WHERE t1 >= ? AND t0 <= ? ORDER BY t0", (t0, t1)
    ):
        out.extend(s for s in decode_block(payload) if t0 <= s.t <= t1)
    out.extend(
        _decode_row(*r)
        for r in store.query(
            "SELECT t, interval_s, payload FROM core_recent WHERE t BETWEEN ? AND ? ORDER BY t",
            (t0, t1),
        )
    )
    out.sort(key=lambda s: s.t)
    return out


def time_span(store: Store) -> tuple[float, float] | None:
    """Oldest and newest sample time in the store, or None when empty."""
    lo_hi = store.query(
        "SELECT MIN(t), MAX(t) FROM (SELECT t0 AS t FROM core_blocks UNION ALL "
        "SELECT t1 FROM core_blocks UNION ALL SELECT t FROM core_recent)"
    )[0]
    return None if lo_hi[0] is None else (lo_hi[0], lo_hi[1])


def retain(store: Store, cutoff: float) -> None:
    with store.write() as c:
        c.execute("DELETE FROM core_blocks WHERE t1 < ?", (cutoff,))
        c.execute("DELETE FROM core_recent WHERE t < ?", (cutoff,))


def count_core_seconds(samples: Iterable[CoreSample]) -> float:
    return sum(s.interval_s * len(s.deltas) for s in samples)
