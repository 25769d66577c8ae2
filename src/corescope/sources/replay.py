"""Core samples from a frame sequence, timed by the frames' own clock."""

from __future__ import annotations

from collections.abc import Iterator

from corescope.model.cores import CoreSample
from corescope.sources.frames import Frame
from corescope.sources.procstat import carry, delta, parse_proc_stat


def replay_samples(frames: list[Frame]) -> Iterator[CoreSample]:
    prev = None
    prev_t = 0.0
    for f in frames:
        cur = parse_proc_stat(f.root.read_bytes("/proc/stat"))
        if prev is not None:
            yield delta(prev, cur, f.time, f.time - prev_t)
            cur = carry(prev, cur)
        prev, prev_t = cur, f.time
