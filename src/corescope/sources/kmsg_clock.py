"""The kernel log's clock: the kernel stamps records with usec since boot (its scheduler
clock), and these put them on the wall-clock timeline: an anchor read against
CLOCK_MONOTONIC, and the skew learnt from streamed records (a marker record written through
the device measures it too: sources.kmsg_reader.calibrate_with_marker)."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from corescope.model.events import KmsgRecord
from corescope.sources.clock import read_offset


@dataclass(frozen=True)
class ClockAnchor:
    """wall = usec / 1e6 + offset_s. `error_s` bounds the anchoring itself."""

    offset_s: float
    error_s: float
    method: str  # "monotonic" | "marker" | "boot_id" (saved logs of this boot)
    taken_wall: float

    def wall_of(self, usec: int) -> float:
        return usec / 1e6 + self.offset_s


def anchor_clock(clock: int = time.CLOCK_MONOTONIC, tries: int = 5,
                 skew_s: float = 0.0) -> ClockAnchor:
    """Read the wall clock on both sides of `clock` and keep the tightest pair.

    printk stamps with local_clock(), which tracks CLOCK_MONOTONIC (neither counts suspend);
    `skew_s` is kmsg − CLOCK_MONOTONIC as a marker measured it (see calibrate_with_marker)."""
    r = read_offset(clock, tries)
    return ClockAnchor(offset_s=r.offset_s - skew_s, error_s=r.error_s, method="monotonic",
                       taken_wall=r.taken_wall)


class SkewBound:
    """kmsg clock − CLOCK_MONOTONIC, learned from records as they are read, without writing.

    printk stamps with local_clock(), which runs on the raw clocksource, while NTP slews
    CLOCK_MONOTONIC: the two drift apart by the oscillator's correction (18 ms after 11 h of
    uptime on a test VM; a node corrected by tens of ppm gains seconds a day). A record stamped
    `k` and read at monotonic `m` was stamped no later than `m`, so skew ≥ k − m. A reader
    blocked in poll() reads a record within its wake-up latency, which makes that bound tight;
    the estimate is the greatest bound of the last `window_s` (the skew moves by ppm). Records
    that waited in the ring before reading started (the backlog) give loose bounds: do not
    observe them."""

    def __init__(self, window_s: float = 600.0) -> None:
        self.window_s = window_s
        self._best: deque[tuple[float, float]] = deque()  # (read mono, bound), bounds falling

    def observe(self, usec: int, read_mono: float) -> None:
        bound = usec / 1e6 - read_mono
        best = self._best
        while best and best[-1][1] <= bound:
            best.pop()
        best.append((read_mono, bound))
        # expire only on new observations: a quiet log keeps its last estimate
        while best[0][0] < read_mono - self.window_s:
            best.popleft()

    @property
    def value(self) -> float | None:
        return self._best[0][1] if self._best else None


@dataclass(frozen=True)
class MarkerCalibration:
    anchor: ClockAnchor
    skew_s: float  # kmsg clock − CLOCK_MONOTONIC at the marker
    usec: int
    seq: int | None


def wall_times(records: list[KmsgRecord], anchor: ClockAnchor | None) -> list[float | None]:
    """The wall time of each record: its own wall clock, else the anchor, else None."""
    out: list[float | None] = []
    for r in records:
        if r.wall is not None:
            out.append(r.wall)
        elif r.usec is not None and anchor is not None:
            out.append(anchor.wall_of(r.usec))
        else:
            out.append(None)
    return out
