"""A Pyroscope-compatible /ingest for tests: a real HTTP server on loopback that decodes the
multipart form it receives and keeps (query, profile bytes) of every POST."""

from __future__ import annotations

import email.parser
import email.policy
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Sink:
    """A Pyroscope-compatible /ingest that keeps (query, profile bytes) of every POST."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                    f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + body)
                parts = {p.get_param("name", header="content-disposition"): p.get_payload(
                    decode=True) for p in msg.iter_parts()}
                if url.path != "/ingest" or "profile" not in parts:
                    self.send_response(400)
                else:
                    sink.got.append((query, parts["profile"]))
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/ingest"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
