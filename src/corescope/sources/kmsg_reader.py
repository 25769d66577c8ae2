"""The live kernel log: /dev/kmsg read record by record with lost records counted, and a
marker record written through it to measure the kernel's clock.

The reader takes a `read(n)` callable so that tests can drive it with a fake descriptor that
raises EPIPE where the kernel would. Records are parsed by sources.kmsg_records, saved logs
read by sources.kmsg_saved, and kernel stamps put on the wall clock by sources.kmsg_clock.
"""

from __future__ import annotations

import errno
import os
import select
import time
import uuid
from collections.abc import Callable, Iterator

from corescope.model.common import Diagnostic
from corescope.model.events import KmsgRecord
from corescope.rootfs import Root
from corescope.sources.kmsg_clock import ClockAnchor, MarkerCalibration
from corescope.sources.kmsg_records import parse_kmsg_record

# A /dev/kmsg read returns exactly one record; the kernel refuses (EINVAL) a buffer shorter
# than the record, and records are at most CONSOLE_EXT_LOG_MAX (8 KiB) long.
READ_SIZE = 16384


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
