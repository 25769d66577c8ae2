"""`report --html` in Chromium on the public corpus's generated 96-CPU zombie-chain hour
(issue 10's "done means"): loads clean and offline, the verdict names the hot CPU, an event
marker opens that CPU's flame graph with the walker's function, a heatmap cell opens that
CPU's minute, the aggregate toggle hides the hot core's spike; and hostile names stay
text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from corescope.render.html_report import render
from support.synth_incident import HOSTILE, page_model_of, zombie_chain_hour


def canvas_point(v: Any, t: float, cpu_row: int | None) -> tuple[float, float]:
    """Page coordinates of time `t` on the heatmap: in CPU row `cpu_row`, or in the marker
    strip when None (the layout report.js publishes)."""
    lay = v.page.evaluate("() => { const L = window.__hm.state.layout; return {LABEL: L.LABEL,"
                          " MARK: L.MARK, rowH: L.rowH, plotW: L.plotW, t0: L.t0,"
                          " span: L.span}; }")
    v.page.locator("#heatmap-canvas").scroll_into_view_if_needed()
    box = v.page.locator("#heatmap-canvas").bounding_box()
    x = box["x"] + lay["LABEL"] + (t - lay["t0"]) / lay["span"] * lay["plotW"]
    y = box["y"] + (lay["MARK"] / 2 if cpu_row is None
                    else lay["MARK"] + (cpu_row + 0.5) * lay["rowH"])
    return x, y


def hot_pixels(v: Any) -> int:
    """Pixels of the heatmap coloured ≥ ~90% (dark red)."""
    return v.page.evaluate("""() => {
        const c = document.getElementById('heatmap-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] < 185 && d[i] > 140 && d[i + 1] < 30) n++;
        return n;
    }""")


def test_report_done_means(visit: Any, generated: Any) -> None:
    exp = generated.expected
    hot, walker = exp["hot_cpu"], exp["walker"]["function"]
    v = visit(generated.html.as_uri())
    page = v.page
    page.evaluate("() => { window.__hm = CoreReport.last.heatmap; }")
    assert f"CPU {hot}" in page.locator("#verdict-text").inner_text()
    v.screenshot("report_generated_hour", full_page=True)

    # the hot core's spikes are on the heatmap; the aggregate-only view hides them
    before = hot_pixels(v)
    assert before > 0
    page.check("#aggregate-only")
    assert hot_pixels(v) == 0
    v.screenshot("report_aggregate_only")
    page.uncheck("#aggregate-only")
    assert hot_pixels(v) == before

    # a click on the first stall's marker: that CPU's flame graph, with the walker in it
    first = exp["incident_times"][0]
    page.mouse.click(*canvas_point(v, first, None))
    rewind = page.locator("#rewind")
    assert rewind.get_attribute("data-cpu") == str(hot)
    page.locator("#rewind-graph input.cf-search").fill(f"^{walker}_\\[k\\]$")
    page.wait_for_function(
        "() => /matched [1-9]/.test(document.querySelector('#rewind-graph .cf-matched')"
        ".textContent)")
    v.screenshot("report_marker_click")

    # a click on a heatmap cell of the hot CPU inside a later episode: that CPU's minute
    ep = [e for e in exp["episodes"] if e["cpu"] == hot and e["reset_follows"]][-1]
    page.mouse.click(*canvas_point(v, (ep["start"] + ep["end"]) / 2, hot))
    assert rewind.get_attribute("data-cpu") == str(hot)
    assert "the minute around" in page.locator("#rewind-title").inner_text()
    page.locator("#rewind-graph input.cf-search").fill(walker)
    page.wait_for_function(
        "() => /matched [1-9]/.test(document.querySelector('#rewind-graph .cf-matched')"
        ".textContent)")
    v.assert_clean()


def test_report_hostile_names(visit: Any, tmp_path: Path) -> None:
    sc = zombie_chain_hour(cpus=16, hot_cpu=9, seconds=900, resets_at=(400, 700), hz=19,
                           hostile=True)
    out = tmp_path / "hostile.html"
    out.write_text(render(page_model_of(sc)))
    v = visit(out.as_uri())
    page = v.page
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 4
    body = page.locator("body").inner_text()
    assert HOSTILE[0] in body  # the crictl sensor's reason and the audit line, as text
    assert HOSTILE[1] in body
    # the hot core's flame graph is drawn and holds the hostile walker as a frame name
    assert page.locator("#profile-graph svg rect").count() > 5
    page.locator("#profile-graph input.cf-search").fill("onerror")
    page.wait_for_function(
        "() => /matched [1-9]/.test(document.querySelector('#profile-graph .cf-matched')"
        ".textContent)")
    assert "\\x1b" in body  # escape codes are shown, not interpreted
    page.wait_for_timeout(200)
    v.screenshot("report_hostile", full_page=True)
    v.assert_clean()


def test_diagnosis_sections_when_present(visit: Any, tmp_path: Path) -> None:
    """With a diagnosis (issue 9's `diagnose --json` contract) the verdict and chain come
    first and the hypotheses fill their table; its strings are text too."""
    sc = zombie_chain_hour(cpus=8, hot_cpu=3, seconds=600, resets_at=(400,), hz=9)
    model = page_model_of(sc)
    model["diagnosis"] = {
        "schema": 1,
        "verdict": {"root_cause": "zombie_memcg_leak", "culprit": HOSTILE[0], "hot_cpu": 3,
                    "walker": {"comm": "kubelet", "function": "mem_cgroup_iter"},
                    "confidence": 0.93},
        "chain": [{"step": s, "summary": f"{s} summary", "evidence": {}} for s in (
            "leaking_source", "dying_memcgs", "walker", "core_saturated", "queue_stalls",
            "reset")],
        "hypotheses": [
            {"name": "zombie_memcg_leak", "verdict": "supported", "score": 0.93,
             "evidence": {"dying": 68000}, "would_change": "no memcg frames on the core"},
            {"name": "hardware_fault", "verdict": "ruled_out", "score": 0.01,
             "evidence": {}, "would_change": HOSTILE[1]},
            {"name": "cpu_contention", "verdict": "not_measured", "score": 0,
             "evidence": {"sensor": "schedstat off"}, "would_change": "run record"}]}
    out = tmp_path / "dx.html"
    out.write_text(render(model))
    v = visit(out.as_uri())
    page = v.page
    verdict = page.locator("#verdict-text").inner_text()
    assert "zombie memcg leak" in verdict and "CPU 3" in verdict
    assert HOSTILE[0] in verdict and "kubelet in mem_cgroup_iter" in verdict
    assert page.locator("#chain li").count() == 6
    assert page.locator("#diagnosis-missing").count() == 0
    rows = page.locator("#hypotheses tr")
    assert rows.count() == 4 and HOSTILE[1] in rows.nth(2).inner_text()
    assert page.locator("img").count() == 0
    v.screenshot("report_diagnosis")
    v.assert_clean()


def test_hot_core_stacks_without_an_incident(visit: Any, tmp_path: Path) -> None:
    """Saturations that no reset followed: the profile section shows the hot core's stacks
    anyway (its flame, its top stacks, the memcg walker), not "no profile"."""
    sc = zombie_chain_hour(cpus=8, hot_cpu=3, seconds=900, resets_at=(), hz=19)
    out = tmp_path / "noincident.html"
    out.write_text(render(page_model_of(sc)))
    v = visit(out.as_uri())
    page = v.page
    section = page.locator("#profile")
    assert "no incident followed" in section.locator("h2").inner_text()
    assert "CPU 3, saturated" in section.inner_text()
    walker = page.locator("#profile-walker").inner_text()
    assert f"{sc.walker_comm} in {sc.walker_function}" in walker
    rows = page.locator("#profile-stacks tr")
    assert rows.count() >= 2 and sc.walker_comm in rows.nth(1).inner_text()
    assert page.locator("#profile-graph canvas, #profile-graph svg, #profile-graph div").count()
    # each hypothesis's facts are lines of their own, not joined by a visible "\x0a"
    hyp = page.locator("#hypotheses").inner_text()
    assert "\\x0a" not in hyp and "dying: " in hyp
    assert page.locator("#hypotheses tr").nth(1).locator(".raw div").count() >= 3
    v.screenshot("report_no_incident", full_page=True)
    v.assert_clean()
