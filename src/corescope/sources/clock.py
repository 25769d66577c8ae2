"""Reading the wall clock against a kernel clock, as one measurement that every source which
stamps with a kernel clock (kmsg: local_clock, perf: CLOCK_MONOTONIC) shares."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class ClockReading:
    """wall ≈ clock + offset_s, within ± error_s, read at wall time `taken_wall`."""

    offset_s: float
    error_s: float
    taken_wall: float


def read_offset(clock: int = time.CLOCK_MONOTONIC, tries: int = 5) -> ClockReading:
    """Read the wall clock on both sides of `clock` `tries` times; keep the tightest pair."""
    best: tuple[float, float, float] | None = None
    for _ in range(max(1, tries)):
        w1 = time.time()
        m = time.clock_gettime(clock)
        w2 = time.time()
        if best is None or w2 - w1 < best[1] - best[0]:
            best = (w1, w2, m)
    assert best is not None
    w1, w2, m = best
    return ClockReading(offset_s=(w1 + w2) / 2 - m, error_s=(w2 - w1) / 2, taken_wall=w2)


def boot_wall_time() -> float:
    """The wall time this boot began (CLOCK_BOOTTIME counts suspend, as the wall clock does)."""
    return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
