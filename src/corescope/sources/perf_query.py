"""Time travel over the profile ring, and reading `perf script` files offline.

A query picks only the chunks whose wall span meets the window, decompresses each to a
private temporary file (perf needs a seekable perf.data), and streams `perf script --time
<window on perf's clock> [-C cpu]` through the parser. Work is proportional to the window,
not the ring, and nothing holds a whole file in memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import io
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import zstandard

from corescope.model.common import Diagnostic
from corescope.model.profiles import ProfileChunk, StackSample
from corescope.runner import Runner, ToolMissing
from corescope.sources import perf_script
from corescope.sources.perf import PERF_MISSING, decompress_file, time_arg
from corescope.store import profiles as ring
from corescope.store.db import Store

_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
SCRIPT_FIELDS = "comm,pid,tid,cpu,time,event,ip,sym,dso"

Progress = Callable[[int, int, str], None]


BLOCK = 1 << 20  # text is handed to the parser in blocks this size: memory stays bounded


class NoSuchCpu(ValueError):
    """`perf script -C N` for a CPU the recording does not have: a usage error, not a note."""


def script_blocks(runner: Runner, data: Path, window: tuple[float, float] | None = None,
                  cpu: int | None = None, diags: list[Diagnostic] | None = None,
                  perf: str = "perf") -> Iterator[str]:
    """Stream `perf script` text for one perf.data file, in blocks of up to BLOCK chars."""
    argv = [perf, "script", "-i", str(data), "-F", SCRIPT_FIELDS]
    if window is not None:
        argv += ["--time", time_arg(*window)]
    if cpu is not None:
        argv += ["-C", str(int(cpu))]
    with tempfile.TemporaryFile() as err:
        try:
            proc = runner.start(argv, stdout=subprocess.PIPE, stderr=err)
        except ToolMissing:
            if diags is not None:
                diags.append(Diagnostic("perf script", PERF_MISSING))
            return
        assert proc.stdout is not None
        # a 1 MiB pipe lets perf run ahead of the parser instead of waking it every 64 KiB
        with contextlib.suppress(OSError):
            fcntl.fcntl(proc.stdout.fileno(), _F_SETPIPE_SZ, 1 << 20)
        try:
            text = io.TextIOWrapper(proc.stdout, encoding="utf-8", errors="replace")
            while block := text.read(BLOCK):
                yield block
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.returncode not in (0, -9) and diags is not None:
                err.seek(0)
                text = err.read().decode(errors="replace").strip()
                if cpu is not None and "Requested CPU" in text:
                    raise NoSuchCpu(f"--cpu {cpu}: the profile has no such CPU (perf script: "
                                    f"{text.splitlines()[-1]})")
                diags.append(Diagnostic("perf script", f"exit {proc.returncode} on "
                                        f"{data.name}: {text.splitlines()[-1] if text else ''}"))


def ring_samples(store: Store, runner: Runner, wall_start: float, wall_end: float,
                 cpu: int | None = None, diags: list[Diagnostic] | None = None,
                 progress: Progress | None = None,
                 chunks: list[ProfileChunk] | None = None) -> Iterator[tuple[StackSample, float]]:
    """(sample, wall time) for every sample in [wall_start, wall_end), optionally one CPU."""
    diags = diags if diags is not None else []
    if chunks is None:
        chunks = ring.chunks_overlapping(store, wall_start, wall_end)
    work_dir = ring.profile_dir(Path(store.directory))
    for i, chunk in enumerate(chunks):
        win = chunk.perf_window(wall_start, wall_end)
        if win is None:
            continue
        if progress is not None:
            progress(i + 1, len(chunks), chunk.path)
        src = Path(store.directory) / chunk.path
        if not src.exists():
            diags.append(Diagnostic("profile ring", f"chunk file missing: {chunk.path}"))
            continue
        fd, tmp = tempfile.mkstemp(prefix=".query-", suffix=".data", dir=work_dir)
        os.close(fd)
        try:
            try:
                decompress_file(src, Path(tmp))
            except (OSError, zstandard.ZstdError) as exc:
                diags.append(Diagnostic("profile ring", f"cannot decompress {chunk.path}: {exc}"))
                continue
            lo, hi = win
            blocks = script_blocks(runner, Path(tmp), win, cpu, diags)
            for s in perf_script.parse_blocks(blocks, diags, source=chunk.path):
                if s.time is None or not (lo <= s.time < hi):
                    continue  # the hand-over boundary belongs to the next chunk
                if cpu is not None and s.cpu != cpu:
                    continue
                yield s, s.time + chunk.clock_offset
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def open_blocks(path: Path) -> Iterator[str]:
    """Text of a `perf script` file, plain, gzipped or zstd-compressed (by magic), in blocks
    of up to BLOCK chars."""
    with open(path, "rb") as raw:
        magic = raw.read(4)
        raw.seek(0)
        stream: io.RawIOBase | io.BufferedIOBase | gzip.GzipFile
        if magic[:2] == b"\x1f\x8b":
            stream = gzip.GzipFile(fileobj=raw)
        elif magic == b"\x28\xb5\x2f\xfd":
            stream = zstandard.ZstdDecompressor().stream_reader(raw)  # type: ignore[assignment]
        else:
            stream = raw
        text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace")  # type: ignore[arg-type]
        try:
            while block := text.read(BLOCK):
                yield block
        except (OSError, EOFError, zstandard.ZstdError) as exc:
            # a truncated .gz/.zst: keep what was read, say where it stopped
            raise _Truncated(str(exc)) from exc


class _Truncated(Exception):
    pass


def file_samples(paths: Iterable[Path], cpu: int | None = None,
                 diags: list[Diagnostic] | None = None,
                 progress: Progress | None = None) -> Iterator[StackSample]:
    """Samples from existing `perf script` outputs (the user's own captures), no store."""
    diags = diags if diags is not None else []
    paths = list(paths)
    for i, p in enumerate(paths):
        if progress is not None:
            progress(i + 1, len(paths), str(p))
        try:
            for s in perf_script.parse_blocks(open_blocks(p), diags, source=str(p)):
                if cpu is not None and s.cpu != cpu:
                    continue
                yield s
        except _Truncated as exc:
            diags.append(Diagnostic(str(p), f"compressed file ends early: {exc}"))
        except OSError as exc:
            diags.append(Diagnostic(str(p), f"cannot read: {exc}"))
