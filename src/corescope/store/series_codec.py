"""The per-core series' byte forms: one raw row per sample (what is committed or journalled
the moment it is sampled) and the columnar zstd block the rows are folded into, with the limits
both keep. Pure encoding and decoding: store/series_writer.py writes them, store/series.py
reads them, store/series_zones.py summarises each block.
"""

from __future__ import annotations

import math
import struct
import threading
from array import array
from typing import NamedTuple

import numpy as np
import zstandard

from corescope.errors import StoreFault
from corescope.model.cores import CoreSample
from corescope.model.matrix import NF, CoreMatrix
from corescope.model.packed import PackedRows

_MAGIC = b"CS1"
HEADER = struct.Struct("<3sBHHd")  # magic, value width, samples, cpus, t0
# zstandard's contexts are not thread-safe (two serve requests decoding at once crashed the
# process in the C backend): each thread gets its own pair.
_CODECS = threading.local()


def compressor() -> zstandard.ZstdCompressor:
    c = getattr(_CODECS, "zc", None)
    if c is None:
        c = _CODECS.zc = zstandard.ZstdCompressor(level=12)
    return c


def decompressor() -> zstandard.ZstdDecompressor:
    d = getattr(_CODECS, "zd", None)
    if d is None:
        d = _CODECS.zd = zstandard.ZstdDecompressor()
    return d


class SeriesFormatError(StoreFault, ValueError):
    """A stored block or row that cannot be decoded."""


# --- the limits both forms keep --------------------------------------------------------------

# Sample times must be real epoch seconds before 2106 (blocks keep ms offsets in 32 bits), and
# intervals positive and under 71 minutes (µs in 32 bits). Anything else is a broken clock or a
# broken capture, and one such row must never stop a block from being written or read.
MAX_T = float(1 << 32)
MAX_INTERVAL_S = (1 << 32) / 1e6 - 1
# a block never spans more than this, so its ms offsets fit whatever the gaps between samples
MAX_BLOCK_SPAN_S = 86400.0


def check_sample_time(t: float, interval_s: float) -> str | None:
    """Why a sample time/interval is unusable, or None when it is fine."""
    if not (isinstance(t, float | int) and math.isfinite(t) and 0 < t < MAX_T):
        return f"sample time {t!r} is not an epoch time before 2106"
    if not (isinstance(interval_s, float | int) and math.isfinite(interval_s)
            and 0 < interval_s <= MAX_INTERVAL_S):
        return f"sample interval {interval_s!r} s is not between 0 and {MAX_INTERVAL_S:.0f} s"
    return None


# --- raw rows (one per sample) ---------------------------------------------------------------

_prefix: tuple[tuple[int, ...], bytes] = ((), b"")  # the last CPU list and its encoding


def _ids_prefix(ids: tuple[int, ...]) -> bytes:
    """The row's head: how many CPUs, then their ids (the same every tick, so kept)."""
    global _prefix
    if _prefix[0] != ids:
        _prefix = (ids, array("I", [len(ids), *ids]).tobytes())
    return _prefix[1]


def encode_row(sample: CoreSample) -> bytes:
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


def row_arrays(payload: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(cpu ids, [ncpu, NF] ticks) of one raw row."""
    if not isinstance(payload, bytes) or len(payload) < 4 or len(payload) % 4:
        raise SeriesFormatError("corrupt raw sample row")
    values = np.frombuffer(payload, np.uint32)
    n = int(values[0])
    if len(values) != 1 + n + n * NF:
        raise SeriesFormatError("raw sample row length mismatch")
    return values[1 : 1 + n].astype(np.int64), values[1 + n :].reshape(n, NF)


def decode_row(t: float, interval_s: float, payload: bytes) -> CoreSample:
    cpus, ticks = row_arrays(payload)
    return CoreSample(t=t, interval_s=interval_s, deltas=PackedRows(cpus.tolist(), ticks))


# --- columnar blocks -------------------------------------------------------------------------

WIDTH_DTYPE: dict[int, np.dtype] = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16),
                                     4: np.dtype(np.uint32)}


def block_parts(t: np.ndarray, interval_s: np.ndarray, cpus: np.ndarray, ticks: np.ndarray,
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
        HEADER.pack(_MAGIC, width, n, ncpu, t0),
        np.asarray(cpus, np.uint16).tobytes(),
        offs.astype(np.uint32).tobytes(),
        ivs.astype(np.uint32).tobytes(),
        # presence bitmap per sample (CPUs go offline); all-ones is cheap after compression
        np.packbits(present, axis=1, bitorder="little").tobytes(),
    ))
    return head, vals.astype(WIDTH_DTYPE[width]).tobytes()


def encode_arrays(t: np.ndarray, interval_s: np.ndarray, cpus: np.ndarray, ticks: np.ndarray,
                  present: np.ndarray) -> bytes:
    """The block of n samples given as arrays (see CoreMatrix; absent cells are ignored)."""
    head, vals = block_parts(t, interval_s, cpus, ticks, present)
    return compressor().compress(head + vals)


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


class BlockHead(NamedTuple):
    width: int
    cpus: np.ndarray
    t: np.ndarray
    interval_s: np.ndarray
    present: np.ndarray
    end: int  # where the tick columns (or a zone map's bounds) start


def decode_head(raw: bytes) -> BlockHead:
    """The header of a decompressed block (or zone map)."""
    try:
        magic, width, n, ncpu, t0 = HEADER.unpack_from(raw, 0)
    except struct.error as exc:
        raise SeriesFormatError(f"corrupt series block: {exc}") from exc
    if magic != _MAGIC or width not in WIDTH_DTYPE:
        raise SeriesFormatError("not a series block")
    nbytes = (ncpu + 7) // 8
    pos = HEADER.size
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
    return BlockHead(width, cpus, t0 + offs / 1000.0, ivs / 1e6, present, pos)


def decode_arrays(payload: bytes) -> CoreMatrix:
    """One block as a CoreMatrix; ticks in the block's own (narrowest) unsigned type."""
    try:
        raw = decompressor().decompress(payload)
    except zstandard.ZstdError as exc:
        raise SeriesFormatError(f"corrupt series block: {exc}") from exc
    h = decode_head(raw)
    n, ncpu = h.present.shape
    dtype = WIDTH_DTYPE[h.width]
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
