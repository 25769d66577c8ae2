"""`record --pyroscope-url URL`: each finished profile-ring chunk goes to a Pyroscope-
compatible `/ingest` as pprof, one profile per (cpu, comm) with the series labels node, cpu
and comm (the busiest comms of each CPU by name, the rest as comm="other", so a chunk costs
a bounded number of requests). Samples also carry pprof labels comm, cpu and thread.

The push runs on its own thread from a small queue: the ring's thread only enqueues, and a
slow or absent server costs dropped pushes (counted, said once), never a stalled recorder.
"""

from __future__ import annotations

import queue
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from corescope.analysis.flame import is_idle
from corescope.evidence import profile_query
from corescope.model.common import Diagnostic
from corescope.model.profiles import ProfileChunk, StackSample
from corescope.render import pprof
from corescope.runner import Runner
from corescope.sensors.base import Tap
from corescope.store.db import Store

APP_NAME = "corescope.cpu"
TOP_COMMS = 10
QUEUE_CHUNKS = 4
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Push:
    labels: dict[str, str]
    body: bytes  # gzipped pprof
    start: float
    end: float
    hz: int
    samples: int


def _label_value(v: str) -> str:
    # Pyroscope's name{k=v,...} syntax has no quoting: keep values to safe characters
    return "".join(c if c.isalnum() or c in "-_./:" else "_" for c in v)[:128] or "_"


def app_name(labels: dict[str, str]) -> str:
    inner = ",".join(f"{k}={_label_value(v)}" for k, v in labels.items())
    return f"{APP_NAME}{{{inner}}}"


def build_pushes(samples: Iterable[StackSample], node: str, hz: int, start: float,
                 end: float, top: int = TOP_COMMS) -> list[Push]:
    """Busy (non-idle) samples of one chunk → one pprof per (cpu, comm)."""
    per: dict[tuple[str, str], pprof.Samples] = {}
    counts: dict[str, dict[str, int]] = {}
    kept: list[StackSample] = []
    for s in samples:
        if is_idle(s):
            continue
        kept.append(s)
        cpu = "" if s.cpu is None else str(s.cpu)
        c = counts.setdefault(cpu, {})
        c[s.comm] = c.get(s.comm, 0) + 1
    busiest = {cpu: {k for k, _ in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:top]}
               for cpu, c in counts.items()}
    for s in kept:
        cpu = "" if s.cpu is None else str(s.cpu)
        comm = s.comm if s.comm in busiest[cpu] else "other"
        per.setdefault((cpu, comm), pprof.Samples()).add(s, idle=False)
    pushes = []
    for (cpu, comm), agg in sorted(per.items()):
        n = sum(agg.counts.values())
        body = pprof.to_pprof(agg, hz, time_nanos=int(start * 1e9),
                              duration_nanos=max(0, int((end - start) * 1e9)))
        pushes.append(Push({"node": node, "cpu": cpu, "comm": comm}, body, start, end, hz, n))
    return pushes


def _multipart(body: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"profile\"; "
            f"filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n")
    data = head.encode() + body + f"\r\n--{boundary}--\r\n".encode()
    return data, f"multipart/form-data; boundary={boundary}"


def send(url: str, push: Push, timeout: float = TIMEOUT_S) -> int:
    """POST one profile to URL (the /ingest endpoint); returns the HTTP status."""
    query = urllib.parse.urlencode({
        "name": app_name(push.labels), "from": int(push.start), "until": int(push.end) or 1,
        "format": "pprof", "sampleRate": push.hz, "spyName": "corescope",
    })
    sep = "&" if "?" in url else "?"
    data, ctype = _multipart(push.body)
    req = urllib.request.Request(url + sep + query, data=data, method="POST",
                                 headers={"Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return int(resp.status)


class PyroscopePusher(Tap):
    def __init__(self, url: str, store: Store, runner: Runner, node: str) -> None:
        self.url = url
        self.store = store
        self.runner = runner
        self.node = node
        self.sent = 0
        self.failed = 0
        self.dropped = 0
        self._warned = False
        self._q: queue.Queue[ProfileChunk | None] = queue.Queue(maxsize=QUEUE_CHUNKS)
        self._thread = threading.Thread(target=self._run, name="corescope-pyroscope",
                                        daemon=True)
        self._thread.start()

    def chunk(self, chunk: ProfileChunk) -> None:
        try:
            self._q.put_nowait(chunk)
        except queue.Full:
            self.dropped += 1
            self._say(f"push queue full: chunk {chunk.path} not pushed")

    def _say(self, msg: str) -> None:
        if not self._warned:  # once: a down server must not flood the log
            print(f"corescope record: pyroscope: {msg} (further problems not repeated)",
                  file=sys.stderr, flush=True)
            self._warned = True

    def _run(self) -> None:
        while True:
            chunk = self._q.get()
            if chunk is None:
                return
            try:
                self.push_chunk(chunk)
            except Exception as exc:  # keep the thread: the next chunk may go through
                self.failed += 1
                self._say(f"pushing {chunk.path} failed: {exc}")

    def push_chunk(self, chunk: ProfileChunk) -> int:
        diags: list[Diagnostic] = []
        # read as it is: turning it into columns here would put that work in the agent
        stream = profile_query.ring_samples(self.store, self.runner, chunk.wall_start,
                                            chunk.wall_end, None, diags, None, [chunk],
                                            migrate=False)
        pushes = build_pushes((s for s, _t in stream), self.node, chunk.hz,
                              chunk.wall_start, chunk.wall_end)
        ok = 0
        for p in pushes:
            try:
                status = send(self.url, p)
            except (OSError, urllib.error.URLError) as exc:
                self.failed += 1
                self._say(f"POST {self.url} failed: {exc}")
                continue
            if 200 <= status < 300:
                ok += 1
            else:
                self.failed += 1
                self._say(f"POST {self.url} answered {status}")
        self.sent += ok
        return ok

    def close(self, timeout: float = 30.0) -> None:
        """Finish what is queued (the chunk closed at shutdown included), then stop."""
        try:
            self._q.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)
