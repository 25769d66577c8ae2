"""The automatic baseline of a flame graph, one rule for `flame --diff auto`, the HTML
report's incident flames and serve's range diffs: the same length as the window, ending `gap`
before it starts; when nothing was recorded there (the record does not reach back that far),
the earliest stretch of the record before the window, at most as long."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from corescope.timeparse import format_duration


@dataclass(frozen=True)
class BaselineWindow:
    start: float
    end: float
    note: str  # which rule chose it, for the reader
    found: bool = True  # False: nothing recorded before the window (an empty baseline)


def auto_baseline(lo: float, hi: float, gap: float, covered: Callable[[float, float], bool],
                  oldest: float | None) -> BaselineWindow:
    """`covered(a, b)`: whether anything was recorded in [a, b]; `oldest`: the oldest time
    recorded (None: nothing)."""
    length = hi - lo
    b_hi = lo - gap
    b_lo = b_hi - length
    if covered(b_lo, b_hi):
        return BaselineWindow(b_lo, b_hi, f"same length, ending {format_duration(gap)} before")
    if oldest is not None and oldest < lo:
        return BaselineWindow(oldest, min(oldest + length, lo),
                              "the ring does not reach back that far; earliest stretch")
    return BaselineWindow(b_lo, b_hi, "no data before the window", found=False)
