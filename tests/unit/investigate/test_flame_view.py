"""One automatic baseline: `flame --diff auto`, the HTML report's incident flames and serve's
range diffs take the same window by the same rule, read through the one flame view
(investigate/flame.py)."""

from __future__ import annotations

from corescope.evidence.profiles import StackProfiles
from corescope.investigate import Window, investigate
from corescope.investigate.flame import FlameFilters, FlameWindow, flame_view
from corescope.render.report_model import Limits
from corescope.views.report_pages import EvidenceBackend, page_model
from support.synth_incident import evidence_of, zombie_chain_hour


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
