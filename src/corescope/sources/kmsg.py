"""The kernel log: /dev/kmsg records, saved logs (dmesg, journalctl -k -o json), and the clock
that puts kernel timestamps on the wall-clock timeline.

Parsers are pure and total: bytes or text in, records plus diagnostics out, never an
exception for bad content. The live reader takes a `read(n)` callable so that tests can drive
it with a fake descriptor that raises EPIPE where the kernel would.
"""

from __future__ import annotations

import errno
import os
import re
import select
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from corescope.model.common import Diagnostic
from corescope.model.events import KmsgRecord
from corescope.rootfs import Root
from corescope.sources.artifacts.dates import EPOCH_MAX
from corescope.sources.clock import read_offset
from corescope.sources.journal_text import text_entries
from corescope.sources.journal_text import text_form as journal_text_form
from corescope.sources.kmsg_text import (  # noqa: F401 - the saved-log readers' home was here
    SYSLOG_LINE,
    journal_monotonic,
    parse_dmesg,
    plausible_wall,
    syslog_wall,
)
from corescope.sources.text import json_text

# A /dev/kmsg read returns exactly one record; the kernel refuses (EINVAL) a buffer shorter
# than the record, and records are at most CONSOLE_EXT_LOG_MAX (8 KiB) long.
READ_SIZE = 16384

# Parsed integers must fit SQLite's INTEGER (signed 64-bit) and turn into finite floats
# (usec / 1e6): a saved log is untrusted input and may carry any number at all.
_INT_MAX = 2**63 - 1

_ESCAPE = re.compile(rb"\\x([0-9a-fA-F]{2})")


def unescape(data: bytes) -> str:
    """/dev/kmsg escapes non-printable bytes and the backslash itself as `\\xNN`."""
    if b"\\x" in data:
        data = _ESCAPE.sub(lambda m: bytes((int(m.group(1), 16),)), data)
    return data.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------------------------
# /dev/kmsg records


def parse_kmsg_record(data: bytes, source: str = "/dev/kmsg"
                      ) -> tuple[KmsgRecord | None, list[Diagnostic]]:
    """One record: `prio,seq,usec,flag[,more];message` then ` KEY=value` continuation lines."""
    diags: list[Diagnostic] = []
    if not isinstance(data, bytes | bytearray):
        return None, [Diagnostic(source, f"not bytes: {type(data).__name__}")]
    head, _, rest = bytes(data).partition(b"\n")
    prefix, sep, msg = head.partition(b";")
    if not sep:
        return None, [Diagnostic(source, f"no ';' in record header: {head[:60]!r}")]
    parts = prefix.split(b",")
    if len(parts) < 3:
        return None, [Diagnostic(source, f"short record header: {prefix[:60]!r}")]
    try:
        prio = int(parts[0])
        seq = int(parts[1])
        usec = int(parts[2])
    except ValueError:  # also: more digits than int() will read (sys.int_info)
        return None, [Diagnostic(source, f"unreadable record header: {prefix[:60]!r}")]
    if prio < 0 or seq < 0 or usec < 0:
        return None, [Diagnostic(source, f"negative field in record header: {prefix[:60]!r}")]
    if max(prio, seq, usec) > _INT_MAX:  # the kernel's are u64; beyond int64 is garbage
        return None, [Diagnostic(source, f"field out of range in record header: "
                                 f"{prefix[:60]!r}")]
    flags = parts[3].decode("ascii", errors="replace") if len(parts) > 3 else ""
    meta: dict[str, str] = {}
    for line in rest.split(b"\n"):
        if not line:
            continue
        if not line.startswith(b" "):
            diags.append(Diagnostic(source, f"continuation line without space: {line[:60]!r}"))
            continue
        key, eq, value = line[1:].partition(b"=")
        if not eq:
            diags.append(Diagnostic(source, f"continuation line without '=': {line[:60]!r}"))
            continue
        meta[unescape(key)] = unescape(value)
    rec = KmsgRecord(
        message=unescape(msg), usec=usec, seq=seq, level=prio & 7, facility=prio >> 3,
        flags=flags, dict_=meta, source="kmsg",
    )
    return rec, diags


def parse_kmsg_dump(data: bytes, source: str = "kmsg dump"
                    ) -> tuple[list[KmsgRecord], list[Diagnostic]]:
    """Many records back to back, as `cat /dev/kmsg > file` saves them."""
    records: list[KmsgRecord] = []
    diags: list[Diagnostic] = []
    chunk: list[bytes] = []

    def flush() -> None:
        if chunk:
            rec, d = parse_kmsg_record(b"\n".join(chunk), source)
            diags.extend(d)
            if rec is not None:
                records.append(rec)
            chunk.clear()

    for line in data.split(b"\n"):
        if line.startswith(b" ") and chunk:
            chunk.append(line)
            continue
        flush()
        if line:
            chunk.append(line)
    flush()
    return records, diags


# ---------------------------------------------------------------------------------------------
# Saved logs: dmesg and syslog text (sources.kmsg_text), journalctl -k -o json


def kernel_entries(records: list[KmsgRecord]) -> list[KmsgRecord]:
    """The kernel's records of a journal: those with `_TRANSPORT=kernel` when the entries say
    their transport (a whole journal holds every program's), else all (a `journalctl -k`
    export written without it)."""
    if any(r.dict_.get("TRANSPORT") is not None for r in records):
        return [r for r in records if r.dict_.get("TRANSPORT") == "kernel"]
    return records


def parse_journal_json(data: str | bytes, source: str = "journal"
                       ) -> tuple[list[KmsgRecord], list[Diagnostic]]:
    """`journalctl -k -o json` (one object per line; json-pretty and arrays also read), and
    `-o export` and `-o verbose` (sources.journal_text). Every entry is returned; pass them to
    `kernel_entries` for the kernel's.

    The kernel's own clock is `_SOURCE_MONOTONIC_TIMESTAMP`; journald's receive time
    `__REALTIME_TIMESTAMP` gives the wall clock directly."""
    records: list[KmsgRecord] = []
    diags: list[Diagnostic] = []
    n = 0
    for obj in journal_objects(data, diags, source):
        n += 1
        if not isinstance(obj, dict):
            diags.append(Diagnostic(source, f"entry {n} is not an object"))
            continue
        rec = _journal_record(obj)
        if rec is None:
            diags.append(Diagnostic(source, f"entry {n} has no MESSAGE"))
            continue
        records.append(rec)
    return records, diags


_SSE_DATA = re.compile(r"^data: ", re.MULTILINE)


def journal_objects(data: str | bytes, diags: list[Diagnostic] | None = None,
                    source: str = "journal", limit: int | None = None) -> Iterator[object]:
    """The JSON values of `journalctl -o json` (one per line), `json-pretty` (spread over
    lines), `json-seq` (RS separators), `json-sse` (`data: ` lines) or a JSON array; an
    unreadable stretch is skipped to the next line (noted in `diags`). `-o export` and
    `-o verbose` entries come as the dicts JSON would give (sources.journal_text)."""
    # told from the first bytes: a JSON journal is not copied to bytes for the test
    head = data[:8192]
    form = journal_text_form(head if isinstance(head, bytes)
                             else head.encode("utf-8", errors="replace"))
    if form is not None:
        raw = data if isinstance(data, bytes) else data.encode("utf-8", errors="replace")
        yield from text_entries(raw, form, diags, source, limit)
        return
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    # json-seq record separators; a lone surrogate escape in a MESSAGE decodes to visible
    # text (SQLite refuses surrogates)
    text = json_text(data.replace("\x1e", "\n"), diags, source)
    if text.lstrip().startswith("data: "):
        text = _SSE_DATA.sub("", text)
    import json  # only a journalctl export needs it, not every command that imports this

    dec = json.JSONDecoder()
    pos = n = 0
    while limit is None or n < limit:
        while pos < len(text) and text[pos] in " \t\r\n,[]":
            pos += 1
        if pos >= len(text):
            break
        try:
            obj, end = dec.raw_decode(text, pos)
        except (ValueError, RecursionError):
            nl = text.find("\n", pos)
            if diags is not None:
                diags.append(Diagnostic(source, f"unreadable JSON at offset {pos}"))
            if nl < 0:
                break
            pos = nl + 1
            continue
        pos = end
        n += 1
        yield obj


def _journal_record(obj: dict) -> KmsgRecord | None:
    msg = obj.get("MESSAGE")
    if isinstance(msg, list):  # non-UTF-8 messages come as byte arrays
        try:
            msg = bytes(int(b) & 0xFF for b in msg).decode("utf-8", errors="replace")
        except (TypeError, ValueError, OverflowError):  # int(inf) raises OverflowError
            return None
    if not isinstance(msg, str):
        return None

    def num(key: str, lo: float = 0, hi: float = _INT_MAX) -> int | None:
        v = obj.get(key)
        try:
            n = int(v) if v is not None else None
        except (TypeError, ValueError, OverflowError):  # int(1e400) is int(inf): Overflow
            return None
        # 10**400 is a valid JSON int: out of int64 it would overflow realtime / 1e6 and
        # the store; a negative clock or a priority past 7 is no value journald writes:
        # either is treated as missing
        return n if n is None or lo <= n <= hi else None

    # journald's receive time: a wall clock past any incident's years is not one
    realtime = num("__REALTIME_TIMESTAMP", 0, EPOCH_MAX * 1e6)
    meta = {}
    for k in ("_KERNEL_DEVICE", "_KERNEL_SUBSYSTEM", "_BOOT_ID", "_TRANSPORT"):
        if isinstance(obj.get(k), str):
            meta[k.lstrip("_").replace("KERNEL_", "")] = obj[k]
    return KmsgRecord(
        message=msg, usec=num("_SOURCE_MONOTONIC_TIMESTAMP"), level=num("PRIORITY", 0, 7),
        facility=num("SYSLOG_FACILITY", 0, 23), dict_=meta,
        wall=realtime / 1e6 if realtime is not None else None, source="journal",
    )


_KMSG_HEAD = re.compile(rb"^\d+,\d+,\d+,")
# JSON as journalctl writes it: an object, an array of objects (or an empty one), json-seq's
# RS, json-sse's `data: `. A `[` alone is no JSON: dmesg stamps, a shell prompt and dmesg -T
# in any locale begin with one too.
_JSON_START = re.compile(rb"^(?:\{|\[\s*[{\]]|\x1e|data: \{)")


def parse_saved_log(data: str | bytes, source: str = "file"
                    ) -> tuple[list[KmsgRecord], list[Diagnostic]]:
    """Any saved kernel log: journal JSON (or export/verbose text), a raw /dev/kmsg dump, or
    dmesg/syslog text (sources.kmsg_text)."""
    if isinstance(data, str):
        data = data.encode("utf-8", errors="replace")
    stripped = data.lstrip()
    if _JSON_START.match(stripped) or journal_text_form(stripped):
        records, diags = parse_journal_json(data, source)
        kernel = kernel_entries(records)
        if len(kernel) < len(records):
            diags.append(Diagnostic(source, f"{len(records) - len(kernel)} journal entries of "
                                    "other programs than the kernel skipped"))
        return kernel, diags
    if _KMSG_HEAD.match(data.lstrip(b"\n")):
        return parse_kmsg_dump(data, source)
    return parse_dmesg(data, source)


# ---------------------------------------------------------------------------------------------
# The clock: kernel usec since boot → wall time


@dataclass(frozen=True)
class ClockAnchor:
    """wall = usec / 1e6 + offset_s. `error_s` bounds the anchoring itself."""

    offset_s: float
    error_s: float
    method: str  # "monotonic" | "marker" | "boot_id" (saved logs of this boot)
    taken_wall: float

    def wall_of(self, usec: int) -> float:
        return usec / 1e6 + self.offset_s


def anchor_clock(clock: int = time.CLOCK_MONOTONIC, tries: int = 5,
                 skew_s: float = 0.0) -> ClockAnchor:
    """Read the wall clock on both sides of `clock` and keep the tightest pair.

    printk stamps with local_clock(), which tracks CLOCK_MONOTONIC (neither counts suspend);
    `skew_s` is kmsg − CLOCK_MONOTONIC as a marker measured it (see calibrate_with_marker)."""
    r = read_offset(clock, tries)
    return ClockAnchor(offset_s=r.offset_s - skew_s, error_s=r.error_s, method="monotonic",
                       taken_wall=r.taken_wall)


class SkewBound:
    """kmsg clock − CLOCK_MONOTONIC, learned from records as they are read, without writing.

    printk stamps with local_clock(), which runs on the raw clocksource, while NTP slews
    CLOCK_MONOTONIC: the two drift apart by the oscillator's correction (18 ms after 11 h of
    uptime on a test VM; a node corrected by tens of ppm gains seconds a day). A record stamped
    `k` and read at monotonic `m` was stamped no later than `m`, so skew ≥ k − m. A reader
    blocked in poll() reads a record within its wake-up latency, which makes that bound tight;
    the estimate is the greatest bound of the last `window_s` (the skew moves by ppm). Records
    that waited in the ring before reading started (the backlog) give loose bounds: do not
    observe them."""

    def __init__(self, window_s: float = 600.0) -> None:
        self.window_s = window_s
        self._best: deque[tuple[float, float]] = deque()  # (read mono, bound), bounds falling

    def observe(self, usec: int, read_mono: float) -> None:
        bound = usec / 1e6 - read_mono
        best = self._best
        while best and best[-1][1] <= bound:
            best.pop()
        best.append((read_mono, bound))
        # expire only on new observations: a quiet log keeps its last estimate
        while best[0][0] < read_mono - self.window_s:
            best.popleft()

    @property
    def value(self) -> float | None:
        return self._best[0][1] if self._best else None


@dataclass(frozen=True)
class MarkerCalibration:
    anchor: ClockAnchor
    skew_s: float  # kmsg clock − CLOCK_MONOTONIC at the marker
    usec: int
    seq: int | None


def calibrate_with_marker(root: Root | None = None, timeout_s: float = 1.0,
                          label: str = "clock anchor") -> MarkerCalibration | None:
    """Write a marker record to /dev/kmsg and read back the kernel's own stamp for it.

    Needs write access to /dev/kmsg (root). Returns None when it cannot write or the marker
    does not come back (e.g. printk_devkmsg=off). Each call opens a fresh writer: the kernel
    rate-limits writes per open file."""
    root = root or Root()
    path = str(root.path("/dev/kmsg"))
    nonce = uuid.uuid4().hex[:12]
    try:
        rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        os.lseek(rfd, 0, os.SEEK_END)
        try:
            wfd = os.open(path, os.O_WRONLY)
        except OSError:
            return None
        try:
            w1 = time.time()
            m1 = time.clock_gettime(time.CLOCK_MONOTONIC)
            os.write(wfd, f"<6>corescope: {label} {nonce}\n".encode())
            m2 = time.clock_gettime(time.CLOCK_MONOTONIC)
            w2 = time.time()
        except OSError:
            return None
        finally:
            os.close(wfd)
        reader = KmsgReader(lambda n: os.read(rfd, n))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for rec in reader.read_available():
                if nonce in rec.message and rec.usec is not None:
                    k = rec.usec / 1e6
                    anchor = ClockAnchor(offset_s=(w1 + w2) / 2 - k, error_s=(w2 - w1) / 2,
                                         method="marker", taken_wall=w2)
                    return MarkerCalibration(anchor, skew_s=k - (m1 + m2) / 2, usec=rec.usec,
                                             seq=rec.seq)
            select.select([rfd], [], [], 0.05)
        return None
    finally:
        os.close(rfd)


def wall_times(records: list[KmsgRecord], anchor: ClockAnchor | None) -> list[float | None]:
    """The wall time of each record: its own wall clock, else the anchor, else None."""
    out: list[float | None] = []
    for r in records:
        if r.wall is not None:
            out.append(r.wall)
        elif r.usec is not None and anchor is not None:
            out.append(anchor.wall_of(r.usec))
        else:
            out.append(None)
    return out


# ---------------------------------------------------------------------------------------------
# The live reader


class KmsgReader:
    """Reads records through `read(n)` (one record per call, as /dev/kmsg returns them).

    EPIPE means the kernel overwrote records we had not read yet; the next read returns the
    oldest record still held, and the sequence gap says how many were lost. Any other gap is
    counted the same way. EAGAIN ends a batch (non-blocking descriptor).

    `resume_after` is the last sequence number already stored (a restarted recorder): records
    up to it are skipped, and a gap after it (the ring wrapped while nobody read it) is
    counted as lost like any other."""

    def __init__(self, read: Callable[[int], bytes], source: str = "/dev/kmsg",
                 resume_after: int | None = None) -> None:
        self._read = read
        self.source = source
        self.last_seq: int | None = resume_after
        self._skip_through = resume_after
        self.first_seq: int | None = None  # the first record this reader saw (skipped or not)
        self.skipped = 0
        self.lost_records = 0
        self.epipe_count = 0
        self.diagnostics: list[Diagnostic] = []
        self.eof = False

    def _diag(self, msg: str) -> None:
        if len(self.diagnostics) < 100:  # bounded: a bad stream must not grow memory
            self.diagnostics.append(Diagnostic(self.source, msg))

    def read_available(self, max_records: int = 10_000) -> list[KmsgRecord]:
        out: list[KmsgRecord] = []
        while len(out) < max_records:
            try:
                data = self._read(READ_SIZE)
            except BlockingIOError:
                break
            except InterruptedError:
                continue
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    self.epipe_count += 1
                    continue
                if exc.errno == errno.EAGAIN:
                    break
                self._diag(f"read failed: {exc}")
                break
            if not data:
                self.eof = True
                break
            rec, diags = parse_kmsg_record(data, self.source)
            for d in diags:
                self._diag(d.message)
            if rec is None:
                continue
            if self.first_seq is None:
                self.first_seq = rec.seq
            if self._skip_through is not None and rec.seq is not None:
                if rec.seq <= self._skip_through:
                    self.skipped += 1  # stored by an earlier run
                    continue
                self._skip_through = None  # sequence numbers only grow: stop checking
            self._account(rec)
            out.append(rec)
        return out

    def _account(self, rec: KmsgRecord) -> None:
        seq = rec.seq
        if seq is None:
            return
        if self.last_seq is not None:
            if seq > self.last_seq + 1:
                self.lost_records += seq - self.last_seq - 1
            elif seq <= self.last_seq:
                self._diag(f"sequence went back from {self.last_seq} to {seq}")
        self.last_seq = seq

    def __iter__(self) -> Iterator[KmsgRecord]:
        while not self.eof:
            batch = self.read_available()
            if not batch:
                return
            yield from batch


def open_kmsg(root: Root | None = None, from_end: bool = True) -> int:
    """A non-blocking descriptor on /dev/kmsg, positioned after the newest record (from_end)
    or at the oldest record the kernel still holds. Raises OSError (the caller says why)."""
    root = root or Root()
    fd = os.open(str(root.path("/dev/kmsg")), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if from_end:
        try:
            os.lseek(fd, 0, os.SEEK_END)
        except OSError:
            os.close(fd)
            raise
    return fd

