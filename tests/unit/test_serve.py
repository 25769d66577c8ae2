"""`corescope serve`'s server without a browser: read-only, answers only to its own names,
bounded parameters with messages instead of tracebacks, loopback unless told otherwise."""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import popen_cli
from corescope.render.server import make_server, parse_listen
from corescope.store.db import Store
from corescope.views.report_pages import EvidenceBackend
from synth_incident import evidence_of, zombie_chain_hour


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[int, Any]]:
    sc = zombie_chain_hour(cpus=4, hot_cpu=2, seconds=600, resets_at=(300,), hz=19)
    ev = evidence_of(sc)
    logs: list[str] = []
    srv = make_server("127.0.0.1", 0, EvidenceBackend(lambda: ev), log=logs.append)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield srv.server_address[1], sc
    srv.shutdown()
    srv.server_close()


def get(port: int, path: str, method: str = "GET",
        host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Host": host} if host else {}
    c.request(method, path, headers=headers)
    r = c.getresponse()
    return r.status, dict(r.getheaders()), r.read()


def test_page_and_api(server: tuple[int, Any]) -> None:
    port, sc = server
    status, headers, body = get(port, f"/?until={sc.end:.0f}")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert headers["X-Content-Type-Options"] == "nosniff"
    page = body.decode()
    assert "connect-src 'self'" in page and "unsafe-inline" not in page.split("script-src")[1]
    assert not re.search(r"(src|href)=\"https?://", page)
    status, _h, body = get(port, f"/api/heatmap?cpu=2&start={sc.start + 200:.0f}"
                                 f"&end={sc.start + 320:.0f}")
    hm = json.loads(body)
    assert status == 200 and hm["cpu"] == 2 and hm["columns"] == 120 and hm["rows"] == 50
    assert hm["samples"] > 0
    status, _h, body = get(port, f"/api/flame?cpu=2&start={sc.start + 290:.0f}"
                                 f"&end={sc.start + 299:.0f}&diff=auto")
    f = json.loads(body)
    assert status == 200 and f["cpu"] == 2 and f["busy"] > 0
    assert f"{sc.walker_function}_[k]" in f["data"]["names"]
    assert f["diff"]["diff"] is True


@pytest.mark.parametrize("path,needle", [
    ("/api/flame?cpu=x&start=1&end=2", "cpu"),
    ("/api/flame?cpu=1&start=5&end=2", "after start"),
    ("/api/flame?cpu=1&start=0&end=1e9", "at most"),
    ("/api/flame?cpu=1&start=nan&end=2", "finite"),
    ("/api/heatmap?cpu=1", "required"),
    ("/api/heatmap?cpu=1&start=0&end=10&rows_ms=0", "rows_ms"),
    ("/api/report?last=abc", "last"),
])
def test_bad_parameters_are_400_with_a_message(server: tuple[int, Any], path: str,
                                               needle: str) -> None:
    status, _h, body = get(server[0], path)
    assert status == 400 and needle in json.loads(body)["error"]


def test_read_only_and_own_names_only(server: tuple[int, Any]) -> None:
    port = server[0]
    for method in ("POST", "PUT", "DELETE"):
        assert get(port, "/", method)[0] == 405
    # DNS rebinding: a foreign name resolving to 127.0.0.1 gets nothing
    status, _h, body = get(port, "/api/report", host="attacker.example:80")
    assert status == 421 and b"Host" in body
    assert get(port, "/nope")[0] == 404
    assert get(port, "/", "HEAD")[0] == 200


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:9723") == ("127.0.0.1", 9723)
    assert parse_listen("9000") == ("127.0.0.1", 9000)
    assert parse_listen(":9000") == ("127.0.0.1", 9000)
    assert parse_listen("[::1]:80") == ("::1", 80)
    for bad in ("host:", "host:99999", "x:y"):
        with pytest.raises(ValueError):
            parse_listen(bad)


def _first_line(proc: Any) -> str:
    out = []
    for line in proc.stderr:
        out.append(line)
        if "serving" in line:
            break
    return "".join(out)


def test_cli_loopback_default_and_a_warning_elsewhere(tmp_path: Path) -> None:
    store = tmp_path / "store"
    Store.open(store, create=True).close()
    proc = popen_cli("serve", "--store", str(store), "--listen", "127.0.0.1:0")
    try:
        text = _first_line(proc)
        assert "WARNING" not in text and re.search(r"http://127\.0\.0\.1:\d+/", text)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    proc = popen_cli("serve", "--store", str(store), "--listen", "0.0.0.0:0")
    try:
        text = _first_line(proc)
        assert "WARNING" in text and "not loopback" in text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = popen_cli("serve", "--store", str(tmp_path / "nothing"))
    assert bad.wait(timeout=30) == 2 and "no store" in bad.stderr.read()


def test_record_imports_no_web_code(tmp_path: Path) -> None:
    """The agent must not load the report, the server or http.server."""
    import subprocess
    import sys

    from conftest import cli_env

    code = ("import sys; from corescope.views import cli; cli.load_module("
            "'corescope.views.cli_record'); import corescope.recorder; "
            "bad = sorted(m for m in sys.modules if m.startswith(('corescope.render', "
            "'http.server', 'corescope.views.cli_serve', 'corescope.views.report_pages')));"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=cli_env(), check=True).stdout.strip()
    assert out == "[]"
