"""One automatic baseline: `flame --diff auto`, the HTML report's incident flames and serve's
range diffs take the same window by the same rule (analysis/flame_baseline.py), read through
the one flame view (investigate/flame.py)."""

from __future__ import annotations

from collections.abc import Callable

from corescope.analysis.flame_baseline import auto_baseline
from corescope.evidence.profiles import StackProfiles
from corescope.investigate import Window, investigate
from corescope.investigate.flame import FlameFilters, FlameWindow, flame_view
from corescope.render.report_model import Limits
from corescope.views.report_pages import EvidenceBackend, page_model
from support.synth_incident import evidence_of, zombie_chain_hour


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


def test_report_serve_and_flame_take_the_same_baseline() -> None:
    # the incident at 300 s of a 600 s record: its 2-minute rewind's baseline 10 minutes
    # earlier lies before the record, so the rule falls back to the record's earliest stretch
    sc = zombie_chain_hour(cpus=4, hot_cpu=2, seconds=600, resets_at=(300,), hz=19)
    ev = evidence_of(sc)
    inv = investigate(ev, Window(sc.start, sc.end))
    hp = inv.profiles[0]
    gap = Limits().baseline_gap_s
    page = page_model(ev, inv)
    inc = next(f for f in page["flames"] if f["kind"] == "incident")
    served = EvidenceBackend(lambda: ev).flame(hp.cpu, hp.start, hp.end, True)
    view = flame_view(StackProfiles(ev), FlameWindow(hp.start, hp.end, False, "wall"),
                      FlameFilters(cpu=hp.cpu), diff="auto", gap=gap)
    assert view.baseline is not None
    first = ev.coverage().profiles.start  # the earliest stretch of the record
    assert first < sc.start + 1
    assert view.baseline.window.start == first
    assert view.baseline.window.end == first + (hp.end - hp.start)
    note = view.baseline.window.note
    assert view.baseline_note == f"auto: {note}" and "earliest stretch" in note
    assert inc["baseline"] == served["baseline"] == {
        "samples": view.baseline.profile.samples, "note": note}
    assert view.baseline.profile.samples > 0
