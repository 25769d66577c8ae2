"""analysis/correlate: lead times, queue service, bursts, base rate and summary."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis import correlate
from corescope.model.cores import Episode
from corescope.model.events import KernelEvent
from corescope.render.records import as_json
from support import reference_impl as ref


def ep(cpu: int, start: float, end: float) -> Episode:
    return Episode(cpu=cpu, start=start, end=end, mode="kernel", threshold_pct=90, peak_pct=100,
                   mean_pct=99, machine_avg_pct=1, seen_at_30s_pct=13, seen_at_60s_pct=7,
                   machine_seen_at_30s_pct=1, machine_seen_at_60s_pct=1, samples=int(end - start))


def ev(t: float, kind: str = "nic_tx_stall", iface: str | None = "eth0", queue: int | None = 5,
       seq: int | None = None) -> KernelEvent:
    fields: dict = {}
    if iface:
        fields["iface"] = iface
    if queue is not None:
        fields["queue"] = queue
    return KernelEvent(time=t, kind=kind, raw=f"{kind} at {t}", fields=fields, seq=seq)


def test_lead_time_semantics() -> None:
    eps = [ep(39, 100, 104), ep(7, 80, 85), ep(3, 105, 120), ep(2, 60, 69), ep(1, 140, 150)]
    pre = correlate.preceding(110.0, eps, window_s=30)
    got = {e.cpu: lead for e, lead in pre}
    # cpu39 ended 6 s before; cpu7 25 s before; cpu3 still running at the event → 0;
    # cpu2 ended 41 s before (outside the window); cpu1 starts after the event
    assert got == {39: 6.0, 7: 25.0, 3: 0.0}
    assert [e.cpu for e, _ in pre] == [3, 39, 7]  # nearest first


def test_episode_ending_exactly_at_window_edge_counts() -> None:
    assert correlate.preceding(130.0, [ep(1, 90, 100)], 30.0)[0][1] == 30.0
    assert correlate.preceding(130.001, [ep(1, 90, 100)], 30.0) == []


def test_serves_queue_true_false_unknown() -> None:
    eps = [ep(39, 100, 104), ep(7, 100, 104)]
    inc = correlate.correlate_event(ev(110), eps, serving=frozenset({39}))
    assert {p.cpu: p.serves_queue for p in inc.preceding} == {39: True, 7: False}
    inc = correlate.correlate_event(ev(110), eps, serving=None)
    assert all(p.serves_queue is None for p in inc.preceding)
    assert inc.nearest is not None and inc.nearest.cpu == 7  # tie on lead → lowest cpu


def test_bursts_group_per_interface() -> None:
    events = [ev(100, seq=1), ev(100.001, "nic_reset", seq=2), ev(100.5, "nic_reset", seq=3),
              ev(101, "nic_tx_stall", iface="eth1"), ev(200, seq=9),
              ev(100.2, "soft_lockup", iface=None, queue=None)]
    groups = correlate.group_bursts(events, group_s=10)
    heads = [(h.time, h.iface, len(r)) for h, r in groups]
    assert heads == [(100, "eth0", 2), (100.2, None, 0), (101, "eth1", 0), (200, "eth0", 0)]


def test_incidents_ignore_other_and_link_up() -> None:
    events = [ev(100, "other"), ev(101, "link_up"), ev(102, "nic_reset")]
    incs = correlate.incidents(events, [ep(1, 95, 99)])
    assert [i.event.kind for i in incs] == ["nic_reset"]
    assert incs[0].preceding[0].lead_s == 3.0


def test_base_rate_is_deterministic_and_correct() -> None:
    # one 10 s episode in a 1000 s record, 30 s window: an instant sees it when it falls in
    # [start, end + 30] → 40 s of the 970 s where a full window fits
    eps = [ep(1, 500, 510)]
    a = correlate.base_rate(eps, (0.0, 1000.0), 30.0, samples=20000, seed=1)
    b = correlate.base_rate(eps, (0.0, 1000.0), 30.0, samples=20000, seed=1)
    assert a == b
    assert a == pytest.approx(40 / 970, abs=0.006)
    assert correlate.base_rate([], (0.0, 1000.0)) == 0.0
    assert correlate.base_rate(eps, (5.0, 5.0)) is None


def test_summary_against_chance() -> None:
    # 5 resets, 4 of them 2-4 s after cpu39 saturated; episodes are rare otherwise
    eps = [ep(39, t - 8, t - 3) for t in (1000, 2000, 3000, 4000)] + [ep(2, 6000, 6005)]
    events = [ev(t) for t in (1000, 2000, 3000, 4000, 5000)]
    srv = {39}
    incs = correlate.incidents(events, eps,
                               serving=lambda e: frozenset(srv) if e.queue == 5 else None)
    s = correlate.summarize(incs, eps, (0.0, 7200.0), samples=5000, seed=3)
    assert s.events == 5 and s.preceded == 4
    assert s.preceded_fraction == 0.8
    assert s.median_lead_s == 3.0
    assert (s.top_cpu, s.top_cpu_count) == (39, 4)
    assert s.serves_queue_fraction == 1.0
    assert s.base_rate is not None and s.base_rate < 0.1
    assert s.p_value is not None and s.p_value < 1e-3
    j = as_json(s)
    assert {"events", "preceded_fraction", "base_rate", "median_lead_s", "top_cpu"} <= set(j)
    assert j["lift"] > 8


def test_summary_without_events_or_record() -> None:
    s = correlate.summarize([], [], None)
    assert (s.events, s.preceded_fraction, s.base_rate, s.median_lead_s, s.top_cpu) == \
        (0, None, None, None, None)


def test_binomial_tail_survives_thousands_of_incidents() -> None:
    # the plain comb(n, i) * p**i form overflows a float here
    assert correlate.binomial_tail(550, 1100, 0.3) < 1e-30
    assert correlate.binomial_tail(300, 1100, 0.3) == pytest.approx(0.8, abs=0.2)
    assert correlate.binomial_tail(5000, 20000, 0.25) == pytest.approx(0.5, abs=0.05)


def test_binomial_tail() -> None:
    assert correlate.binomial_tail(0, 10, 0.3) == 1.0
    assert correlate.binomial_tail(10, 10, 0.5) == pytest.approx(0.5**10)
    assert correlate.binomial_tail(1, 1, 0.0) == 0.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.floats(0, 1000), st.floats(0, 60)), max_size=20),
       st.lists(st.floats(0, 1100), max_size=20))
def test_property_leads_are_bounded(raw_eps: list, times: list) -> None:
    eps = [ep(c, s, s + d) for c, s, d in raw_eps]
    incs = correlate.incidents([ev(t) for t in times], eps, window_s=30, group_s=0)
    for inc in incs:
        for p in inc.preceding:
            assert 0.0 <= p.lead_s <= 30.0
            assert p.start <= inc.event.time
    s = correlate.summarize(incs, eps, (0.0, 1100.0), samples=200)
    assert s.preceded_fraction is None or 0.0 <= s.preceded_fraction <= 1.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(-50, 1100), st.floats(0, 300)), max_size=40),
       st.lists(st.tuples(st.floats(0, 1000), st.floats(0, 200)), max_size=5),
       st.sampled_from([0.0, 1.0, 30.0, 60.0]), st.integers(0, 3))
def test_base_rate_searching_the_episodes_is_the_scan_of_every_one(spans, covered, window,
                                                                    seed) -> None:
    """base_rate finds an episode in the window before each instant by a binary search over
    the episodes' starts and their running latest end: the same hits as testing every
    episode (the old scan, tests/support/reference_impl.py), on overlapping, nested, touching
    and zero-length episodes, with or without covered stretches."""
    eps = [ep(k % 4, s, s + d) for k, (s, d) in enumerate(spans)]
    cov = sorted((a, a + d) for a, d in covered) or None
    got = correlate.base_rate(eps, (0.0, 1000.0), window, 500, seed, cov)
    assert got == ref.base_rate(eps, (0.0, 1000.0), window, 500, seed, cov)
