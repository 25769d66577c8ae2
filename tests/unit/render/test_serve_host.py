"""serve's Host check: a Host header without a port names http's default port (RFC 9110
7.2, RFC 3986 3.2.3), so it is this listener only when it serves on port 80 (a browser at
http://localhost/ sends `Host: localhost`)."""

from __future__ import annotations

import http.client
import threading

from corescope.render.server import host_check, make_server
from corescope.views.report_pages import EvidenceBackend


def test_no_port_is_port_80() -> None:
    on80 = host_check("127.0.0.1", 80)
    for header in ("localhost", "127.0.0.1", "localhost:80", "[::1]", "localhost:"):
        assert on80(header), header
    for header in ("attacker.example", "localhost:8080", "localhost:x"):
        assert not on80(header), header
    on8080 = host_check("127.0.0.1", 8080)
    assert on8080("localhost:8080")
    for header in ("localhost", "127.0.0.1", "localhost:80"):
        assert not on8080(header), header


def test_a_real_request_without_a_port_is_refused_off_port_80() -> None:
    srv = make_server("127.0.0.1", 0, EvidenceBackend(lambda: None), log=lambda _m: None)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    port = srv.server_address[1]
    try:
        for host, status in (("localhost", 421), (f"localhost:{port}", 404)):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/nope", headers={"Host": host})
            r = c.getresponse()
            r.read()
            c.close()
            assert r.status == status, host
    finally:
        srv.shutdown()
        srv.server_close()
