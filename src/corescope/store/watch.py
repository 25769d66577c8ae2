"""Is the store the recorder opened still the one at its path, and can it be written?

A recorder keeps its files open: when the store's directory is deleted (`rm -rf`), moved
aside or replaced, or its database unlinked, every write still succeeds, into files nobody
will read again. When a store file is made immutable (`chattr +i`) or its filesystem
read-only, writes fail, and a write into a memory-mapped page of such a file (SQLite's
`-shm` index) is not an error but SIGBUS, which kills the process. `StoreWatch.check` finds
all of these with a few system calls (a stat of the path and one statx per file), cheap
enough to run every few seconds; `unwritable_flag` is the one-call test the store makes
before each use of its mapped index.
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# statx(2) attributes (the same bits as chattr's FS_IMMUTABLE_FL / FS_APPEND_FL)
STATX_ATTR_IMMUTABLE = 0x10
STATX_ATTR_APPEND = 0x20
_AT_SYMLINK_NOFOLLOW = 0x100
_STATX_TYPE_INO = 0x001 | 0x100
# struct statx: u32 mask, u32 blksize, u64 attributes (at 8), ..., u64 attributes_mask (at 56)
_STATX_SIZE = 256
_ATTRS_AT, _ATTRS_MASK_AT = 8, 56
_U64 = struct.Struct("=Q")

# how the recorder's files are named inside the store directory (store/db.py, journal.py)
STORE_FILES = ("corescope.db", "corescope.db-wal", "corescope.db-shm", "cores.journal")

GONE = "gone"  # the directory is no longer at its path (deleted or moved)
REPLACED = "replaced"  # another directory (or file) is at the path now
DB_GONE = "db_gone"  # the directory is there, its database was unlinked or replaced
UNWRITABLE = "unwritable"  # immutable or append-only files, or a read-only filesystem

_statx: Any = None  # libc's statx, looked up on first use (False: not there)
_bufs = threading.local()  # one result buffer per thread, made once


def unwritable_flag(dir_fd: int, name: str | bytes) -> str | None:
    """'immutable' or 'append-only' when the inode flags of `name` in the directory `dir_fd`
    forbid writing it (chattr +i / +a), else None (also when it is absent, or libc has no
    statx). statx(2) reads them by name: opening the file to ask (FS_IOC_GETFLAGS) would
    not do, because closing any descriptor on a file drops every POSIX lock the process
    holds on it, SQLite's included. About a microsecond."""
    global _statx
    if _statx is None:
        import ctypes

        fn = getattr(ctypes.CDLL(None, use_errno=True), "statx", None)
        if fn is not None:
            fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint,
                           ctypes.c_void_p)
        _statx = fn or False
    if not _statx:
        return None
    buf = getattr(_bufs, "buf", None)
    if buf is None:
        import ctypes

        buf = _bufs.buf = ctypes.create_string_buffer(_STATX_SIZE)  # statx writes here
    raw = name if isinstance(name, bytes) else os.fsencode(name)
    if _statx(dir_fd, raw, _AT_SYMLINK_NOFOLLOW, _STATX_TYPE_INO, buf) != 0:
        return None
    attrs = _U64.unpack_from(buf, _ATTRS_AT)[0] & _U64.unpack_from(buf, _ATTRS_MASK_AT)[0]
    if attrs & STATX_ATTR_IMMUTABLE:
        return "immutable"
    if attrs & STATX_ATTR_APPEND:
        return "append-only"
    return None


@dataclass(frozen=True)
class StoreProblem:
    kind: str  # GONE, REPLACED, DB_GONE or UNWRITABLE
    message: str  # one sentence for the operator
    moved_to: str | None = None  # GONE: where the directory is now, when it still exists


class StoreWatch:
    """Remembers which directory and database `directory` named when the recorder opened
    its store, and says when that stops being true (`check`). Holds a descriptor on the
    directory (to look inside it, and to say where it went), none on the store's files."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        st = os.fstat(self._dir_fd)
        self._dir_id = (st.st_dev, st.st_ino)
        self._db_id = self._file_id(STORE_FILES[0])

    def _file_id(self, name: str) -> tuple[int, int] | None:
        try:
            st = os.stat(name, dir_fd=self._dir_fd, follow_symlinks=False)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def check(self) -> StoreProblem | None:
        """The first thing wrong with the store, or None."""
        where = str(self.directory)
        try:
            st = os.stat(self.directory)
        except FileNotFoundError:
            moved = self._moved_to()
            if moved is not None:
                return StoreProblem(GONE, f"the store directory {where} was moved to {moved} "
                                    "while recording", moved)
            return StoreProblem(GONE, f"the store directory {where} was deleted while "
                                "recording")
        except OSError as exc:
            return StoreProblem(GONE, f"the store directory {where} cannot be reached: "
                                f"{exc.strerror or exc}")
        if (st.st_dev, st.st_ino) != self._dir_id:
            moved = self._moved_to()
            return StoreProblem(REPLACED, f"the store directory {where} was replaced by "
                                "another one while recording" + (
                                    f" (ours is now {moved})" if moved else " (ours was "
                                    "deleted)"), moved)
        if self._db_id is None:
            self._db_id = self._file_id(STORE_FILES[0])
        elif (now := self._file_id(STORE_FILES[0])) != self._db_id:
            what = "deleted" if now is None else "replaced"
            return StoreProblem(DB_GONE, f"the store database {where}/{STORE_FILES[0]} was "
                                f"{what} while recording")
        bad = [f"{name} is {flag}" for name in STORE_FILES
               if (flag := unwritable_flag(self._dir_fd, name)) is not None]
        if bad:
            return StoreProblem(UNWRITABLE, f"store files in {where} cannot be written: "
                                + ", ".join(bad) + " (chattr)")
        with contextlib.suppress(OSError):
            if os.fstatvfs(self._dir_fd).f_flag & os.ST_RDONLY:
                return StoreProblem(UNWRITABLE, f"the filesystem under the store {where} is "
                                    "read-only")
        return None

    def _moved_to(self) -> str | None:
        """Where the directory we opened is now (it was renamed), or None (deleted)."""
        try:
            path = os.readlink(f"/proc/self/fd/{self._dir_fd}")
        except OSError:
            return None
        if path.endswith(" (deleted)") or not os.path.isdir(path):
            return None
        return path

    def close(self) -> None:
        if self._dir_fd >= 0:
            os.close(self._dir_fd)
            self._dir_fd = -1
