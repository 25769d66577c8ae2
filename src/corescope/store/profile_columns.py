"""The ring's columnar chunk: what a query needs, as numpy columns, each compressed on its own.

Per sample: time (perf's clock), cpu (-1 = not known), pid, tid, whether the header printed
the pid (else `pid` repeats the tid), count, period (-1 where the text gives none), weight
(count times the period where there is one, else the count: `flame --weight period`), the
event and the stack, both as ids. Per chunk: a
string table, frames as (symbol, dso, kernel, inlined) ids into it, and stacks as a comm id
and a run of frame ids (leaf first). A query decompresses only the columns it filters and
aggregates on: `--cpu` reads the cpu column, then time and stack ids of the rows it keeps.

File layout (zstd frames, one per section, after a fixed header):

    b"CSCOLS1\\n" | u32 length of the index | zstd(JSON index) | zstd(section) ...

The index names each section's dtype, offset, size and encoding. Numeric sections are
byte-shuffled before compression (the high bytes of pids and ids are all alike). Times that
are whole microseconds (perf prints six decimals) or nanoseconds (`--ns`) are stored as deltas
of those integers: n / 1e6 is the float the text parser reads, so nothing is lost; other
times are stored as float64.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zstandard

from corescope.errors import StoreFault
from corescope.model.common import Diagnostic
from corescope.model.profiles import Batch, Frame, StackSample
from corescope.store.profiles import COLUMNS_SUFFIX

MAGIC = b"CSCOLS1\n"
SUFFIX = COLUMNS_SUFFIX
VERSION = 2  # 2: period and pid_known columns (the perf script weighting)
_LEVEL = 3


class ColumnsError(StoreFault, ValueError):
    """A column chunk that cannot be read (damaged, truncated, another version)."""


class ColumnsBuilder:
    """Collects samples (in the order the text holds them) into columns and interned tables."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.cpus: list[int] = []
        self.pids: list[int] = []
        self.tids: list[int] = []
        self.counts: list[int] = []
        self.weights: list[int] = []
        self.periods: list[int] = []
        self.pid_known: list[bool] = []
        self.events: list[int] = []
        self.stack_ids: list[int] = []
        self._strings: dict[str, int] = {}
        self._frames: dict[tuple[str, str, bool, bool], int] = {}
        self._frame_rows: list[tuple[int, int, int]] = []  # symbol id, dso id, flags
        self._stacks: dict[tuple[str, tuple[Frame, ...]], int] = {}
        self._stack_rows: list[tuple[int, list[int]]] = []  # comm id, frame ids
        # the parser's notes on the text, said again whenever the chunk is read
        self.notes: list[Diagnostic] = []

    def _str(self, s: str) -> int:
        i = self._strings.get(s)
        if i is None:
            i = self._strings[s] = len(self._strings)
        return i

    def _frame(self, f: Frame) -> int:
        k = f.key
        i = self._frames.get(k)
        if i is None:
            i = self._frames[k] = len(self._frame_rows)
            self._frame_rows.append((self._str(f.symbol), self._str(f.dso),
                                     int(f.kernel) | int(f.inlined) << 1))
        return i

    def _stack(self, key: tuple[str, tuple[Frame, ...]]) -> int:
        sid = self._stacks.get(key)
        if sid is None:
            sid = self._stacks[key] = len(self._stack_rows)
            self._stack_rows.append((self._str(key[0]), [self._frame(f) for f in key[1]]))
        return sid

    def add(self, s: StackSample) -> None:
        self.stack_ids.append(self._stack((s.comm, s.frames)))
        self.times.append(np.nan if s.time is None else s.time)
        self.cpus.append(-1 if s.cpu is None else s.cpu)
        self.pids.append(s.pid)
        self.tids.append(s.tid)
        self.counts.append(s.count)
        self.weights.append(s.weight)
        self.periods.append(-1 if s.period is None else s.period)
        self.pid_known.append(s.pid_known)
        self.events.append(self._str(s.event))

    def add_batch(self, b: Batch) -> None:
        """`add` of each sample of a parsed batch (model.profiles.Batch), a column at a time:
        the import of a `perf script` file makes no object per sample."""
        keys = list(zip(b.comm, b.frames, strict=True))
        sids = list(map(self._stacks.get, keys))
        if None in sids:
            sids = [self._stack(k) if i is None else i for k, i in zip(keys, sids, strict=True)]
        self.stack_ids += sids  # type: ignore[arg-type]
        self.times += [np.nan if t is None else t for t in b.time] if None in b.time else \
            b.time  # type: ignore[arg-type]
        self.cpus += [-1 if c is None else c for c in b.cpu] if None in b.cpu else \
            b.cpu  # type: ignore[arg-type]
        self.pids += b.pid
        self.tids += b.tid
        self.counts += [1] * len(b)
        self.weights += [p if p else 1 for p in b.period]
        self.periods += [-1 if p is None else p for p in b.period]
        self.pid_known += b.pid_known
        events = list(map(self._strings.get, b.event))  # (a few names, met at once)
        if None in events:
            events = [self._str(e) if i is None else i
                      for e, i in zip(b.event, events, strict=True)]
        self.events += events  # type: ignore[arg-type]

    def extend(self, samples: Iterable[StackSample]) -> ColumnsBuilder:
        for s in samples:
            self.add(s)
        return self

    def __len__(self) -> int:
        return len(self.stack_ids)

    def write(self, path: Path) -> int:
        """Write the chunk to `path` (created 0600, not replaced); returns its size."""
        sections: dict[str, np.ndarray] = {
            "time": np.asarray(self.times, dtype=np.float64),
            "cpu": np.asarray(self.cpus, dtype=np.int32),
            "pid": np.asarray(self.pids, dtype=np.int64),
            "tid": np.asarray(self.tids, dtype=np.int64),
            "count": np.asarray(self.counts, dtype=np.int64),
            "weight": np.asarray(self.weights, dtype=np.int64),
            "event": np.asarray(self.events, dtype=np.int32),
            "stack": np.asarray(self.stack_ids, dtype=np.int32),
            "stack_comm": np.asarray([c for c, _ in self._stack_rows], dtype=np.int32),
            "stack_off": np.cumsum([0] + [len(f) for _, f in self._stack_rows],
                                   dtype=np.int64),
            "stack_frames": np.asarray([i for _, fr in self._stack_rows for i in fr],
                                       dtype=np.int32),
            "frame_sym": np.asarray([r[0] for r in self._frame_rows], dtype=np.int32),
            "frame_dso": np.asarray([r[1] for r in self._frame_rows], dtype=np.int32),
            "frame_flags": np.asarray([r[2] for r in self._frame_rows], dtype=np.uint8),
        }
        sections["period"] = np.asarray(self.periods, dtype=np.int64)
        sections["pid_known"] = np.asarray(self.pid_known, dtype=np.uint8)
        t = sections["time"]
        ordered = bool(len(t) < 2 or np.all(t[1:] >= t[:-1]))
        cctx = zstandard.ZstdCompressor(level=_LEVEL)
        index: dict[str, Any] = {"version": VERSION, "rows": len(self), "ordered": ordered,
                                 "strings": list(self._strings), "sections": {},
                                 "notes": [[d.source, d.message, d.line]
                                           for d in self.notes[:1000]]}
        blobs: list[bytes] = []
        off = 0
        for name, arr in sections.items():
            enc, data = _encode(name, arr)
            blob = cctx.compress(data)
            index["sections"][name] = {"dtype": arr.dtype.str, "n": int(arr.size),
                                       "enc": enc, "off": off, "len": len(blob)}
            blobs.append(blob)
            off += len(blob)
        # ASCII JSON: names from other processes may hold lone surrogates (undecodable bytes)
        head = cctx.compress(json.dumps(index, separators=(",", ":")).encode())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + struct.pack("<I", len(head)) + head)
                for b in blobs:
                    f.write(b)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        return path.stat().st_size


def _shuffle(arr: np.ndarray) -> bytes:
    if arr.dtype.itemsize == 1 or arr.size == 0:
        return arr.tobytes()
    return np.ascontiguousarray(arr.view(np.uint8).reshape(-1, arr.dtype.itemsize).T
                                ).tobytes()


def _unshuffle(data: bytes, dtype: np.dtype, n: int) -> np.ndarray:
    if dtype.itemsize == 1 or n == 0:
        return np.frombuffer(data, dtype=dtype, count=n)
    planes = np.frombuffer(data, dtype=np.uint8, count=n * dtype.itemsize).reshape(
        dtype.itemsize, n)
    # one byte plane at a time into its column: 2-3x faster than copying the transposed
    # view whole, and a query unshuffles every column it reads
    out = np.empty((n, dtype.itemsize), dtype=np.uint8)
    for k in range(dtype.itemsize):
        out[:, k] = planes[k]
    return out.view(dtype).reshape(n)


def _encode(name: str, arr: np.ndarray) -> tuple[str, bytes]:
    if name == "time" and arr.size and np.all(np.isfinite(arr)):
        for scale, enc in ((1e6, "us-delta"), (1e9, "ns-delta")):
            ticks = np.rint(arr * scale)
            if np.all(np.abs(ticks) < 2.0 ** 62):
                ints = ticks.astype(np.int64)
                if np.array_equal(ints / scale, arr):  # exactly the floats the parser read
                    return enc, _shuffle(np.diff(ints, prepend=np.int64(0)))
    return "raw", _shuffle(arr)


_SCALE = {"us-delta": 1e6, "ns-delta": 1e9}


@dataclass
class Columns:
    """One chunk's columns, decompressed on first use."""

    path: str
    rows: int
    ordered: bool
    strings: list[str]
    notes: list[Diagnostic]
    _index: dict[str, Any]
    _data: memoryview
    _cache: dict[str, np.ndarray]
    _stacks: dict[int, tuple[str, tuple[Frame, ...]]] = field(default_factory=dict)
    # (offsets, frame ids) of the stack table, published together: serve's threads share
    # a cached chunk, and one must never see the offsets without the frames
    _stack_table: tuple[list[int], list[int]] | None = None
    _string_ids: dict[str, int] | None = None
    _frame_list: list[Frame] | None = None
    # makes a Frame: the parser's interning, so stacks of every chunk hash alike
    intern: Callable[[str, str, bool, bool], Frame] = Frame
    # what readers derive per stack (whether it is idle), kept while the chunk is cached
    memo: dict[Any, Any] = field(default_factory=dict)

    def col(self, name: str) -> np.ndarray:
        got = self._cache.get(name)
        if got is not None:
            return got
        meta = self._index.get(name)
        if meta is None:
            raise ColumnsError(f"{self.path}: no {name} column")
        try:
            raw = zstandard.ZstdDecompressor().decompress(
                self._data[meta["off"]: meta["off"] + meta["len"]])
            enc = meta["enc"]
            n = int(meta["n"])
            if enc in _SCALE:
                arr = np.cumsum(_unshuffle(raw, np.dtype(np.int64), n)) / _SCALE[enc]
            else:
                arr = _unshuffle(raw, np.dtype(meta["dtype"]), n)
        except (zstandard.ZstdError, ValueError, KeyError, TypeError) as exc:
            raise ColumnsError(f"{self.path}: damaged {name} column: {exc}") from exc
        self._cache[name] = arr
        return arr

    def has(self, name: str) -> bool:
        return name in self._index

    # --- the interned tables ---------------------------------------------------------

    def frames(self) -> list[Frame]:
        got = self._frame_list
        if got is None:
            s = self.strings
            syms, dsos = self.col("frame_sym").tolist(), self.col("frame_dso").tolist()
            flags = self.col("frame_flags").tolist()
            mk = self.intern
            got = self._frame_list = [mk(s[a], s[b], bool(f & 1), bool(f & 2))
                                      for a, b, f in zip(syms, dsos, flags, strict=True)]
        return got

    def stack(self, sid: int) -> tuple[str, tuple[Frame, ...]]:
        """(comm, frames leaf first) of one stack id, built on first use."""
        got = self._stacks.get(sid)
        if got is None:
            table = self._stack_table
            if table is None:
                table = self._stack_table = (self.col("stack_off").tolist(),
                                             self.col("stack_frames").tolist())
            off, stack_frames = table
            frames = self.frames()
            comm = self.strings[int(self.stack_comms()[sid])]
            got = self._stacks[sid] = (comm, tuple(
                frames[i] for i in stack_frames[off[sid]: off[sid + 1]]))
        return got

    def stack_comms(self) -> np.ndarray:
        return self.col("stack_comm")

    def string_id(self, text: str) -> int:
        """The id of `text` in the string table, -1 when the chunk never names it."""
        if self._string_ids is None:
            self._string_ids = {t: i for i, t in enumerate(self.strings)}
        return self._string_ids.get(text, -1)

    def samples(self, rows: np.ndarray) -> Iterator[StackSample]:
        """StackSamples of the given rows, as the text parser made them."""
        stack = self.stack
        s = self.strings
        cols = [self.col(c)[rows].tolist() for c in
                ("time", "cpu", "pid", "tid", "event", "stack", "count")]
        periods = self.col("period")[rows].tolist()
        known = self.col("pid_known")[rows].tolist()
        for t, c, p, tid, ev, sid, n, per, k in zip(*cols, periods, known, strict=True):
            comm, frames = stack(sid)
            yield StackSample(comm, p, tid, None if c < 0 else c, None if t != t else t,
                              s[ev], frames, n, None if per < 0 else per, bool(k))


def read(path: Path, rel: str | None = None,
         intern: Callable[[str, str, bool, bool], Frame] = Frame) -> Columns:
    """Open a column chunk: reads the file (compressed, small) and its index only."""
    name = rel or str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ColumnsError(f"cannot read {name}: {exc}") from exc
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4:
        raise ColumnsError(f"{name}: not a corescope column chunk")
    (hlen,) = struct.unpack_from("<I", data, len(MAGIC))
    start = len(MAGIC) + 4
    try:
        index = json.loads(zstandard.ZstdDecompressor().decompress(
            data[start: start + hlen]))
        if index.get("version") != VERSION:
            raise ColumnsError(f"{name}: column chunk version {index.get('version')!r}")
        body = memoryview(data)[start + hlen:]
        sections = index["sections"]
        if any(m["off"] + m["len"] > len(body) for m in sections.values()):
            raise ColumnsError(f"{name}: truncated")
        return Columns(name, int(index["rows"]), bool(index["ordered"]),
                       list(index["strings"]),
                       [Diagnostic(str(a), str(b), None if c is None else int(c))
                        for a, b, c in index.get("notes", [])], sections, body, {},
                       intern=intern)
    except (zstandard.ZstdError, ValueError, KeyError, TypeError) as exc:
        raise ColumnsError(f"{name}: damaged column chunk: {exc}") from exc
