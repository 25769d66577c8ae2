"""Real dying memory cgroups on the real kernel: the lab makes them, the census counts them
the way the article's two commands do, `lab clean` frees them, and a crash-looping agent
beside `record` is named as the leak.

Counts drift by a few (the machine's own cgroups come and go): numbers are compared when
read at the same moment, with small tolerances measured from that drift."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corescope.lab.zombies import FILES
from corescope.model.cgroups import LAB_NAME
from corescope.rootfs import Root
from corescope.sources.cgroups import read_layout
from live.conftest import MACHINE, QUIET
from support import popen_cli, run_cli, run_cli_json
from support.jsonschemas import check

# They count every memory cgroup the kernel holds against a baseline taken moments before:
# run alone (scripts/run_tests.sh's first stage), since file IO from the suite running beside
# the other live tests kept two more dying memcgs pinned in one run (27 against a bound of 26)
pytestmark = [MACHINE, QUIET]


def _memory_mount() -> Path:
    layout, _ = read_layout(Root())
    if layout.memory != "v1" or layout.memory_mount is None:
        pytest.skip(f"needs the memory controller on cgroup v1 (layout {layout.kind}, memory "
                    f"on {layout.memory})")
    return Path(layout.memory_mount)


def proc_count() -> int:
    """`cat /proc/cgroups | grep memory | awk '{print $3}'`."""
    for line in Path("/proc/cgroups").read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == "memory":
            return int(parts[2])
    raise AssertionError("no memory row in /proc/cgroups")


def find_count(mount: Path) -> int:
    """`find <mount> -type d | wc -l`."""
    out = subprocess.run(["find", str(mount), "-type", "d"], capture_output=True, text=True,
                         check=True).stdout
    return len(out.splitlines())


def census(tmp: Path) -> dict[str, Any]:
    out = run_cli_json("zombies", "--json", "--store", str(tmp / "no-store"))
    return out["memory"]


def _clean() -> None:
    run_cli("lab", "clean", "--yes", "--drop-caches", timeout=60)


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Path]:
    mount = _memory_mount()
    try:
        yield mount
    finally:
        _clean()
        assert not (mount / LAB_NAME).exists(), "lab cgroups left behind"
        assert not (FILES / "zombies").exists() and not (FILES / "agent").exists()


def test_lab_zombies_raise_dying_and_census_matches_manual_commands(
        lab: Path, tmp_path: Path) -> None:
    b1 = census(tmp_path)
    b2 = census(tmp_path)
    drift = abs(b2["dying"] - b1["dying"])  # what the machine does on its own meanwhile
    run_cli("lab", "zombies", "--count", "500", "--yes", check=True, timeout=120)
    p1, f1 = proc_count(), find_count(lab)
    after = census(tmp_path)
    p2, f2 = proc_count(), find_count(lab)
    # the census equals the article's two commands read around it
    assert min(p1, p2) - 2 <= after["kernel_count"] <= max(p1, p2) + 2, (p1, p2, after)
    assert min(f1, f2) - 2 <= after["live"] <= max(f1, f2) + 2, (f1, f2, after)
    assert after["dying"] == after["kernel_count"] - after["live"]
    assert after["source"].startswith("/proc/cgroups")
    rise = after["dying"] - b2["dying"]
    assert abs(rise - 500) <= 2 + drift, (b1, b2, after)


def test_lab_clean_returns_to_baseline(lab: Path, tmp_path: Path) -> None:
    base = census(tmp_path)
    run_cli("lab", "zombies", "--count", "400", "--yes", check=True, timeout=120)
    mid = census(tmp_path)
    assert mid["dying"] - base["dying"] >= 390
    assert (lab / LAB_NAME / "zombies").is_dir()
    # deleting the pinning files frees most of them (the rest wait on shared fs metadata)
    res = run_cli_json("lab", "clean", "--yes", "--json", ok_codes=(0,))
    check("lab-clean", res)
    assert res["files_removed"] == 400 and res["cgroups_removed"] == 2
    freed = mid["dying"] - res["dying_after"]
    assert freed >= 0.8 * 400, res
    res = run_cli_json("lab", "clean", "--yes", "--drop-caches", "--json", ok_codes=(0,))
    end = census(tmp_path)
    assert end["kernel_count"] <= base["kernel_count"] * 1.02 + 1, (base, end)
    assert not (lab / LAB_NAME).exists()


def test_crashloop_beside_record_names_the_agent_parent(lab: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    crash = popen_cli("lab", "crashloop", "--interval", "0.2", "--duration", "60", "--yes")
    try:
        time.sleep(1.0)
        assert crash.poll() is None, crash.communicate()
        rec = run_cli("record", "--store", str(store), "--duration", "16",
                      "--census-interval", "2", "--no-profile", "--no-kmsg", timeout=90)
        assert rec.returncode == 0, rec.stderr
        out = run_cli_json("zombies", "--json", "--store", str(store))
    finally:
        crash.terminate()
        crash.communicate(timeout=30)
    assert crash.returncode == 0
    # the agent's cgroups are gone once it stops (its zombies stay until clean)
    agent = lab / LAB_NAME / "agent"
    assert not agent.exists() or not [p for p in agent.iterdir() if p.is_dir()]
    top = out["suspects"][0]
    assert top["name"] == f"/{LAB_NAME}/agent" and top["kind"] == "cgroup-parent", out
    assert top["evidence"]["removed"] >= 20 and top["evidence"]["method"] == "inotify"
    g = out["growth"]
    assert g["method"] == "theil-sen" and g["per_hour"] > 0, g
    assert out["locations"][0]["path"] == f"/{LAB_NAME}/agent"


def test_doctor_reports_zombie_leak_with_advice(lab: Path, tmp_path: Path) -> None:
    run_cli("lab", "zombies", "--count", "1100", "--yes", check=True, timeout=180)
    proc = run_cli("doctor", "--seconds", "1", "--json", "--store", str(tmp_path / "s"))
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    [f] = [f for f in doc["findings"] if f["kind"] == "zombie_memcg_leak"]
    assert f["severity"] == "critical"
    assert f["evidence"]["memory"]["dying"] >= 1100
    assert any("drop_caches" in a for a in f["evidence"]["advice"])
    assert doc["sensors"]["memcg_census"]["ok"]
    assert not doc["sensors"]["systemd"]["ok"]  # no systemd here: said, not hidden


def test_zombies_watch_lines(lab: Path, tmp_path: Path) -> None:
    p = run_cli("zombies", "--watch", "--count", "2", "--interval", "1", "--json",
                "--store", str(tmp_path / "n"), timeout=60)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    assert len(lines) == 2 and all(x["layout"] in ("v1", "hybrid") for x in lines)
    assert lines[1]["memory"]["t"] > lines[0]["memory"]["t"]
