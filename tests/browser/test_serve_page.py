"""`corescope serve` in Chromium: the live page over evidence, FlameScope's workflow (an
event → its CPU's subsecond heatmap → drag a range → that range's flame graph with the
walker and its diff), nothing fetched from outside 127.0.0.1, hostile names as text."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from corescope.render.server import make_server
from corescope.views.report_pages import EvidenceBackend
from support.chromium import drag_heatmap
from support.synth_incident import HOSTILE, evidence_of, zombie_chain_hour


def _serve(sc: Any) -> Iterator[str]:
    ev = evidence_of(sc)
    srv = make_server("127.0.0.1", 0, EvidenceBackend(lambda: ev), log=lambda _m: None)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/?until={sc.end:.0f}"
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(scope="module")
def served(generated: Any) -> Iterator[tuple[Any, str]]:
    """The generated 96-CPU hour's store behind `serve`'s server."""
    srv = make_server("127.0.0.1", 0, EvidenceBackend(generated.hour.evidence),
                      log=lambda _m: None)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        end = generated.expected["window"]["end"]
        yield generated, f"http://127.0.0.1:{srv.server_address[1]}/?until={end}"
    finally:
        srv.shutdown()
        srv.server_close()


def drag(v: Any, t0: float, t1: float) -> None:
    """Drag on the subsecond heatmap from second t0 (row 0) to second t1 (last row)."""
    drag_heatmap(v.page, t0, t1)


def test_serve_flamescope_workflow(visit: Any, served: tuple[Any, str]) -> None:
    gen, url = served
    exp = gen.expected
    hot, walker = exp["hot_cpu"], exp["walker"]["function"]
    v = visit(url, timeout_s=300)
    page = v.page
    assert f"CPU {hot}" in page.locator("#verdict-text").inner_text()
    # the event list → the rewind of that event's CPU
    first = exp["incident_times"][0]
    stall = next(e for e in gen.model["events"]
                 if e["kind"] == "nic_tx_stall" and abs(e["t"] - first) < 0.01)
    page.click(f"tr[data-event='{stall['id']}']")
    page.wait_for_selector(f"#flamescope[data-cpu='{hot}']", timeout=120_000)
    page.wait_for_function("() => window.__fs && window.__fs().start !== undefined")
    # drag over the seconds of the episode before the stall → that range's flame graph
    ep = next(e for e in exp["episodes"] if e["cpu"] == hot and e["end"] <= first <= e["end"] + 10)
    a, b = ep["start"], ep["end"]
    drag(v, a + 1, b - 1)
    page.wait_for_selector("#fs-flame-title", timeout=120_000)
    assert page.locator("#fs-flame-title").inner_text().startswith(f"CPU {hot},")
    got = page.evaluate("() => [+document.getElementById('fs-flame').dataset.start,"
                        " +document.getElementById('fs-flame').dataset.end]")
    assert a <= got[0] < got[1] <= b + 1
    page.locator("#fs-flame input.cf-search").fill(walker)
    page.wait_for_function(
        "() => /matched [1-9]/.test(document.querySelector('#fs-flame .cf-matched')"
        ".textContent)")
    assert page.locator("#fs-diff svg rect").count() > 3  # and its diff against a baseline
    page.locator("#flamescope").screenshot(path=str(v.screenshot("serve_page").parent
                                                    / "serve_flamescope.png"))
    # a heatmap cell asks the server for that CPU's minute
    other = next(c for c in exp["formats"]["perf_cpus"] if c != hot)
    page.evaluate("([c, t]) => CoreReport.last.openCell(c, t)", [other, first - 300])
    page.wait_for_selector(f"#rewind[data-cpu='{other}']", timeout=120_000)
    v.assert_clean()


def test_serve_hostile(visit: Any) -> None:
    sc = zombie_chain_hour(cpus=8, hot_cpu=3, seconds=900, resets_at=(400,), hz=19,
                           hostile=True)
    for url in _serve(sc):
        v = visit(url)
        page = v.page
        page.uncheck("#events-incidents-only")
        page.click("tr[data-event='5']")  # the hostile audit line
        page.wait_for_selector("#flamescope[data-cpu='3']")
        page.wait_for_function("() => window.__fs && window.__fs().start !== undefined")
        drag(v, sc.start + 380, sc.start + 399)
        page.wait_for_selector("#fs-flame-title")
        page.locator("#fs-flame input.cf-search").fill("onerror")
        page.wait_for_function(
            "() => /matched [1-9]/.test(document.querySelector('#fs-flame .cf-matched')"
            ".textContent)")
        assert page.locator("img").count() == 0
        assert HOSTILE[1] in page.locator("body").inner_text()
        v.screenshot("serve_hostile", full_page=True)
        v.assert_clean()
