"""Growth, projection, churn aggregation, suspect ranking, stat-cost flags and the finding."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis import zombies as az
from corescope.model.cgroups import (
    CgroupLayout,
    ChurnCount,
    MemcgCensus,
    RestartRecord,
    StatReadCost,
    Thresholds,
)


def census(t: float, dying: int, live: int = 240, boot: str = "b1",
           uptime: float | None = 3600.0) -> MemcgCensus:
    return MemcgCensus(t=t, layout="v1", hierarchy="v1", kernel_count=dying + live, live=live,
                       dying=dying, source="test", boot_id=boot, uptime_s=uptime)


def test_theil_sen_ignores_a_cleanup_outlier() -> None:
    pts = [(float(t), 10.0 * t) for t in range(20)]
    pts[7] = (7.0, 0.0)  # someone dropped caches once
    assert az.theil_sen_slope(pts) == 10.0
    assert az.theil_sen_slope([(1.0, 5.0)]) is None
    assert az.theil_sen_slope([(1.0, 5.0), (1.0, 6.0)]) is None


def test_theil_sen_subsamples_long_histories() -> None:
    pts = [(float(t), 3.0 * t + (t % 7)) for t in range(5000)]
    slope = az.theil_sen_slope(pts)
    assert slope is not None and abs(slope - 3.0) < 0.01


def test_growth_from_history_projects_threshold() -> None:
    # one zombie every 10 s (the incident's ECS agent): 360/h
    hist = [census(1000.0 + 10 * i, 100 + i) for i in range(30)]
    cur = census(1300.0, 130)
    g = az.growth(cur, hist)
    assert g.method == "theil-sen" and g.points == 31
    assert math.isclose(g.per_hour or 0, 360.0, rel_tol=1e-9)
    # live 240: 50x = 12,000 > 10,000, so the absolute rule fires first
    assert g.threshold == 10_000 and not g.crossed
    assert math.isclose(g.projected_threshold_at or 0, 1300.0 + (10_000 - 130) / 360 * 3600)


def test_growth_since_boot_without_history() -> None:
    g = az.growth(census(50.0, 720, uptime=7200.0), [])
    assert g.method == "since-boot" and g.per_hour == 360.0


def test_growth_ignores_other_boots_and_reports_crossing() -> None:
    old = [census(float(i), 50_000, boot="old") for i in range(10)]
    cur = census(100.0, 68_440, live=240, uptime=3600.0)
    g = az.growth(cur, old)
    assert g.method == "since-boot"  # the other boot's censuses are not this one's history
    assert g.crossed and g.projected_threshold_at == 100.0


def test_thresholds_ratio_rule_and_floor() -> None:
    thr = Thresholds()
    assert thr.limit(6) == (1000, "dying >= 50x live (6) and >= 1000")
    assert thr.limit(100)[0] == 5000
    assert thr.limit(None)[0] == 10_000
    assert Thresholds(max_dying=500).limit(100)[0] == 500


def test_growth_none_without_census() -> None:
    g = az.growth(None, [])
    assert g.per_hour is None and g.method == "none" and g.projected_threshold_at is None


def test_aggregate_churn_rates() -> None:
    rows = [ChurnCount(float(t), "/corescope-lab/agent", 50, 50, 1, 10.0, "inotify")
            for t in range(0, 100, 10)]
    rows += [ChurnCount(30.0, "/process_api", 1, 0, 4, 10.0, "inotify")]
    agg = az.aggregate_churn(rows, span_s=100.0, intervals=10)
    assert agg[0].parent == "/corescope-lab/agent"
    assert agg[0].removed_per_hour == 500 / 100 * 3600 and agg[0].active_fraction == 1.0
    assert agg[1].parent == "/process_api" and agg[1].active_fraction == 0.1


def test_suspects_crash_looper_beats_background_churn() -> None:
    churn = az.aggregate_churn(
        [ChurnCount(float(t), "/corescope-lab/agent", 50, 50, 1, 10.0, "inotify")
         for t in range(10)]
        + [ChurnCount(float(t), "/process_api", 3, 3, 4, 10.0, "inotify") for t in range(4)],
        span_s=100.0, intervals=10)
    sus = az.rank_suspects(18_000.0, churn, [])
    assert sus[0].name == "/corescope-lab/agent" and sus[0].kind == "cgroup-parent"
    assert sus[0].score > 0.9 > sus[1].score
    assert sus[0].evidence["explains_pct_of_growth"] == 100.0


def test_suspects_no_growth_keeps_scores_low() -> None:
    churn = az.aggregate_churn([ChurnCount(1.0, "/a", 5, 5, 0, 10.0, "inotify")], 10.0, 1)
    sus = az.rank_suspects(0.0, churn, [])
    assert sus[0].score <= 0.25


def test_restart_rates_and_unit_matched_to_churn() -> None:
    recs = [RestartRecord(0.0, "systemd-unit", "ecs.service", 1000, "auto-restart",
                          "/system.slice/ecs.service"),
            RestartRecord(3600.0, "systemd-unit", "ecs.service", 1360, "auto-restart",
                          "/system.slice/ecs.service"),
            RestartRecord(3600.0, "systemd-unit", "ssh.service", 0, "running", None),
            RestartRecord(3600.0, "systemd-unit", "kubelet.service", 2, "running",
                          "/system.slice/kubelet.service")]
    rates = az.restart_rates(recs, uptime_s=7200.0)
    by = {r.name: r for r in rates}
    assert "ssh.service" not in by  # never restarted
    assert by["ecs.service"].per_hour == 360.0 and by["ecs.service"].basis == "observed"
    assert by["kubelet.service"].basis == "since-boot" and by["kubelet.service"].per_hour == 1.0
    churn = az.aggregate_churn(
        [ChurnCount(float(t), "/system.slice/ecs.service", 1, 1, 1, 10.0, "inotify")
         for t in range(36)], 360.0, 36)
    sus = az.rank_suspects(360.0, churn, rates)
    assert sus[0].name == "ecs.service" and sus[0].kind == "systemd-unit"
    assert "churn" in sus[0].evidence and sus[0].score > 0.9
    # the matched churn parent is not listed a second time
    assert all(s.name != "/system.slice/ecs.service" for s in sus)


def test_restart_counter_reset_and_journal_rate() -> None:
    recs = [RestartRecord(0.0, "container", "ns/p/c", 50, "CONTAINER_EXITED", "podX"),
            RestartRecord(100.0, "container", "ns/p/c", 2, "CONTAINER_EXITED", "podX")]
    r = az.restart_rates(recs, None)[0]
    assert r.per_hour == 2 / 100 * 3600
    j = az.restart_rates([RestartRecord(0.0, "systemd-unit", "x.service", 9, "auto-restart")],
                         3600.0, [(0.0, "x.service", 7), (10.0, "x.service", 8),
                                  (20.0, "x.service", 9)])[0]
    assert j.basis == "journal" and j.per_hour == 360.0


def test_pod_uid_matches_systemd_driver_slice_name() -> None:
    rate = az.RestartRate("container", "kube-system/p/c", 5, 100.0, "observed",
                          "CONTAINER_EXITED", "pod1b2c3d4e-5f60-4a7b")
    assert az._matches("/kubepods.slice/kubepods-burstable-pod1b2c3d4e_5f60_4a7b.slice", rate)
    assert az._matches("/kubepods/burstable/pod1b2c3d4e-5f60-4a7b", rate)
    assert not az._matches("/kubepods/burstable/podffff", rate)


def test_stat_cost_flags() -> None:
    first = [StatReadCost(0.0, "memory.stat", 0.5, 0.6, 5)]
    cur = [StatReadCost(10.0, "memory.stat", 4.0, 5.0, 5),
           StatReadCost(10.0, "memory.numa_stat", 700.0, 710.0, 5)]
    s = az.stat_cost_summary(cur, first)
    assert s["memory.stat"]["flag"].startswith("grown 8.0x")
    assert s["memory.numa_stat"]["flag"].startswith("high")
    assert az.stat_cost_summary([StatReadCost(1.0, "memory.stat", 0.6, 0.6, 5)],
                                first)["memory.stat"]["flag"] is None


def _report(cur: MemcgCensus, hist: list[MemcgCensus]) -> az.ZombieReport:
    layout = CgroupLayout("v1", "v1", "/sys/fs/cgroup/memory")
    g = az.growth(cur, hist)
    return az.ZombieReport(layout, cur, g, [], [], [], {})


def test_finding_critical_when_crossed_with_advice() -> None:
    f = az.zombie_finding(_report(census(10.0, 68_440), []))
    assert f is not None and f.kind == "zombie_memcg_leak" and f.severity == "critical"
    advice = " ".join(f.evidence["advice"])
    for word in ("drop_caches", "memory.force_empty", "memory.reclaim", "disable", "reboot",
                 "never runs"):
        assert word in advice


def test_finding_warning_on_fast_stored_growth_only() -> None:
    hist = [census(10.0 * i, 100 + 5 * i, live=240) for i in range(60)]  # 1800/h
    f = az.zombie_finding(_report(census(600.0, 400), hist))
    assert f is not None and f.severity == "warning"
    # the same count with only a since-boot estimate is no finding
    assert az.zombie_finding(_report(census(600.0, 400, uptime=600.0), [])) is None
    # slow growth (60/h) that memory pressure keeps up with is no finding either
    slow = [census(60.0 * i, 100 + i, live=240) for i in range(60)]
    assert az.zombie_finding(_report(census(3600.0, 160), slow)) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e6, allow_nan=False), st.integers(0, 10**6)),
                max_size=60),
       st.integers(0, 10**6), st.integers(1, 5000))
def test_growth_never_raises(points: list[tuple[float, int]], dying: int, live: int) -> None:
    hist = [census(t, d, live) for t, d in points]
    g = az.growth(census(1e6 + 1, dying, live), hist)
    assert g.crossed == (dying >= g.threshold)
    if g.projected_threshold_at is not None:
        assert g.projected_threshold_at >= 1e6 + 1 - 1e-6


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["/a", "/a/b", "/system.slice/x.service", "/k"]),
                          st.integers(0, 100), st.integers(0, 100),
                          st.floats(0.1, 60, allow_nan=False)), max_size=20),
       st.lists(st.tuples(st.sampled_from(["x.service", "y.service"]),
                          st.one_of(st.none(), st.integers(0, 10**6)),
                          st.floats(0, 1e5, allow_nan=False)), max_size=8),
       st.one_of(st.none(), st.floats(-1e5, 1e6, allow_nan=False)))
def test_suspect_scores_stay_in_unit_range(churn_rows: list, recs: list,
                                           g: float | None) -> None:
    rows = [ChurnCount(float(i), p, c, r, 0, iv, "inotify")
            for i, (p, c, r, iv) in enumerate(churn_rows)]
    churn = az.aggregate_churn(rows, 0.0, len(rows))
    restarts = [RestartRecord(t, "systemd-unit", n, k, "auto-restart",
                              "/system.slice/x.service") for n, k, t in recs]
    sus = az.rank_suspects(g, churn, az.restart_rates(restarts, 3600.0))
    assert all(0.0 <= s.score <= 1.0 for s in sus)
    assert [s.score for s in sus] == sorted((s.score for s in sus), reverse=True)
