"""End to end on the real kernel: `record` keeps a perf ring while `lab hotcore --cpu 1`
burns; time travel then finds the burner on cpu 1 and not on cpu 0, in every format."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from live.conftest import MACHINE
from support import popen_cli, run_cli, run_cli_json

pytestmark = MACHINE

BURNER = "corescope-burn"
KERNEL_FN = "read_iter_zero"  # lab hotcore: readv(/dev/zero) → do_readv → ... → read_iter_zero
QUIET_S = 22.0
BURN_S = 20.0


def _need_live() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (perf record -a, lab hotcore)")
    if shutil.which("perf") is None:
        pytest.skip("perf not installed")
    if len(os.sched_getaffinity(0)) < 2 or 1 not in os.sched_getaffinity(0):
        pytest.skip("needs cpus 0 and 1")


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _need_live()
    store = tmp_path_factory.mktemp("ring") / "store"
    rec = popen_cli("--store", str(store), "record", "--profile-chunk", "10s")
    try:
        time.sleep(QUIET_S)  # the quiet baseline
        assert rec.poll() is None, rec.stderr.read() if rec.stderr else ""
        t0 = time.time()
        burn = popen_cli("lab", "hotcore", "--cpu", "1", "--seconds", str(BURN_S), "--yes")
        _o, berr = burn.communicate(timeout=BURN_S + 60)
        t1 = time.time()
        assert burn.returncode == 0, berr
        # the victim: a NIC reset right after the hot core, for `flame --event`
        run_cli("lab", "nicreset", "--yes", check=True)
        time.sleep(1.5)
    finally:
        rec.send_signal(signal.SIGINT)
        try:
            _out, err = rec.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            rec.kill()
            _out, err = rec.communicate()
    assert "profile" in err, err
    return {"store": str(store), "burn_start": t0, "burn_end": t1, "record_stderr": err,
            "burn_pid": _burner_pid(berr)}


def _burner_pid(stderr: str) -> int:
    """The burner's own pid, as `lab hotcore` says it (it burns in a child process)."""
    m = re.search(r"as corescope-burn \(pid (\d+)\)", stderr)
    assert m, stderr
    return int(m.group(1))


def flame_json(ring: dict[str, Any], *extra: str) -> dict[str, Any]:
    # the window: the burn's middle, clear of its first and last second
    at = ring["burn_end"] - 1.0
    return run_cli_json("--store", ring["store"], "flame", "--at", repr(at), "--before",
                        f"{BURN_S - 3:.0f}s", "--format", "json", *extra, timeout=300)


def test_flame_by_event_id_rewinds_to_the_burn(ring: dict[str, Any]) -> None:
    """The incident workflow: an event ID from `events`, then the flame graph of the seconds
    before it on the hot core."""
    ev = run_cli_json("--store", ring["store"], "events", "--json", "--kind", "nic_tx_stall")
    stalls = [e for e in ev["events"] if e["lab"]]
    assert stalls, ev
    event = stalls[-1]
    assert ring["burn_end"] <= event["time"] <= ring["burn_end"] + 30
    j = run_cli_json("--store", ring["store"], "flame", "--event", str(event["id"]), "--before",
                     f"{BURN_S:.0f}s", "--cpu", "1", "--format", "json", timeout=300)
    assert j["window"]["end"] == pytest.approx(event["time"], abs=0.01)
    assert j["top_processes"][0]["comm"] == BURNER, j["top_processes"][:5]
    bad = run_cli("--store", ring["store"], "flame", "--event", "999999", "--format", "json")
    assert bad.returncode == 2 and "no event 999999" in bad.stderr


def test_burner_is_top_on_cpu1(ring: dict[str, Any]) -> None:
    j = flame_json(ring, "--cpu", "1")
    assert j["cpu"] == 1 and j["samples"] > 100
    top = j["top_processes"][0]
    assert top["comm"] == BURNER, j["top_processes"][:5]
    assert top["pct"] >= 50.0
    fns = {f["name"]: f for f in j["top_functions"]}
    assert KERNEL_FN in fns and fns[KERNEL_FN]["kernel"] is True, list(fns)
    assert fns[KERNEL_FN]["total_pct"] >= 50.0


def test_burner_is_not_top_on_cpu0(ring: dict[str, Any]) -> None:
    j = flame_json(ring, "--cpu", "0")
    assert j["cpu"] == 0
    procs = {p["comm"]: p["pct"] for p in j["top_processes"]}
    assert procs.get(BURNER, 0.0) < 50.0
    if j["top_processes"]:
        assert j["top_processes"][0]["comm"] != BURNER


def test_diff_auto_lists_the_burner_as_grown(ring: dict[str, Any]) -> None:
    j = flame_json(ring, "--cpu", "1", "--diff", "auto")
    d = j["diff"]
    assert d is not None and d["baseline_samples"] > 0
    # the baseline lies in the quiet stretch before the burn
    assert d["baseline"]["end"] <= ring["burn_start"] + 1.0
    grew = {(c["kind"], c["name"]): c for c in d["grew"]}
    b = grew[("process", BURNER)]
    # (other sessions on this machine may run their own `lab hotcore`: no absolute baseline)
    assert b["after_pct"] > 50.0 and b["after_pct"] > b["before_pct"]
    assert d["grew"][0]["after_pct"] - d["grew"][0]["before_pct"] >= (
        b["after_pct"] - b["before_pct"])


def test_heatmap_places_the_burn_on_the_wall_clock(ring: dict[str, Any]) -> None:
    """Clock alignment end to end: the burner's samples, mapped from perf's clock to the wall
    clock, fall inside the seconds the lab command ran, and fill most of them."""
    t0, t1 = ring["burn_start"], ring["burn_end"]
    j = run_cli_json("--store", ring["store"], "heatmap", "--at", repr(t1 + 5), "--before",
                     f"{t1 - t0 + 15:.0f}s", "--cpu", "1", "--pid", str(ring["burn_pid"]), "--json",
                     timeout=300)
    assert set(j) >= {"start", "rows_ms", "columns", "values", "max"}
    seen = [j["start"] + i for i, col in enumerate(j["values"]) if sum(col) > 0]
    assert seen, j["values"]
    # the burner exists only while `lab hotcore` runs (process start/exit bracket it)
    assert t0 - 1.0 <= seen[0] and seen[-1] <= t1 + 1.0, (seen[0] - t0, seen[-1] - t1)
    busy = [c for c in j["values"] if sum(c) >= 25]  # > half of 49 Hz
    assert len(busy) >= 0.7 * (t1 - t0)


def test_pprof_passes_go_tool_pprof(ring: dict[str, Any], tmp_path: Path) -> None:
    go = shutil.which("go")
    assert go, "golang-go is required"
    out = tmp_path / "p.pb.gz"
    run_cli("--store", ring["store"], "flame", "--at", repr(ring["burn_end"] - 1),
            "--before", "15s", "--cpu", "1", "--format", "pprof", "-o", str(out),
            check=True, timeout=300)
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gc"),
               PPROF_TMPDIR=str(tmp_path))
    res = subprocess.run([go, "tool", "pprof", "-top", str(out)], capture_output=True,
                         text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr
    assert BURNER in res.stdout and KERNEL_FN in res.stdout


def _open_in_chromium(browser: Any, page_path: Path) -> dict[str, Any]:
    """The session's one Chromium (tests/chromium.py): Playwright's sync API allows one."""
    errors: list[str] = []
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri())
        page.wait_for_selector("svg.cf-svg rect")
        rects = page.locator("svg.cf-svg rect").count()
        labels = page.locator("svg.cf-svg text").all_text_contents()
        page.fill("input.cf-search", KERNEL_FN)
        # the search recolours once typing pauses (debounced)
        page.wait_for_function(
            "() => (document.querySelector('.cf-matched') || {}).textContent")
        matched = page.locator(".cf-matched").text_content() or ""
        # zoom into the burner's frame, then back
        page.locator("svg.cf-svg g", has_text=BURNER).first.click()
        zoomed = page.locator("svg.cf-svg text").all_text_contents()
        page.locator("svg.cf-svg g", has_text=BURNER).first.hover()
        tip = page.locator(".cf-tip").text_content() or ""
        page.click("button.cf-reset")
    finally:
        context.close()
    return {"errors": errors, "rects": rects, "labels": labels, "matched": matched,
            "zoomed": zoomed, "tip": tip, "requests": requests}


@pytest.mark.parametrize("diff", [False, True])
def test_html_renders_in_headless_chromium(ring: dict[str, Any], tmp_path: Path,
                                           diff: bool, browser: Any) -> None:
    out = tmp_path / "flame.html"
    args = ["--store", ring["store"], "flame", "--at", repr(ring["burn_end"] - 1),
            "--before", "15s", "--cpu", "1", "--format", "html", "-o", str(out)]
    if diff:
        args += ["--diff", "auto"]
    run_cli(*args, check=True, timeout=300)
    r = _open_in_chromium(browser, out)
    assert r["errors"] == []
    assert r["rects"] > 5
    assert any(t.startswith(BURNER) or t.startswith("corescope-") for t in r["labels"])
    assert r["matched"].startswith("matched ") and float(r["matched"].split()[1][:-1]) > 50
    assert "samples" in r["tip"] and "%" in r["tip"]
    assert all(u.startswith("file://") for u in r["requests"]), r["requests"]


def test_doctor_line_for_the_ring(ring: dict[str, Any]) -> None:
    from corescope.evidence.store import StoreEvidence
    from corescope.runner import Runner
    from corescope.store.db import Store

    with Store.open(ring["store"], create=False) as store:
        statuses = StoreEvidence(store, Runner()).statuses()
    (status,) = [s for s in statuses if s.name == "profile ring"]
    assert status.ok, status.detail
    assert "chunks" in status.detail
