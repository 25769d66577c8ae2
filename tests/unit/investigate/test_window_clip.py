"""The window resolver clips a window that reaches far past what the evidence covers (the
per-second heatmap and per-minute flames are allocated over the window), and leaves an
ordinary one alone: the default hour on a recording started ten minutes ago, an hour's
margin around the record."""

from __future__ import annotations

from corescope.evidence.base import Coverage, Span
from corescope.investigate.window import SLACK_S, clipped_note, resolve_window

NOW = 1_796_000_000.0
COV = Coverage(cores=Span(NOW - 86400 * 30, NOW - 86400 * 30 + 600),
               events=Span(NOW - 86400 * 30 - 50, NOW - 86400 * 30 + 590))
LO, HI = NOW - 86400 * 30 - 50, NOW - 86400 * 30 + 600


def test_a_window_far_past_the_record_is_clipped_to_it() -> None:
    w = resolve_window(NOW, since=86400.0, until=4102444800.0, coverage=COV)
    assert (w.start, w.end) == (LO, HI)
    assert w.asked == (86400.0, 4102444800.0)
    note = clipped_note(w, COV)
    assert note is not None and "clipped to" in note


def test_one_edge_far_out_only_that_edge_moves() -> None:
    w = resolve_window(NOW, since=LO + 100, until=4102444800.0, coverage=COV)
    assert (w.start, w.end) == (LO + 100, HI)


def test_a_window_wholly_after_the_record_holds_nothing_and_has_no_length() -> None:
    w = resolve_window(NOW, since=NOW, until=4102444800.0, coverage=COV)
    assert (w.start, w.end) == (NOW, NOW)
    note = clipped_note(w, COV)
    assert note is not None and note.startswith("nothing recorded in the window")
    before = resolve_window(NOW, since=0.0, until=LO - 2 * SLACK_S, coverage=COV)
    assert before.start == before.end == LO - 2 * SLACK_S


def test_ordinary_windows_are_kept() -> None:
    live = Coverage(cores=Span(NOW - 600, NOW))
    w = resolve_window(NOW, last=3600.0, coverage=live)
    assert (w.start, w.end, w.asked) == (NOW - 3600, NOW, None)
    assert clipped_note(w, live) is None
    w = resolve_window(NOW, since=LO - SLACK_S, until=HI + SLACK_S, coverage=COV)
    assert (w.start, w.end, w.asked) == (LO - SLACK_S, HI + SLACK_S, None)
    # nothing recorded: nothing to clip to
    w = resolve_window(NOW, since=0.0, until=4102444800.0, coverage=Coverage())
    assert (w.start, w.end) == (0.0, 4102444800.0)


def test_a_window_reaches_now_until_a_minute_before_it() -> None:
    from corescope.investigate.window import NOW_SLACK_S, reaches_now

    now = 1_790_000_000.0
    assert reaches_now(None, now) and reaches_now(now, now)
    assert reaches_now(now - NOW_SLACK_S, now)
    assert not reaches_now(now - NOW_SLACK_S - 1, now)
