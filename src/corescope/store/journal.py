"""The per-core samples' journal: the raw rows of the minute not yet folded into a block.

At 1 Hz, committing each sample to SQLite was the largest part of the recorder's own cost
(~120 µs a second: the WAL append and its lock calls). The recorder instead writes each raw
row into `cores.journal` beside the database with one `pwrite` into blocks allocated when the
file was made: a copy into the page cache, about a microsecond, no commit. A process killed
with `kill -9` leaves what it wrote in the page cache, so every row it finished writing
survives; the row in flight is the only one lost, as with a commit in flight before. (The
file was once mapped and written by memcpy; but a write into a mapped page of a file made
immutable, truncated or on a failing disk is SIGBUS, which kills the recorder, where
`pwrite` returns an error the writer can act on: it then commits rows to SQLite instead.)

Layout (little-endian). Header, 64 bytes: magic `CSJ1`, version (u32), epoch (u32), 0 (u32),
capacity (u64, the file's size when made). Rows follow, each: size (u32, this row's bytes),
crc32 (u32, of everything after it), epoch (u32), 0 (u32), t (f64), interval_s (f64), then
the raw row's payload (series_codec.encode_row). There is no row count to keep in step: a reader
takes rows from the start while each is whole (its size fits, its crc matches) and of the
header's epoch, and stops at the first that is not: the zeros past the last row, a row cut
short by a kill or a power cut (its crc fails), or a row an earlier epoch left there.

Every minute the fold stores the rows as one block and, in the same SQLite transaction,
records in store_meta which journal epoch it folded and how many rows (`FOLDED_KEY`); then
the journal starts a new epoch (the header's epoch is rewritten: every row there is stale at
once). A crash between that commit and the reset leaves rows the store already holds: the
meta entry says so, and they are skipped by readers and by the next recorder's start, so a
row is never stored or shown twice. A reader reads the journal BEFORE its SQLite snapshot: a
fold in between then shows as folded in the snapshot (its block there, its rows skipped),
never as missing.

Power loss (not a kill) is weaker than a commit with synchronous=NORMAL only in degree: the
kernel writes the page cache back within its dirty-page expiry (30 s by default), and what it
had not written is lost; the crc keeps any half-written row out.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import stat
import struct
import zlib
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from corescope.errors import StoreFault
from corescope.model.common import Diagnostic
from corescope.model.packed import NF

NAME = "cores.journal"
FOLDED_KEY = "core_journal_folded"  # store_meta: "<epoch> <rows>" the last fold stored
MAGIC = b"CSJ1"
VERSION = 2  # 1: a published row count in the header (never released)
_HEADER = struct.Struct("<4sIIIQ")  # magic, version, epoch, 0, capacity
HEADER_SIZE = 64
_EPOCH = struct.Struct("<I")
_EPOCH_AT = 8
_ROW = struct.Struct("<IIIIdd")  # size, crc32, epoch, 0, t, interval_s
_PRE = struct.Struct("<II")  # size, crc32
_BODY = struct.Struct("<IIdd")  # the part of _ROW the crc covers, before the payload
ROW_HEAD = _ROW.size
# a reader never reads more than this; a writer never makes a larger file
MAX_BYTES = 64 * 1024 * 1024


@dataclass
class JournalRead:
    """What a journal file holds: its epoch, its published rows (t, interval_s, payload) in
    order, and what was wrong with it, if anything."""

    epoch: int = 0
    rows: list[tuple[float, float, bytes]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def unfolded(self, folded: str | None) -> list[tuple[float, float, bytes]]:
        """The rows a fold has not stored yet, given the store's FOLDED_KEY value."""
        epoch, count = parse_folded(folded)
        return self.rows[count:] if epoch == self.epoch else self.rows


def parse_folded(value: str | None) -> tuple[int, int]:
    """(epoch, rows) from a FOLDED_KEY value; (-1, 0) when absent or unreadable."""
    try:
        epoch, count = (int(x) for x in (value or "").split())
    except ValueError:
        return -1, 0
    return (epoch, count) if epoch >= 0 and count >= 0 else (-1, 0)


def _open_checked(path: Path, flags: int) -> int:
    """An fd on `path`, refusing a symlink (O_NOFOLLOW), anything but a regular file, and a
    file that is not ours: the store's directory is private, so this stays what it is."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file; refusing to read it", str(path))
        if st.st_uid != os.geteuid():
            raise OSError(errno.EPERM, f"belongs to uid {st.st_uid}, not us; refusing to "
                          "read it", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read(directory: Path) -> JournalRead:
    """The journal in a store directory (none there: no rows). Never raises on content: a
    damaged file or row is a diagnostic, and the rows before it are kept."""
    path = Path(directory) / NAME
    out = JournalRead()
    try:
        fd = _open_checked(path, os.O_RDONLY)
    except FileNotFoundError:
        return out
    except OSError as exc:
        out.diagnostics.append(Diagnostic(str(path), f"cannot read the journal: {exc}"))
        return out
    try:
        data = os.pread(fd, MAX_BYTES, 0)
    except OSError as exc:
        out.diagnostics.append(Diagnostic(str(path), f"cannot read the journal: {exc}"))
        return out
    finally:
        os.close(fd)
    parse(data, out, str(path))
    return out


def parse(data: bytes, out: JournalRead, source: str) -> JournalRead:
    """Decode a journal's bytes into `out` (see `read`)."""
    if len(data) < HEADER_SIZE:
        out.diagnostics.append(Diagnostic(source, f"journal truncated ({len(data)} bytes)"))
        return out
    magic, version, epoch, _zero, _cap = _HEADER.unpack_from(data, 0)
    if magic != MAGIC or version != VERSION:
        out.diagnostics.append(Diagnostic(source, "not a corescope journal (or another "
                                          "version's); its rows are skipped"))
        return out
    out.epoch = epoch
    pos, n = HEADER_SIZE, len(data)
    view = memoryview(data)
    rows = out.rows
    # the first row that is not whole and of this epoch is where the journal ends
    while pos + ROW_HEAD <= n:
        size, crc, row_epoch, _z, t, iv = _ROW.unpack_from(data, pos)
        if row_epoch != epoch or size < ROW_HEAD or pos + size > n or \
                zlib.crc32(view[pos + 8 : pos + size]) != crc:
            break
        rows.append((t, iv, data[pos + ROW_HEAD : pos + size]))
        pos += size
    return out


def capacity_for(ncpu: int, rows: int) -> int:
    """Bytes for `rows` raw rows of `ncpu` CPUs, whole pages, within MAX_BYTES."""
    row = ROW_HEAD + 4 * (1 + ncpu + ncpu * NF)
    size = HEADER_SIZE + rows * row
    page = mmap.PAGESIZE
    return min(MAX_BYTES, (size + page - 1) // page * page)


class JournalBusy(StoreFault, OSError):
    """Another recorder holds this store's journal."""


class JournalWriter:
    """The recorder's side: holds the store directory's lock (one recorder per journal),
    keeps the file open and appends rows to it. `create` makes a fresh file of `capacity` bytes for
    epoch `epoch` (the caller folded the old one's rows first) and replaces the old one with
    a rename, so a reader sees one or the other, never a half-made file."""

    def __init__(self, directory: Path, lock_fd: int) -> None:
        self.directory = Path(directory)
        self.path = self.directory / NAME
        self._lock_fd = lock_fd
        self._fd = -1
        self.epoch = 0
        self.rows: list[tuple[float, float, bytes]] = []
        self._pos = HEADER_SIZE
        self._cap = 0
        # the write that failed (EPERM from an immutable file, say): nothing is written after
        # it; the rows already written stay in `rows` until a fold stores them
        self.fault: OSError | None = None

    @classmethod
    def lock(cls, directory: Path) -> JournalWriter:
        """Take the store directory's journal lock (JournalBusy if another recorder has it)."""
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise JournalBusy(errno.EWOULDBLOCK, "another recorder holds the journal",
                              str(directory)) from exc
        except BaseException:
            os.close(fd)
            raise
        return cls(directory, fd)

    def create(self, epoch: int, capacity: int) -> None:
        capacity = max(mmap.PAGESIZE, min(MAX_BYTES, capacity))
        tmp = self.path.with_name(NAME + ".new")
        with suppress(FileNotFoundError):
            os.unlink(tmp)  # left by a start that died: ours (we hold the lock)
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            head = bytearray(HEADER_SIZE)
            _HEADER.pack_into(head, 0, MAGIC, VERSION, epoch, 0, capacity)
            # blocks allocated now, not at a tick: a row's write never meets a full disk; on
            # a full disk this raises ENOSPC at once
            os.posix_fallocate(fd, 0, capacity)
            if os.pwrite(fd, bytes(head), 0) != HEADER_SIZE:
                raise OSError(errno.ENOSPC, "journal header written short", str(tmp))
            os.fsync(fd)  # the new file is whole before it replaces the old one
            os.rename(tmp, self.path)
        except BaseException:
            os.close(fd)
            with suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        self._close_file()
        self._fd = fd
        self.epoch, self.rows, self._pos, self._cap = epoch, [], HEADER_SIZE, capacity
        self.fault = None

    def append(self, t: float, interval_s: float, payload: bytes) -> bool:
        """Write one row; False (nothing written) when it does not fit or the file cannot be
        written (`fault` says why). One pwrite: every distinct call costs 5-20 µs on a 1 Hz
        agent's cold cache."""
        pos = self._pos
        end = pos + ROW_HEAD + len(payload)
        if end > self._cap or self._fd < 0 or self.fault is not None:
            return False
        body = _BODY.pack(self.epoch, 0, t, interval_s) + payload
        row = _PRE.pack(end - pos, zlib.crc32(body)) + body
        if not self._write(row, pos):
            return False
        self.rows.append((t, interval_s, payload))
        self._pos = end
        return True

    def _write(self, data: bytes, pos: int) -> bool:
        try:
            done = os.pwrite(self._fd, data, pos)
        except OSError as exc:
            self.fault = exc
            return False
        if done != len(data):  # a torn row: its crc keeps it out, and nothing follows it
            self.fault = OSError(errno.EIO, f"journal row written short ({done} of "
                                 f"{len(data)} bytes)", str(self.path))
            return False
        return True

    def reset(self) -> None:
        """Start a new epoch with no rows: call only after a fold committed every row. On a
        journal that cannot be written the rows are dropped all the same (the store holds
        them, and its FOLDED_KEY marks the file's rows as stored)."""
        self.epoch = (self.epoch + 1) & 0xFFFFFFFF
        self.rows, self._pos = [], HEADER_SIZE
        if self._fd >= 0 and self.fault is None:
            self._write(_EPOCH.pack(self.epoch), _EPOCH_AT)

    def _close_file(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def close(self) -> None:
        self._close_file()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # and the lock with it
            self._lock_fd = -1
