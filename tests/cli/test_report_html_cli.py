"""`report --html -o FILE` and `analyze PATH... --html FILE` through the real CLI, on a
generated hour of the public corpus."""

from __future__ import annotations

import json
import re
from pathlib import Path

from corescope.lab.scenarios import generate
from support import run_cli


def embedded(page: str) -> dict:
    part = page.split('<script id="report-data" type="application/json">')[1]
    return json.loads(part.split("</script>")[0])


def test_analyze_html_then_report_html(tmp_path: Path) -> None:
    exp = generate("zombie_chain", tmp_path / "scn", cpus=8, seed=3)
    store = tmp_path / "store"
    first = tmp_path / "analyze.html"
    proc = run_cli("analyze", str(tmp_path / "scn"), "--store", str(store), "--html",
                   str(first), timeout=600)
    assert proc.returncode == 1, proc.stderr  # findings
    assert f"wrote {first}" in proc.stderr
    page = first.read_text()
    data = embedded(page)
    assert data["heatmap"]["cpus"] == list(range(8))
    assert data["summary"]["top_cpu"] == exp["hot_cpu"]
    assert any(e["kind"] == "nic_tx_stall" for e in data["events"])
    assert not re.search(r"(src|href)=\"https?://", page)

    again = tmp_path / "report.html"
    w = exp["window"]
    proc = run_cli("report", "--store", str(store), "--since", str(w["start"]), "--until",
                   str(w["end"]), "--html", "-o", str(again), timeout=600)
    assert proc.returncode == 1, proc.stderr
    data2 = embedded(again.read_text())
    assert data2["hot_core"]["cpu"] == exp["hot_cpu"]
    assert data2["window"] == {"start": w["start"], "end": w["end"]}

    # usage errors exit 2 with a message
    for args in (["--html"], ["-o", str(tmp_path / "x.html")],
                 ["--html", "--json", "-o", str(tmp_path / "y.html")]):
        bad = run_cli("report", "--store", str(store), *args)
        assert bad.returncode == 2 and "--html" in bad.stderr, (args, bad.stderr)
