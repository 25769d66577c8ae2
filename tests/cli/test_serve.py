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

from corescope.render.server import make_server, parse_listen
from corescope.store.db import Store
from corescope.views.report_pages import EvidenceBackend
from support import popen_cli
from support.synth_incident import evidence_of, zombie_chain_hour


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

    from support import cli_env

    code = ("import sys; from corescope.views import cli; cli.load_module("
            "'corescope.views.cli_record'); import corescope.recorder; "
            "bad = sorted(m for m in sys.modules if m.startswith(('corescope.render', "
            "'http.server', 'corescope.views.cli_serve', 'corescope.views.report_pages')));"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=cli_env(), check=True).stdout.strip()
    assert out == "[]"


def _local_non_loopback_ip() -> str | None:
    import socket

    for fam, addr in ((socket.AF_INET, ("192.0.2.255", 9)), (socket.AF_INET6, ("2001:db8::1", 9))):
        try:
            with socket.socket(fam, socket.SOCK_DGRAM) as s:
                s.connect(addr)  # no packet: just asks the kernel for the source address
                ip = s.getsockname()[0]
        except OSError:
            continue
        if not ip.startswith("127.") and ip != "::1":
            return ip
    return None


def test_wildcard_listener_answers_this_nodes_names_only() -> None:
    """`--listen 0.0.0.0:PORT` (the documented non-loopback mode) answers to the machine's
    own addresses and host name, never to a foreign name or another port."""
    import socket

    srv = make_server("0.0.0.0", 0, EvidenceBackend(lambda: None), log=lambda _m: None)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    port = srv.server_address[1]
    try:
        ok = [f"127.0.0.1:{port}", f"localhost:{port}", f"{socket.gethostname()}:{port}",
              f"{socket.gethostname().upper()}:{port}"]
        ip = _local_non_loopback_ip()
        if ip:
            ok.append(f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}")
        for host in ok:
            assert get(port, "/nope", host=host)[0] == 404, host  # past the Host check
        for host in (f"attacker.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1",
                     f"192.0.2.254:{port}", f"0.0.0.0:{port}", f"127.0.0.1:{port}x",
                     f"8.8.8.8:{port}"):
            assert get(port, "/nope", host=host)[0] == 421, host
    finally:
        srv.shutdown()
        srv.server_close()


def test_access_log_escapes_control_characters(server: tuple[int, Any]) -> None:
    import socket

    logs: list[str] = []
    srv = make_server("127.0.0.1", 0, EvidenceBackend(lambda: None), log=logs.append)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        with socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=10) as s:
            s.sendall(b"GET /\x1b]0;pwned\x07\x1b[2J HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(4096)
    finally:
        srv.shutdown()
        srv.server_close()
    assert logs and not any("\x1b" in m or "\x07" in m for m in logs)
    assert any("\\x1b]0;pwned" in m for m in logs)
