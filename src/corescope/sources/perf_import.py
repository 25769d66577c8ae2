"""Reading saved profiles for the ring: `perf script` text (one file, stdin, or a folder of
chunks; plain, gzip or zstd; either clock) and folded-stack files, opened, sniffed and scanned
(samples, CPUs, time span, clock) as they stream. Pure: the ring's chunks are written by
ingest/perf_write.py, which tees the stream into the chunk while `scan` counts it, so the
input is read once.

Clocks: `perf script` prints perf's clock. Values of 10^9 s or more are the wall clock
(`perf record -k CLOCK_REALTIME`: 10^9 s of uptime would be 31 years); smaller ones are perf's
default boot-relative clock, anchored like dmesg by the boot's wall time when one is given,
else kept on perf's own clock ("unanchored": windows are then perf seconds).
"""

from __future__ import annotations

import codecs
import gzip
import io
import itertools
import math
import os
import stat
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, cast

import zstandard

from corescope.errors import InvalidInput
from corescope.model.common import Diagnostic
from corescope.model.profiles import NO_CLOCK, UNANCHORED, ProfileChunk, StackSample
from corescope.sources import folded, perf_layout, perf_script
from corescope.sources.artifacts.content import DECODE_ERRORS
from corescope.sources.perf_layout import Layout

EPOCH_MIN = 1e9
BOOT_ANCHORED = "boot-relative"  # clockid of boot-relative text anchored by a boot time
REALTIME = "CLOCK_REALTIME"
BLOCK = 1 << 20
STDIN = "-"
# the smallest step perf prints (microseconds): a chunk owns [first, last + this)
TICK = 1e-6


class InputError(InvalidInput):
    """An input that cannot be read at all (the message says why)."""


@dataclass
class Imported:
    """What one input held and where it went."""

    name: str
    kind: str | None  # "perf_script" | "folded" | None (not a profile)
    samples: int = 0
    first: float | None = None  # times as the input prints them
    last: float | None = None
    clock: str = "none"  # "epoch" | "boot" | "none" (folded)
    cpus: tuple[int, ...] = ()
    events: dict[str, int] = field(default_factory=dict)
    hz: int = 0
    chunk: ProfileChunk | None = None
    skipped: str | None = None  # why nothing was imported
    layout: Layout | None = None  # the header fields `perf script -F` printed


# why a `perf script` text without times cannot go where times are needed
NO_TIME = ("no sample has a time stamp (`perf script -F` without `time`): it cannot be "
           "placed in a time window; print it again with `time` in -F (`flame "
           "--perf-script` reads it as it is, whole)")


class _ZstdReader(io.RawIOBase):
    """zstd frames (one or several, concatenated) decompressed as a stream. Unlike
    zstandard's stream_reader, a frame cut short raises EOFError instead of ending quietly:
    a truncated capture must say so."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._d = zstandard.ZstdDecompressor().decompressobj()
        self._buf = b""
        self._started = False  # inside a frame: EOF here means truncation

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._buf:
            data = self._d.unused_data if self._d.eof else b""
            if self._d.eof:
                self._d = zstandard.ZstdDecompressor().decompressobj()
                self._started = False
            if not data:
                data = self._raw.read(BLOCK)
            if not data:
                if self._started:
                    raise EOFError("zstd stream ends inside a frame")
                return 0
            self._started = True
            self._buf = self._d.decompress(data)
            if self._d.eof and not self._d.unused_data:
                self._started = False
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def open_binary(source: str | Path | BinaryIO) -> BinaryIO:
    """A byte stream of the input, gunzipped or zstd-decompressed by its magic bytes. Reads
    pipes and stdin (the magic is peeked, never seeked); refuses what is not a regular file
    or a pipe (a device would never end)."""
    if isinstance(source, str | Path):
        if str(source) == STDIN:
            raw: BinaryIO = sys.stdin.buffer
        else:
            try:
                fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK)
            except OSError as exc:
                raise InputError(f"cannot open: {exc.strerror or exc}") from exc
            mode = os.fstat(fd).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
                os.close(fd)
                raise InputError("not a regular file or a pipe")
            os.set_blocking(fd, True)
            raw = os.fdopen(fd, "rb")
    else:
        raw = source
    # the magic is peeked: a stream that can peek is read as it is, any other is buffered
    buf = (cast(io.BufferedReader, raw) if hasattr(raw, "peek")
           else io.BufferedReader(cast(io.RawIOBase, raw)))
    magic = buf.peek(4)[:4]
    if magic[:2] == b"\x1f\x8b":
        return cast(BinaryIO, gzip.GzipFile(fileobj=buf))
    if magic == b"\x28\xb5\x2f\xfd":
        return cast(BinaryIO, io.BufferedReader(_ZstdReader(buf)))
    return buf


def text_blocks(stream: BinaryIO, diags: list[Diagnostic], name: str) -> Iterator[str]:
    """The input's text in blocks of up to BLOCK bytes; a compressed input that ends early
    keeps everything decoded before the cut and says so."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    read = getattr(stream, "read1", stream.read)  # one underlying read: a cut loses nothing
    while True:
        try:
            data = read(BLOCK)
        except DECODE_ERRORS as exc:  # damaged gzip data is zlib.error
            diags.append(Diagnostic(name, f"input ends early or is corrupt: {exc}"))
            break
        if not data:
            break
        if text := decoder.decode(data):
            yield text
    if text := decoder.decode(b"", final=True):
        yield text


def expand(paths: Iterable[str | Path]) -> list[str | Path]:
    """Inputs in order: a directory stands for every regular file under it (sorted by path,
    hidden files skipped), `-` for stdin."""
    out: list[str | Path] = []
    for p in paths:
        if str(p) == STDIN:
            out.append(STDIN)
            continue
        p = Path(p)
        if p.is_dir():
            found = []
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                found += [Path(dirpath) / f for f in filenames if not f.startswith(".")]
            out += sorted(found)
        else:
            out.append(p)
    return out


def _hz_from(block: str, layout: Layout) -> int:
    """cpu-clock's period is nanoseconds between samples: the first default-format header
    that prints one gives the frequency. 0 when unknown (the ring's -F has no period)."""
    if not layout.generic:
        for head in perf_layout.headers(block.split("\n", perf_layout.INFER_LINES)):
            m = layout.header.match(head)
            if m:
                return _hz_of(m["period"], m["event"])
        return 0
    for line in block.split("\n", 2000)[:2000]:
        if line[:1] in ("\t", " ", "#", ""):
            continue
        m = perf_script.HEADER.match(line)
        if m and perf_script.sideband_kind(m):
            continue  # --show-task-events lines come before the first sample
        if m:
            return _hz_of(m["period"], m["event"])
    return 0


def _hz_of(period: str | None, event: str | None) -> int:
    if not period or not (event or "").startswith("cpu-clock"):
        return 0
    p = int(period)
    return round(1e9 / p) if p > 0 else 0


def chunk_clock(got: Imported, boot_time: float | None) -> tuple[str, float]:
    """(clockid, wall − text offset) for imported text: epoch times as they are, boot-relative
    ones placed by the boot time, else left on perf's clock (unanchored)."""
    if got.clock == "epoch":
        return REALTIME, 0.0
    if boot_time is not None:
        return BOOT_ANCHORED, float(boot_time)
    return UNANCHORED, 0.0


def scan(blocks: Iterable[str], kind: str, name: str, diags: list[Diagnostic],
         sink: Callable[[perf_script.Batch], object] | None = None) -> Imported:
    """What `perf script` text ("perf_script") or folded stacks ("folded") hold: samples,
    time span and clock, CPUs, events, rate. Pure: nothing is written. `sink`: for `perf
    script` text, handed its samples a batch at a time, read in the same pass."""
    blocks = iter(blocks)
    first_block = next(blocks, "")
    got = Imported(name, kind)
    chained = itertools.chain([first_block], blocks)
    if kind == "perf_script":
        got.layout = perf_script.layout_of_text(first_block)
        got.hz = _hz_from(first_block, got.layout)
        # without a sink the import needs no stacks: a summary read from the header lines
        summary = perf_script.summarize_blocks(chained, diags, source=name, sink=sink)
        got.samples, got.first, got.last = summary.samples, summary.first, summary.last
        got.layout = summary.layout
        got.cpus = tuple(sorted(summary.cpus))
        got.events = dict(summary.events)
    else:
        _scan(folded.parse_blocks(chained, diags, source=name), got)
    if kind == "folded" or got.first is None or got.last is None:
        return got
    epoch = got.first >= EPOCH_MIN
    if epoch != (got.last >= EPOCH_MIN):
        diags.append(Diagnostic(name, "times mix the wall clock and perf's boot clock; "
                                "windows over this input will be wrong"))
    got.clock = "epoch" if epoch else "boot"
    return got


def input_name(source: str | Path | BinaryIO, name: str | None = None) -> str:
    """What an input is called in diagnostics: its given name, `-` for stdin, else its path."""
    return name or (STDIN if source == STDIN else str(source))


@dataclass
class Opened:
    """An input known to be a profile, not read yet beyond its first block."""

    name: str
    kind: str  # "perf_script" | "folded"
    blocks: Iterator[str]  # the whole text, the first block included
    read_diags: list[Diagnostic]  # what reading it found (a cut-short stream), once read


def open_input(source: str | Path | BinaryIO, name: str) -> Opened:
    """One `perf script` or folded input, opened and sniffed by its first block; raises
    InputError saying why when it cannot be read or is neither."""
    stream = open_binary(source)
    read_diags: list[Diagnostic] = []
    blocks = text_blocks(stream, read_diags, name)
    first_block = next(blocks, "")
    sniffed = folded.sniff(first_block)
    if sniffed is None:
        what = "not perf script text or folded stacks"
        if not first_block.strip():
            what = read_diags[0].message if read_diags else "empty"
        raise InputError(what)
    kind = "folded" if sniffed == "folded" else "perf_script"
    return Opened(name, kind, itertools.chain([first_block], blocks), read_diags)


@dataclass(frozen=True)
class ChunkSpan:
    """Where an input's samples go in the ring: its clock, its span on that clock and the
    offset to the wall clock."""

    clockid: str
    perf_start: float
    perf_end: float
    clock_offset: float


def chunk_span(got: Imported, boot_time: float | None) -> ChunkSpan:
    """The span of a scanned input as a ring chunk: timed text owns [first, last + TICK) on
    its clock; folded stacks and text without times (-F without time) have none and are
    read whole."""
    if got.kind == "folded" or got.first is None or got.last is None:
        return ChunkSpan(NO_CLOCK, 0.0, 0.0, 0.0)
    clockid, offset = chunk_clock(got, boot_time)
    return ChunkSpan(clockid, got.first, got.last + TICK, offset)


def _scan(samples: Iterator[StackSample], got: Imported) -> None:
    n = 0
    lo = hi = None
    cpus: set[int] = set()
    events: Counter[str] = Counter()
    for s in samples:
        n += s.count
        events[s.event] += s.count
        if s.cpu is not None:
            cpus.add(s.cpu)
        t = s.time
        if t is not None and math.isfinite(t):
            if lo is None or t < lo:
                lo = t
            if hi is None or t > hi:
                hi = t
    got.samples, got.first, got.last = n, lo, hi
    got.cpus = tuple(sorted(cpus))
    got.events = dict(events)
