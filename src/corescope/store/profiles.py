"""The profile ring's index: one row per finished chunk file under <store>/profiles/.

Both clocks are kept: perf_start/perf_end on perf's clock (CLOCK_MONOTONIC, what `perf script
--time` takes) and wall_start/wall_end (UTC epoch, what users ask for), plus the offset that
maps one to the other for that chunk.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from corescope.model.profiles import ProfileChunk
from corescope.store.db import Store, ensure_private_dir

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


def _row(r: tuple) -> ProfileChunk:
    return ProfileChunk(int(r[0]), str(r[1]), str(r[2]), float(r[3]), float(r[4]), float(r[5]),
                        float(r[6]), float(r[7]), int(r[8]), int(r[9]), int(r[10]), int(r[11]))


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
    with store.write() as c:
        c.executemany("DELETE FROM profile_chunks WHERE id = ?", [(ch.id,) for ch in chunks])
    for ch in chunks:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(Path(store.directory) / ch.path)


def enforce(store: Store, now_wall: float, max_age_s: float, max_bytes: int) -> list[int]:
    """Drop chunks older than max_age_s, then the oldest until the ring fits max_bytes.
    The newest chunks are always the ones kept. Returns the ids dropped."""
    chunks = all_chunks(store)  # oldest first
    cutoff = now_wall - max_age_s
    drop = [c for c in chunks if c.wall_end < cutoff]
    keep = [c for c in chunks if c.wall_end >= cutoff]
    total = sum(c.bytes for c in keep)
    while keep and total > max_bytes:
        oldest = keep.pop(0)
        total -= oldest.bytes
        drop.append(oldest)
    _delete(store, drop)
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
    n = 0
    for p in d.iterdir():
        if p.is_file() and p.name not in known:
            with contextlib.suppress(OSError):
                p.unlink()
                n += 1
    return n
