"""Time travel over the profile ring.

A query picks only the chunks whose wall span meets the window. A chunk is `perf script`
text (symbolised when it closed, or imported): it is stream-decompressed through the block
parser, keeping the window's samples and CPU. Old stores also hold raw perf.data chunks:
those are decompressed to a private temporary file (perf needs a seekable file) and read
through `perf script --time <window on perf's clock> [-C cpu]`. Work is proportional to the
window, not the ring, and nothing holds a whole chunk in memory.

Chunks written since the column format (see profile_columns) hold samples as columns: a
query selects rows by time, CPU, pid and comm on arrays, and `ring_profile` aggregates them
by stack id without making an object per sample. A text or perf.data chunk is turned into
columns the first time a query reads it (when the store is writable): `record` closes a
chunk as compressed text, which costs the agent no parse, and the first query pays the
parse once; `migrate=False` reads it as it is.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import fcntl
import io
import math
import os
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np
import zstandard

from corescope.errors import InvalidInput
from corescope.model.common import Diagnostic
from corescope.model.profiles import ProfileChunk, StackSample
from corescope.runner import Runner, ToolMissing
from corescope.sources import folded, perf_script
from corescope.sources.perf import PERF_MISSING, SCRIPT_FIELDS, decompress_file, time_arg
from corescope.sources.perf_import import InputError, open_binary, text_blocks
from corescope.store import profile_columns as pcols
from corescope.store import profiles as ring
from corescope.store.db import Store

_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
__all__ = ["SCRIPT_FIELDS", "ring_samples", "script_blocks"]

Progress = Callable[[int, int, str], None]
_RECENT_LOCK = threading.Lock()


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
                said = err.read().decode(errors="replace").strip()
                if cpu is not None and "Requested CPU" in said:
                    raise NoSuchCpu(f"--cpu {cpu}: the profile has no such CPU (perf script: "
                                    f"{said.splitlines()[-1]})")
                diags.append(Diagnostic("perf script", f"exit {proc.returncode} on "
                                        f"{data.name}: {said.splitlines()[-1] if said else ''}"))


def ring_samples(store: Store, runner: Runner, wall_start: float, wall_end: float,
                 cpu: int | None = None, diags: list[Diagnostic] | None = None,
                 progress: Progress | None = None,
                 chunks: list[ProfileChunk] | None = None,
                 whole: bool = False,
                 migrate: bool = True) -> Iterator[tuple[StackSample, float | None]]:
    """(sample, wall time) for every sample in [wall_start, wall_end), optionally one CPU.
    `whole`: every sample of the given chunks, whatever their span (folded stacks, which
    have no times, are read only then or when their declared span meets the window)."""
    diags = diags if diags is not None else []
    for chunk, src, cols, win in to_read(store, runner, wall_start, wall_end, diags,
                                          progress, chunks, whole, migrate):
        if cols is not None:
            assert win is not None
            off = chunk.clock_offset
            for s in cols.samples(rows_of(cols, chunk, win, cpu)):
                assert s.time is not None
                yield s, s.time + off
        elif chunk.format == "perf.data":
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


def to_read(store: Store, runner: Runner, wall_start: float, wall_end: float,
             diags: list[Diagnostic], progress: Progress | None,
             chunks: list[ProfileChunk] | None, whole: bool, migrate: bool
             ) -> Iterator[tuple[ProfileChunk, Path, pcols.Columns | None,
                                 tuple[float, float] | None]]:
    """(chunk, file, columns or None, perf-clock window) of each chunk the window reads."""
    if chunks is None:
        chunks = ring.chunks_overlapping(store, wall_start, wall_end)
    for i, chunk in enumerate(chunks):
        win = (chunk.perf_start, chunk.perf_end) if whole else \
            chunk.perf_window(wall_start, wall_end)
        if win is None and not chunk.untimed:
            continue
        if progress is not None:
            progress(i + 1, len(chunks), chunk.path)
        got = _opened(store, runner, chunk, diags, migrate)
        if got is not None:
            yield (*got, win)


def _opened(store: Store, runner: Runner, chunk: ProfileChunk, diags: list[Diagnostic],
            migrate: bool) -> tuple[ProfileChunk, Path, pcols.Columns | None] | None:
    """The chunk as it is to be read: (chunk, file, its columns when it has them), migrating a
    text or perf.data chunk to columns first when `migrate`; None (and a note) when its file
    is missing or unreadable."""
    src = Path(store.directory) / chunk.path
    if not src.exists():
        # a concurrent reader may have just migrated it: the index says where it went
        now = ring.chunk_by_id(store, chunk.id)
        if now is None or now.path == chunk.path:
            diags.append(Diagnostic("profile ring", f"chunk file missing: {chunk.path}"))
            return None
        chunk, src = now, Path(store.directory) / now.path
    if migrate and chunk.format in ("text", "perf.data") and not chunk.untimed:
        new = migrate_chunk(store, runner, chunk)
        if new is not None:
            chunk, src = new, Path(store.directory) / new.path
    if chunk.format != "columns":
        return chunk, src, None
    try:
        cols = _read_columns(src, chunk.path)
    except pcols.ColumnsError as exc:
        diags.append(Diagnostic("profile ring", str(exc)))
        return None
    diags.extend(cols.notes)
    return chunk, src, cols


# serve asks for ranges of the same few chunks click after click (a range, its baseline,
# the heatmap around it): their columns and stacks stay decoded for the next request
_RECENT: collections.OrderedDict[tuple[str, int, int], pcols.Columns] = \
    collections.OrderedDict()
_RECENT_MAX = 8


def _read_columns(src: Path, rel: str) -> pcols.Columns:
    try:
        st = src.stat()
    except OSError as exc:
        raise pcols.ColumnsError(f"cannot read {rel}: {exc}") from exc
    key = (str(src), st.st_mtime_ns, st.st_size)
    with _RECENT_LOCK:
        got = _RECENT.get(key)
        if got is not None:
            _RECENT.move_to_end(key)
            return got
    cols = pcols.read(src, rel, perf_script.intern_frame)
    with _RECENT_LOCK:
        _RECENT[key] = cols
        while len(_RECENT) > _RECENT_MAX:
            _RECENT.popitem(last=False)
    return cols


def rows_of(cols: pcols.Columns, chunk: ProfileChunk, win: tuple[float, float],
          cpu: int | None) -> np.ndarray:
    """Row numbers of the window [lo, hi) on perf's clock (and CPU `cpu`), in file order. A
    recorder's chunk is read as its text was: up to the first sample at or past the window's
    end (perf script prints in time order; imported text may be in any order)."""
    lo, hi = win
    t = cols.col("time")
    if cols.ordered:
        rows = np.arange(np.searchsorted(t, lo, "left"), np.searchsorted(t, hi, "left"))
    else:
        if chunk.recorded:
            past = np.flatnonzero(t >= hi)
            if past.size:
                t = t[: past[0]]
        rows = np.flatnonzero((t >= lo) & (t < hi))
    if cpu is not None and rows.size:
        rows = rows[cols.col("cpu")[rows] == cpu]
    return rows


def columns_from_stream(stream: BinaryIO, dst: Path, name: str) -> int:
    """`perf script` text (the ring's fields) from `stream` into a column chunk at `dst`:
    how the recorder keeps a chunk when it closes. Returns the number of samples."""
    b = pcols.ColumnsBuilder()
    b.extend(perf_script.parse_blocks(text_blocks(stream, b.notes, name), b.notes, name))
    b.write(dst)
    return len(b)


def migrate_chunk(store: Store, runner: Runner, chunk: ProfileChunk
                  ) -> ProfileChunk | None:
    """Turn a text or raw perf.data chunk into a column chunk holding the same samples, and
    point its index row at it. None when it cannot (a read-only store, perf missing for a
    perf.data chunk): the chunk is then read as it is. New file, index, old file, in that
    order: a crash in between leaves an orphan file, never a row without its file."""
    if chunk.untimed or chunk.format not in ("text", "perf.data"):
        return None
    src = Path(store.directory) / chunk.path
    head, _, base = chunk.path.rpartition("/")
    stem = base.split(".", 1)[0]
    name = f"{stem}.{uuid.uuid4().hex[:8]}{pcols.SUFFIX}"
    rel = f"{head}/{name}" if head else name
    dst = Path(store.directory) / rel
    b = pcols.ColumnsBuilder()
    try:
        if chunk.format == "text":
            b.extend(perf_script.parse_blocks(_chunk_text(src, chunk, b.notes), b.notes,
                                              chunk.path))
        else:
            win = (chunk.perf_start, chunk.perf_end)
            samples = list(_perf_data_samples(store, runner, chunk, src, win, None, b.notes))
            if not samples and any(d.source == "perf script" for d in b.notes):
                return None  # perf could not read it here: leave it for perf at query time
            b.extend(s for s, _t in samples)
        size = b.write(dst)
    except (OSError, pcols.ColumnsError):
        return None
    try:
        moved = ring.move_chunk(store, chunk, rel, size)
    except Exception:  # a read-only store: read the old file as it is
        moved = False
    if not moved:
        with contextlib.suppress(OSError):
            dst.unlink()
        return None
    with contextlib.suppress(OSError):
        src.unlink()
    return dataclasses.replace(chunk, path=rel, bytes=size)


def migrate_all(store: Store, runner: Runner) -> int:
    """Migrate every text and perf.data chunk of the ring, oldest first; returns how many
    were migrated."""
    n = 0
    for chunk in ring.all_chunks(store):
        if chunk.format in ("text", "perf.data") and not chunk.untimed and \
                (Path(store.directory) / chunk.path).exists():
            n += migrate_chunk(store, runner, chunk) is not None
    return n


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
