"""The ring's index: overlap queries, clock alignment, retention by age and bytes."""

from __future__ import annotations

import os
import random
import stat
import time
from pathlib import Path

from corescope.model.profiles import ClockAnchor, ProfileChunk
from corescope.sources.perf import capture_anchor
from corescope.store import profiles as ring
from corescope.store.db import Store


def make_chunk(store: Store, i: int, size: int, wall0: float = 1_000_000.0,
               length: float = 120.0) -> ProfileChunk:
    d = ring.profile_dir(store.directory)
    name = f"chunk-{i:05d}.perf.zst"
    fd = os.open(d / name, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, os.urandom(size))
    os.close(fd)
    offset = wall0 - 500.0
    c = ProfileChunk(0, f"{ring.PROFILE_DIR}/{name}", "CLOCK_MONOTONIC",
                     500.0 + i * length, 500.0 + (i + 1) * length,
                     wall0 + i * length, wall0 + (i + 1) * length, offset, size, size * 8,
                     100, 49)
    ring.add_chunk(store, c)
    return c


def test_overlap_query_picks_only_touching_chunks(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        for i in range(10):
            make_chunk(store, i, 10)
        w0 = 1_000_000.0
        got = ring.chunks_overlapping(store, w0 + 3 * 120 + 10, w0 + 4 * 120 + 5)
        assert [c.perf_start for c in got] == [500.0 + 3 * 120, 500.0 + 4 * 120]
        assert ring.chunks_overlapping(store, w0 - 100, w0 - 1) == []
        # the perf-clock stretch of a wall window inside one chunk
        c = got[0]
        lo, hi = c.perf_window(w0 + 3 * 120 + 10, w0 + 4 * 120 + 5)
        assert (lo, hi) == (500.0 + 3 * 120 + 10, c.perf_end)


def test_files_private(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        make_chunk(store, 0, 10)
        d = tmp_path / "s" / "profiles"
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
        for p in d.iterdir():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600


def test_ring_past_its_byte_budget_stays_under_and_keeps_newest(tmp_path: Path) -> None:
    rng = random.Random(5)
    budget = 50_000
    with Store.open(tmp_path / "s") as store:
        made = []
        for i in range(60):
            made.append(make_chunk(store, i, rng.randint(2_000, 9_000)))
            ring.enforce(store, made[-1].wall_end, max_age_s=10**9, max_bytes=budget)
            kept = ring.all_chunks(store)
            on_disk = sum(p.stat().st_size for p in (tmp_path / "s" / "profiles").iterdir())
            assert sum(c.bytes for c in kept) <= budget and on_disk <= budget
            # what is kept is the newest run, ending at the chunk just written
            assert [c.path for c in kept] == [c.path for c in made[-len(kept):]]
            # and nothing more could have fitted: the next-older chunk would break the budget
            if len(kept) < len(made):
                older = made[-len(kept) - 1]
                assert sum(c.bytes for c in kept) + older.bytes > budget
        assert len(made) > len(ring.all_chunks(store)) > 3


def test_retention_by_age_and_orphan_sweep(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        for i in range(10):
            last = make_chunk(store, i, 100)
        dropped = ring.enforce(store, last.wall_end, max_age_s=3 * 120 - 1, max_bytes=10**9)
        assert len(dropped) == 7 and len(ring.all_chunks(store)) == 3
        orphan = tmp_path / "s" / "profiles" / "chunk-999.data"
        orphan.write_bytes(b"x")
        assert ring.sweep_orphans(store) == 0  # young: it may be a chunk still being written
        old = orphan.stat().st_mtime - ring.ORPHAN_AGE_S - 1
        os.utime(orphan, (old, old))
        assert ring.sweep_orphans(store) == 1
        assert len(list((tmp_path / "s" / "profiles").iterdir())) == 3
        ring.retain(store, last.wall_end + 1)
        assert ring.all_chunks(store) == []


def test_clock_anchor_maps_perf_time_to_wall() -> None:
    a = ClockAnchor(perf=1000.0, wall=1_700_000_000.0)
    assert a.offset == 1_699_999_000.0
    assert a.to_wall(1001.5) == 1_700_000_001.5 and a.to_perf(1_700_000_001.5) == 1001.5


def test_capture_anchor_reads_monotonic_and_wall_together() -> None:
    m0 = time.clock_gettime(time.CLOCK_MONOTONIC)
    w0 = time.time()
    a = capture_anchor()
    m1 = time.clock_gettime(time.CLOCK_MONOTONIC)
    w1 = time.time()
    assert m0 <= a.perf <= m1 and w0 <= a.wall <= w1
    # both clocks advance together: the offset matches one taken independently to within
    # the (small) time it takes to read them
    assert abs(a.offset - (w1 - m1)) < 0.05


def test_budget_smaller_than_one_chunk_keeps_the_newest_and_says_so(tmp_path: Path) -> None:
    # a ring whose budget cannot hold even one chunk must not throw away what it just recorded
    said: list[str] = []
    with Store.open(tmp_path / "s") as store:
        made = [make_chunk(store, i, 5_000) for i in range(3)]
        dropped = ring.enforce(store, made[-1].wall_end, max_age_s=10**9, max_bytes=1_000,
                               warn=said.append)
        kept = ring.all_chunks(store)
        assert [c.path for c in kept] == [made[-1].path]
        assert len(dropped) == 2
        assert len(list((tmp_path / "s" / "profiles").iterdir())) == 1
        assert len(said) == 1 and "5000 bytes" in said[0] and "1000" in said[0]
        # within budget again: nothing to say
        said.clear()
        ring.enforce(store, made[-1].wall_end, max_age_s=10**9, max_bytes=10**6,
                     warn=said.append)
        assert said == [] and len(ring.all_chunks(store)) == 1
