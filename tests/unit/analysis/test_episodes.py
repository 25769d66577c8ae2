from __future__ import annotations

import pytest

from corescope.analysis.episodes import coarse_view, covered_spans, find_episodes
from corescope.model.cores import FIELDS, CoreSample

IDLE = tuple(100 if f == "idle" else 0 for f in FIELDS)
HOT = tuple(100 if f == "system" else 0 for f in FIELDS)
USER = tuple(100 if f == "user" else 0 for f in FIELDS)


def series(n: int, hot: dict[int, range], ncpu: int = 4, t0: float = 3000.0,
           busy=HOT) -> list[CoreSample]:
    return [
        CoreSample(t=t0 + i + 1, interval_s=1.0,
                   deltas={c: busy if i in hot.get(c, range(0)) else IDLE for c in range(ncpu)})
        for i in range(n)
    ]


def test_one_hot_core_for_four_seconds():
    eps = find_episodes(series(60, {2: range(10, 14)}))
    assert len(eps) == 1
    e = eps[0]
    assert e.cpu == 2 and e.duration_s == pytest.approx(4.0)
    assert e.start == pytest.approx(3010.0) and e.end == pytest.approx(3014.0)
    assert e.peak_pct == 100.0 and e.mean_pct == 100.0
    assert e.machine_avg_pct == pytest.approx(25.0)  # one of four cores
    # aligned 30 s window [3000, 3030): 4 hot seconds of 30
    assert e.seen_at_30s_pct == pytest.approx(400 / 30, rel=1e-6)
    assert e.seen_at_60s_pct == pytest.approx(400 / 60, rel=1e-6)
    assert e.machine_seen_at_30s_pct == pytest.approx(400 / 120, rel=1e-6)
    assert e.by_mode["sys"]["mean"] == 100.0 and e.by_mode["usr"]["peak"] == 0.0


def test_short_spikes_and_other_modes_are_not_episodes():
    assert find_episodes(series(30, {1: range(5, 6)})) == []  # 1 s < 2 s minimum
    assert find_episodes(series(30, {1: range(5, 10)}, busy=USER)) == []  # user time
    eps = find_episodes(series(30, {1: range(5, 10)}, busy=USER), mode="user")
    assert [e.cpu for e in eps] == [1]


def test_threshold_and_min_duration_are_respected():
    s = series(30, {0: range(3, 6)})
    assert len(find_episodes(s, min_duration=3)) == 1
    assert find_episodes(s, min_duration=3.5) == []
    assert find_episodes(s, threshold=100.1) == []


def test_gap_in_the_record_splits_an_episode():
    s = series(20, {0: range(0, 20)})
    s = s[:5] + s[12:]  # 7 samples missing
    eps = find_episodes(s)
    assert len(eps) == 2


def test_offline_cpu_breaks_a_run():
    s = series(10, {0: range(0, 10)})
    mid = s[5]
    s[5] = CoreSample(mid.t, mid.interval_s, {c: v for c, v in mid.deltas.items() if c != 0})
    eps = [e for e in find_episodes(s) if e.cpu == 0]
    assert [e.samples for e in eps] == [5, 4]


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="unknown mode"):
        find_episodes([], mode="bogus")


def test_coarse_view_takes_the_worst_window_an_episode_touches():
    s = series(90, {0: range(28, 33)})  # straddles the 3030 boundary: 2 s before, 3 s after
    core, machine = coarse_view(s, 0, 3028, 3033, 30.0, "kernel")
    assert core == pytest.approx(300 / 30)
    assert machine == pytest.approx(300 / 120)


def test_covered_spans_split_at_gaps():
    s = series(20, {})
    s = s[:5] + s[12:]
    assert covered_spans(s) == [(3000.0, 3005.0), (3012.0, 3020.0)]


def _ticks(**fields: int) -> tuple[int, ...]:
    return tuple(fields.get(f, 0) for f in FIELDS)


@pytest.mark.parametrize("busy, hot", [
    (_ticks(system=87, steal=10, idle=3), True),   # 97 % of the unstolen time in the kernel
    (_ticks(system=60, steal=40), True),           # all of the guest's 60 % in the kernel
    (_ticks(system=85, steal=5, idle=10), False),  # 89 % of the unstolen time: below 90
    (_ticks(system=40, steal=60), False),          # the host took most: not the guest's story
    (_ticks(system=90, idle=10), True),            # no steal: the threshold on wall time
])
def test_stolen_time_is_not_the_guests_to_spend(busy: tuple[int, ...], hot: bool) -> None:
    eps = find_episodes(series(20, {1: range(5, 10)}, busy=busy))
    assert [e.cpu for e in eps] == ([1] if hot else [])
    if hot:  # the percentages reported stay sysstat's, of wall time
        assert eps[0].mean_pct == pytest.approx(busy[FIELDS.index("system")])


def test_a_steal_episode_is_judged_on_wall_time() -> None:
    s = series(20, {1: range(5, 10)}, busy=_ticks(steal=85, system=15))
    assert [e.cpu for e in find_episodes(s, 80.0, mode="steal")] == [1]
    assert find_episodes(s, 90.0, mode="steal") == []
