"""The profile ring's index: one row per finished chunk file under <store>/profiles/.

Both clocks are kept: perf_start/perf_end on perf's clock (CLOCK_MONOTONIC, what `perf script
--time` takes) and wall_start/wall_end (UTC epoch, what users ask for), plus the offset that
maps one to the other for that chunk.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import zstandard

from corescope.store.db import Store, ensure_private_dir

# the record loads when a chunk is made or read: every store open imports this module for
# its DDL, and most commands read no stacks
if TYPE_CHECKING:
    from corescope.model.profiles import ProfileChunk

PROFILE_DIR = "profiles"

DDL = """
CREATE TABLE IF NOT EXISTS profile_chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    path TEXT NOT NULL UNIQUE,
    clockid TEXT NOT NULL,
    perf_start REAL NOT NULL,
    perf_end REAL NOT NULL,
    wall_start REAL NOT NULL,
    wall_end REAL NOT NULL,
    clock_offset REAL NOT NULL,
    bytes INTEGER NOT NULL,
    raw_bytes INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    hz INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS profile_chunks_wall ON profile_chunks (wall_end, wall_start);
"""

_COLS = ("id, path, clockid, perf_start, perf_end, wall_start, wall_end, clock_offset, "
         "bytes, raw_bytes, samples, hz")


def profile_dir(store_dir: Path) -> Path:
    d = Path(store_dir) / PROFILE_DIR
    ensure_private_dir(d)
    return d


def add_chunk(store: Store, chunk: ProfileChunk) -> int:
    with store.write() as c:
        cur = c.execute(
            "INSERT INTO profile_chunks (path, clockid, perf_start, perf_end, wall_start, "
            "wall_end, clock_offset, bytes, raw_bytes, samples, hz) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (chunk.path, chunk.clockid, chunk.perf_start, chunk.perf_end, chunk.wall_start,
             chunk.wall_end, chunk.clock_offset, chunk.bytes, chunk.raw_bytes, chunk.samples,
             chunk.hz),
        )
        return int(cur.lastrowid or 0)


_SUFFIX = {"text": ".txt.zst", "folded": ".folded.zst"}


class ChunkWriter:
    """Adds a chunk of text to the ring: `perf script` text (the ring's own format, or any
    `perf script` output a user brings) or folded stacks. Text is written zstd-compressed, as
    it streams, to a private file under <store>/profiles/; `commit` indexes it once its span
    is known, `discard` (or leaving the `with` block without commit) removes it.

        with ChunkWriter(store) as w:
            for block in blocks: w.write(block)
            w.commit(clockid="CLOCK_REALTIME", perf_start=t0, perf_end=t1, clock_offset=0.0,
                     samples=n)
    """

    def __init__(self, store: Store, fmt: str = "text", prefix: str = "import",
                 level: int = 3) -> None:
        if fmt not in _SUFFIX:
            raise ValueError(f"chunk format {fmt!r}: expected one of {sorted(_SUFFIX)}")
        self.store = store
        name = f"{prefix}-{uuid.uuid4().hex[:16]}{_SUFFIX[fmt]}"
        self.rel = f"{PROFILE_DIR}/{name}"
        self.path = profile_dir(Path(store.directory)) / name
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        self._file: BinaryIO = os.fdopen(fd, "wb")
        self._out = zstandard.ZstdCompressor(level=level).stream_writer(self._file)
        self.raw_bytes = 0
        self._done = False

    def write(self, text: str | bytes) -> None:
        data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        self.raw_bytes += len(data)
        self._out.write(data)

    def commit(self, *, clockid: str, perf_start: float, perf_end: float, clock_offset: float,
               samples: int, hz: int = 0) -> ProfileChunk:
        """Index the chunk: [perf_start, perf_end) on the text's own clock, which maps to the
        wall clock by adding clock_offset (0 for epoch timestamps). hz 0 = not known."""
        if not all(map(math.isfinite, (perf_start, perf_end, clock_offset))) or \
                perf_end < perf_start:
            raise ValueError(f"chunk span [{perf_start}, {perf_end}) + {clock_offset}")
        from corescope.model.profiles import ProfileChunk

        self._out.close()  # flushes the frame and closes the file
        self._done = True
        chunk = ProfileChunk(
            0, self.rel, clockid, perf_start, perf_end, perf_start + clock_offset,
            perf_end + clock_offset, clock_offset, self.path.stat().st_size, self.raw_bytes,
            samples, hz)
        try:
            cid = add_chunk(self.store, chunk)
        except BaseException:
            with contextlib.suppress(OSError):
                self.path.unlink()
            raise
        return dataclasses.replace(chunk, id=cid)

    def discard(self) -> None:
        if not self._done:
            self._done = True
            with contextlib.suppress(Exception):
                self._out.close()
            with contextlib.suppress(OSError):
                self.path.unlink()

    def __enter__(self) -> ChunkWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


def add_text_chunk(store: Store, text: str | bytes | Iterable[str | bytes], *, clockid: str,
                   perf_start: float, perf_end: float, clock_offset: float, samples: int,
                   hz: int = 0, fmt: str = "text", prefix: str = "import") -> ProfileChunk:
    """One call for a caller that already knows the chunk's span (see ChunkWriter)."""
    with ChunkWriter(store, fmt, prefix) as w:
        for part in [text] if isinstance(text, str | bytes) else text:
            w.write(part)
        return w.commit(clockid=clockid, perf_start=perf_start, perf_end=perf_end,
                        clock_offset=clock_offset, samples=samples, hz=hz)


def _row(r: tuple) -> ProfileChunk:
    from corescope.model.profiles import ProfileChunk

    return ProfileChunk(int(r[0]), str(r[1]), str(r[2]), float(r[3]), float(r[4]), float(r[5]),
                        float(r[6]), float(r[7]), int(r[8]), int(r[9]), int(r[10]), int(r[11]))


def chunk_by_id(store: Store, chunk_id: int) -> ProfileChunk | None:
    rows = store.query(f"SELECT {_COLS} FROM profile_chunks WHERE id = ?", (chunk_id,))
    return _row(rows[0]) if rows else None


def move_chunk(store: Store, chunk: ProfileChunk, path: str, size: int) -> bool:
    """Point a chunk's row at a new file holding the same samples (a migration); False when
    the row is gone or already points elsewhere (another reader migrated it first)."""
    with store.write() as c:
        cur = c.execute("UPDATE profile_chunks SET path = ?, bytes = ? WHERE id = ? AND "
                        "path = ?", (path, size, chunk.id, chunk.path))
        return cur.rowcount == 1


def chunks_overlapping(store: Store, wall_start: float, wall_end: float) -> list[ProfileChunk]:
    """Only the chunks whose wall span meets [wall_start, wall_end], oldest first: the index
    makes this O(log ring + answer)."""
    rows = store.query(
        f"SELECT {_COLS} FROM profile_chunks WHERE wall_end > ? AND wall_start < ? "
        "ORDER BY wall_start", (wall_start, wall_end),
    )
    return [_row(r) for r in rows]


def all_chunks(store: Store) -> list[ProfileChunk]:
    return [_row(r) for r in store.query(
        f"SELECT {_COLS} FROM profile_chunks ORDER BY wall_start")]


def record_span(store: Store) -> tuple[float, float] | None:
    """(oldest wall_start, newest wall_end) of the ring's timed chunks (folded stacks have no
    times), or None when it holds none."""
    from corescope.model.profiles import NO_CLOCK

    r = store.query("SELECT MIN(wall_start), MAX(wall_end) FROM profile_chunks "
                    "WHERE clockid != ?", (NO_CLOCK,))[0]
    return None if r[0] is None else (float(r[0]), float(r[1]))


def raw_chunks(store: Store) -> int:
    """How many chunks are raw perf.data (stores from before chunks were symbolised): only
    those need `perf script` to be read."""
    return int(store.query("SELECT COUNT(*) FROM profile_chunks WHERE path LIKE ?",
                           ("%.perf.zst",))[0][0])


def summary(store: Store) -> tuple[int, float | None, float | None, int, int]:
    """(chunks, oldest wall_start, newest wall_end, bytes, samples)."""
    r = store.query("SELECT COUNT(*), MIN(wall_start), MAX(wall_end), "
                    "COALESCE(SUM(bytes),0), COALESCE(SUM(samples),0) FROM profile_chunks")[0]
    return int(r[0]), r[1], r[2], int(r[3]), int(r[4])


def _delete(store: Store, chunks: list[ProfileChunk]) -> None:
    if not chunks:
        return
    # index first, then files: a crash in between leaves an orphan file (swept on the next
    # start), never an index row pointing at nothing
    # the paths are read again with the delete: a query may have migrated a chunk to a new
    # file (see evidence/profile_query.migrate_chunk) since the caller listed it
    paths = []
    with store.write() as c:
        for ch in chunks:
            row = c.execute("SELECT path FROM profile_chunks WHERE id = ?", (ch.id,)).fetchone()
            paths.append(row[0] if row else ch.path)
        c.executemany("DELETE FROM profile_chunks WHERE id = ?", [(ch.id,) for ch in chunks])
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(Path(store.directory) / path)


def enforce(store: Store, now_wall: float, max_age_s: float, max_bytes: int,
            warn: Callable[[str], None] | None = None) -> list[int]:
    """Drop chunks older than max_age_s, then the oldest until the ring fits max_bytes.
    The newest chunks are always the ones kept, and the newest one is kept even when it
    alone is larger than max_bytes (a ring that keeps nothing records nothing): `warn`
    hears of it. Returns the ids dropped."""
    chunks = all_chunks(store)  # oldest first
    cutoff = now_wall - max_age_s
    drop = [c for c in chunks if c.wall_end < cutoff]
    keep = [c for c in chunks if c.wall_end >= cutoff]
    total = sum(c.bytes for c in keep)
    while len(keep) > 1 and total > max_bytes:
        oldest = keep.pop(0)
        total -= oldest.bytes
        drop.append(oldest)
    _delete(store, drop)
    if keep and total > max_bytes and warn is not None:
        warn(f"the newest profile chunk ({total} bytes) alone is larger than the ring's "
             f"budget ({max_bytes} bytes): it is kept and every older one dropped; give "
             "--profile-max-bytes more room or a shorter --profile-chunk")
    return [c.id for c in drop]


def retain(store: Store, cutoff_wall: float) -> None:
    """The store-wide retention hook: nothing older than the recorder's global cutoff."""
    _delete(store, [c for c in all_chunks(store) if c.wall_end < cutoff_wall])


def sweep_orphans(store: Store) -> int:
    """Remove files in the profile directory the index does not know (crash leftovers)."""
    d = Path(store.directory) / PROFILE_DIR
    if not d.is_dir():
        return 0
    known = {Path(r[0]).name for r in store.query("SELECT path FROM profile_chunks")}
    # a query migrating a chunk writes its column file before the index names it, and an
    # import (`analyze --store` on this directory) streams its chunk before committing it:
    # young files are left alone, whatever their kind
    young = time.time() - ORPHAN_AGE_S
    n = 0
    for p in d.iterdir():
        if p.is_file() and p.name not in known and not _mtime(p) > young:
            with contextlib.suppress(OSError):
                p.unlink()
                n += 1
    return n


ORPHAN_AGE_S = 600.0
COLUMNS_SUFFIX = ".cols.zst"  # a column chunk (store/profile_columns.py)


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return float("inf")
