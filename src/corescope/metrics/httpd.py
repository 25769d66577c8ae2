"""The smallest HTTP/1.1 server /metrics needs: one thread, one selector, kept-alive
connections.

Why not http.server / wsgiref: a scrape through them parses headers with the email package,
builds a WSGI environ, and (HTTP/1.0) costs a new TCP connection every time; at a 1 s scrape
interval that was most of the exporter's CPU. Prometheus reuses one connection per target, so
here a scrape is: one wake-up, one recv, a split of the request head, one send.

Only GET and HEAD on one path are answered; anything else gets a short error. Limits keep a
misbehaving client from holding memory: an 8 KiB request head, 64 connections (the longest
idle one is closed for a new one), 5 minutes idle. No client can end the loop: a handler
that raises is a 500 (logged once per kind of failure), and when the process is out of
descriptors the longest idle connection is closed for the new one, or, with none to close,
the listening socket rests a moment instead of waking the loop again at once.
"""

from __future__ import annotations

import contextlib
import errno
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable
from email.utils import formatdate

MAX_HEAD = 8192
MAX_CONNECTIONS = 64
IDLE_S = 300.0  # longer than any sane scrape interval, so Prometheus' connection stays up
ACCEPT_REST_S = 0.5  # out of descriptors with nothing to evict: stop accepting this long

# (accept header) -> (content type, body); called on the serving thread
Handler = Callable[[str], tuple[str, bytes]]


class _Conn:
    __slots__ = ("buf", "closed", "closing", "fd", "last", "out", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.fd = sock, sock.fileno()
        self.buf = b""
        self.out = b""  # the part of a reply the socket has not taken yet
        self.closing = False  # close once `out` is sent
        self.closed = False
        self.last = time.monotonic()


def _response(status: str, ctype: str, body: bytes, keep: bool, head_only: bool = False
              ) -> bytes:
    head = (f"HTTP/1.1 {status}\r\nDate: {formatdate(usegmt=True)}\r\n"
            f"Content-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            + ("" if keep else "Connection: close\r\n") + "\r\n")
    return head.encode("latin-1") + (b"" if head_only else body)


def _error(status: str) -> bytes:
    return _response(status, "text/plain; charset=utf-8", status.encode() + b"\n", keep=False)


class MetricsServer:
    """Serves `handler` on `path` from `serve_forever` (run it on a thread); `shutdown` stops
    the loop, `server_close` closes every socket. Same calls as socketserver's servers."""

    def __init__(self, host: str, port: int, handler: Handler, path: str = "/metrics",
                 log: Callable[[str], None] | None = None) -> None:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, port))
            self.socket.listen(16)
            self.socket.setblocking(False)
        except OSError:
            self.socket.close()
            raise
        self.server_port: int = self.socket.getsockname()[1]
        self.handler, self.path = handler, path.encode()
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._stop = threading.Event()
        self._done = threading.Event()
        self._conns: dict[int, _Conn] = {}
        self._log = log or _stderr
        self._logged: set[str] = set()
        self._resting_until = 0.0  # the listening socket is unregistered until then

    def serve_forever(self) -> None:
        sel = self._sel
        sel.register(self.socket, selectors.EVENT_READ, None)
        sel.register(self._wake_r, selectors.EVENT_READ, None)
        try:
            while not self._stop.is_set():
                timeout = 60.0
                if self._resting_until:
                    timeout = max(0.0, self._resting_until - time.monotonic())
                for key, mask in sel.select(timeout=timeout):
                    try:
                        self._step(key, mask)
                    except Exception as exc:  # one connection's failure never ends the loop
                        self._once(exc)
                        if isinstance(key.data, _Conn):
                            self._close(key.data)
                self._reap_idle()
                self._wake_accept()
        finally:
            self._done.set()

    def _step(self, key: selectors.SelectorKey, mask: int) -> None:
        if key.fileobj is self.socket:
            self._accept()
        elif key.fileobj is self._wake_r:
            with contextlib.suppress(OSError):
                self._wake_r.recv(64)
        elif mask & selectors.EVENT_WRITE:
            self._written(key.data)
        else:
            self._read(key.data)

    def _once(self, exc: BaseException) -> None:
        """Log a failure the first time its kind is seen (a client repeating it cannot fill
        the operator's log)."""
        kind = f"{type(exc).__name__}: {exc}"[:200]
        if kind not in self._logged and len(self._logged) < 100:
            self._logged.add(kind)
            self._log(f"corescope: metrics: request failed: {kind!r}")

    def shutdown(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._done.wait(10)

    def server_close(self) -> None:
        for c in list(self._conns.values()):
            self._close(c)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(self.socket)
        self.socket.close()
        self._wake_r.close()
        self._wake_w.close()
        self._sel.close()

    # --- the loop's steps ------------------------------------------------------------------

    def _accept(self) -> None:
        try:
            sock, _addr = self.socket.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                return  # an aborted handshake: drop it, keep serving
            # Out of descriptors: the pending connection stays in the backlog and the socket
            # stays readable, so returning would spin. Free the longest idle connection
            # (the next wake-up accepts into it), or rest the listening socket.
            if self._conns:
                self._close(min(self._conns.values(), key=lambda c: c.last))
            else:
                self._rest()
            return
        if len(self._conns) >= MAX_CONNECTIONS:
            self._close(min(self._conns.values(), key=lambda c: c.last))
        sock.setblocking(False)
        c = _Conn(sock)
        self._conns[c.fd] = c
        self._sel.register(sock, selectors.EVENT_READ, c)

    def _rest(self) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(self.socket)
        self._resting_until = time.monotonic() + ACCEPT_REST_S

    def _wake_accept(self) -> None:
        if self._resting_until and time.monotonic() >= self._resting_until:
            self._resting_until = 0.0
            self._sel.register(self.socket, selectors.EVENT_READ, None)

    def _read(self, c: _Conn) -> None:
        try:
            data = c.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(c)
            return
        c.last = time.monotonic()
        c.buf += data
        self._process(c)

    def _process(self, c: _Conn) -> None:
        """Answer the complete requests in the buffer, one reply in flight at a time."""
        while not c.closing and not c.out:
            end = c.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(c.buf) > MAX_HEAD:
                    self._send(c, _error("431 Request Header Fields Too Large"), keep=False)
                return
            head, c.buf = c.buf[:end], c.buf[end + 4:]
            reply, keep = self._answer(head)
            self._send(c, reply, keep)

    def _answer(self, head: bytes) -> tuple[bytes, bool]:
        lines = head.split(b"\r\n")
        parts = lines[0].split()
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
            return _error("400 Bad Request"), False
        method, target, version = parts
        if method not in (b"GET", b"HEAD"):
            return _error("405 Method Not Allowed"), False
        accept, keep = "", version == b"HTTP/1.1"
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                return _error("400 Bad Request"), False
            name = name.strip().lower()
            if name == b"accept":
                accept = value.strip().decode("latin-1")
            elif name == b"connection":
                v = value.strip().lower()
                keep = v != b"close" if keep else v == b"keep-alive"
            elif name in (b"content-length", b"transfer-encoding") and value.strip() != b"0":
                return _error("400 Bad Request"), False  # a GET carries no body
        if target.split(b"?", 1)[0] != self.path:
            return _response("404 Not Found", "text/plain; charset=utf-8",
                             b"not found: try /metrics\n", keep, method == b"HEAD"), keep
        try:
            ctype, body = self.handler(accept)
        except Exception as exc:  # answered, logged, and the loop goes on
            self._once(exc)
            return _error("500 Internal Server Error"), False
        return _response("200 OK", ctype, body, keep, method == b"HEAD"), keep

    def _send(self, c: _Conn, data: bytes, keep: bool) -> None:
        c.out, c.closing = data, not keep
        self._flush(c)
        if c.out and not c.closed:
            self._sel.modify(c.sock, selectors.EVENT_WRITE, c)

    def _flush(self, c: _Conn) -> None:
        try:
            sent = c.sock.send(c.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close(c)
            return
        c.out = c.out[sent:]
        if c.out:
            return
        if c.closing:
            self._close(c)

    def _written(self, c: _Conn) -> None:
        """The socket took more of a reply that did not fit at once."""
        self._flush(c)
        if c.out or c.closed:
            return
        self._sel.modify(c.sock, selectors.EVENT_READ, c)
        self._process(c)  # a pipelined request may be waiting

    def _reap_idle(self) -> None:
        cutoff = time.monotonic() - IDLE_S
        for c in [c for c in self._conns.values() if c.last < cutoff]:
            self._close(c)

    def _close(self, c: _Conn) -> None:
        if c.closed:
            return
        c.closed = True
        self._conns.pop(c.fd, None)
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(c.sock)
        c.sock.close()


def _stderr(msg: str) -> None:
    sys.stderr.write(msg.rstrip("\n") + "\n")
