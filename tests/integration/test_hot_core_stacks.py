"""The hot core's stacks are shown even when no incident followed the saturation: a kernel
log without times (`dmesg -t`: the resets cannot be placed), or a perf script saved alone.
They used to feed the diagnosis only; now `analyze`, `doctor` and `report` (JSON and text)
show them, with the memcg walker, as they show the stacks before an incident."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import run_cli, run_cli_json


@pytest.fixture(scope="module")
def untimed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """A zombie chain whose kernel log has no times, analyzed into a kept store."""
    tmp = tmp_path_factory.mktemp("untimed")
    scen, store = tmp / "scenario", tmp / "store"
    run_cli("lab", "scenario", "--kind", "zombie_chain", "--seed", "54", "--cpus", "16",
            "--omit", "dmesg_time", "--duration", "20m", "-o", str(scen), check=True,
            timeout=300)
    run_cli("--store", str(store), "analyze", str(scen), timeout=600, check=False)
    return scen, store, json.loads((scen / "expected.json").read_text())


def _episode_profiles(profiles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in profiles if p["basis"] == "episode"]


def _check_hot_core(p: dict[str, Any], want: dict[str, Any]) -> None:
    assert p["cpu"] == want["hot_cpu"] and p["event_id"] is None, p
    assert p["walker"]["comm"] == want["walker"]["comm"], p["walker"]
    assert p["walker"]["function"] in want["walker_family"], p["walker"]
    assert p["walker"]["share"] >= 0.5
    top = p["top_stacks"][0]
    assert top["comm"] == want["walker"]["comm"] and top["frames"][0]["kernel"] is True
    assert top["samples"] > 0 and 0 < top["pct"] <= 100
    assert p["top_processes"][0]["comm"] == want["walker"]["comm"]


def test_analyze_json_and_text_show_stacks_without_an_incident(
        untimed: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    scen, _store, want = untimed
    d = run_cli_json("--store", str(tmp_path / "s"), "analyze", str(scen), "--json",
                     timeout=600)
    inv = d["investigation"]
    assert inv["report"]["incidents"] == []
    eps = _episode_profiles(inv["profiles"])
    assert eps, inv["profiles"]
    _check_hot_core(eps[0], want)
    text = run_cli("analyze", str(scen), timeout=600).stdout
    assert f"cpu{want['hot_cpu']} saturated" in text and "(no incident after it)" in text
    assert f"memcg walker: {want['walker']['comm']} in " in text
    assert "top stack (" in text


@pytest.mark.parametrize("command", ["doctor", "report"])
def test_doctor_and_report_show_the_hot_cores_stacks(
        untimed: tuple[Path, Path, dict[str, Any]], command: str) -> None:
    _scen, store, want = untimed
    d = run_cli_json("--store", str(store), command, "--json", timeout=600)
    _check_hot_core(_episode_profiles(d["profiles"])[0], want)
    text = run_cli("--store", str(store), command, timeout=600).stdout
    assert "hot-core stacks:" in text, text
    assert f"memcg walker: {want['walker']['comm']} in " in text, text


def test_a_perf_script_alone_names_the_core_busiest_in_the_kernel(
        untimed: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    """No per-core record, no kernel log: the stacks are the only witness. The CPU with
    the most kernel-mode samples is shown, with its walker."""
    scen, _store, want = untimed
    only = tmp_path / "perf-only"
    shutil.copytree(scen / "perf", only / "perf")
    d = run_cli_json("analyze", str(only), "--json", timeout=600)
    profiles = d["investigation"]["profiles"]
    assert [p["basis"] for p in profiles] == ["stacks"], profiles
    p = profiles[0]
    assert p["cpu"] == want["hot_cpu"] and p["event_id"] is None
    assert p["walker"]["comm"] == want["walker"]["comm"]
    text = run_cli("analyze", str(only), timeout=600).stdout
    assert f"cpu{want['hot_cpu']} busiest in the kernel" in text
