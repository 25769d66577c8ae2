"""The live metrics state against the same arithmetic `cores` uses (find_episodes, usage)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from corescope.analysis.episodes import find_episodes
from corescope.analysis.usage import usage_of
from corescope.metrics.live import MODES, LiveMetrics, mode_ratios
from corescope.model.cores import CoreSample
from corescope.model.packed import PackedRows
from corescope.sources.procstat import delta, parse_proc_stat
from support.synth_procstat import advance, initial, render


def _samples(n: int, hot: dict[int, set[int]], ncpu: int = 4, interval: float = 1.0,
             t0: float = 1_800_000_000.0, seed: int = 7) -> list[CoreSample]:
    """Real /proc/stat text (synthetic, kernel format) parsed by the real parser."""
    rng = random.Random(seed)
    cnt = initial(ncpu, rng)
    prev = parse_proc_stat(render(cnt))
    out = []
    for k in range(n):
        advance(cnt, rng, busy=True, hot=hot.get(k, set()), ticks=int(100 * interval))
        cur = parse_proc_stat(render(cnt, seq=k + 1))
        out.append(delta(prev, cur, t0 + (k + 1) * interval, interval))
        prev = cur
    return out


def test_ratios_match_mpstat_arithmetic() -> None:
    for s in _samples(5, {2: {1}}):
        ids = sorted(s.deltas)
        r = mode_ratios(np.array([s.deltas[c] for c in ids]))
        for i, c in enumerate(ids):
            u = usage_of(c, s.deltas[c])
            for j, m in enumerate(MODES):
                want = {"kernel": u.mode_pct("kernel"), "user": u.mode_pct("user")}.get(
                    m, u.pct.get({"soft": "soft"}.get(m, m), 0.0))
                assert r[i, j] * 100 == pytest.approx(want, abs=1e-9), (c, m)


def test_a_4s_spike_is_kept_for_the_window_and_counted_once() -> None:
    samples = _samples(40, {k: {1} for k in range(10, 14)})  # cpu1 hot for 4 s
    now = [samples[0].t]
    live = LiveMetrics(window_s=60, clock=lambda: now[0])
    for s in samples:
        live.cores(s)
        now[0] = s.t
    snap = live.snapshot()
    i = snap.cpus.index(1)
    k = MODES.index("kernel")
    assert snap.ratio_max[i, k] >= 0.98
    assert snap.ratio_max[snap.cpus.index(0), k] < 0.5
    # the same samples through `cores`' own episode finder: one episode, same seconds
    eps = find_episodes(samples)
    assert [(e.cpu, round(e.duration_s)) for e in eps] == [(1, 4)]
    assert snap.episodes.tolist() == [0, 1, 0, 0]
    assert snap.saturated_s[i, k] == pytest.approx(4.0)
    # 30 s after the window passed the spike, the gauge forgets it
    now[0] = samples[13].t + 60 + 2
    assert live.snapshot().ratio_max[i, k] < 0.5 or np.isnan(live.snapshot().ratio_max[i, k])


def test_sub_second_ticks_make_one_second_ratios() -> None:
    samples = _samples(50, {k: {2} for k in range(20, 30)}, interval=0.1)
    live = LiveMetrics(window_s=60, interval_s=0.1, clock=lambda: samples[-1].t)
    for s in samples:
        live.cores(s)
    snap = live.snapshot()
    assert snap.ratio_max[snap.cpus.index(2), 0] > 0.9
    # 10 ticks of 0.1 s = 1 s hot: saturated, but shorter than an episode
    assert snap.episodes.tolist() == [0, 0, 0, 0]
    assert 0.9 <= snap.saturated_s[snap.cpus.index(2), 0] <= 2.0


def test_a_gap_breaks_an_episode_and_hotplug_adds_a_row() -> None:
    live = LiveMetrics(window_s=60, clock=lambda: 1e9 + 100)
    hot = (0, 0, 99, 0, 0, 0, 1, 0, 0, 0)
    t = 1e9
    fed = []
    for dt in (1, 1, 1, 10, 1, 10, 1, 1):  # 3 s, a hole, 2 s, a hole, 3 s: three episodes
        t += dt
        fed.append(CoreSample(t, 1.0, PackedRows([0], np.array([hot]))))
        live.cores(fed[-1])
    assert live.snapshot().episodes.tolist() == [3] == [len(find_episodes(fed))]
    live.cores(CoreSample(t + 1, 1.0, {0: hot, 5: hot}))
    snap = live.snapshot()
    assert snap.cpus == (0, 5)


def test_counters_from_other_sensors() -> None:
    from corescope.model.cgroups import MemcgCensus, RestartRecord, StatReadCost
    from corescope.model.events import KernelEvent

    live = LiveMetrics(clock=lambda: 2e9)
    live.events([KernelEvent(1.0, "nic_reset", "x", fields={"iface": "eth0"}),
                 KernelEvent(2.0, "nic_reset", "x", fields={"iface": "eth0"}),
                 KernelEvent(3.0, "soft_lockup", "x")])
    live.restarts([RestartRecord(1.0, "systemd-unit", "ecs.service", 7)])
    live.restarts([RestartRecord(2.0, "systemd-unit", "ecs.service", 5)])  # never backwards
    live.stat_costs([StatReadCost(1.0, "memory.stat", 2.5, 3.0, 5)])
    for k in range(12):
        live.census(MemcgCensus(2e9 - 600 + k * 60, "v1", "v1", 100 + 60 * k, 40,
                                60 * k + 60, "test", boot_id="b"))
    snap = live.snapshot()
    assert snap.events == {("nic_reset", "eth0"): 2, ("soft_lockup", ""): 1}
    assert snap.restarts == {("ecs.service", "systemd-unit"): 7}
    assert snap.stat_costs == {"memory.stat": 0.0025}
    assert snap.census is not None and snap.census.dying == 720
    assert snap.growth_per_hour == pytest.approx(3600.0)


def test_the_exporter_discounts_stolen_time_as_cores_does() -> None:
    """A core at 87 % sys with 10 % stolen by the hypervisor is saturated for the exporter as
    for `cores` (one rule, analysis.usage.hot_floor)."""
    from corescope.model.cores import FIELDS

    def row(**f: int) -> tuple[int, ...]:
        return tuple(f.get(name, 0) for name in FIELDS)

    t0 = 1_800_000_000.0
    samples = [CoreSample(t=t0 + k + 1, interval_s=1.0,
                          deltas={0: row(idle=100),
                                  1: row(system=87, steal=10, idle=3) if 3 <= k < 7
                                  else row(idle=100)}) for k in range(12)]
    live = LiveMetrics(window_s=60, clock=lambda: samples[-1].t)
    for s in samples:
        live.cores(s)
    snap = live.snapshot()
    assert [(e.cpu, round(e.duration_s)) for e in find_episodes(samples)] == [(1, 4)]
    assert snap.episodes.tolist() == [0, 1]
    assert snap.saturated_s[snap.cpus.index(1), MODES.index("kernel")] == pytest.approx(4.0)
    assert snap.saturated_s[snap.cpus.index(1), MODES.index("steal")] == 0.0
