"""No per-core record is not a calm core: a NIC incident the core record does not reach
says nothing about whether a core starved before it (doctor on a node whose recorder started
after last night's resets must not call them hardware faults)."""

from __future__ import annotations

import dataclasses

from corescope.investigate import Window, investigate
from corescope.render.text import print_diagnosis
from support.synth_incident import T0, evidence_of, zombie_chain_hour


def _hypothesis(inv, name: str):  # type: ignore[no-untyped-def]
    return {h.name: h for h in inv.diagnosis.hypotheses}[name]


def test_incidents_before_the_core_record_are_unknown_not_unstarved(capsys) -> None:  # type: ignore[no-untyped-def]
    sc = zombie_chain_hour(cpus=4, hot_cpu=2, seconds=1800, resets_at=(600, 1500))
    # the recorder started after the first reset: its samples begin at +900 s
    sc.samples = [s for s in sc.samples if s.t >= T0 + 900]
    sc.stacks = [x for x in sc.stacks if x[1] >= T0 + 900]
    ev = evidence_of(sc)
    inv = investigate(ev, Window(sc.start, sc.end))
    hw = _hypothesis(inv, "hardware_fault")
    assert hw.evidence["nic_incidents_without_core_record"].value == 1
    assert hw.evidence["nic_incidents_without_starved_core"].value == 0
    assert hw.verdict != "supported"
    # the covered reset still followed the hot core
    assert inv.diagnosis.verdict.hot_cpu == 2


def test_only_unseen_incidents_leave_the_cause_undetermined_and_say_why(capsys) -> None:  # type: ignore[no-untyped-def]
    sc = zombie_chain_hour(cpus=4, hot_cpu=2, seconds=1800, resets_at=(600, 1500))
    # a live 10 s sample long after every reset, as doctor takes on a node with no store
    sc.samples = [s for s in sc.samples if s.t >= T0 + 1790]
    sc.stacks = []
    sc.censuses = []
    inv = investigate(evidence_of(sc), Window(sc.start, sc.end))
    hw = _hypothesis(inv, "hardware_fault")
    assert hw.verdict == "not_measured", hw
    assert hw.evidence["nic_incidents_without_core_record"].value == 2
    assert inv.diagnosis.verdict.root_cause == "undetermined"
    print_diagnosis(inv.diagnosis)
    out = capsys.readouterr().out
    # the seconds that were not covered, by name (not "around the NIC incidents")
    assert "to decide hardware_fault: per-core samples from " in out
    assert "(was a core starved?)" in out


def test_incidents_inside_a_calm_core_record_still_point_at_hardware() -> None:
    sc = zombie_chain_hour(cpus=4, hot_cpu=2, seconds=1800, resets_at=(600, 1500))
    # the same resets with every core calm before them: nothing starved, the record was on
    calm = []
    for s in sc.samples:
        d = dict(s.deltas)
        if d[2][2] > 50:  # the hot core's sys ticks: make it an ordinary core
            d[2] = (30, 0, 3, 67, 0, 0, 0, 0, 0, 0)
        calm.append(dataclasses.replace(s, deltas=d))
    sc.samples = calm
    sc.censuses = []
    inv = investigate(evidence_of(sc), Window(sc.start, sc.end))
    hw = _hypothesis(inv, "hardware_fault")
    assert hw.evidence["nic_incidents_without_starved_core"].value == 2
    assert "nic_incidents_without_core_record" not in hw.evidence
    assert hw.verdict == "supported"
    assert inv.diagnosis.verdict.root_cause == "hardware_fault"


def test_the_timeline_says_not_covered_not_no_hot_core(capsys) -> None:  # type: ignore[no-untyped-def]
    """A reset from before the per-core record began: the timeline says its window was not
    covered (naming the seconds), never "no hot-core episode" (there were no samples)."""
    from corescope.render.text import print_timeline

    sc = zombie_chain_hour(cpus=4, hot_cpu=2, seconds=1800, resets_at=(600, 1500))
    sc.samples = [s for s in sc.samples if s.t >= T0 + 900]
    sc.stacks = [x for x in sc.stacks if x[1] >= T0 + 900]
    inv = investigate(evidence_of(sc), Window(sc.start, sc.end))
    print_timeline(inv, with_diagnosis=False)
    out = capsys.readouterr().out
    assert out.count("not covered (no per-core samples from ") == 1, out
    assert "no hot-core episode in the" not in out


def test_the_report_json_says_which_incidents_the_core_record_covers() -> None:
    """The JSON says it too: an empty preceding_episodes under cores_covered false is "not
    measured", under true "no starved core"."""
    from corescope.render.json_contract import report_json

    sc = zombie_chain_hour(cpus=4, hot_cpu=2, seconds=1800, resets_at=(600, 1500))
    sc.samples = [s for s in sc.samples if s.t >= T0 + 900]
    sc.stacks = [x for x in sc.stacks if x[1] >= T0 + 900]
    inv = investigate(evidence_of(sc), Window(sc.start, sc.end))
    resets = [i for i in report_json(inv)["incidents"] if i["event"]["kind"].startswith("nic_")]
    by_time = sorted(resets, key=lambda i: i["event"]["time"])
    assert [i["cores_covered"] for i in by_time] == [False, True], by_time
    assert by_time[0]["preceding_episodes"] == []
    assert by_time[1]["preceding_episodes"]  # the covered one followed the hot core


def test_undetermined_with_everything_measured_does_not_ask_to_collect_more(capsys) -> None:  # type: ignore[no-untyped-def]
    """Every hypothesis measured and ruled out (one RCU stall on a calm, fully recorded
    node): the advice is to read the incidents, not to "collect what was not measured
    (below)" with nothing below."""
    from corescope.investigate.diagnosis import RULED_OUT, Diagnosis, Hypothesis, Verdict

    hyps = tuple(Hypothesis(n, RULED_OUT, 0.0, summary="no") for n in
                 ("zombie_memcg_leak", "hardware_fault", "healthy"))
    for hypotheses in (False, True):
        print_diagnosis(Diagnosis(Verdict("undetermined", None, None, None, 0.0), (), hyps),
                        hypotheses=hypotheses)
        out = capsys.readouterr().out
        assert "collect what was not measured" not in out, out
        assert "next: read the incidents themselves (`corescope events`)" in out
