"""Every /proc and /sys path is read under a root, so a captured tree replays through the
same code as the live system.

A captured tree is input from someone else, so under a root other than `/`:
- every path is resolved inside the root, as if the root were `/` (`..` stops at the root, an
  absolute symlink target starts again at the root): no walk or read escapes it;
- every read is capped and refuses what is not a regular file (a symlink to /dev/zero, a
  FIFO), so a hostile tree gives an error, never a MemoryError or a hang.
The live kernel's files get the same read checks (its /proc and /sys files are regular)."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_READ = 16 * 1024 * 1024  # a 96-CPU node's /proc/interrupts is well under 1 MB
MAX_LINKS = 40  # the kernel's own limit on symlinks in one lookup


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(fd: int, path: object, allow_pipe: bool = False) -> os.stat_result:
    """fstat an open file and refuse anything but a regular file (or a pipe, if allowed)."""
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) or (allow_pipe and stat.S_ISFIFO(st.st_mode)):
        return st
    raise OSError(errno.EINVAL, f"{_kind(st.st_mode)}, not a regular file", str(path))


def read_capped(path: str | os.PathLike[str], limit: int = MAX_READ,
                allow_pipe: bool = False) -> bytes:
    """The whole file, at most `limit` bytes (more is an OSError, EFBIG). Opening never waits
    for a FIFO's writer; a device, directory or socket is refused. `allow_pipe`: a pipe is
    read to its end (e.g. `--file <(dmesg)`)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = check_regular(fd, path, allow_pipe)
        if stat.S_ISFIFO(st.st_mode):
            os.set_blocking(fd, True)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise OSError(errno.EFBIG, f"larger than {limit} bytes", os.fspath(path))
    finally:
        os.close(fd)



class KeptFile:
    """A /proc or /sys file kept open and re-read from offset 0 with one pread: the kernel
    regenerates such a file on every read from the start, so a reader on a timer saves the
    path walk, open, fstat and close each time (about half a small file's cost at a cold
    cache). Opening refuses what `read_capped` refuses; a read that fails (the file's device
    or cgroup went away: ENODEV) raises, and the caller reopens or drops it."""

    def __init__(self, path: str | os.PathLike[str], limit: int = MAX_READ) -> None:
        self.path = os.fspath(path)
        self._limit = limit
        self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            check_regular(self._fd, self.path)
        except OSError:
            self.close()
            raise
        self._size = min(4096, limit + 1)

    def read(self) -> bytes:
        while True:
            data = os.pread(self._fd, self._size, 0)
            if len(data) < self._size:  # so at most `limit` bytes
                return data
            if self._size > self._limit:
                raise OSError(errno.EFBIG, f"larger than {self._limit} bytes", self.path)
            # a large file (many CPUs): grow until one read holds it
            self._size = min(self._size * 4, self._limit + 1)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class KeptFiles:
    """KeptFiles by key: each opened at its first read, dropped after a read fails (the file
    went away) so the next read opens it again, all closed by `close`."""

    def __init__(self, limit: int = MAX_READ) -> None:
        self._limit = limit
        self._files: dict[object, KeptFile] = {}

    def read(self, key: object, path: str | os.PathLike[str]) -> bytes:
        """The file's content; OSError when it cannot be opened or read."""
        f = self._files.get(key)
        if f is None:
            f = self._files[key] = KeptFile(path, self._limit)
        try:
            return f.read()
        except OSError:
            f.close()
            del self._files[key]
            raise

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()


@dataclass(frozen=True)
class Root:
    """A filesystem root; `Root("/")` is the live system."""

    base: Path = Path("/")
    _real: list[str] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def of(cls, path: str | Path | None) -> Root:
        return cls(Path(path) if path else Path("/"))

    @property
    def is_live(self) -> bool:
        return self.base == Path("/")

    def path(self, absolute: str) -> Path:
        """`/proc/stat` → `<base>/proc/stat`, resolved inside the root (see the module)."""
        if self.is_live:
            return self.base / absolute.lstrip("/")
        return Path(self._resolve(absolute))

    def _base_real(self) -> str:
        if not self._real:
            self._real.append(os.path.realpath(self.base))
        return self._real[0]

    def _resolve(self, absolute: str) -> str:
        base = self._base_real()
        done: list[str] = []  # components below the root, each a real directory or missing
        todo = [p for p in reversed(absolute.split("/")) if p and p != "."]
        links = 0
        while todo:
            name = todo.pop()
            if name == "..":
                if done:
                    done.pop()
                continue
            here = os.path.join(base, *done, name)
            try:
                target = os.readlink(here)
            except OSError:  # not a symlink, or missing: taken as it is
                done.append(name)
                continue
            links += 1
            if links > MAX_LINKS:  # a loop: leave the link in place, so opening it says ELOOP
                return os.path.join(base, *done, name, *reversed(todo))
            if target.startswith("/"):
                done = []
            todo.extend(p for p in reversed(target.split("/")) if p and p != ".")
        return os.path.join(base, *done)

    def read_bytes(self, absolute: str, limit: int = MAX_READ) -> bytes:
        return read_capped(self.path(absolute), limit)

    def read_text(self, absolute: str, limit: int = MAX_READ) -> str:
        return self.read_bytes(absolute, limit).decode(errors="replace")
