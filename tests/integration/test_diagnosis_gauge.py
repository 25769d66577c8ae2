"""corescope_diagnosis{root_cause} says what `corescope diagnose` says about the same store:
a generated zombie-chain hour, analyzed into a store, read by the exporter's refresh."""

from __future__ import annotations

import json
from pathlib import Path

from corescope.metrics.agent import diagnosis_gauge
from corescope.runner import Runner
from support import run_cli, run_cli_json


def test_gauge_names_the_diagnosed_root_cause(tmp_path: Path) -> None:
    scen, store = tmp_path / "zc", tmp_path / "store"
    run_cli("lab", "scenario", "--kind", "zombie_chain", "--seed", "2", "--cpus", "8",
            "--duration", "30m", "-o", str(scen), check=True, timeout=300)
    want = json.loads((scen / "expected.json").read_text())
    run_cli_json("analyze", "--store", str(store), str(scen), "--json", timeout=600)
    said = run_cli_json("diagnose", "--store", str(store), "--json")["verdict"]["root_cause"]
    gauge = diagnosis_gauge(store, Runner())
    assert [c for c, v in gauge.items() if v == 1.0] == [said]
    assert said == want["root_cause"] == "zombie_memcg_leak"
    assert sum(gauge.values()) == 1.0 and "healthy" in gauge
