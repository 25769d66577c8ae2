"""Shared by the benchmarks: medians of repeated timings, and the test helpers' path."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]


def median_ns(fn: Callable[[], object], repeat: int = 15, number: int = 200) -> float:
    """Median over `repeat` runs of the mean ns per call of `number` calls."""
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(number):
            fn()
        runs.append((time.perf_counter_ns() - t0) / number)
    return statistics.median(runs)
