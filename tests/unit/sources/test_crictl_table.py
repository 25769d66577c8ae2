"""`crictl ps -a` as its table (tests/fixtures/zombies/tools/crictl_ps_table*.txt, rendered
from crictl_ps.json by crictl_table.py there as cri-tools prints it: no container runtime
where they were made) gives the restart records its `-o json` gives, from what it shows."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.sources import units
from corescope.sources.artifacts import units as art_units
from corescope.sources.artifacts.content import sniff
from support import FIXTURES

T = FIXTURES / "zombies" / "tools"


def _records(name: str):  # type: ignore[no-untyped-def]
    data = (T / name).read_bytes()
    assert sniff(data) == "crictl_table", name
    p = art_units.parse(data, "crictl_table", name)
    assert p.undated and not p.diagnostics
    return p.restarts


def test_table_gives_the_json_records() -> None:
    ref, _ = units.parse_crictl_ps((T / "crictl_ps.json").read_text())
    got = _records("crictl_ps_table.txt")
    assert [(r.name, r.restarts, r.state, r.kind) for r in got] == [
        (r.name, r.restarts, r.state, r.kind) for r in ref]
    assert [(r.detail["instances"], r.detail["exited_instances"]) for r in got] == [
        (r.detail["instances"], r.detail["exited_instances"]) for r in ref]
    # the ecs-agent restarted 212 times (ATTEMPT), exited now: a crash loop's evidence
    assert (got[0].name, got[0].restarts, got[0].state) == (
        "kube-system/ecs-agent-x7k2p/ecs-agent", 212, "CONTAINER_EXITED")


def test_old_columns_without_pod_or_namespace() -> None:
    got = _records("crictl_ps_table_old.txt")
    assert [(r.name, r.restarts, r.state) for r in got] == [
        ("ecs-agent", 212, "CONTAINER_EXITED"), ("ray-worker", 0, "CONTAINER_RUNNING")]


def test_not_taken_for_docker_and_docker_not_for_crictl() -> None:
    assert sniff((T / "crictl_ps_table_old.txt").read_bytes()) == "crictl_table"
    assert sniff((T / "docker_ps.txt").read_bytes()) == "docker_ps"


def test_unreadable_rows_are_said() -> None:
    text = (T / "crictl_ps_table.txt").read_text().splitlines()
    bad = "\n".join([text[0], "7d3f0a1b2c3d4       x", *text[1:]]) + "\n"
    recs, diags = units.parse_crictl_table(bad)
    assert len(recs) == 2 and len(diags) == 1 and "unreadable row" in diags[0].message
    assert units.parse_crictl_table("hello\n")[1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab 0123\tExitd\u8fd0\n"), max_size=60),
                max_size=6))
def test_garbage_rows_never_raise(rows: list[str]) -> None:
    head = (T / "crictl_ps_table.txt").read_text().splitlines()[0]
    recs, _ = units.parse_crictl_table("\n".join([head, *rows]))
    assert all(r.name for r in recs)
