"""bench/soak.py's flatness rule: medians of the first and last thirds, not single samples."""

from __future__ import annotations

import importlib.util
import sys

from support import REPO

BENCH = REPO / "bench"


def _soak():
    sys.path.insert(0, str(BENCH))  # soak imports its sibling _common
    try:
        spec = importlib.util.spec_from_file_location("bench_soak", BENCH / "soak.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(BENCH))


soak = _soak()


def _rows(db_mb: list[float], rss_mb: float = 45.0, fds: int = 16,
          chunks: list[int] | None = None, ring_mb: list[float] | None = None) -> list[dict]:
    """One row a minute from minute 1; the store's figures start at minute 17 (retention + 2).
    The ring holds 8 chunks of 0.25 MB unless told otherwise."""
    chunks = chunks or [8] * len(db_mb)
    ring_mb = ring_mb or [2.0] * len(db_mb)

    def row(minute: float, db: float, n: int, ring: float) -> dict:
        return {"minute": minute, "rss_kb": int(rss_mb * 1024), "fds": fds,
                "db_bytes": int(db * 1e6), "ring_chunks": n, "ring_bytes": int(ring * 1e6),
                "store_bytes": int((db + ring) * 1e6)}

    rows = [row(float(m), 8.0, 8, 2.0) for m in range(1, 17)]
    rows += [row(float(17 + i), mb, n, r)
             for i, (mb, n, r) in enumerate(zip(db_mb, chunks, ring_mb, strict=True))]
    return rows


def test_a_low_first_steady_reading_does_not_decide():
    # The shape of the 2026-11-30 run 2: 7.96 MB at minute 17 (a low point of the chunk cycle),
    # then swings between 7.4 and 11.3 MB with no trend. The old rule called that +42 %.
    swing = [7.96, 9.1, 11.3, 8.2, 7.4, 10.6, 8.9, 9.4, 11.0, 7.8]
    assert soak._flat(_rows(swing * 4 + swing[:4]), 5, 15) == []


def test_one_high_minute_does_not_decide():
    flat = [9.0] * 43
    flat[30] = 30.0
    assert soak._flat(_rows(flat), 5, 15) == []


def test_a_steady_growth_is_over_budget():
    growing = [8.0 + 0.15 * i for i in range(44)]  # 8 → 14.5 MB: +~60 % third to third
    problems = soak._flat(_rows(growing), 5, 15)
    assert len(problems) == 1 and problems[0].startswith("database bytes grew")


def test_ring_chunks_growing_in_number_are_over_budget_and_in_size_are_not():
    # chunk bytes follow the load (busier CPUs, more varied stacks): shown, not budgeted
    heavier = [2.0 + 0.2 * i for i in range(44)]
    assert soak._flat(_rows([1.0] * 44, ring_mb=heavier), 5, 15) == []
    # retention not dropping old chunks: their number grows
    more = [8 + i // 4 for i in range(44)]
    problems = soak._flat(_rows([1.0] * 44, chunks=more), 5, 15)
    assert len(problems) == 1 and problems[0].startswith("closed ring chunks grew")


def test_rss_and_fd_trends_are_over_budget_and_spikes_are_not():
    rows = _rows([9.0] * 44)
    for i, r in enumerate(rows):
        r["rss_kb"] = int((40 + 0.5 * i) * 1024)  # +0.5 MB a minute
        r["fds"] = 16 + i // 5  # one more fd every 5 minutes
    problems = soak._flat(rows, 5, 15)
    assert [p.split()[0] for p in problems] == ["RSS", "open"]

    rows = _rows([9.0] * 44)
    rows[40]["rss_kb"] += 50 * 1024
    rows[40]["fds"] += 20
    assert soak._flat(rows, 5, 15) == []


def test_too_few_samples_decide_nothing():
    assert soak.thirds_growth([1.0, 100.0]) is None
    assert soak.thirds_growth([1.0, 2.0, 100.0]) == (1.0, 100.0)
