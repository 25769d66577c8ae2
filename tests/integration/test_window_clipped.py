"""A report window far wider than the store (`--since 1970-01-02 --until 2100`, or from now
to 2100 on a store recorded weeks ago) is clipped to what the store covers, so the memory a
report takes depends on the data, not on the window asked for: `report`, `report --html`
and serve's `/api/report` and `/`, each in its own process under an address-space limit
(before the fix: a per-second heatmap of 74 years, several GiB, MemoryError or a 10 GB
process). The answers are those of the store's own window."""

from __future__ import annotations

import http.client
import json
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corescope.lab.scenarios import generate
from support import cli_env, run_cli, served_port

# far above what these small stores need (~100 MB resident; Python, numpy and zstandard map
# ~600 MB of address space), far below one per-second array over the asked-for window
AS_LIMIT = 1536 * 1024 * 1024
FAR_SINCE = "1970-01-02T00:00:00"
FAR_UNTIL = "2100-01-01T00:00:00"
FAR_UNTIL_EPOCH = 4102444800


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "corescope", *args], capture_output=True,
                          text=True, timeout=300, env=cli_env(), preexec_fn=_limited,
                          check=False)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("clip")
    exp = generate("zombie_chain", root / "scn", cpus=4, seed=2, duration_s=600)
    full = root / "full"
    proc = run_cli("--store", str(full), "analyze", str(root / "scn"), timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    # the kernel log alone (and the boot time): a store of events, no per-core record, where
    # nothing else bounded the heatmap
    events = root / "events"
    proc = run_cli("--store", str(events), "analyze", str(root / "scn" / "dmesg.txt"),
                   "--boot-time", str(exp["boot_time"]), timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    return {"full": full, "events": events, "exp": exp}


def _incident_times(report: dict[str, Any]) -> list[float]:
    return sorted(round(i["event"]["time"], 3) for i in report["incidents"])


def test_report_over_a_huge_window_answers_as_over_the_store(stores: dict[str, Any]) -> None:
    base = run_cli("--store", str(stores["full"]), "report", "--json")
    far = _run("--store", str(stores["full"]), "report", "--json", "--since", FAR_SINCE,
               "--until", FAR_UNTIL)
    assert far.returncode == base.returncode == 1, far.stderr
    assert _incident_times(json.loads(far.stdout)) == _incident_times(json.loads(base.stdout))
    assert len(_incident_times(json.loads(far.stdout))) == len(stores["exp"]["incident_times"])
    assert "clipped to" in far.stderr, far.stderr


@pytest.mark.parametrize("store", ["full", "events"])
def test_report_html_over_a_huge_window_stays_small(stores: dict[str, Any], store: str,
                                                     tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    proc = _run("--store", str(stores[store]), "report", "--html", "-o", str(out),
                "--since", FAR_SINCE, "--until", FAR_UNTIL)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    page = out.read_text()
    assert "NIC" in page or "nic_reset" in page
    base = tmp_path / "base.html"
    ok = _run("--store", str(stores[store]), "report", "--html", "-o", str(base))
    assert ok.returncode == proc.returncode
    # the window read is the store's: the page is the size of the store's own page
    assert abs(len(page) - base.stat().st_size) < 0.2 * base.stat().st_size


def test_a_window_after_the_record_holds_nothing_and_stays_small(stores: dict[str, Any],
                                                                 tmp_path: Path) -> None:
    """`--since 0` is "0 s ago": from now to 2100, on a store recorded before now."""
    out = tmp_path / "r.html"
    proc = _run("--store", str(stores["full"]), "report", "--html", "-o", str(out),
                "--since", "0", "--until", FAR_UNTIL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "nothing recorded in the window" in proc.stderr, proc.stderr
    js = _run("--store", str(stores["full"]), "report", "--json", "--since", "0",
              "--until", FAR_UNTIL)
    assert js.returncode == 0, js.stderr[-2000:]
    assert json.loads(js.stdout)["incidents"] == []


@pytest.fixture(scope="module")
def served(stores: dict[str, Any]) -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-m", "corescope", "serve", "--store",
                             str(stores["full"]), "--listen", "127.0.0.1:0"], text=True,
                            env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_limited)
    port = served_port(proc)
    try:
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        assert proc.returncode in (0, -15)  # ended by us, not by MemoryError or the kernel


def _get(port: int, path: str) -> tuple[int, bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=240)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def test_serve_clips_the_report_window(served: int, stores: dict[str, Any]) -> None:
    status, body = _get(served, "/api/report")
    assert status == 200
    base = json.loads(body)
    for since in (86400, 1_000_000_000):
        status, body = _get(served, f"/api/report?since={since}&until={FAR_UNTIL_EPOCH}")
        assert status == 200, body[:500]
        far = json.loads(body)
        assert [i["event"]["t"] for i in far["incidents"]] == \
            [i["event"]["t"] for i in base["incidents"]]
        assert abs(far["heatmap"]["columns"] - base["heatmap"]["columns"]) <= 2
    # from after the record's end to 2100: nothing in it, a small answer
    after = int(base["window"]["end"]) + 7200
    status, body = _get(served, f"/api/report?since={after}&until={FAR_UNTIL_EPOCH}")
    assert status == 200, body[:500]
    page = json.loads(body)
    assert page["incidents"] == [] and page["heatmap"]["columns"] <= 2
    status, body = _get(served, f"/?since={after}&until={FAR_UNTIL_EPOCH}")
    assert status == 200 and len(body) < 5_000_000
