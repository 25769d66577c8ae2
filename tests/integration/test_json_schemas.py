"""Every command's --json output, as a user gets it from a generated incident hour analyzed into
a store, matches its schema in docs/json/v1/ (the lab commands that need root are checked in
tests/live). A schema per output, and no output without `"schema"`."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from support import run_cli_json
from support.jsonschemas import SCHEMAS, check, errors


@pytest.fixture(scope="module")
def hour(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict, dict]:
    # the store is analyzed here, not by one of the tests: pytest-xdist may run this module's
    # tests on different workers, each with its own copy of the fixture
    d = tmp_path_factory.mktemp("schemas")
    scen, store = d / "zc", str(d / "store")
    want = run_cli_json("lab", "scenario", "--kind", "zombie_chain", "--seed", "3", "--cpus", "4",
                        "--duration", "10m", "-o", str(scen), "--json", timeout=300)
    analyzed = run_cli_json("--store", store, "analyze", str(scen), "--json", timeout=600)
    return scen, store, want, analyzed


def test_lab_scenario(hour: tuple[Path, str, dict, dict]) -> None:
    scen, _store, want, _analyzed = hour
    check("lab-scenario", want)
    check("lab-scenario", json.loads((scen / "expected.json").read_text()))


def test_every_reporting_command(hour: tuple[Path, str, dict, dict]) -> None:
    _scen, store, _want, analyzed = hour
    outputs = {"analyze": analyzed}
    for name in ("cores", "events", "report", "zombies", "diagnose"):
        outputs[name] = run_cli_json("--store", store, name, "--last", "1h", "--json")
    outputs["doctor"] = run_cli_json("--store", store, "doctor", "--json")
    outputs["flame"] = run_cli_json("--store", store, "flame", "--last", "2m", "--format",
                                    "json", ok_codes=(0,))
    outputs["heatmap"] = run_cli_json("--store", store, "heatmap", "--last", "2m", "--json",
                                      ok_codes=(0,))
    for name, data in outputs.items():
        assert data["schema"] == 1, name
        check(name, data)
    # the diagnosis inside the others is the same object diagnose prints
    for name in ("doctor", "report"):
        check("diagnose", outputs[name]["diagnosis"])
    check("diagnose", outputs["analyze"]["investigation"]["diagnosis"])


def test_inventory_and_fleet_diff(tmp_path: Path) -> None:
    inv = run_cli_json("inventory", "--label", "zone=a", "--json", ok_codes=(0,))
    check("inventory", inv)
    other = {**inv, "node": "other-node", "labels": {"zone": "b"},
             "kernel": {**inv["kernel"], "release": "0.0.0-other"}}
    (tmp_path / "a.json").write_text(json.dumps(inv))
    (tmp_path / "b.json").write_text(json.dumps(other))
    (tmp_path / "junk.json").write_text("{not json")
    diff = run_cli_json("fleet", "diff", str(tmp_path), "--json")
    check("fleet-diff", diff)
    assert diff["differences"] and diff["skipped"]


def test_a_schema_refuses_what_breaks_the_contract(hour: tuple[Path, str, dict, dict]) -> None:
    _scen, store, _want, _analyzed = hour
    cores = run_cli_json("--store", store, "cores", "--last", "1h", "--json")
    assert not errors("cores", {**cores, "added_by_a_newer_version": [1]})  # additions are fine
    for broken in ({k: v for k, v in cores.items() if k != "schema"},
                   {k: v for k, v in cores.items() if k != "episodes"},
                   {**cores, "schema": 2}):
        assert errors("cores", broken)
    if cores["episodes"]:
        bad = copy.deepcopy(cores)
        bad["episodes"][0]["cpu"] = "one"
        assert errors("cores", bad)


def test_every_json_option_has_a_schema() -> None:
    from corescope.views import manual

    with_json = {e.page for e in manual.entries()
                 if any(p.name in ("as_json", "json") for p in e.command.params)
                 or e.path == "flame"}
    have = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    assert with_json <= have, f"--json outputs without a schema: {with_json - have}"
