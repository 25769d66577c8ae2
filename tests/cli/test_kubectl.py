"""`kubectl get pods` (table, `-A`, `-o wide`) and `kubectl get pods -o json` as restart
evidence (fixtures: tests/fixtures/zombies/README.md says how each was made)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis.zombies import rank_suspects, restart_rates
from corescope.sources.artifacts import units
from corescope.sources.artifacts.content import sniff
from corescope.sources.kubectl import duration_s, parse_kubectl_json, parse_kubectl_table
from support import FIXTURES, run_cli_json

TOOLS = FIXTURES / "zombies" / "tools"
AGENT_UID = "7c4b5a3e-1f2d-4b8c-a9e6-5d3c2b1a0f98"


@pytest.mark.parametrize("name", ["kubectl_pods_all.txt", "kubectl_pods_wide.txt"])
def test_table_one_record_per_pod(name: str) -> None:
    data = (TOOLS / name).read_bytes()
    assert sniff(data) == "kubectl_pods"
    p = units.parse(data, "kubectl_pods", name)
    assert not p.diagnostics and p.undated
    got = {r.name: (r.kind, r.restarts, r.state) for r in p.restarts}
    assert got == {"kube-system/coredns-5d78c9869d-8xk2p": ("pod", 0, "Running"),
                   "monitoring/datadog-agent-x7f2k": ("pod", 1370, "CrashLoopBackOff"),
                   "default/trainer-0": ("pod", 2, "Running")}
    agent = next(r for r in p.restarts if r.name.startswith("monitoring/"))
    assert agent.detail["last_restart_ago"] == "2m59s" and agent.detail["ready"] == "1/2"
    if "wide" in name:
        assert agent.detail["node"] == "ip-10-0-12-34.ec2.internal"


def test_table_of_one_namespace() -> None:
    recs, diags = parse_kubectl_table((TOOLS / "kubectl_pods_ns.txt").read_text())
    assert not diags
    assert [(r.name, r.restarts) for r in recs] == [("datadog-agent-x7f2k", 1370)]


def test_json_one_record_per_container() -> None:
    data = (TOOLS / "kubectl_pods.json").read_bytes()
    assert sniff(data) == "kubectl_json"
    p = units.parse(data, "kubectl_json", "k.json")
    assert not p.diagnostics
    by = {r.name: r for r in p.restarts}
    assert set(by) == {"kube-system/coredns-5d78c9869d-8xk2p/coredns",
                       "monitoring/datadog-agent-x7f2k/init-config",
                       "monitoring/datadog-agent-x7f2k/agent",
                       "monitoring/datadog-agent-x7f2k/process-agent",
                       "default/trainer-0/trainer"}
    agent = by["monitoring/datadog-agent-x7f2k/agent"]
    assert (agent.kind, agent.restarts, agent.state) == ("container", 1370, "CrashLoopBackOff")
    assert agent.cgroup == f"pod{AGENT_UID}"  # the key its cgroups' churn is matched by
    assert agent.detail["ids"] == [
        "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d"]
    assert agent.detail["reason"] == "Error" and agent.detail["exitCode"] == 1
    trainer = by["default/trainer-0/trainer"]
    assert (trainer.state, trainer.detail["reason"]) == ("running", "OOMKilled")
    assert by["monitoring/datadog-agent-x7f2k/init-config"].state == "Completed"


def test_a_single_pod_and_pods_of_several_nodes() -> None:
    doc = json.loads((TOOLS / "kubectl_pods.json").read_text())
    recs, diags = parse_kubectl_json(json.dumps(doc["items"][2]))
    assert [r.name for r in recs] == ["default/trainer-0/trainer"] and not diags
    doc["items"][0]["spec"]["nodeName"] = "ip-10-0-99-1.ec2.internal"
    recs, diags = parse_kubectl_json(json.dumps(doc))
    assert len(recs) == 5
    assert diags[0].message.startswith("pods of 2 nodes: all are read")


def test_the_crash_looping_container_is_the_top_suspect() -> None:
    recs, _ = parse_kubectl_json((TOOLS / "kubectl_pods.json").read_text())
    rates = restart_rates(recs, uptime_s=6 * 86400.0)
    top = rank_suspects(None, [], rates)[0]
    assert top.name == "monitoring/datadog-agent-x7f2k/agent"
    assert top.evidence["state"] == "CrashLoopBackOff"
    # a looping state weighs more than the same restarts in a steady one
    steady = [r for r in rates if r.name != top.name]
    assert all(s.score < top.score for s in rank_suspects(None, [], rates)[1:])
    assert steady


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(0, 700), junk=st.text(max_size=30))
def test_parsers_are_total(cut: int, junk: str) -> None:
    for name, parse in (("kubectl_pods_wide.txt", parse_kubectl_table),
                        ("kubectl_pods.json", parse_kubectl_json)):
        text = (TOOLS / name).read_text()
        recs, _ = parse(text[:cut] + junk + text[cut:])
        assert all(r.restarts is None or r.restarts >= 0 for r in recs)


@pytest.mark.parametrize(("text", "seconds"), [
    ("45s", 45), ("2m59s", 179), ("12m", 720), ("3h4m", 11040), ("5d22h", 511200),
    ("12d", 1036800), ("3y", 94608000), ("<invalid>", None), ("", None), ("5x", None)])
def test_age(text: str, seconds: float | None) -> None:
    assert duration_s(text) == seconds


def test_restart_rate_counts_from_the_pods_start() -> None:
    """Without a second snapshot, a pod's restarts are counted over its own age (AGE, or
    startTime in the JSON), not the node's uptime: 1370 over 6 days is a crash loop."""
    table, _ = parse_kubectl_table((TOOLS / "kubectl_pods_all.txt").read_text())
    agent = next(r for r in restart_rates(table, uptime_s=None) if r.restarts == 1370)
    assert agent.basis == "since-start"
    assert agent.per_hour == pytest.approx(1370 / 144)
    js, _ = parse_kubectl_json((TOOLS / "kubectl_pods.json").read_text())
    placed = [replace(r, t=datetime(2026, 11, 30, 15, 30, tzinfo=UTC).timestamp()) for r in js]
    agent = next(r for r in restart_rates(placed, uptime_s=3600.0) if r.restarts == 1370)
    assert agent.basis == "since-start"
    assert agent.per_hour == pytest.approx(1370 / ((6 * 86400 + 27 * 60 + 49) / 3600))


def test_analyze_names_the_crash_looping_container(tmp_path: Path) -> None:
    doc = run_cli_json("analyze", "--store", str(tmp_path / "s"), "--json",
                       str(TOOLS / "kubectl_pods.json"),
                       str(FIXTURES / "artifacts" / "census_loop.txt"))
    verdict = doc["investigation"]["diagnosis"]["verdict"]
    assert verdict["culprit"] == "monitoring/datadog-agent-x7f2k/agent"
