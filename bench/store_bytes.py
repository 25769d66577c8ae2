"""Bytes per core-second stored, for a busy 96-core replay (goal ≤ 6), and for an idle one."""

from __future__ import annotations

import tempfile
from pathlib import Path

from _common import REPO  # noqa: F401  (sets sys.path)
from corescope.rootfs import Root
from corescope.sources.frames import load_frames
from corescope.sources.replay import replay_samples
from corescope.store.db import Store
from corescope.store.series import count_core_seconds, read_samples
from corescope.store.series_writer import SeriesWriter
from support.synth_procstat import write_replay

SECONDS = 1800


def measure(busy: bool) -> float:
    with tempfile.TemporaryDirectory() as d:
        root = write_replay(Path(d) / "root", ncpu=96, seconds=SECONDS, t0=1.8e9, busy=busy,
                            seed=7)
        store = Store.open(Path(d) / "store")
        writer = SeriesWriter(store)
        for s in replay_samples(load_frames(Root(root))):
            writer.append(s)
        writer.flush()
        store.reclaim()
        core_s = count_core_seconds(read_samples(store, 0, 4e9))
        size = store.size_bytes()
        store.close()
        return size / core_s


def main() -> None:
    for busy in (True, False):
        b = measure(busy)
        print(f"{'busy' if busy else 'idle'} 96-core replay, {SECONDS} s: "
              f"{b:.2f} bytes per core-second (goal ≤ 6)")


if __name__ == "__main__":
    main()
