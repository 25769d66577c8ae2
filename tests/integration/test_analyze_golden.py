"""The whole pipeline, pinned: a generated 96-CPU zombie-chain hour (`lab scenario`, seed 1:
mpstat JSON, dmesg, perf script chunks, the census loop, /proc/interrupts, systemctl and
crictl dumps), analyzed, must give exactly tests/fixtures/golden/analyze_zombie_chain_seed1.json.

Any change in parsing, import, analysis, diagnosis or the JSON contract shows up here. When
a change is intended, regenerate with `CORESCOPE_REGEN_GOLDEN=1 pytest
tests/integration/test_analyze_golden.py`, and read the diff before committing it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from support import FIXTURES, run_cli, run_cli_json

GOLDEN = FIXTURES / "golden" / "analyze_zombie_chain_seed1.json"


def normalize(data: Any, root: str) -> Any:
    """Where the files and the temporary store lived, and how old the ring looked when the
    test ran, are not answers."""
    if isinstance(data, dict):
        out = {k: normalize(v, root) for k, v in data.items()}
        if "sensors" in out and isinstance(out["sensors"], dict):
            out["sensors"] = {k: v.get("ok") if isinstance(v, dict) else v
                              for k, v in out["sensors"].items()}
        return out
    if isinstance(data, list):
        return [normalize(v, root) for v in data]
    if isinstance(data, str):
        return data.replace(root, "<DIR>")
    return data


def test_analyze_of_a_generated_hour_matches_the_golden_file(tmp_path: Path) -> None:
    scen = tmp_path / "zc"
    run_cli("lab", "scenario", "--kind", "zombie_chain", "--seed", "1", "-o", str(scen),
            check=True, timeout=300)
    got = normalize(run_cli_json("analyze", str(scen), "--json", timeout=600), str(scen))
    if os.environ.get("CORESCOPE_REGEN_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert got["investigation"]["diagnosis"]["verdict"] == \
        want["investigation"]["diagnosis"]["verdict"]
    for key in ("cores", "events", "report", "zombies", "profiles", "findings", "diagnosis"):
        assert got["investigation"][key] == want["investigation"][key], key
    assert got == want
