"""Whole saved perf script input folded as it is parsed (evidence/perf_fold.py) gives the
general road's answer: every captured perf script and folded fixture, alone and in pairs, with
each option the folded output takes, against the same input imported into a temporary ring
and read by the flame view. In-process; the fixtures are real captures (tests/fixtures/
profiles/README.md says how each was made)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from corescope.analysis.flame import Profile
from corescope.errors import InvalidInput
from corescope.evidence.open import profile_input
from corescope.evidence.perf_fold import fold_inputs
from corescope.investigate.flame import FlameFilters, flame_view, resolve_flame_window
from corescope.investigate.window import Around
from corescope.model.common import Diagnostic
from corescope.model.profiles import Batch
from corescope.runner import Runner
from corescope.sources import perf_script
from support import FIXTURES

PROFILES = FIXTURES / "profiles"
INPUTS = sorted(p.name for p in PROFILES.iterdir()
                if p.suffix in (".txt", ".folded") and p.name != "garbage.txt")
WHOLE = Around(None, 0.0, 0.0, False)
OPTIONS = [  # include_idle, weight, with_pid, with_tid
    (True, "period", False, False), (False, "samples", False, False),
    (True, "samples", True, False), (False, "period", False, True)]


def general(paths: tuple[str, ...], idle: bool, weight: str, tid: bool, tmp: Path
            ) -> tuple[Profile, str | None, dict[str, int]]:
    src = profile_input(tmp / "no-store", Runner(), paths, None, [], None)
    try:
        window = resolve_flame_window(src, WHOLE, None, lambda: None,  # type: ignore[arg-type]
                                      time.time())
        view = flame_view(src, window, FlameFilters(include_idle=idle, weight=weight,
                                                    by_thread=tid))
    finally:
        src.close()
    return view.profile, view.event, view.events_present


@pytest.mark.parametrize("name", INPUTS)
def test_each_input_folds_as_the_general_road_draws_it(name: str, tmp_path: Path) -> None:
    paths = (str(PROFILES / name),)
    for idle, weight, pid, tid in OPTIONS:
        got = fold_inputs(paths, [], include_idle=idle, weight=weight, by_thread=tid)
        assert got is not None
        want, event, present = general(paths, idle, weight, tid, tmp_path)
        assert got.profile.folded(pid, tid) == want.folded(pid, tid), (name, idle, weight)
        assert (got.event, got.events_present) == (event, present)
        assert (got.profile.samples, got.profile.idle_samples) == \
            (want.samples, want.idle_samples)


def test_inputs_together_and_the_event_drawn(tmp_path: Path) -> None:
    pairs = [("spin_realtime_ring.txt", "spin.folded"),
             ("spin_boot_ring.txt", "spin_realtime_ring.txt"),
             ("fields_default.txt", "inlined.txt")]
    for a, b in pairs:
        paths = (str(PROFILES / a), str(PROFILES / b))
        got = fold_inputs(paths, [], include_idle=True, weight="period", by_thread=False)
        assert got is not None
        want, event, present = general(paths, True, "period", False, tmp_path)
        assert got.profile.folded() == want.folded(), (a, b)
        assert (got.event, got.events_present) == (event, present)
    # files of several perf events: which is first is the ring's to say (the CLI then takes
    # the general road)
    paths = (str(PROFILES / "two_events_default.txt"), str(PROFILES / "spin.folded"))
    assert fold_inputs(paths, [], include_idle=True, weight="period", by_thread=False) is None


def test_no_samples_is_the_general_roads_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    notes = tmp_path / "notes.txt"
    notes.write_text("not a profile at all\n")
    paths = (str(empty), str(notes))
    with pytest.raises(InvalidInput) as fast:
        fold_inputs(paths, [], include_idle=False, weight="period", by_thread=False)
    with pytest.raises(InvalidInput) as slow:
        profile_input(tmp_path / "s", Runner(), paths, None, [], None)
    assert str(fast.value) == str(slow.value)


def test_a_batch_counts_as_its_samples_one_by_one() -> None:
    text = (PROFILES / "burner_idle.txt").read_text()
    for idle, weight, _pid, tid in OPTIONS:
        one = Profile(include_idle=idle, weight=weight, by_thread=tid)
        many = Profile(include_idle=idle, weight=weight, by_thread=tid)
        for b in perf_script.parse_batches([text]):
            one.add_batch(b)
            many.extend(b.samples())
        assert (one.stacks, one.threads, one.events) == (many.stacks, many.threads,
                                                         many.events)
        assert (one.samples, one.idle_samples, one.total_weight, one.idle_weight,
                one.first_time, one.last_time) == (many.samples, many.idle_samples,
                                                   many.total_weight, many.idle_weight,
                                                   many.first_time, many.last_time)
    empty = Profile()
    empty.add_batch(Batch([], [], [], [], [], [], [], [], []))
    assert empty.samples == 0 and empty.stacks == Counter()


def test_a_skipped_input_is_said(tmp_path: Path) -> None:
    diags: list[Diagnostic] = []
    notes = tmp_path / "notes.txt"
    notes.write_text("not a profile at all\n")
    paths = (str(PROFILES / "spin_realtime_ring.txt"), str(notes))
    got = fold_inputs(paths, diags, include_idle=False, weight="period", by_thread=False)
    assert got is not None and got.profile.samples > 0
    assert any("notes.txt" in d.source and "skipped" in d.message for d in diags)
