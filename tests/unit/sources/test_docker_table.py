"""`docker ps` tables with any `--format 'table ...'` columns, read by header name
(tests/fixtures/zombies/tools/docker_ps_table_*.txt, rendered as the Docker CLI renders them
by docker_table.py there: no Docker engine where they were made)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.sources import units
from corescope.sources.artifacts import units as art_units
from corescope.sources.artifacts.content import sniff
from support import FIXTURES

T = FIXTURES / "zombies" / "tools"
REF = [("ecs-agent", "restarting", 1), ("web", "running", None), ("oneshot", "exited", 3)]
TABLES = ["docker_ps_table_custom.txt", "docker_ps_table_names_status.txt",
          "docker_ps_table_size.txt", "docker_ps_table_notrunc.txt",
          "docker_ps_table_minwidth20.txt", "docker_ps.txt"]


def _read(name: str):  # type: ignore[no-untyped-def]
    text = (T / name).read_text()
    assert sniff(text.encode()) == "docker_ps", name
    rows, diags = units.parse_docker_ps(text)
    assert not diags, (name, diags)
    return rows


@pytest.mark.parametrize("name", TABLES)
def test_any_column_set_reads_as_the_json_lines_do(name: str) -> None:
    ref, _ = units.parse_docker_ps((T / "docker_ps.jsonl").read_text())
    rows = _read(name)
    assert [(r.name, r.state, r.exit_code) for r in rows] == REF
    assert [(r.name, r.status) for r in rows] == [(r.name, r.status) for r in ref]
    text = (T / name).read_text()
    for r, j in zip(rows, ref, strict=True):
        if "IMAGE" in text:
            assert r.image == j.image
        if "CONTAINER ID" in text:
            assert r.id in (j.id, j.id[:12])
        else:
            assert r.id == ""  # no made-up id


def test_state_column_without_status() -> None:
    rows = _read("docker_ps_table_state.txt")
    assert [(r.name, r.state, r.status, r.id) for r in rows] == [
        ("ecs-agent", "restarting", "", "3f4e5d6c7b8a"), ("web", "running", "", "a1b2c3d4e5f6"),
        ("oneshot", "exited", "", "0badc0de0011")]


def test_imported_as_restart_records() -> None:
    data = (T / "docker_ps_table_custom.txt").read_bytes()
    p = art_units.parse(data, "docker_ps", "t")
    assert p.undated and not p.diagnostics
    assert [(r.name, r.state, r.detail["exit_code"]) for r in p.restarts] == REF


def test_without_status_or_state_it_says_what_cannot_be_told() -> None:
    text = "NAMES       IMAGE\nweb         nginx:1.25\n"
    assert sniff(text.encode()) == "docker_ps"
    rows, diags = units.parse_docker_ps(text)
    assert [(r.name, r.image, r.state) for r in rows] == [("web", "nginx:1.25", "")]
    assert len(diags) == 1 and "STATUS or STATE" in diags[0].message


def test_wide_characters_are_two_columns() -> None:
    """docker's tabwriter pads by display width: a label of wide characters shifts nothing."""
    text = ("NAMES       LABELS      STATUS\n"
            "web         team=\u8fd0\u7ef4   Up 2 hours\n"  # 9 columns wide, 7 characters
            "oneshot                 Exited (3) 3 hours ago\n")
    rows, diags = units.parse_docker_ps(text)
    assert not diags
    assert [(r.name, r.status) for r in rows] == [("web", "Up 2 hours"),
                                                   ("oneshot", "Exited (3) 3 hours ago")]


@pytest.mark.parametrize("header", ["CONTAINER  IMAGE  CREATED  STATE  NAME  ATTEMPT  POD ID",
                                    "NAME   READY   STATUS   RESTARTS   AGE", "IMAGE   SIZE",
                                    "Linux 6.1 (vm)  12/01/26  _x86_64_  (2 CPU)"])
def test_other_tables_are_not_docker(header: str) -> None:
    assert not units.docker_table_header(header)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("ab \t\u8fd0NAMESTU()0123\n"), max_size=40),
                max_size=6))
def test_garbage_rows_never_raise(rows: list[str]) -> None:
    text = "NAMES       STATUS\n" + "\n".join(rows)
    got, _ = units.parse_docker_ps(text)
    assert all(r.name for r in got)
