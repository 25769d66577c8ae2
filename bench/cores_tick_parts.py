"""Where a 1 Hz cores tick's CPU goes, part by part, on the cold cache a 1 Hz agent has:
thread CPU time (time.thread_time_ns) around each part of the real code path, one tick a
second, medians over BENCH_SECONDS (default 40). The row is stored both ways each tick, in
alternating order: the journal (store/journal.py, what `record` does) and the per-sample
SQLite commit into core_recent (what it did before, and still does without a journal).

    flock /tmp/corescope-bench.lock python bench/cores_tick_parts.py
"""

from __future__ import annotations

import os
import select
import statistics
import tempfile
import time
from pathlib import Path

from _common import REPO  # noqa: F401  (puts src/ on the path)
from corescope.sources.procstat import CoreDeltas, ProcStatReader
from corescope.store.db import Store
from corescope.store.series_codec import encode_row
from corescope.store.series_writer import SeriesWriter

SECONDS = int(os.environ.get("BENCH_SECONDS", "40"))


def main() -> None:
    reader = ProcStatReader()
    deltas = CoreDeltas(reader.read_bytes)
    ncpu = len(deltas.reset().cpus)
    parts: dict[str, list[int]] = {k: [] for k in (
        "sleep and wake (poll 1 s)", "read /proc/stat", "parse + diff (CoreDeltas.sample)",
        "encode the row", "store: journal append", "store: SQLite commit (core_recent)",
        "whole tick, journal")}
    rfd, _wfd = os.pipe()
    poller = select.poll()
    poller.register(rfd, select.POLLIN)
    clock = time.thread_time_ns
    with tempfile.TemporaryDirectory() as d, Store.open(Path(d) / "j") as sj, \
            Store.open(Path(d) / "q") as sq:
        wj = SeriesWriter(sj, block_samples=10**6, journal_cpus=ncpu)
        wq = SeriesWriter(sq, block_samples=10**6)
        prev = time.monotonic()
        for k in range(SECONDS):
            a = clock()
            poller.poll(1000)
            b = clock()
            reader.read_bytes()
            c = clock()
            now = time.monotonic()
            s = deltas.sample(time.time(), now - prev)
            prev = now
            e = clock()
            encode_row(s)
            f = clock()
            order = (wj, wq) if k % 2 else (wq, wj)
            spent = {}
            for w in order:
                g = clock()
                w.append(s)
                spent[w] = clock() - g
            parts["sleep and wake (poll 1 s)"].append(b - a)
            parts["read /proc/stat"].append(c - b)
            parts["parse + diff (CoreDeltas.sample)"].append(e - c)  # reads /proc/stat too
            parts["encode the row"].append(f - e)
            parts["store: journal append"].append(spent[wj])
            parts["store: SQLite commit (core_recent)"].append(spent[wq])
            parts["whole tick, journal"].append(e - c + spent[wj])
        wj.close()
        wq.close()
    reader.close()
    print(f"cores tick parts, {SECONDS} ticks at 1 Hz, {ncpu} CPUs, thread CPU time, medians")
    for name, v in parts.items():
        print(f"  {name:<40} {statistics.median(v) / 1000:7.1f} µs")
    print("  (parse + diff includes its own /proc/stat read; 'whole tick' is that plus the "
          "store append, which includes the encode)")


if __name__ == "__main__":
    main()
