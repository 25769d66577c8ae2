"""Time travel over the profile ring.

A query picks only the chunks whose wall span meets the window. A chunk is `perf script`
text (symbolised when it closed, or imported): it is stream-decompressed through the block
parser, keeping the window's samples and CPU. Old stores also hold raw perf.data chunks:
those are decompressed to a private temporary file (perf needs a seekable file) and read
through `perf script --time <window on perf's clock> [-C cpu]`. Work is proportional to the
window, not the ring, and nothing holds a whole chunk in memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import math
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import zstandard

from corescope.errors import InvalidInput
from corescope.model.common import Diagnostic
from corescope.model.profiles import ProfileChunk, StackSample
from corescope.runner import Runner, ToolMissing
from corescope.sources import folded, perf_script
from corescope.sources.perf import PERF_MISSING, SCRIPT_FIELDS, decompress_file, time_arg
from corescope.sources.perf_import import InputError, open_binary, text_blocks
from corescope.store import profiles as ring
from corescope.store.db import Store

_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
__all__ = ["SCRIPT_FIELDS", "ring_samples", "script_blocks"]

Progress = Callable[[int, int, str], None]


BLOCK = 1 << 20  # text is handed to the parser in blocks this size: memory stays bounded


class NoSuchCpu(InvalidInput, ValueError):
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
                 chunks: list[ProfileChunk] | None = None,
                 whole: bool = False) -> Iterator[tuple[StackSample, float | None]]:
    """(sample, wall time) for every sample in [wall_start, wall_end), optionally one CPU.
    `whole`: every sample of the given chunks, whatever their span (folded stacks, which
    have no times, are read only then or when their declared span meets the window)."""
    diags = diags if diags is not None else []
    if chunks is None:
        chunks = ring.chunks_overlapping(store, wall_start, wall_end)
    for i, chunk in enumerate(chunks):
        win = (chunk.perf_start, chunk.perf_end) if whole else \
            chunk.perf_window(wall_start, wall_end)
        if win is None and not chunk.untimed:
            continue
        if progress is not None:
            progress(i + 1, len(chunks), chunk.path)
        src = Path(store.directory) / chunk.path
        if not src.exists():
            diags.append(Diagnostic("profile ring", f"chunk file missing: {chunk.path}"))
            continue
        if chunk.format == "perf.data":
            assert win is not None
            yield from _perf_data_samples(store, runner, chunk, src, win, cpu, diags)
        elif chunk.format == "folded":
            if cpu is not None:
                diags.append(Diagnostic(chunk.path, "folded stacks carry no CPU: left out "
                                        "of a per-CPU query"))
                continue
            for s in folded.parse_blocks(_chunk_text(src, chunk, diags), diags, chunk.path):
                yield s, None
        elif chunk.untimed:
            yield from _untimed_samples(src, chunk, cpu, diags)
        else:
            assert win is not None
            yield from _text_samples(src, chunk, win, cpu, diags)


def _chunk_text(src: Path, chunk: ProfileChunk, diags: list[Diagnostic]) -> Iterator[str]:
    """A chunk file's text in blocks; a damaged one keeps what was read and says so."""
    try:
        stream = open_binary(src)
    except InputError as exc:
        diags.append(Diagnostic("profile ring", f"cannot read {chunk.path}: {exc}"))
        return
    with stream:
        yield from text_blocks(stream, diags, chunk.path)


def _untimed_samples(src: Path, chunk: ProfileChunk, cpu: int | None,
                     diags: list[Diagnostic]) -> Iterator[tuple[StackSample, float | None]]:
    """`perf script -F` text without times: every sample, whole (of CPU `cpu` when the
    text names CPUs; without them it is left out of a per-CPU query, as folded stacks are)."""
    unknown = 0
    for s in perf_script.parse_blocks(_chunk_text(src, chunk, diags), diags, chunk.path, cpu):
        if cpu is not None and s.cpu != cpu:
            unknown += s.cpu is None
            continue
        yield s, None
    if unknown:
        diags.append(Diagnostic(chunk.path, f"{unknown} samples carry no CPU (-F without "
                                "cpu): left out of a per-CPU query"))


def _text_samples(src: Path, chunk: ProfileChunk, win: tuple[float, float], cpu: int | None,
                  diags: list[Diagnostic]) -> Iterator[tuple[StackSample, float | None]]:
    """A symbolised (or imported) chunk: stream-decompress, parse, keep the window's CPU."""
    lo, hi = win
    offset = chunk.clock_offset
    # the recorder's chunks come from one perf script, which prints in time order: stop at
    # the window's end (imported text may be in any order: read it all)
    ordered = chunk.recorded
    # what lies before the window is never wanted; what lies after it is, in a recorder's
    # chunk, the sign to stop reading
    hint = (lo, math.inf if ordered else hi)
    for s in perf_script.parse_blocks(_chunk_text(src, chunk, diags), diags, chunk.path, cpu,
                                      hint):
        t = s.time
        if t is None or not (lo <= t < hi):
            if ordered and t is not None and t >= hi:
                break
            continue  # the hand-over boundary belongs to the next chunk
        if cpu is not None and s.cpu != cpu:
            continue
        yield s, t + offset


def _perf_data_samples(store: Store, runner: Runner, chunk: ProfileChunk, src: Path,
                       win: tuple[float, float], cpu: int | None, diags: list[Diagnostic]
                       ) -> Iterator[tuple[StackSample, float | None]]:
    """A raw perf.data chunk (stores from before chunks were symbolised): perf needs a
    seekable file, so decompress to a private temporary one and run perf script on it."""
    work_dir = ring.profile_dir(Path(store.directory))
    fd, tmp = tempfile.mkstemp(prefix=".query-", suffix=".data", dir=work_dir)
    os.close(fd)
    try:
        try:
            decompress_file(src, Path(tmp))
        except (OSError, zstandard.ZstdError) as exc:
            diags.append(Diagnostic("profile ring", f"cannot decompress {chunk.path}: {exc}"))
            return
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


def file_samples(paths: Iterable[str | Path], cpu: int | None = None,
                 diags: list[Diagnostic] | None = None,
                 progress: Progress | None = None) -> Iterator[StackSample]:
    """Samples of saved `perf script` files read directly, whole (no store, no windows: the
    CLI imports them into a ring instead, see sources/perf_import)."""
    diags = diags if diags is not None else []
    paths = list(paths)
    for i, p in enumerate(paths):
        if progress is not None:
            progress(i + 1, len(paths), str(p))
        try:
            stream = open_binary(p)
        except InputError as exc:
            diags.append(Diagnostic(str(p), f"cannot read: {exc}"))
            continue
        with stream:
            for s in perf_script.parse_blocks(text_blocks(stream, diags, str(p)), diags,
                                              source=str(p)):
                if cpu is None or s.cpu == cpu:
                    yield s
