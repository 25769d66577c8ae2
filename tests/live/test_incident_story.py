"""The whole incident, reproduced on this kernel with every sensor on at once: a crash-looping
agent leaks memcgs, a core is pinned at system time, the NIC driver resets. corescope must tell
the story end to end: doctor names all three, report ties the reset to the hot core, zombies
names the leaking parent, and `flame --event` rewinds to what ran on that core."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from corescope.investigate.hypotheses.common import MEMCG_WALK
from live.conftest import MACHINE, LabChain, lab_chain, profile_chunks, wait_for
from support import popen_cli, run_cli, run_cli_json

pytestmark = MACHINE

BURNER = "corescope-burn"


@pytest.fixture
def story(tmp_path: Path) -> Iterator[LabChain]:
    # a backlog from before the recorder started (the incident's week of leaks), so the
    # count is past the threshold; the crash loop is the leak the recorder watches
    with lab_chain(tmp_path, backlog=1200, quiet_s=8, crash_s=14, burn_s=6, walker="memcg",
                   settle_s=4) as chain:
        yield chain


def test_the_incident_end_to_end(story: LabChain) -> None:
    store = str(story.store)
    since = f"{story.started:.3f}"
    # 1. doctor: the hot core, the reset that followed it, and the leak
    doc = run_cli("doctor", "--store", store, "--seconds", "1", "--since", since, "--json")
    assert doc.returncode == 1, doc.stderr
    findings = json.loads(doc.stdout)["findings"]
    kinds = {f["kind"] for f in findings}
    assert {"hot_core_episode", "event_after_hot_core", "zombie_memcg_leak"} <= kinds, \
        (findings, _cpu1_seen(store, story))
    hot = [f for f in findings if f["kind"] == "hot_core_episode"]
    assert any(f["evidence"]["episode"]["cpu"] == 1 for f in hot)

    # 2. report: the stall came 0-10 s after cpu1 was saturated
    rep = run_cli_json("report", "--store", store, "--since", since, "--json")
    stalls = [i for i in rep["incidents"] if i["event"]["raw"] == story.stall]
    assert len(stalls) == 1, rep
    pre = stalls[-1]["preceding_episodes"]
    assert any(p["cpu"] == 1 and 0 <= p["lead_s"] <= 10 for p in pre), pre

    # 3. zombies: the crash-looping agent's parent is the top suspect, and they grow
    z = run_cli_json("zombies", "--store", store, "--json")
    assert z["suspects"][0]["name"].endswith("/corescope-lab/agent"), z["suspects"][:3]
    assert z["growth"]["per_hour"] > 0

    # 4. flame --event: the seconds before the stall on cpu1 are the burner's
    event_id = stalls[-1]["event"]["id"]
    fl = run_cli_json("flame", "--store", store, "--event", str(event_id), "--before", "8s",
                      "--cpu", "1", "--format", "json", timeout=300)
    assert fl["top_processes"][0]["comm"] == BURNER, fl["top_processes"][:5]

    # 5. diagnose: the chain, named: the leaking parent, cpu1, the burner in a memcg function
    d = run_cli_json("diagnose", "--store", store, "--since", since, "--json", timeout=300)
    v = d["verdict"]
    assert v["root_cause"] == "zombie_memcg_leak", d
    assert v["culprit"].endswith("/corescope-lab/agent"), v
    assert v["hot_cpu"] == 1, v
    assert v["walker"]["comm"] == BURNER and MEMCG_WALK.search(v["walker"]["function"]), v
    steps = [link["step"] for link in d["chain"]]
    assert steps[:4] == ["leaking_source", "dying_memcgs", "walker", "core_saturated"], steps
    assert "reset" in steps
    assert {h["name"]: h["verdict"] for h in d["hypotheses"]}["healthy"] == "ruled_out"


def _cpu1_seen(store: str, story: LabChain) -> dict[str, object]:
    """For a failure message: what the store holds of cpu1 around the burn, as episodes of
    any height (kernel time, and all busy time: the burn may have been shared or stolen)."""
    lo, hi = story.burn_end - 30, story.burn_end + 5
    seen: dict[str, object] = {"burn_end": round(story.burn_end, 3)}
    for mode in ("kernel", "busy", "steal"):
        got = run_cli("cores", "--store", store, "--since", f"{lo:.3f}", "--until", f"{hi:.3f}",
                      "--threshold", "20", "--min-duration", "1s", "--mode", mode, "--json")
        try:
            seen[mode] = [{k: e.get(k) for k in ("start", "end", "peak_pct", "mean_pct",
                                                 "samples")}
                          for e in json.loads(got.stdout)["episodes"] if e.get("cpu") == 1]
        except (ValueError, KeyError):
            seen[mode] = (got.returncode, got.stdout[-300:], got.stderr[-300:])
    return seen


def test_a_plain_hot_core_is_not_a_zombie_leak(tmp_path: Path) -> None:
    """A core pinned in system time reading /dev/zero, with no dying backlog and no NIC
    event: whatever the verdict, it must not accuse the memcgs."""
    store = tmp_path / "store"
    rec = popen_cli("record", "--store", str(store), "--profile-chunk", "10s", "--no-kmsg")
    try:
        time.sleep(4)
        run_cli("lab", "hotcore", "--cpu", "1", "--seconds", "5", "--yes", check=True)
        burn_end = time.time()
        # a finished profile chunk with the burn in it
        assert wait_for(lambda: any(end >= burn_end for _s, end in profile_chunks(store)), 60)
    finally:
        rec.send_signal(signal.SIGINT)
        rec.communicate(timeout=120)
    d = run_cli_json("diagnose", "--store", str(store), "--last", "10m", "--json", timeout=300)
    assert d["verdict"]["root_cause"] != "zombie_memcg_leak", d["verdict"]
    zl = {h["name"]: h for h in d["hypotheses"]}["zombie_memcg_leak"]
    assert zl["verdict"] != "supported", zl
