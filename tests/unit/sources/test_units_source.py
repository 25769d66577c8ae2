"""Restart evidence parsers on real-format output, and the collector's degradation."""

from __future__ import annotations

import json
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.rootfs import Root
from corescope.runner import RecordedRunner, RunResult
from corescope.sources import units
from support import FIXTURES

T = FIXTURES / "zombies" / "tools"


def test_systemctl_show_blocks() -> None:
    recs, diags = units.parse_systemctl_show((T / "systemctl_show.txt").read_text(), t=5.0)
    assert not diags
    by = {r.name: r for r in recs}
    assert set(by) == {"ecs.service", "containerd.service", "kubelet.service",
                       "systemd-tmpfiles-clean.service", "ssh.service"}
    ecs = by["ecs.service"]
    assert (ecs.restarts, ecs.state, ecs.cgroup, ecs.kind, ecs.t) == (
        1375, "auto-restart", "/system.slice/ecs.service", "systemd-unit", 5.0)
    assert ecs.detail == {"ActiveState": "activating", "Result": "exit-code",
                          "Restart": "on-failure"}
    assert by["systemd-tmpfiles-clean.service"].cgroup is None


def test_systemctl_show_without_blank_lines_and_bad_lines() -> None:
    text = "Id=a.service\nNRestarts=3\nId=b.service\nNRestarts=x\ngarbage\n"
    recs, diags = units.parse_systemctl_show(text)
    assert [(r.name, r.restarts) for r in recs] == [("a.service", 3), ("b.service", None)]
    assert len(diags) == 2


def test_journal_restart_entries() -> None:
    entries, diags = units.parse_journal_restarts((T / "journal_restarts.json").read_text())
    assert not diags
    ecs = [e for e in entries if e.unit == "ecs.service"]
    assert [e.n_restarts for e in ecs] == [1370, 1371, 1372, 1373, 1374, 1375]
    assert ecs[0].t == 1700000000.0 and abs(ecs[1].t - ecs[0].t - 10.2) < 1e-6
    assert [e.unit for e in entries if e.unit != "ecs.service"] == ["pipewire.service"]


def test_journal_field_variants() -> None:
    lines = [
        # binary-safe field as a byte array, counter only in the message
        json.dumps({"MESSAGE_ID": units.RESTART_MESSAGE_ID, "UNIT": list(b"x.service"),
                    "MESSAGE": "x.service: Scheduled restart job, restart counter is at 7.",
                    "__REALTIME_TIMESTAMP": "2000000"}),
        "not json", "[1,2]",
        json.dumps({"MESSAGE_ID": units.RESTART_MESSAGE_ID}),
    ]
    entries, diags = units.parse_journal_restarts("\n".join(lines))
    assert [(e.unit, e.n_restarts, e.t) for e in entries] == [("x.service", 7, 2.0)]
    # "not json"; "[1,2]" is read as a JSON array of two entries, neither an object; no UNIT
    assert len(diags) == 4


def test_crictl_attempts_and_annotation() -> None:
    recs, diags = units.parse_crictl_ps((T / "crictl_ps.json").read_text(), t=1.0)
    assert not diags
    by = {r.name: r for r in recs}
    agent = by["kube-system/ecs-agent-x7k2p/ecs-agent"]
    assert agent.restarts == 212 and agent.state == "CONTAINER_EXITED"
    assert agent.detail["instances"] == 2 and agent.detail["exited_instances"] == 2
    assert agent.detail[units.RESTART_ANNOTATION] == 212 and agent.detail["attempt"] == 212
    assert agent.cgroup == "pod1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d"
    assert by["ml/ray-job-0-worker-abcde/ray-worker"].restarts == 0


def test_crictl_annotation_beats_attempt_and_bad_docs() -> None:
    doc = {"containers": [{"metadata": {"name": "c", "attempt": 1},
                           "annotations": {units.RESTART_ANNOTATION: "9"}}, "junk", {}]}
    recs, diags = units.parse_crictl_ps(json.dumps(doc))
    assert [(r.name, r.restarts) for r in recs] == [("c", 9)]
    assert len(diags) == 2
    assert units.parse_crictl_ps("{")[0] == [] and units.parse_crictl_ps("[]")[1]


def test_docker_ps_json_lines_and_table_agree() -> None:
    a, da = units.parse_docker_ps((T / "docker_ps.jsonl").read_text())
    b, db = units.parse_docker_ps((T / "docker_ps.txt").read_text())
    assert not da and not db
    assert [(r.name, r.state, r.exit_code) for r in a] == [
        ("ecs-agent", "restarting", 1), ("web", "running", None), ("oneshot", "exited", 3)]
    assert [(r.name, r.state, r.exit_code, r.image) for r in b] == [
        (r.name, r.state, r.exit_code, r.image) for r in a]
    assert b[0].id == "3f4e5d6c7b8a" and a[0].id.startswith(b[0].id)


def test_docker_inspect_restart_count() -> None:
    recs, diags = units.parse_docker_inspect((T / "docker_inspect.json").read_text())
    assert not diags
    assert [(r.name, r.restarts, r.state) for r in recs] == [
        ("ecs-agent", 68680, "restarting"), ("web", 0, "running")]
    assert recs[0].detail["restart_policy"] == "always"


def test_collect_without_systemd_or_runtimes_says_so() -> None:
    root = Root(FIXTURES / "zombies" / "hybrid")  # PID 1 is process_api
    ev = units.collect(root, RecordedRunner({}))
    by = {s.name: s for s in ev.statuses}
    assert not by["systemd"].ok and "PID 1 is process_api" in by["systemd"].detail
    assert not by["crictl"].ok and "crictl not found" in by["crictl"].detail
    assert not by["docker"].ok and "docker not found" in by["docker"].detail
    assert ev.records == []


@pytest.fixture
def no_docker_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A client environment naming no engine: no DOCKER_HOST/DOCKER_CONTEXT, no config."""
    for var in ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


class _Counting(RecordedRunner):
    def __init__(self, outputs: dict) -> None:
        super().__init__(outputs)
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv, timeout: float = 30.0) -> RunResult:  # type: ignore[no-untyped-def]
        self.calls.append(tuple(argv))
        return super().run(argv, timeout)


DOCKER_OUT = {("docker", "ps"): (T / "docker_ps.jsonl").read_text(),
              ("docker", "inspect"): (T / "docker_inspect.json").read_text()}


def test_docker_is_not_spawned_without_an_engine_to_reach(no_docker_env: Path) -> None:
    # the fixture tree has no /var/run/docker.sock: the installed client could only fail
    runner = _Counting(DOCKER_OUT)
    ev = units.collect(Root(FIXTURES / "zombies" / "hybrid"), runner)
    st = {s.name: s for s in ev.statuses}["docker"]
    assert not st.ok and "/var/run/docker.sock does not exist" in st.detail
    assert "restarts not measured" in st.detail
    assert not [c for c in runner.calls if c[0] == "docker"]


@pytest.fixture
def root_with_docker_socket() -> Iterator[Path]:
    # a real listening unix socket (paths over 107 bytes cannot be bound: a short temp dir)
    with tempfile.TemporaryDirectory(prefix="cs-") as d:
        (Path(d) / "var" / "run").mkdir(parents=True)
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(Path(d) / "var" / "run" / "docker.sock"))
        try:
            yield Path(d)
        finally:
            s.close()


def test_docker_is_asked_when_its_socket_exists(no_docker_env: Path,
                                                root_with_docker_socket: Path) -> None:
    runner = _Counting(DOCKER_OUT)
    ev = units.collect(Root(root_with_docker_socket), runner, now=1700000100.0)
    assert {s.name: s for s in ev.statuses}["docker"].ok
    assert ("docker", "ps") in {c[:2] for c in runner.calls}
    assert "ecs-agent" in {r.name for r in ev.records}


@pytest.mark.parametrize("how", ["DOCKER_HOST", "DOCKER_CONTEXT", "config", "bad config"])
def test_docker_is_asked_when_the_client_is_pointed_elsewhere(
        how: str, no_docker_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "DOCKER_HOST":
        monkeypatch.setenv("DOCKER_HOST", "tcp://10.0.0.5:2376")
    elif how == "DOCKER_CONTEXT":
        monkeypatch.setenv("DOCKER_CONTEXT", "rootless")
    else:
        (no_docker_env / ".docker").mkdir(parents=True)
        (no_docker_env / ".docker" / "config.json").write_text(
            '{"currentContext": "rootless"}' if how == "config" else "{not json")
    runner = _Counting(DOCKER_OUT)
    units.collect(Root(FIXTURES / "zombies" / "hybrid"), runner)
    assert ("docker", "ps") in {c[:2] for c in runner.calls}


def test_a_config_with_the_default_context_names_no_other_engine(no_docker_env: Path) -> None:
    (no_docker_env / ".docker").mkdir(parents=True)
    (no_docker_env / ".docker" / "config.json").write_text(
        '{"auths": {}, "currentContext": "default"}')
    assert units.docker_engine_missing(Root(FIXTURES / "zombies" / "hybrid")) is not None


def test_collect_with_systemd_and_crictl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/user/1000/docker.sock")  # rootless: down
    root = Root(FIXTURES / "zombies" / "v2nested")  # PID 1 is systemd
    runner = RecordedRunner({
        ("systemctl", "show"): (T / "systemctl_show.txt").read_text(),
        ("journalctl",): (T / "journal_restarts.json").read_text(),
        ("crictl", "ps"): (T / "crictl_ps.json").read_text(),
        ("docker", "ps"): RunResult(("docker",), 1, "", "Cannot connect to the Docker daemon"),
    })
    ev = units.collect(root, runner, now=1700000100.0)
    by = {s.name: s for s in ev.statuses}
    assert by["systemd"].ok and "7 journal restart entries" in by["systemd"].detail
    assert by["crictl"].ok
    assert not by["docker"].ok and "Cannot connect" in by["docker"].detail
    names = {r.name for r in ev.records}
    assert "ecs.service" in names and "kube-system/ecs-agent-x7k2p/ecs-agent" in names


# --- properties -------------------------------------------------------------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
        st.sampled_from(["containers", "metadata", "name", "attempt", "labels",
                         "annotations", units.RESTART_ANNOTATION, "state", "createdAt", "Id",
                         "Name", "RestartCount", "State", "HostConfig", "MESSAGE_ID", "UNIT",
                         "N_RESTARTS", "__REALTIME_TIMESTAMP", "ID", "Status", "Names"]),
        kids, max_size=6),
    max_leaves=25)
TEXT = st.one_of(
    st.text(max_size=500), st.binary(max_size=300),
    JSONISH.map(json.dumps),
    st.lists(JSONISH.map(json.dumps), max_size=5).map("\n".join),
    st.lists(st.sampled_from(["Id=x.service", "NRestarts=4", "SubState=auto-restart", "",
                              "=", "a b=c", "CONTAINER ID   IMAGE   COMMAND   CREATED   "
                              "STATUS   PORTS   NAMES", "abc   img   cmd   now   Up   p   n"]),
             max_size=12).map("\n".join),
)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_unit_parsers_never_raise(text: str | bytes) -> None:
    for recs, _ in (units.parse_systemctl_show(text), units.parse_crictl_ps(text),
                    units.parse_docker_inspect(text)):
        assert all(r.restarts is None or r.restarts >= 0 for r in recs)
    units.parse_journal_restarts(text)
    units.parse_docker_ps(text)
