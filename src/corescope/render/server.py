"""The read-only web UI behind `corescope serve`: the report page live over a store, plus
FlameScope's rewind (an event's CPU as a subsecond heatmap, drag a range → its flame graph
and its diff against a baseline). Standard library only (http.server), GET and HEAD only,
every asset from the package.

The server answers with whatever a `Backend` computes; it parses parameters, bounds them,
and lays the answers out. A bad parameter is a 400 with a message, any other failure a 500
with a message: never a traceback to the client."""

from __future__ import annotations

import json
import math
import socket
import sys
import traceback
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from corescope.errors import InvalidInput
from corescope.render.page import asset, page

MAX_FLAME_S = 3600.0
MAX_HEATMAP_S = 600.0


class Backend(Protocol):
    def page_model(self, since: float | None, until: float | None,
                   last: float | None) -> dict[str, Any]: ...

    def heatmap(self, cpu: int | None, start: float, end: float,
                rows_ms: int) -> dict[str, Any]: ...

    def flame(self, cpu: int | None, start: float, end: float,
              diff: bool) -> dict[str, Any]: ...


class BadRequest(InvalidInput, ValueError):
    pass


_BOOT = ("\"use strict\";const D=JSON.parse(document.getElementById(\"report-data\")"
         ".textContent);CoreReport.render(D,document.getElementById(\"app\"),"
         "(main,ctx)=>CoreServe.attach(D,main,ctx));")


def serve_page(model: dict[str, Any]) -> str:
    return page((model.get("title") or "corescope") + " (live)", '<div id="app"></div>',
                [asset("flame.js"), asset("report.js"), asset("serve.js"), _BOOT],
                {"report-data": model}, asset("report.css"), connect_self=True)


def _num(q: dict[str, list[str]], name: str, default: float | None = None) -> float | None:
    vals = q.get(name)
    if not vals or vals[0] == "":
        return default
    try:
        v = float(vals[0])
    except ValueError as exc:
        raise BadRequest(f"{name}: not a number: {vals[0][:40]!r}") from exc
    if not math.isfinite(v):
        raise BadRequest(f"{name}: not a finite number")
    return v


def _cpu(q: dict[str, list[str]]) -> int | None:
    v = _num(q, "cpu")
    if v is None:
        return None
    if v < 0 or v != int(v) or v > 65535:
        raise BadRequest("cpu: a CPU number")
    return int(v)


def _range(q: dict[str, list[str]], limit: float) -> tuple[float, float]:
    start, end = _num(q, "start"), _num(q, "end")
    if start is None or end is None:
        raise BadRequest("start and end are required (epoch seconds)")
    if end <= start:
        raise BadRequest("end must be after start")
    if end - start > limit:
        raise BadRequest(f"at most {limit:g} s at a time")
    return start, end


def make_handler(backend: Backend, allowed_hosts: set[str],
                 log: Callable[[str], None]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "corescope"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            log(f"{self.address_string()} {format % args}")

        def _send(self, status: int, body: bytes, ctype: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("X-Frame-Options", "DENY")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, status: int, obj: Any) -> None:
            self._send(status, json.dumps(obj, separators=(",", ":"), allow_nan=False
                                          ).encode(), "application/json")

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            # A page on another site must not reach this UI through a DNS name that resolves
            # to loopback (DNS rebinding): answer only to the names it listens on.
            host = (self.headers.get("Host") or "").lower()
            if host not in allowed_hosts:
                self._json(HTTPStatus.MISDIRECTED_REQUEST, {"error": "unexpected Host header"})
                return
            url = urlsplit(self.path)
            q = parse_qs(url.query, keep_blank_values=True)
            try:
                if url.path == "/":
                    model = backend.page_model(_num(q, "since"), _num(q, "until"),
                                               _num(q, "last"))
                    self._send(HTTPStatus.OK, serve_page(model).encode(),
                               "text/html; charset=utf-8")
                elif url.path == "/api/report":
                    self._json(HTTPStatus.OK, backend.page_model(
                        _num(q, "since"), _num(q, "until"), _num(q, "last")))
                elif url.path == "/api/heatmap":
                    start, end = _range(q, MAX_HEATMAP_S)
                    rows_f = _num(q, "rows_ms", 20.0)
                    rows = int(rows_f) if rows_f is not None else 20
                    if not 1 <= rows <= 1000 or rows != rows_f:
                        raise BadRequest("rows_ms: 1..1000")
                    self._json(HTTPStatus.OK, backend.heatmap(_cpu(q), start, end, rows))
                elif url.path == "/api/flame":
                    start, end = _range(q, MAX_FLAME_S)
                    diff = (q.get("diff") or [""])[0] in ("1", "auto", "true")
                    self._json(HTTPStatus.OK, backend.flame(_cpu(q), start, end, diff))
                elif url.path == "/favicon.ico":
                    self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
                else:
                    self._json(HTTPStatus.NOT_FOUND, {"error": "no such page"})
            except BadRequest as exc:
                self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
            except Exception as exc:  # the UI must answer, whatever the store holds
                log("".join(traceback.format_exception(exc)))
                self._json(HTTPStatus.INTERNAL_SERVER_ERROR,
                           {"error": f"{type(exc).__name__}: {exc}"[:300]})

        def _refuse(self) -> None:
            self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "read-only: GET only"})

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

    return Handler


LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


def parse_listen(text: str) -> tuple[str, int]:
    """'127.0.0.1:9723', '[::1]:9723', ':9723' (loopback), '9723'."""
    text = text.strip()
    if text.isdigit():
        host, port_s = "127.0.0.1", text
    elif text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_s = rest.lstrip(":")
    else:
        host, _, port_s = text.rpartition(":")
        host = host or "127.0.0.1"
    try:
        port = int(port_s)
    except ValueError as exc:
        raise ValueError(f"--listen {text!r}: expected HOST:PORT") from exc
    if not 0 <= port <= 65535:
        raise ValueError(f"--listen {text!r}: port out of range")
    if not host:
        raise ValueError(f"--listen {text!r}: expected HOST:PORT")
    return host, port


class Server(ThreadingHTTPServer):
    daemon_threads = True


def make_server(host: str, port: int, backend: Backend,
                log: Callable[[str], None] | None = None) -> Server:
    cls = Server
    if ":" in host:
        cls = type("Server6", (Server,), {"address_family": socket.AF_INET6})
    srv = cls((host, port), make_handler(backend, set(), log or _stderr))
    real_port = srv.server_address[1]
    shown = f"[{host}]" if ":" in host else host
    names = {shown, "127.0.0.1", "localhost", "[::1]"} if is_loopback(host) else {shown}
    hosts = {f"{n}:{real_port}".lower() for n in names}
    srv.RequestHandlerClass = make_handler(backend, hosts, log or _stderr)
    return srv


def _stderr(msg: str) -> None:
    sys.stderr.write(msg.rstrip("\n") + "\n")
