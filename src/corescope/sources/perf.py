"""The recorder side of the profile ring: `perf record -a -g` in rotating chunks.

Each chunk is its own `perf record` process. The next process starts `overlap_s` before the
current one is stopped, so there is no gap while perf starts (about 0.2 s here); the hand-over
instant is the boundary, and each chunk's index row owns [previous boundary, boundary) on
perf's clock, so a query never counts a sample twice. A fresh process per chunk also bounds
perf's memory: long-running perf processes bloat. If one still grows past `rss_limit` it is
rotated early; if perf dies it is restarted (with back-off when it keeps dying).

Symbols: each finished chunk is symbolised at once (`perf script` with the ring's field list
over the chunk's own stretch of time) and only that text is kept, zstd-compressed. A process
that exits, or whose binary is deleted (a container torn down), after its chunk closed still
resolves at query time, which a perf.data read hours later cannot promise. The raw perf.data
is not kept: its stacks are in the text, and a build-id cache would grow with every binary the
node ever ran.

Clock alignment: perf runs with `-k CLOCK_MONOTONIC`, so sample times are CLOCK_MONOTONIC
seconds. At each spawn we read CLOCK_MONOTONIC and the wall clock together (`capture_anchor`)
and store the offset with the chunk; `ClockAnchor.to_wall` is the only conversion.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import zstandard

from corescope.model.profiles import ClockAnchor, ProfileChunk
from corescope.runner import Runner, ToolMissing
from corescope.sources.clock import read_offset

log = logging.getLogger(__name__)

CLOCKID = "CLOCK_MONOTONIC"
# What the ring keeps of each sample (and what queries of old perf.data chunks ask for).
SCRIPT_FIELDS = "comm,pid,tid,cpu,time,event,ip,sym,dso"
TEXT_SUFFIX = ".txt.zst"  # a symbolised chunk: `perf script` text, zstd
PERF_SUFFIX = ".perf.zst"  # a raw perf.data chunk (stores written before symbolising)
PERF_MISSING = "perf not found: install linux-perf, or run with --no-profile"
DEFAULT_RSS_LIMIT = 512 * 1024 * 1024


def mono() -> float:
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def capture_anchor(reads: int = 5) -> ClockAnchor:
    """CLOCK_MONOTONIC (perf's clock, `-k CLOCK_MONOTONIC`) and the wall clock, read together."""
    r = read_offset(time.CLOCK_MONOTONIC, reads)
    return ClockAnchor(perf=r.taken_wall - r.offset_s, wall=r.taken_wall)


def record_argv(perf: str, hz: int, out: Path) -> list[str]:
    # cpu-clock: a software event, so it works in VMs without PMU access.
    # -N: no ~/.debug build-id cache, which would grow without bound next to our ring.
    return [perf, "record", "-e", "cpu-clock", "-F", str(int(hz)), "-a", "-g",
            "-k", CLOCKID, "-N", "-q", "-o", str(out)]


def probe(runner: Runner, work_dir: Path, hz: int = 49) -> str | None:
    """None if `perf record -a -g` works here, else a message saying why not."""
    if runner.which("perf") is None:
        return PERF_MISSING
    fd, tmp = tempfile.mkstemp(prefix=".probe-", suffix=".data", dir=work_dir)
    os.close(fd)
    try:
        argv = [*record_argv("perf", hz, Path(tmp)), "--", "sleep", "0.1"]
        try:
            res = runner.run(argv, timeout=30)
        except ToolMissing:
            return PERF_MISSING
        if res.ok:
            return None
        err = (res.stderr or "").strip()
        if "not found for kernel" in err or "command not found" in err:
            return f"{PERF_MISSING} ({err.splitlines()[0]})"
        if "paranoid" in err or "ermission" in err or "not permitted" in err:
            return ("perf not allowed: system-wide profiling needs root or "
                    "kernel.perf_event_paranoid <= -1; or run with --no-profile")
        first = err.splitlines()[0] if err else f"exit {res.returncode}"
        return f"perf record failed: {first}; or run with --no-profile"
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def read_rss(pid: int) -> int | None:
    """Resident bytes of a process, from /proc/<pid>/status (None if gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def compress_file(src: Path, dst: Path, level: int = 3) -> int:
    """zstd-compress src into dst (created 0600), streaming; returns dst's size."""
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    cctx = zstandard.ZstdCompressor(level=level)
    with open(src, "rb") as fin, os.fdopen(fd, "wb") as fout:
        cctx.copy_stream(fin, fout, size=src.stat().st_size)
    return dst.stat().st_size


def decompress_file(src: Path, dst: Path) -> None:
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    dctx = zstandard.ZstdDecompressor()
    with open(src, "rb") as fin, os.fdopen(fd, "wb") as fout:
        dctx.copy_stream(fin, fout)


@dataclass
class _Running:
    seq: int
    proc: subprocess.Popen[bytes]
    raw: Path
    errfile: Path
    anchor: ClockAnchor
    own_start: float  # perf clock


class PerfRing:
    """Runs perf in rotating chunks on its own thread and hands each finished, compressed
    chunk to `on_chunk`. `on_problem` hears about restarts and unreadable chunks."""

    def __init__(
        self,
        runner: Runner,
        out_dir: Path,
        rel_prefix: str,
        hz: int = 49,
        chunk_s: float = 120.0,
        on_chunk: Callable[[ProfileChunk], None] | None = None,
        on_problem: Callable[[str], None] | None = None,
        rss_limit: int = DEFAULT_RSS_LIMIT,
        overlap_s: float = 1.0,
        perf: str = "perf",
    ) -> None:
        self.runner = runner
        self.out_dir = Path(out_dir)
        self.rel_prefix = rel_prefix  # chunk path as the index stores it: <prefix>/<name>
        self.hz = int(hz)
        self.chunk_s = max(1.0, float(chunk_s))
        self.overlap_s = min(max(0.0, overlap_s), self.chunk_s / 2)
        self.on_chunk = on_chunk or (lambda c: None)
        self.on_problem = on_problem or (lambda m: log.warning("%s", m))
        self.rss_limit = rss_limit
        self.perf = perf
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seq = int(time.time() * 1000)
        self.restarts = 0
        self.rss_restarts = 0
        self.chunks_written = 0
        self.last_error: str | None = None
        self._current: _Running | None = None
        # what the ring lost, for the recorder's end report: chunks it could not read or
        # store (wall start, wall end, why), and seconds without a running perf after one died
        self.dropped: list[tuple[float, float, str]] = []
        self.down_s = 0.0
        # why the last chunk could not be stored (cleared by the next one stored)
        self.store_error: str | None = None

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="corescope-perf", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _cur_pid(self) -> int | None:
        """The running perf's pid (tests use it to kill perf under the ring)."""
        cur = self._current
        return cur.proc.pid if cur is not None and cur.proc.poll() is None else None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # --- the loop ------------------------------------------------------------------------

    def _spawn(self, own_start: float | None = None) -> _Running:
        self._seq += 1
        name = f"chunk-{self._seq}"
        raw = self.out_dir / f"{name}.data"
        errfile = self.out_dir / f"{name}.err"
        anchor = capture_anchor()
        # perf's output and its stderr are born 0600 by the modes they are made with: the
        # stderr file's, and perf's own umask (set in the child alone); narrowing ours would
        # make every file the recorder's other threads create meanwhile 0600 too
        fd = os.open(errfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with open(fd, "wb") as err:
            proc = self.runner.start(record_argv(self.perf, self.hz, raw), stderr=err,
                                     umask=0o077)
        return _Running(self._seq, proc, raw, errfile, anchor,
                        anchor.perf if own_start is None else own_start)

    def _run(self) -> None:
        backoff = 1.0
        cur: _Running | None = None
        nxt: _Running | None = None
        try:
            cur = self._spawn()
            while not self._stop.wait(0.25):
                self._current = cur
                now = mono()
                if cur.proc.poll() is not None:
                    msg = self._died_message(cur)
                    self.last_error = msg
                    self.restarts += 1
                    self.on_problem(f"{msg}; restarting perf")
                    self._finish(cur, now)
                    if nxt is not None:
                        cur, nxt = nxt, None
                        cur.own_start = now
                        continue
                    if self._stop.wait(backoff):
                        cur = None
                        self.down_s += mono() - now
                        break
                    backoff = min(backoff * 2, 60.0)
                    cur = self._spawn()
                    self.down_s += cur.own_start - now
                    continue
                if now - cur.own_start > 2 * self.chunk_s:
                    backoff = 1.0  # it ran a good while: it is healthy again
                over_rss = False
                rss = read_rss(cur.proc.pid)
                if rss is not None and rss > self.rss_limit:
                    over_rss = True
                    self.rss_restarts += 1
                    self.on_problem(f"perf RSS {rss >> 20} MiB over the limit "
                                    f"{self.rss_limit >> 20} MiB; rotating early")
                due = cur.own_start + self.chunk_s
                if nxt is None and (over_rss or now >= due - self.overlap_s):
                    nxt = self._spawn()
                if over_rss or now >= due:
                    assert nxt is not None
                    boundary = mono()
                    self._halt(cur)
                    nxt.own_start = boundary
                    self._finish(cur, boundary)
                    cur, nxt = nxt, None
        except Exception as exc:
            self.last_error = f"profile ring stopped: {exc}"
            self.on_problem(self.last_error)
        finally:
            end = mono()
            for r in (cur, nxt):
                if r is not None:
                    self._halt(r)
            if cur is not None:
                self._finish(cur, end)
            if nxt is not None:
                self._discard(nxt)

    def _halt(self, r: _Running) -> None:
        if r.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                r.proc.send_signal(signal.SIGINT)  # perf flushes and writes its header
            try:
                r.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                r.proc.kill()
                r.proc.wait()

    def _died_message(self, r: _Running) -> str:
        err = ""
        with contextlib.suppress(OSError):
            err = r.errfile.read_text(errors="replace").strip()
        tail = err.splitlines()[-1] if err else ""
        return f"perf record exited with code {r.proc.returncode}" + (f": {tail}" if tail else "")

    def _discard(self, r: _Running) -> None:
        for p in (r.raw, r.errfile):
            with contextlib.suppress(OSError):
                p.unlink()

    def _finish(self, r: _Running, own_end: float) -> None:
        """Symbolise the chunk's own samples into compressed text, hand it to on_chunk."""
        try:
            if not r.raw.exists() or own_end <= r.own_start:
                return
            raw_bytes = r.raw.stat().st_size
            dst = r.raw.with_suffix(TEXT_SUFFIX)
            done = symbolise(self.runner, r.raw, r.own_start, own_end, dst, self.perf)
            if isinstance(done, str):
                self._drop(r, own_end, f"unreadable by perf script ({done})")
                with contextlib.suppress(OSError):
                    dst.unlink()
                return
            chunk = ProfileChunk(
                id=0, path=f"{self.rel_prefix}/{dst.name}", clockid=CLOCKID,
                perf_start=r.own_start, perf_end=own_end,
                wall_start=r.anchor.to_wall(r.own_start), wall_end=r.anchor.to_wall(own_end),
                clock_offset=r.anchor.offset, bytes=dst.stat().st_size, raw_bytes=raw_bytes,
                samples=done, hz=self.hz,
            )
            self.on_chunk(chunk)
            self.chunks_written += 1
            self.store_error = None
        except Exception as exc:
            self.store_error = str(exc)
            self._drop(r, own_end, f"could not be stored: {exc}")
            with contextlib.suppress(OSError):
                r.raw.with_suffix(TEXT_SUFFIX).unlink()
        finally:
            self._discard(r)

    def _drop(self, r: _Running, own_end: float, why: str) -> None:
        self.dropped.append((r.anchor.to_wall(r.own_start), r.anchor.to_wall(own_end), why))
        self.on_problem(f"chunk {r.raw.name} {why}; dropped")


def time_arg(lo: float, hi: float) -> str:
    """`perf script --time` takes sec.nsec; nine decimals keep nanoseconds exact."""
    return f"{lo:.9f},{hi:.9f}"


def symbolise(runner: Runner, raw: Path, lo: float, hi: float, dst: Path,
              perf: str = "perf", level: int = 1) -> int | str:
    """`perf script -F SCRIPT_FIELDS --time lo,hi` of `raw`, streamed into `dst` (created 0600)
    zstd-compressed. Returns the number of samples written, or why perf could not read it.
    Level 1: the agent pays this at every chunk close, and the text lives only until the
    first query turns it into columns; it costs a little less than level 3 for files 2-3 %
    larger."""
    argv = [perf, "script", "-i", str(raw), "-F", SCRIPT_FIELDS, "--time", time_arg(lo, hi)]
    rfd, wfd = os.pipe()
    with tempfile.TemporaryFile() as err, open(rfd, "rb", buffering=0) as reader:
        try:
            proc = runner.start(argv, stdout=wfd, stderr=err)
        except ToolMissing:
            return PERF_MISSING
        finally:
            os.close(wfd)  # perf holds its own copy: ours would keep the pipe from ending
        samples = 0
        last = b""
        try:
            fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as fout, \
                    zstandard.ZstdCompressor(level=level).stream_writer(fout) as out:
                for block in _drain(reader.fileno()):
                    # with -g every record ends in a blank line: count those
                    samples += block.count(b"\n\n") + (last == b"\n" and block[:1] == b"\n")
                    last = block[-1:]
                    out.write(block)
        finally:
            reader.close()  # before the wait: a perf still writing ends on EPIPE
            rc = proc.wait()
        if rc != 0:
            err.seek(0)
            lines = err.read().decode(errors="replace").strip().splitlines()
            return lines[-1] if lines else f"perf script exit {rc}"
    return samples


_PIPE_BYTES = 1 << 20


def _drain(rfd: int) -> Iterator[bytes]:
    """What the writer of pipe `rfd` writes, in blocks of up to 1 MB, until it closes. perf
    writes 4 KB at a time, and a reader waiting in read() is woken for each write: about
    6,000 wake-ups (both sides, ~0.1 s of CPU on this VM) per 140k samples. The pipe is made
    1 MB deep and, after a short read, the reader naps 10 ms so the writer fills it meanwhile:
    a few dozen reads a chunk (bench/profile_ring_columns.py: the agent's close cost)."""
    with contextlib.suppress(OSError):  # the default depth where the kernel says no
        fcntl.fcntl(rfd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    while block := os.read(rfd, _PIPE_BYTES):
        yield block
        if len(block) < _PIPE_BYTES // 2:
            time.sleep(0.01)


def count_samples(runner: Runner, raw: Path, lo: float, hi: float,
                  perf: str = "perf") -> int | None:
    """Samples of `raw` inside [lo, hi] on perf's clock, or None if perf cannot read it."""
    try:
        res = runner.run([perf, "script", "-i", str(raw), "-F", "time", "--time",
                          time_arg(lo, hi)], timeout=300)
    except ToolMissing:
        return None
    if not res.ok:
        return None
    return sum(1 for line in res.stdout.splitlines() if line.strip())
