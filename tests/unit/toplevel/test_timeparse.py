from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from corescope.timeparse import TimeParseError, parse_duration, parse_instant


@pytest.mark.parametrize("text,secs", [("90", 90), ("90s", 90), ("2m", 120), ("12h", 43200),
                                       ("1d", 86400), ("500ms", 0.5), ("0.1s", 0.1)])
def test_durations(text: str, secs: float):
    assert parse_duration(text) == pytest.approx(secs)


def test_instants():
    now = 1_800_000_000.0
    assert parse_instant("now", now) == now
    assert parse_instant("90s ago", now) == now - 90
    assert parse_instant("1795981204.5", now) == 1795981204.5
    assert parse_instant("2026-11-29T19:40:00Z", now) == 1795981200.0
    assert parse_instant("2026-11-29T19:40:00", now) == 1795981200.0


@given(st.text(max_size=20))
def test_garbage_is_a_clear_error(text: str):
    for fn in (parse_duration, parse_instant):
        try:
            fn(text)
        except TimeParseError as exc:
            assert "expected" in str(exc)


def test_iso_of_an_impossible_time_is_the_number():
    from corescope.timeparse import iso

    assert iso(1795981200.0) == "2026-11-29T19:40:00Z"
    assert iso(1e20).startswith("@") and iso(float("nan")).startswith("@")
