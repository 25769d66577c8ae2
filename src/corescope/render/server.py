"""The read-only web UI behind `corescope serve`: the report page live over a store, plus
FlameScope's rewind (an event's CPU as a subsecond heatmap, drag a range → its flame graph
and its diff against a baseline). Standard library only (http.server), GET and HEAD only,
every asset from the package.

The server answers with whatever a `Backend` computes; it parses parameters, bounds them,
and lays the answers out. A bad parameter is a 400 with a message, any other failure a 500
with a message: never a traceback to the client, and never the end of serving. No client
can take it down: at most MAX_CONNECTIONS connections (more get a 503), each closed after
IDLE_S without a request, at most MAX_BUILDS page builds at once (each holds a window's
evidence in memory; the others wait), and out of descriptors the accept loop rests instead
of spinning. The access log is one line per request, control characters escaped."""

from __future__ import annotations

import errno
import ipaddress
import json
import math
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from corescope.errors import CorescopeError, InvalidInput
from corescope.investigate.window import WindowError
from corescope.render.page import asset, page
from corescope.render.term import clean, clean_lines

MAX_FLAME_S = 3600.0
MAX_HEATMAP_S = 600.0
MAX_CONNECTIONS = 64
IDLE_S = 30.0  # a browser reconnects; a client sending nothing holds no thread longer
MAX_BUILDS = 2  # the page builds are CPU-bound (one GIL): more at once only cost memory
BUILD_WAIT_S = 120.0
ACCEPT_REST_S = 0.2
TIME_MIN, TIME_MAX = 0.0, 4102444800.0  # 1970 .. 2100: a window outside is no window


class Backend(Protocol):
    def page_model(self, since: float | None, until: float | None,
                   last: float | None) -> dict[str, Any]: ...

    def heatmap(self, cpu: int | None, start: float, end: float,
                rows_ms: int) -> dict[str, Any]: ...

    def flame(self, cpu: int | None, start: float, end: float,
              diff: bool) -> dict[str, Any]: ...


class BadRequest(InvalidInput, ValueError):
    pass


class Busy(CorescopeError, RuntimeError):
    """Too many page builds at once: a 503, try again."""


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
    text = vals[0]
    try:
        if len(text) > 40:
            raise ValueError(text)
        v = float(text)
    except ValueError as exc:
        raise BadRequest(f"{name}: not a number: {clean(text[:40])!r}") from exc
    if not math.isfinite(v):
        raise BadRequest(f"{name}: not a finite number")
    return v


def _time(q: dict[str, list[str]], name: str) -> float | None:
    v = _num(q, name)
    if v is not None and not TIME_MIN <= v <= TIME_MAX:
        raise BadRequest(f"{name}: epoch seconds between 1970 and 2100")
    return v


def _window(q: dict[str, list[str]]) -> tuple[float | None, float | None, float | None]:
    since, until, last = _time(q, "since"), _time(q, "until"), _num(q, "last")
    if last is not None and not 0 < last <= TIME_MAX:
        raise BadRequest("last: a positive number of seconds")
    if since is not None and until is not None and until < since:
        raise BadRequest("until must not be before since")
    return since, until, last


def _cpu(q: dict[str, list[str]]) -> int | None:
    v = _num(q, "cpu")
    if v is None:
        return None
    if v < 0 or v != int(v) or v > 65535:
        raise BadRequest("cpu: a CPU number")
    return int(v)


def _range(q: dict[str, list[str]], limit: float) -> tuple[float, float]:
    start, end = _time(q, "start"), _time(q, "end")
    if start is None or end is None:
        raise BadRequest("start and end are required (epoch seconds)")
    if end <= start:
        raise BadRequest("end must be after start")
    if end - start > limit:
        raise BadRequest(f"at most {limit:g} s at a time")
    return start, end


def make_handler(backend: Backend, allowed_host: Callable[[str], bool],
                 log: Callable[[str], None]) -> type[BaseHTTPRequestHandler]:
    builds = threading.BoundedSemaphore(MAX_BUILDS)

    def build(fn: Callable[[], Any]) -> Any:
        if not builds.acquire(timeout=BUILD_WAIT_S):
            raise Busy("busy: too many page builds at once, try again")
        try:
            return fn()
        finally:
            builds.release()

    class Handler(BaseHTTPRequestHandler):
        server_version = "corescope"
        sys_version = ""
        timeout = IDLE_S  # socket timeout: a silent or trickling client is dropped

        def log_message(self, format: str, *args: Any) -> None:
            # the request line is the client's: escaped, so it cannot drive the terminal
            log(clean(f"{self.address_string()} {format % args}"))

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
            try:
                self._get()
            except (BadRequest, WindowError) as exc:
                self._json(HTTPStatus.BAD_REQUEST, {"error": clean(exc)})
            except Busy as exc:
                self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(exc)})
            except OSError:
                raise  # the client went away: nothing to answer (handle_error notes it)
            except Exception as exc:  # the UI must answer, whatever the store holds
                log(clean_lines("".join(traceback.format_exception(exc))))
                self._json(HTTPStatus.INTERNAL_SERVER_ERROR,
                           {"error": clean(f"{type(exc).__name__}: {exc}")[:300]})

        def _get(self) -> None:
            # A page on another site must not reach this UI through a DNS name that resolves
            # to loopback (DNS rebinding): answer only to the names it listens on.
            if not allowed_host((self.headers.get("Host") or "").strip().lower()):
                self._json(HTTPStatus.MISDIRECTED_REQUEST, {"error": "unexpected Host header"})
                return
            url = urlsplit(self.path)
            q = parse_qs(url.query, keep_blank_values=True, max_num_fields=50)
            if url.path == "/":
                model = build(lambda: backend.page_model(*_window(q)))
                self._send(HTTPStatus.OK, serve_page(model).encode(),
                           "text/html; charset=utf-8")
            elif url.path == "/api/report":
                window = _window(q)
                self._json(HTTPStatus.OK, build(lambda: backend.page_model(*window)))
            elif url.path == "/api/heatmap":
                start, end = _range(q, MAX_HEATMAP_S)
                rows_f = _num(q, "rows_ms", 20.0)
                rows = int(rows_f) if rows_f is not None else 20
                if not 1 <= rows <= 1000 or rows != rows_f:
                    raise BadRequest("rows_ms: 1..1000")
                cpu = _cpu(q)
                self._json(HTTPStatus.OK, build(lambda: backend.heatmap(cpu, start, end, rows)))
            elif url.path == "/api/flame":
                start, end = _range(q, MAX_FLAME_S)
                diff = (q.get("diff") or [""])[0] in ("1", "auto", "true")
                cpu = _cpu(q)
                self._json(HTTPStatus.OK, build(lambda: backend.flame(cpu, start, end, diff)))
            elif url.path == "/favicon.ico":
                self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": "no such page"})

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
    """ThreadingHTTPServer with a connection cap, a log of its own, and an accept that rests
    when the process is out of descriptors (the listening socket stays readable, so a plain
    accept loop would spin on EMFILE)."""

    daemon_threads = True
    log: Callable[[str], None] = staticmethod(lambda msg: _stderr(msg))  # type: ignore

    def server_activate(self) -> None:
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._logged: set[str] = set()
        super().server_activate()

    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            return super().get_request()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                self._once(f"cannot accept: {exc.strerror}")
                time.sleep(ACCEPT_REST_S)
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            # over the cap: a short answer on this thread, no new thread for it
            try:
                request.settimeout(1.0)
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                b"Connection: close\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """socketserver prints a traceback per failed connection; a client that resets or
        times out is worth one line per kind, once."""
        exc = sys.exc_info()[1]
        self._once(f"connection failed: {type(exc).__name__}: {exc}")

    def _once(self, msg: str) -> None:
        msg = clean(msg)[:200]
        if msg not in self._logged and len(self._logged) < 100:
            self._logged.add(msg)
            self.log(msg)


def _host_port(header: str) -> tuple[str, int | None]:
    """'name:80', '[::1]:80', 'name' -> (host, port); port None when absent or not a port."""
    if header.startswith("["):
        host, _, rest = header[1:].partition("]")
        port_s = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_s = header.rpartition(":") if ":" in header else (header, "", "")
    if not port_s:
        return host, None
    return host, int(port_s) if port_s.isascii() and port_s.isdigit() and len(port_s) < 6 \
        else -1


def _is_local_address(host: str) -> bool:
    """An IP literal this machine has (binding to it succeeds only then)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if ip.is_unspecified or ip.is_multicast:
        return False
    fam = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:
        with socket.socket(fam, socket.SOCK_STREAM) as s:
            s.bind((str(ip), 0))
    except OSError:
        return False
    return True


def host_check(host: str, port: int) -> Callable[[str], bool]:
    """The Host headers this listener answers: on loopback its loopback names; on another
    address that address and this node's names; on a wildcard (0.0.0.0, ::) any address of
    this machine and its names. Never an arbitrary DNS name (DNS rebinding)."""
    bare = host.strip("[]").lower()
    wildcard = bare in ("0.0.0.0", "::", "")
    names = set() if wildcard else {bare}
    if is_loopback(bare) or wildcard:
        names |= LOOPBACK
    if not is_loopback(bare):
        node = socket.gethostname().lower()
        names |= {node, node.split(".")[0]}
        with_fqdn = socket.getfqdn().lower()
        if with_fqdn and with_fqdn != "localhost":
            names.add(with_fqdn)

    def allowed(header: str) -> bool:
        name, p = _host_port(header)
        if p is None:
            p = 80  # no port: http's default (a browser on port 80 sends none)
        if p != port:
            return False
        name = name.rstrip(".")
        if name in names:
            return True
        return wildcard and _is_local_address(name)

    return allowed


def make_server(host: str, port: int, backend: Backend,
                log: Callable[[str], None] | None = None) -> Server:
    cls: type[Server] = Server
    if ":" in host:
        cls = type("Server6", (Server,), {"address_family": socket.AF_INET6})
    logger = log or _stderr
    srv = cls((host, port), make_handler(backend, lambda _h: False, logger))
    srv.log = logger  # type: ignore[method-assign]
    srv.RequestHandlerClass = make_handler(backend, host_check(host, srv.server_address[1]),
                                           logger)
    return srv


def _stderr(msg: str) -> None:
    sys.stderr.write(msg.rstrip("\n") + "\n")
