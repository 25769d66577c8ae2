"""The automatic baseline rule (analysis/flame_baseline.py): the same length ending the gap
earlier, else the earliest stretch of the record before the window."""

from __future__ import annotations

from collections.abc import Callable

from corescope.analysis.flame_baseline import auto_baseline


def test_the_rule_same_length_gap_earlier_else_the_earliest_stretch() -> None:
    def rec(a0: float, a1: float) -> Callable[[float, float], bool]:
        """What was recorded, [a0, a1], as the rule's `covered`."""
        return lambda lo, hi: lo <= a1 and hi >= a0

    b = auto_baseline(1000.0, 1120.0, 600.0, rec(0.0, 2000.0), 0.0)
    assert (b.start, b.end, b.found) == (280.0, 400.0, True)
    assert b.note == "same length, ending 10m before"
    # recorded from 700 on: the gap window [280, 400] holds nothing, the earliest stretch
    # of the record, as long as the window and never into it, does
    b = auto_baseline(1000.0, 1120.0, 600.0, rec(700.0, 2000.0), 700.0)
    assert (b.start, b.end, b.found) == (700.0, 820.0, True)
    b = auto_baseline(1000.0, 1120.0, 600.0, rec(950.0, 2000.0), 950.0)
    assert (b.start, b.end) == (950.0, 1000.0)
    assert "earliest stretch" in b.note
    # nothing before the window at all
    b = auto_baseline(1000.0, 1120.0, 600.0, rec(1000.0, 2000.0), 1000.0)
    assert not b.found and b.note == "no data before the window"
