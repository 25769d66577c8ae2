"""Issue-level acceptance for `analyze --store`: a generated 96-CPU zombie-chain hour,
imported once, read by every existing command as if it had been recorded."""

from __future__ import annotations

import json
from pathlib import Path

from corescope.investigate.hypotheses.common import MEMCG_WALK
from support import run_cli, run_cli_json


def test_every_command_reads_an_analyzed_hour(tmp_path: Path) -> None:
    scen, store = tmp_path / "zc", str(tmp_path / "store")
    run_cli("lab", "scenario", "--kind", "zombie_chain", "--seed", "5", "--cpus", "96",
            "-o", str(scen), check=True, timeout=300)
    want = json.loads((scen / "expected.json").read_text())
    hot = want["hot_cpu"]
    run_cli_json("analyze", "--store", store, str(scen), "--json", timeout=600)

    cores = run_cli_json("cores", "--store", store, "--last", "1h", "--json")
    assert {e["cpu"] for e in cores["episodes"]} == {hot}, cores["episodes"]
    assert len(cores["cpus"]) == 96

    events = run_cli_json("events", "--store", store, "--last", "1h", "--json")
    resets = [e for e in events["events"] if e["kind"] == "nic_reset"]
    assert len(resets) == want["events"]["nic_reset"]

    z = run_cli_json("zombies", "--store", store, "--json")
    assert z["memory"]["dying"] == want["dying"]["end"]
    assert z["growth"]["method"] == "theil-sen" and z["growth"]["points"] > 100
    assert z["growth"]["per_hour"] > 0

    rep = run_cli_json("report", "--store", store, "--last", "1h", "--json")
    stalls = [i for i in rep["incidents"] if i["event"]["kind"] == "nic_tx_stall"]
    assert stalls
    for inc in stalls:
        pre = [p for p in inc["preceding_episodes"] if p["cpu"] == hot]
        assert pre and all(p["serves_queue"] is True for p in pre), inc["preceding_episodes"]

    ev_id = stalls[0]["event"]["id"]
    fl = run_cli_json("flame", "--store", store, "--event", str(ev_id), "--before", "2m",
                      "--cpu", str(hot), "--format", "json", timeout=300)
    kernel = [f["name"] for f in fl["top_functions"] if f["kernel"]]
    assert any(MEMCG_WALK.search(n) for n in kernel), fl["top_functions"][:10]

    doc = run_cli("doctor", "--store", store, "--json")
    assert doc.returncode == 1
    d = json.loads(doc.stdout)
    assert d["diagnosis"]["verdict"]["root_cause"] == "zombie_memcg_leak"
    assert d["diagnosis"]["verdict"]["hot_cpu"] == hot


def test_flame_and_heatmap_take_absolute_windows(tmp_path: Path) -> None:
    scen, store = tmp_path / "zc", str(tmp_path / "store")
    run_cli("lab", "scenario", "--kind", "zombie_chain", "--seed", "2", "--cpus", "8",
            "--duration", "20m", "-o", str(scen), check=True, timeout=300)
    want = json.loads((scen / "expected.json").read_text())
    ep = want["episodes"][0]
    run_cli_json("analyze", "--store", store, str(scen), "--json", timeout=600)
    since, until = f"{ep['start']:.3f}", f"{ep['end']:.3f}"
    fl = run_cli_json("flame", "--store", store, "--since", since, "--until", until, "--cpu",
                      str(want["hot_cpu"]), "--format", "json")
    assert fl["window"]["start"] == round(ep["start"], 3) or \
        abs(fl["window"]["start"] - ep["start"]) < 1e-3, fl["window"]
    assert fl["samples"] > 0
    hm = run_cli_json("heatmap", "--store", store, "--since", since, "--until", until,
                      "--cpu", str(want["hot_cpu"]), "--json")
    assert hm["columns"] >= int(ep["end"] - ep["start"])
    bad = run_cli("flame", "--store", store, "--since", until, "--until", since)
    assert bad.returncode == 2 and "before it starts" in bad.stderr
    # --last, as on every other command: the analyzed ring ended long ago, so it counts back
    # from the ring's end; with --until it is the same window as --since/--until
    tail = run_cli_json("flame", "--store", store, "--last", "5m", "--format", "json")
    assert tail["samples"] > 0
    assert abs(tail["window"]["end"] - tail["window"]["start"] - 300) < 1e-3, tail["window"]
    assert tail["window"]["end"] <= want["window"]["end"] + 1, (tail["window"], want["window"])
    same = run_cli_json("flame", "--store", store, "--until", until, "--last",
                        f"{ep['end'] - ep['start']:.3f}s", "--cpu", str(want["hot_cpu"]),
                        "--format", "json")
    assert same["samples"] == fl["samples"], (same["window"], fl["window"])
    hm_last = run_cli_json("heatmap", "--store", store, "--last", "2m", "--json")
    assert hm_last["columns"] >= 100
    both = run_cli("flame", "--store", store, "--since", since, "--last", "5m")
    assert both.returncode == 2 and "not both" in both.stderr
