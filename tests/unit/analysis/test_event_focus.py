"""The investigation's event budget (analysis.event_focus): every incident line and the lines
printed with it are held, the window's first quiet lines too, and the rest only counted, so
`analyze` of a log of millions of chatter lines does not hold them all (issue 23, item 4).
What the diagnosis says must not change; `events` still lists every line."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from corescope.analysis.event_focus import EventBudget, focus
from corescope.evidence.memory import MemoryEvidence
from corescope.evidence.open import log_evidence
from corescope.evidence.store import StoreEvidence
from corescope.investigate.build import Options, investigate
from corescope.investigate.model import Window
from corescope.model.events import KernelEvent
from corescope.render.json_contract import events_json, report_json
from corescope.runner import Runner
from corescope.store import events as store_events
from corescope.store.db import Store
from corescope.views.cli import cli
from support.big_dmesg import write_big_dmesg

T0 = 1_800_000_000.0


def _chatter(t: float, i: int) -> KernelEvent:
    kind = "link_up" if i % 3 == 0 else "other"
    return KernelEvent(time=t, kind=kind, raw=f"line {i}", source="dmesg")


def _log(n: int, incidents_at: dict[int, str]) -> list[KernelEvent]:
    """n lines 0.1 s apart; line i is an incident of the given kind where named."""
    return [KernelEvent(time=T0 + i * 0.1, kind=incidents_at[i], raw=f"incident {i}")
            if i in incidents_at else _chatter(T0 + i * 0.1, i) for i in range(n)]


def test_incidents_their_neighbours_and_the_first_quiet_lines_are_held() -> None:
    evs = _log(1000, {500: "nic_reset", 900: "oom_kill"})
    got = focus(evs, EventBudget(quiet=100, near_s=1.0, near_max=50))
    raws = [e.raw for e in got.events]
    assert raws[:100] == [f"line {i}" for i in range(100)]  # the window's first lines
    # within 1 s (10 lines) before and after each incident, and the incident itself
    assert raws[100:121] == [*(f"line {i}" for i in range(490, 500)), "incident 500",
                             *(f"line {i}" for i in range(501, 511))]
    assert raws[121:] == [*(f"line {i}" for i in range(890, 900)), "incident 900",
                          *(f"line {i}" for i in range(901, 911))]
    assert [e.time for e in got.events] == sorted(e.time for e in got.events)
    held = Counter(e.kind for e in got.events)
    assert held + Counter(got.omitted) == Counter(e.kind for e in evs)  # nothing uncounted
    assert got.omitted["other"] > 0 and got.omitted["link_up"] > 0


def test_many_lines_at_one_incident_are_capped_on_each_side() -> None:
    evs = [KernelEvent(time=T0, kind="other", raw=f"task {i}") for i in range(300)]
    evs.append(KernelEvent(time=T0, kind="oom_kill", raw="Killed process"))
    evs += [KernelEvent(time=T0, kind="other", raw=f"after {i}") for i in range(300)]
    got = focus(evs, EventBudget(quiet=0, near_s=1.0, near_max=40))
    assert [e.raw for e in got.events] == [*(f"task {i}" for i in range(260, 300)),
                                           "Killed process", *(f"after {i}" for i in range(40))]
    assert got.omitted == {"other": 520}


def test_no_budget_holds_every_line() -> None:
    evs = _log(500, {})
    assert focus(evs, None).events == evs and not focus(evs, None).omitted


def test_the_store_reads_the_same_lines_row_by_row(tmp_path: Path) -> None:
    evs = _log(3000, {1200: "nic_tx_stall", 1201: "nic_reset", 2500: "soft_lockup"})
    budget = EventBudget(quiet=300, near_s=2.0, near_max=100)
    with Store.open(tmp_path / "s", create=True) as st:
        store_events.insert_events(st, evs)
        got = store_events.read_focused(st, T0, T0 + 1000, budget)
    want = focus(evs, budget)
    assert [(e.time, e.kind, e.raw) for e in got.events] == \
        [(e.time, e.kind, e.raw) for e in want.events]
    assert got.omitted == want.omitted


def test_the_diagnosis_of_a_big_log_is_the_same_with_and_without_the_budget(
        tmp_path: Path) -> None:
    """A generated node log (chatter, OOM reports with their memcg lines, ENA stalls and
    resets) far past the quiet quota: the budget holds a fraction of the lines and the
    incidents, findings and diagnosis are unchanged; the JSON counts what it left out."""
    log = tmp_path / "dmesg.txt"
    made = write_big_dmesg(log, 4_000_000, seed=3)
    ev = log_evidence(log).evidence
    cov = ev.coverage()
    assert cov.events is not None
    window = Window(cov.events.start, cov.events.end)
    budget = EventBudget(quiet=2_000)
    small = investigate(ev, window, Options(event_budget=budget))
    whole = investigate(ev, window, Options(event_budget=None))
    assert any(e.kind == "oom_kill" for e in whole.events)  # the diagnosis has OOMs to read
    assert len(small.events) < len(whole.events) // 3
    assert len(small.events) + sum(small.events_omitted.values()) == made["lines"]
    assert report_json(small) == report_json(whole)
    assert [f.kind for f in small.findings] == [f.kind for f in whole.findings]
    listed = events_json(small)
    assert sum(listed["omitted"].values()) == len(whole.events) - len(small.events)
    status = next(s for s in small.statuses if s.name == "events")
    assert status.detail.startswith(f"{made['lines']} kernel events in the window")


def test_events_lists_every_line_past_the_budget(tmp_path: Path) -> None:
    evs = _log(60_000, {30_000: "nic_reset"})
    st = tmp_path / "store"
    with Store.open(st, create=True) as s:
        store_events.insert_events(s, evs)
    res = CliRunner().invoke(cli, ["--store", str(st), "events", "--all", "--since",
                                   str(T0 - 1), "--until", str(T0 + 7000), "--json"])
    assert res.exit_code == 1, res.output[-500:]  # the reset is shown
    assert res.output.count('"raw"') == 60_000
    inv = investigate(StoreEvidence(Store.open(st), Runner()), Window(T0 - 1, T0 + 7000))
    assert len(inv.events) < 60_000 and sum(inv.events_omitted.values()) > 0
    assert len(MemoryEvidence(kernel_events=evs).focused_events(T0, T0 + 7000, None).events) \
        == 60_000
