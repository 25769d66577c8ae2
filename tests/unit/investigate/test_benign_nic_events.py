"""One NIC event that healed itself on a calm node is shown, not accused, and the node stays
healthy, whichever way the driver says it recovered: ENA prints `Device reset completed
successfully`; Intel's e1000e/igb/ixgbe, bnxt_en, tg3 and r8169 print no such line, their
reset is followed by the link coming back (`NIC Link is Up ...`), and a pulled cable that is
put back says only `Link is Down` / `Link is Up`. The lines below follow those drivers'
netdev_info/netdev_err formats (igb_main.c igb_watchdog_task `igb: %s NIC Link is Up %d Mbps
%s Duplex, Flow Control: %s`, igb_reset_task `Reset adapter`; ixgbe_main.c
ixgbe_watchdog_link_is_up `NIC Link is Up %s, Flow Control: %s`, ixgbe_watchdog_link_is_down
`NIC Link is Down`); times and addresses are made up."""

from __future__ import annotations

import dataclasses

from corescope.analysis.classify import classify
from corescope.investigate import Window, investigate
from corescope.model.events import KernelEvent
from support.synth_incident import T0, evidence_of, zombie_chain_hour

IGB = "igb 0000:04:00.0 eth0: "
IXGBE = "ixgbe 0000:81:00.1 eth1: "


def _calm_node(lines: list[tuple[float, str]], busy: bool = False):  # type: ignore[no-untyped-def]
    """A 30-minute record of 4 calm cores (no kernel-time episode, no census, no stacks)
    whose kernel log holds only `lines` (seconds after T0, message). `busy`: cpu2 saturates
    in kernel time for 6-9 s ending 1-2 s before +600 s (and for 3 s at +300 s)."""
    sc = zombie_chain_hour(cpus=4, hot_cpu=2, seconds=1800, resets_at=(600,))
    calm = []
    for s in sc.samples:
        d = dict(s.deltas)
        if d[2][2] > 50 and not busy:
            d[2] = (30, 0, 3, 67, 0, 0, 0, 0, 0, 0)
        calm.append(dataclasses.replace(s, deltas=d))
    sc.samples, sc.censuses, sc.stacks = calm, [], []
    sc.events = []
    for i, (at, msg) in enumerate(lines):
        c = classify(msg)
        sc.events.append(KernelEvent(time=T0 + at, kind=c.kind, raw=msg, driver=c.driver,
                                     device=c.device, fields=c.fields, seq=100 + i, level=6,
                                     id=i + 1))
    return investigate(evidence_of(sc), Window(sc.start, sc.end))


def test_an_intel_reset_whose_link_came_back_is_benign() -> None:
    inv = _calm_node([(900.0, IGB + "Reset adapter"),
                      (900.2, IGB + "igb: eth0 NIC Link is Down"),
                      (903.1, IGB + "igb: eth0 NIC Link is Up 1000 Mbps Full Duplex, "
                                    "Flow Control: RX/TX")])
    v = inv.diagnosis.verdict
    assert v.root_cause == "healthy", inv.diagnosis.hypotheses
    assert len(v.benign_events) == 1
    assert "igb 0000:04:00.0 eth0: its link came back up" in v.benign_events[0]


def test_a_pulled_cable_put_back_is_benign() -> None:
    inv = _calm_node([(900.0, IXGBE + "NIC Link is Down"),
                      (961.5, IXGBE + "NIC Link is Up 10 Gbps, Flow Control: RX/TX")])
    v = inv.diagnosis.verdict
    assert v.root_cause == "healthy", inv.diagnosis.hypotheses
    assert "the link went down and came back up" in v.benign_events[0]


def test_a_link_that_stays_down_or_a_reset_that_repeats_is_not_benign() -> None:
    down = _calm_node([(900.0, IXGBE + "NIC Link is Down")])
    assert down.diagnosis.verdict.root_cause != "healthy"
    assert not down.diagnosis.verdict.benign_events
    # up, then down again by the end of the window: the link did not come back
    again = _calm_node([(900.0, IGB + "Reset adapter"),
                        (903.0, IGB + "igb: eth0 NIC Link is Up 1000 Mbps Full Duplex, "
                                      "Flow Control: RX/TX"),
                        (1500.0, IGB + "igb: eth0 NIC Link is Down")])
    assert not again.diagnosis.verdict.benign_events
    twice = _calm_node([(900.0, IGB + "Reset adapter"),
                        (903.0, IGB + "igb: eth0 NIC Link is Up 1000 Mbps Full Duplex, "
                                      "Flow Control: RX/TX"),
                        (1300.0, IGB + "Reset adapter"),
                        (1303.0, IGB + "igb: eth0 NIC Link is Up 1000 Mbps Full Duplex, "
                                       "Flow Control: RX/TX")])
    assert not twice.diagnosis.verdict.benign_events
    assert twice.diagnosis.verdict.root_cause == "hardware_fault"


def test_another_nics_link_does_not_heal_it() -> None:
    inv = _calm_node([(900.0, IGB + "Reset adapter"),
                      (903.0, IXGBE + "NIC Link is Up 10 Gbps, Flow Control: RX/TX")])
    assert not inv.diagnosis.verdict.benign_events
    assert inv.diagnosis.verdict.root_cause != "healthy"


def test_a_busy_core_before_a_cable_pull_is_not_its_cause() -> None:
    # a starved core does not drop a link: a flap after a busy core is still a flap, and
    # a link that stays down after one names no hot core
    flap = _calm_node([(600.0, IXGBE + "NIC Link is Down"),
                       (661.0, IXGBE + "NIC Link is Up 10 Gbps, Flow Control: RX/TX")],
                      busy=True)
    assert flap.incidents[0].incident.preceding  # cpu2 was saturated just before
    v = flap.diagnosis.verdict
    assert v.hot_cpu is None and v.root_cause == "healthy", flap.diagnosis.hypotheses
    assert "a busy core before it cannot cause it" in v.benign_events[0]
    down = _calm_node([(600.0, IXGBE + "NIC Link is Down")], busy=True)
    assert down.diagnosis.verdict.hot_cpu is None
    assert down.diagnosis.verdict.root_cause != "zombie_memcg_leak"


def test_two_nics_reset_in_one_second_name_their_uncovered_window_once() -> None:
    # no per-core samples before them: the window to collect is said once, not per NIC
    from corescope.investigate.hypotheses.common import uncovered_before

    inv = _calm_node([(900.0, IGB + "Reset adapter"),
                      (900.0, "e1000e 0000:00:19.0 eth1: Reset adapter unexpectedly")])
    assert len(inv.incidents) == 2
    text = uncovered_before(inv, list(inv.incidents))
    assert text.count("from ") == 1, text
