"""serve builds pages in several threads over one process's ring caches: the process-wide
frame table and a cached chunk's stack table are shared. Two threads must each get their own
answer. (Each failed before: a race in the frame interning gave stacks the other chunk's
frames; a chunk's stack offsets were published before its frame ids, and the second reader
cached empty stacks.) Real threads, real column chunks; the switch interval is shortened so
the interleavings the races need happen in every run."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from corescope.evidence import profile_query as pq
from corescope.evidence import ring_profile as rp
from corescope.model.profiles import ProfileChunk, StackSample
from corescope.runner import Runner
from corescope.sources.perf_script import intern_frame
from corescope.store import profile_columns as pcols
from corescope.store import profiles as ring
from corescope.store.db import Store


@pytest.fixture(autouse=True)
def _switch_often() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _chunk(d: Path, store: Store, i: int, samples: list[StackSample]) -> None:
    path = ring.profile_dir(d) / f"chunk-{i}{pcols.SUFFIX}"
    size = pcols.ColumnsBuilder().extend(samples).write(path)
    lo, hi = samples[0].time, samples[-1].time
    assert lo is not None and hi is not None
    ring.add_chunk(store, ProfileChunk(0, f"{ring.PROFILE_DIR}/{path.name}", "CLOCK_MONOTONIC",
                                       lo, hi + 1e-3, lo + 1e9, hi + 1e9 + 1e-3, 1e9, size,
                                       size, len(samples), 49))


def _two_threads(fn) -> None:  # type: ignore[no-untyped-def]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            fn(i)
        except BaseException as exc:
            errors.append(exc)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def test_two_queries_of_different_chunks_keep_their_own_frames(tmp_path: Path) -> None:
    n = 6000
    with Store.open(tmp_path) as store:
        for i in range(2):
            _chunk(tmp_path, store, i, [
                StackSample("app", 100 + i, 100 + i, 0, 1000.0 + k * 0.001, "cpu-clock",
                            (intern_frame(f"fn_{i}_{k}_{tmp_path.name}", "/bin/app", False,
                                          False),), 1, None, True) for k in range(n)])
        chunks = ring.all_chunks(store)
    for _trial in range(4):
        wrong = [0]

        def query(i: int, wrong: list[int] = wrong) -> None:
            with Store.open(tmp_path, create=False) as s:
                prof = rp.ring_profile(s, Runner(), 0, 2e10, chunks=[chunks[i]], whole=True)
            for (_comm, frames), _w in (prof.totals or {}).items():
                if not frames[0].symbol.startswith(f"fn_{i}_"):
                    wrong[0] += 1

        _two_threads(query)
        assert wrong[0] == 0


def test_two_readers_of_one_cached_chunk_see_whole_stacks(tmp_path: Path) -> None:
    frames = [intern_frame(f"f{j}", "/bin/app", False, False) for j in range(3000)]
    n = 8000
    with Store.open(tmp_path) as store:
        _chunk(tmp_path, store, 0, [
            StackSample("app", 1, 1, 0, 1000.0 + k * 0.001, "cpu-clock",
                        tuple(frames[(k * 7 + j) % 3000] for j in range(40)), 1, None, True)
            for k in range(n)])
    for _trial in range(4):
        pq._RECENT.clear()
        short = [0]

        def read(_i: int, short: list[int] = short) -> None:
            with Store.open(tmp_path, create=False) as s:
                for smp, _ in pq.ring_samples(s, Runner(), 0, 2e10):
                    if len(smp.frames) != 40:
                        short[0] += 1

        _two_threads(read)
        assert short[0] == 0
