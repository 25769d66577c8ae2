"""The NET_RX facts of irq_softirq_saturation on readings shaped like record's (5 s deltas of
/proc/softirqs): raised against the core's own rate before, else against the other CPUs;
nothing claimed without readings; the evidence implementations all answer `softirqs`."""

from __future__ import annotations

from corescope.evidence.memory import MemoryEvidence
from corescope.evidence.merged import MergedEvidence
from corescope.investigate.hypotheses.irq_softirq_saturation import net_rx_facts
from corescope.model.cores import Episode
from corescope.model.events import SoftirqSample

T0 = 1_800_000_000.0


def _ep(cpu: int, start: float, end: float) -> Episode:
    return Episode(cpu, start, end, "kernel", 90.0, 99.0, 97.0, 50.0, 40.0, 30.0, 20.0, 10.0,
                   int(end - start))


def _rows(hot: int, rates: list[float], other: float = 20.0) -> list[SoftirqSample]:
    return [SoftirqSample(T0 + 5 * (k + 1), 5.0, {0: int(other * 5), hot: int(r * 5)},
                          {0: 0, hot: 0}) for k, r in enumerate(rates)]


def test_raised_against_its_own_rate_before() -> None:
    rows = _rows(1, [5000, 5200, 4800, 5000, 40_000, 61_000, 5100])
    ep = _ep(1, T0 + 22, T0 + 30)  # inside the 5th and 6th readings
    f = net_rx_facts(rows, 1, [ep], [ep])
    assert f["net_rx_per_s_on_hot_cpu"].value == 61_000
    assert f["net_rx_per_s_hot_cpu_before"].value == 5000
    assert f["net_rx_per_s_other_cpus"].value == 20
    assert f["net_rx_raised"].value is True
    assert all(x.unit and x.source.startswith("/proc/softirqs") for x in f.values())


def test_a_core_always_busy_with_net_rx_is_not_raised() -> None:
    rows = _rows(1, [9000, 9100, 8900, 9000, 9500, 9400, 9000])
    ep = _ep(1, T0 + 22, T0 + 30)
    assert net_rx_facts(rows, 1, [ep], [ep])["net_rx_raised"].value is False


def test_no_reading_before_compares_with_the_other_cpus() -> None:
    rows = _rows(1, [40_000, 45_000])
    ep = _ep(1, T0 + 1, T0 + 9)
    f = net_rx_facts(rows, 1, [ep], [ep])
    assert "net_rx_per_s_hot_cpu_before" not in f
    assert f["net_rx_raised"].value is True and "other CPUs" in f["net_rx_raised"].unit
    # under the floor nothing is raised, whatever the ratio
    low = net_rx_facts(_rows(1, [30, 40], other=0.2), 1, [ep], [ep])
    assert low["net_rx_raised"].value is False


def test_no_readings_no_facts_and_merged_evidence_keeps_both_sides() -> None:
    ep = _ep(1, T0 + 22, T0 + 30)
    assert net_rx_facts([], 1, [ep], [ep]) == {}
    far = _rows(1, [5000] * 3)  # all before T0 + 15: none overlaps the episode
    assert net_rx_facts(far, 1, [_ep(1, T0 + 100, T0 + 110)], [ep]) == {}
    stored = MemoryEvidence(softirq_rows=_rows(1, [1, 2, 3]))
    live = MemoryEvidence(softirq_rows=_rows(1, [1, 2, 3, 4, 5]))
    merged = MergedEvidence(stored, live)  # type: ignore[arg-type]
    assert [r.t for r in merged.softirqs(0, 2e10)] == [T0 + 5 * k for k in range(1, 6)]


def _soft_hour(raised: bool) -> list:  # type: ignore[type-arg]
    """Four CPUs for 10 minutes, cpu2 pegged in softirq time from +300 s to +312 s (USER_HZ
    ticks per 1 s sample), and /proc/softirqs read every 5 s: NET_RX on cpu2 flat at 2,000/s,
    or ten times that during the saturation."""
    from corescope.investigate import Window, investigate
    from corescope.model.cores import CoreSample

    samples = []
    for i in range(1, 601):
        deltas = {}
        for c in range(4):
            if c == 2 and 300 < i <= 312:
                deltas[c] = (3, 0, 2, 0, 0, 0, 95, 0, 0, 0)
            else:
                deltas[c] = (20, 0, 3, 76, 0, 0, 1, 0, 0, 0)
        samples.append(CoreSample(T0 + i, 1.0, deltas))
    rows = [SoftirqSample(T0 + t, 5.0,
                          {0: 100, 1: 100, 2: (200_000 if raised and 300 < t <= 315 else 10_000),
                           3: 100}, {c: 0 for c in range(4)}) for t in range(5, 601, 5)]
    inv = investigate(MemoryEvidence(samples=samples, softirq_rows=rows),
                      Window(T0, T0 + 600))
    assert inv.diagnosis is not None
    return [h for h in inv.diagnosis.hypotheses if h.name == "irq_softirq_saturation"]


def test_soft_time_that_is_not_network_receive_is_not_a_net_rx_storm() -> None:
    """A core pegged in softirq time whose NET_RX rate did not move (block completions,
    timers, RCU), with no NIC incident after it: not a NET_RX storm. The same saturation
    with NET_RX ten times its rate before is one."""
    (calm,) = _soft_hour(raised=False)
    assert calm.verdict == "ruled_out", calm
    assert calm.evidence["net_rx_raised"].value is False
    assert "not by network receive" in calm.summary
    (storm,) = _soft_hour(raised=True)
    assert storm.verdict == "supported" and storm.hot_cpu == 2, storm
    assert storm.evidence["net_rx_raised"].value is True
