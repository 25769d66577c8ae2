"""Zone maps: the per-block summary written with each series block, so a query learns the
shape of a whole window from these and decodes only the blocks whose bounds do not rule out
what it looks for."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import zstandard

from corescope.model.cores import MODES
from corescope.store.series_codec import (
    HEADER,
    BlockHead,
    SeriesFormatError,
    compressor,
    decode_head,
    decompressor,
)

# --- zone maps: a per-block summary written with the block ------------------------------------
# The block's header (times, intervals, CPUs, presence: no tick columns), then per CPU per
# base mode one byte strictly above its highest % (analysis.usage.mode_bounds). A query learns
# the shape of the whole window from these and decodes only the blocks whose bounds do not
# rule out what it looks for.


def encode_zone(head: bytes, ticks: np.ndarray, present: np.ndarray) -> bytes:
    from corescope.analysis.usage import mode_bounds  # the arithmetic the search uses

    b = mode_bounds(np.asarray(ticks).transpose(2, 1, 0), np.asarray(present, bool))
    return compressor().compress(head + b.tobytes())


class ZoneMap(NamedTuple):
    head: BlockHead
    bounds: np.ndarray  # uint8 [cpus, MODES]


def decode_zone(blob: object) -> ZoneMap | None:
    """A block's zone map, or None for a block stored without one (older stores) or with one
    this version cannot read: that block is then decoded in full, as before."""
    return zone_of(unzip_zone(blob))


def unzip_zone(blob: object) -> bytes | None:
    if not isinstance(blob, bytes):
        return None
    try:
        return decompressor().decompress(blob)
    except zstandard.ZstdError:
        return None


def zone_of(raw: bytes | None) -> ZoneMap | None:
    if raw is None:
        return None
    try:
        h = decode_head(raw)
    except SeriesFormatError:
        return None
    if len(raw) - h.end != len(h.cpus) * len(MODES):
        return None
    bounds = np.frombuffer(memoryview(raw), np.uint8, offset=h.end)
    return ZoneMap(h, bounds.reshape(len(h.cpus), len(MODES)))


class ZoneRun(NamedTuple):
    """The zone maps of consecutive blocks laid out alike (same value width, sample count,
    CPU list, length): decoded together, as arrays with one more axis, block first. Each
    block's values are what zone_of gives it, with the same arithmetic."""

    width: int
    cpus: np.ndarray
    end: int
    t: np.ndarray  # [blocks, n]
    interval_s: np.ndarray  # [blocks, n]
    present: np.ndarray  # [blocks, n, cpus]
    bounds: np.ndarray  # [blocks, cpus, MODES]

    def zone(self, j: int) -> ZoneMap:
        return ZoneMap(BlockHead(self.width, self.cpus, self.t[j], self.interval_s[j],
                             self.present[j], self.end), self.bounds[j])


def zone_runs(raws: list[bytes | None]) -> list[tuple[int, int, ZoneRun | None]]:
    """(lo, hi, run): raws[lo:hi] decoded together, or run None where they have no usable
    zone map (one at a time then, as decode_zone reads them). The day's 1,440 headers of a
    busy node are one run: a few array operations instead of a dozen per block."""
    out: list[tuple[int, int, ZoneRun | None]] = []
    lo = 0
    while lo < len(raws):
        first = raws[lo]
        h = zone_of(first)
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


def _decode_run(raws: list[bytes], first: ZoneMap) -> ZoneRun:
    h = first.head
    n, ncpu = h.present.shape
    g, size = len(raws), len(raws[0])
    a = np.frombuffer(b"".join(raws), np.uint8).reshape(g, size)

    def column(pos: int, count: int, dtype: np.dtype | type) -> np.ndarray:
        width = np.dtype(dtype).itemsize
        return np.ascontiguousarray(a[:, pos : pos + count * width]).view(dtype)

    t0 = column(8, 1, np.dtype("<f8"))  # the header's little-endian double, [g, 1]
    pos = HEADER.size + 2 * ncpu
    offs = column(pos, n, np.uint32)
    ivs = column(pos + 4 * n, n, np.uint32)
    nbytes = (ncpu + 7) // 8
    bits = a[:, pos + 8 * n : h.end].reshape(g, n, nbytes)
    # the unpacked bits are 0 or 1: the same bytes read as bool, not copied (8 MB a day)
    present = np.unpackbits(bits, axis=2, count=ncpu, bitorder="little").view(bool)
    return ZoneRun(h.width, h.cpus, h.end, t0 + offs / 1000.0, ivs / 1e6, present,
                    a[:, h.end :].reshape(g, ncpu, len(MODES)))
