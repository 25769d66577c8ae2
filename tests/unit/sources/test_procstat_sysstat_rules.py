"""/proc/stat deltas with sysstat's rules for counters that go backwards, CPUs going offline
and coming back, and tickless CPUs; the one percentage rule (sysstat's get_per_cpu_interval).

The texts are written here in the kernel's format (fs/proc/stat.c: `cpuN` then user nice system
idle iowait irq softirq steal guest guest_nice). The hotplug case is the one sysstat's own test
roots carry (a CPU whose idle and iowait restart from 0 on coming back online while user and
system keep counting, kernel/sched/cputime.c vs. the per-CPU idle accounting); the numbers are
our own. `_mpstat` restates sysstat's arithmetic (common.c get_per_cpu_interval, ll_sp_value;
mpstat.c keeping an offline CPU's last counters) as the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from corescope.analysis.usage import interval_of, mode_pct, usage_of
from corescope.metrics.live import MODES as LIVE_MODES
from corescope.metrics.live import mode_ratios
from corescope.model.cores import MODES
from corescope.sources.artifacts import procstat_loop
from corescope.sources.procstat import CoreDeltas, carry, cpu_delta, delta, parse_proc_stat

U, N, S, ID, W, Q, SQ, ST, G, GN = range(10)
ULL = 1 << 64


def text(cpus: dict[int, tuple[int, ...]]) -> str:
    total = [sum(v[i] for v in cpus.values()) for i in range(10)]
    lines = ["cpu  " + " ".join(map(str, total))]
    lines += [f"cpu{c} " + " ".join(map(str, v)) for c, v in sorted(cpus.items())]
    return "\n".join(lines) + "\nintr 1 0\nctxt 10\nbtime 1700000000\nprocesses 5\n"


def busy(pct: dict[str, float]) -> float:
    return 100.0 - pct["idle"]  # what a reader of mpstat calls busy


# cpu1 went offline between the reads and came back: user/system kept counting (+206, +120),
# idle and iowait restarted from 0 (273 and 28 ticks since it came back)
BEFORE = {0: (9000, 0, 3000, 140000, 5000, 400, 200, 0, 0, 0),
          1: (7968, 559931, 3755, 145416, 5621, 4374, 1722, 0, 0, 0)}
AFTER = {0: (9100, 0, 3050, 140500, 5010, 405, 205, 0, 0, 0),
         1: (8174, 559931, 3875, 273, 28, 4390, 1730, 0, 0, 0)}


def _mpstat(prev: tuple[int, ...], cur: tuple[int, ...]) -> dict[str, float] | None:
    """sysstat's per-CPU line (12.x): get_per_cpu_interval then ll_sp_value; None: tickless."""
    p = list(prev)
    ishift = 0
    if cur[U] - cur[G] < p[U] - p[G]:
        ishift += (p[U] - p[G]) - (cur[U] - cur[G])
    if cur[N] - cur[GN] < p[N] - p[GN]:
        ishift += (p[N] - p[GN]) - (cur[N] - cur[GN])
    if cur[W] < p[W] and p[W] < ULL - 0x7FFFF:
        p[W] = cur[W] if (cur[ID] > p[ID] or p[ID] >= ULL - 0x7FFFF) else 0
    if cur[ID] < p[ID] and p[ID] < ULL - 0x7FFFF:
        p[ID] = 0
    idx = (U, N, S, W, ID, ST, Q, SQ)
    itv = (sum(cur[i] for i in idx) - sum(p[i] for i in idx) + ishift) % ULL
    if itv == 0:
        return None

    def sp(a: int, b: int) -> float:
        return 0.0 if b < a else (b - a) / itv * 100

    return {"usr": sp(p[U] - p[G], cur[U] - cur[G]), "nice": sp(p[N] - p[GN], cur[N] - cur[GN]),
            "sys": sp(p[S], cur[S]), "iowait": sp(p[W], cur[W]), "irq": sp(p[Q], cur[Q]),
            "soft": sp(p[SQ], cur[SQ]), "steal": sp(p[ST], cur[ST]), "guest": sp(p[G], cur[G]),
            "gnice": sp(p[GN], cur[GN]), "idle": sp(p[ID], cur[ID])}


def test_idle_and_iowait_restarting_after_hotplug_is_not_a_hot_core() -> None:
    s = delta(parse_proc_stat(text(BEFORE)), parse_proc_stat(text(AFTER)), 1.0, 1.0)
    u = usage_of(1, tuple(int(x) for x in s.deltas[1]))
    want = _mpstat(BEFORE[1], AFTER[1])
    assert want is not None and busy(want) == pytest.approx(58.06, abs=0.01)
    assert busy(u.pct) == pytest.approx(busy(want), abs=1e-9)  # not 100 %
    for m in MODES:
        assert u.pct[m] == pytest.approx(want[m], abs=1e-9)


@pytest.mark.parametrize("extra", [0, 20])  # the list path (2 CPUs) and numpy's (22)
def test_the_recorder_hot_path_applies_the_same_rules(extra: int) -> None:
    before, after = dict(BEFORE), dict(AFTER)
    for k in range(2, 2 + extra):
        before[k], after[k] = BEFORE[0], AFTER[0]
    feed = iter([text(before).encode(), text(after).encode()])
    cd = CoreDeltas(lambda: next(feed))
    cd.reset()
    s = cd.sample(1.0, 1.0)
    u = usage_of(1, tuple(int(x) for x in s.deltas[1]))
    assert busy(u.pct) == pytest.approx(58.06, abs=0.01)


def test_a_proc_stat_loop_applies_the_same_rules() -> None:
    loop = (f"Tue Apr 16 13:20:39 UTC 2019\n{text(BEFORE)}"
            f"Tue Apr 16 13:20:49 UTC 2019\n{text(AFTER)}")
    p = procstat_loop.parse(loop.encode(), "proc_stat", "loop.txt")
    assert len(p.samples) == 1
    u = usage_of(1, p.samples[0].deltas[1])
    assert busy(u.pct) == pytest.approx(58.06, abs=0.01)


def test_a_cpu_offline_for_a_while_is_measured_from_its_last_counters() -> None:
    a = {0: BEFORE[0], 1: (1414, 28, 1441, 711404, 2605, 264, 28, 0, 0, 0)}
    b = {0: AFTER[0]}  # cpu1 offline
    c = {0: AFTER[0], 1: (1422, 28, 1457, 103, 0, 264, 53, 0, 0, 0)}  # back, idle restarted
    pa, pb, pc = (parse_proc_stat(text(x)) for x in (a, b, c))
    s1 = delta(pa, pb, 1.0, 1.0)
    assert sorted(s1.deltas) == [0]  # offline: hidden
    base = carry(pa, pb)
    assert base.gone[1] == a[1]
    s2 = delta(base, pc, 2.0, 1.0)
    d = tuple(int(x) for x in s2.deltas[1])
    assert d == (8, 0, 16, 103, 0, 0, 25, 0, 0, 0)  # as mpstat: 5.26 usr, 10.53 sys, 67.76 idle
    assert usage_of(1, d).pct["idle"] == pytest.approx(67.76, abs=0.005)
    # and the recorder's hot path keeps the offline CPU's counters the same way
    feed = iter([text(x).encode() for x in (a, b, c)])
    cd = CoreDeltas(lambda: next(feed))
    cd.reset()
    cd.sample(1.0, 1.0)
    assert tuple(int(x) for x in cd.sample(2.0, 1.0).deltas[1]) == d


def test_a_cpu_never_seen_before_waits_one_interval() -> None:
    pa = parse_proc_stat(text({0: BEFORE[0]}))
    pb = parse_proc_stat(text(AFTER))
    assert sorted(delta(pa, pb, 1.0, 1.0).deltas) == [0]


def test_an_idle_glitch_is_no_sample_not_a_restart() -> None:
    """idle a few ticks backwards while user and system go on (no offline read between): not
    a CPU back online (whose idle would have restarted near 0) but an accounting glitch. Taken
    from 0, as sysstat does, it would show ~100 % idle for the interval; the CPU gets no
    sample instead. The hotplug restart (a drop larger than what remains) is unchanged."""
    before = {0: (9000, 0, 3000, 140000, 5000, 400, 200, 0, 0, 0)}
    after = {0: (9060, 0, 3030, 139990, 5000, 401, 201, 0, 0, 0)}
    assert cpu_delta(before[0], after[0]) is None
    s = delta(parse_proc_stat(text(before)), parse_proc_stat(text(after)), 1.0, 1.0)
    assert 0 not in s.deltas
    # the recorder's hot path and a saved /proc/stat loop follow the same rule
    feed = iter([text(before).encode(), text(after).encode()])
    cd = CoreDeltas(lambda: next(feed))
    cd.reset()
    assert 0 not in cd.sample(1.0, 1.0).deltas
    d = cpu_delta(BEFORE[1], AFTER[1])
    assert d is not None and d[ID] == AFTER[1][ID]


def test_iowait_moved_into_idle_is_zero_iowait() -> None:
    # kernel/sched: iowait first accounted, then idle: iowait goes back while idle goes on
    d = cpu_delta((100, 0, 50, 1000, 300, 0, 0, 0, 0, 0), (110, 0, 55, 1100, 299, 0, 0, 0, 0, 0))
    assert d == (10, 0, 5, 100, 0, 0, 0, 0, 0, 0)


def test_user_going_back_is_a_restarted_line_not_an_interval() -> None:
    # user/nice/system keep counting through hotplug: going back is a reboot or a reset
    assert cpu_delta((5000, 0, 900, 10000, 10, 0, 0, 0, 0, 0),
                     (40, 0, 950, 10100, 10, 0, 0, 0, 0, 0)) is None
    pa = parse_proc_stat(text(BEFORE))
    pb = parse_proc_stat(text({0: AFTER[0], 1: (10, 0, 5, 100, 0, 0, 0, 0, 0, 0)}))
    assert sorted(delta(pa, pb, 1.0, 1.0).deltas) == [0]


def test_a_counter_near_two_to_the_64_wraps() -> None:
    before = (100, 0, 50, ULL - 10, 0, 0, 0, 0, 0, 0)
    d = cpu_delta(before, (110, 0, 50, 80, 0, 0, 0, 0, 0, 0))
    assert d == (10, 0, 0, 90, 0, 0, 0, 0, 0, 0)


def test_steal_going_back_is_zero_steal() -> None:
    d = cpu_delta((100, 0, 50, 1000, 0, 0, 0, 40, 0, 0), (150, 0, 60, 1040, 0, 0, 0, 35, 0, 0))
    assert d == (50, 0, 10, 40, 0, 0, 0, 0, 0, 0)


def test_an_all_zero_line_is_an_offline_cpu() -> None:
    pa = parse_proc_stat(text(BEFORE))
    pb = parse_proc_stat(text({0: AFTER[0], 1: (0,) * 10}))
    assert sorted(delta(pa, pb, 1.0, 1.0).deltas) == [0]
    base = carry(pa, pb)
    assert base.gone[1] == BEFORE[1]


def test_a_tickless_cpu_is_idle() -> None:
    u = usage_of(3, (0,) * 10)
    assert u.pct["idle"] == 100.0 and busy(u.pct) == 0.0


def test_guest_ahead_of_user_widens_the_interval_as_sysstat() -> None:
    # sar -u ALL on a CPU whose guest_nice ran ahead of nice: 213 user (150 guest), 5 nice
    # (25 guest_nice): sysstat adds the 20-tick excess to the interval
    d = (213, 5, 888, 995, 0, 0, 0, 100, 150, 25)
    assert interval_of(d) == 2221
    u = usage_of(0, d)
    assert round(u.pct["usr"], 2) == 2.84 and round(u.pct["gnice"], 2) == 1.13
    assert round(u.pct["idle"], 2) == 44.80 and u.pct["nice"] == 0.0
    assert sum(u.pct.values()) == pytest.approx(100.0)


def test_every_percentage_path_uses_the_one_rule() -> None:
    rows = np.array([(213, 5, 888, 995, 0, 0, 0, 100, 150, 25),
                     (60, 0, 20, 20, 0, 0, 0, 0, 40, 0), (0,) * 10], dtype=np.int64)
    for mode in ("usr", "guest", "idle", "kernel", "user"):
        _, pct = mode_pct(rows, mode)
        for k, r in enumerate(rows):
            assert pct[k] == pytest.approx(usage_of(0, tuple(int(x) for x in r)).mode_pct(mode))
    live = mode_ratios(rows)
    for k, r in enumerate(rows[:2]):
        u = usage_of(0, tuple(int(x) for x in r))
        for j, m in enumerate(LIVE_MODES):
            assert live[k, j] * 100 == pytest.approx(u.mode_pct(m))


_counter = st.integers(0, 2_000_000)
_line = st.tuples(*[_counter] * 10)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.integers(0, 2), _line, max_size=3), min_size=2, max_size=5))
# drawn once by a landing's run: steal going back by as much as softirq went on is a tickless
# interval to mpstat (corescope showed 100 % soft); a CPU whose previous line was all zeros
# (offline) got a delta from the fast path
@example([{0: (0, 0, 0, 0, 0, 0, 0, 1, 0, 0)}, {0: (0, 0, 0, 0, 0, 0, 1, 0, 0, 0)}])
@example([{0: (0,) * 10}, {0: (0, 0, 0, 0, 0, 0, 0, 1, 0, 0)}])
def test_no_cpu_is_hot_where_mpstat_shows_it_otherwise(reads) -> None:  # type: ignore[no-untyped-def]
    """Any sequence of reads: every CPU corescope shows equals mpstat's line (with mpstat's
    offline handling); a CPU corescope skips is one whose line restarted."""
    texts = [parse_proc_stat(text(r)) if r else parse_proc_stat(b"") for r in reads]
    last: dict[int, tuple[int, ...]] = {}  # mpstat's kept counters (offline CPUs' too)
    prev = texts[0]
    for c, v in reads[0].items():
        if any(v[:8]):
            last[c] = v
    for r, cur in zip(reads[1:], texts[1:], strict=True):
        s = delta(prev, cur, 1.0, 1.0)
        for c, v in r.items():
            before = last.get(c)
            if not any(v[:8]):
                continue
            if before is None:
                assert c not in s.deltas
                continue
            if c not in s.deltas:
                # a restarted line, or an idle glitch (back by less than it still holds)
                assert any(v[i] < before[i] for i in (U, N, S)) or (
                    before[ID] - v[ID] > 0 and v[ID] > before[ID] - v[ID])
                continue
            ours = usage_of(c, tuple(int(x) for x in s.deltas[c])).pct
            want = _mpstat(before, v)
            if want is None:
                assert ours["idle"] == 100.0
                continue
            if any(v[i] < before[i] for i in range(10) if i not in (ID, W)):
                # sysstat subtracts a backwards field from its interval; corescope counts it
                # as 0: never hot where mpstat is not
                assert not (busy(ours) >= 99.99 and busy(want) < 90)
                continue
            for m in MODES:
                assert ours[m] == pytest.approx(want[m], abs=1e-6), (c, before, v, m)
        for c, v in r.items():
            if any(v[:8]):
                last[c] = v
        prev = carry(prev, cur)
