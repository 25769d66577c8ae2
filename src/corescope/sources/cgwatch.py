"""Cgroup churn: which parents gain and lose child cgroups.

A census every 10 s cannot see a crash-looping agent: its cgroup is created and removed
between two censuses. mkdir and rmdir on cgroupfs go through the VFS, which reports them to
inotify (IN_CREATE / IN_DELETE with IN_ISDIR on the parent), so a watch on every live
directory counts each one. Watches are added to new directories as they appear.

The event-buffer parser is pure and total; the watcher is a thin thread around it. Python's
standard library has no inotify binding, so the three libc calls go through ctypes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import struct
import threading
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len


@dataclass(frozen=True)
class InotifyEvent:
    wd: int
    mask: int
    cookie: int
    name: str


def parse_inotify_events(data: bytes) -> tuple[list[InotifyEvent], int]:
    """Events in a buffer read from an inotify fd, and how many trailing bytes were not a
    whole event (0 for a well-formed buffer). Never raises."""
    events: list[InotifyEvent] = []
    off = 0
    n = len(data)
    while off + _HEADER.size <= n:
        wd, mask, cookie, length = _HEADER.unpack_from(data, off)
        end = off + _HEADER.size + length
        if end > n:
            break
        name = data[off + _HEADER.size:end].split(b"\0", 1)[0]
        events.append(InotifyEvent(wd, mask, cookie, name.decode("utf-8", "surrogateescape")))
        off = end
    return events, n - off


@dataclass
class Churn:
    created: int = 0
    removed: int = 0


class _Libc:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL(None, use_errno=True)
        self.lib.inotify_init1.argtypes = [ctypes.c_int]
        self.lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]


class ChurnWatcher:
    """Counts child-cgroup creations and removals per parent under one hierarchy."""

    MASK = IN_CREATE | IN_DELETE | IN_ONLYDIR | IN_DONT_FOLLOW

    def __init__(self, top: Path) -> None:
        self.top = top
        self._fd = -1
        self._libc: _Libc | None = None
        self._wd_path: dict[int, str] = {}
        self._known: set[str] = set()  # directories seen (watched, or found by a scan)
        self._counts: dict[str, Churn] = defaultdict(Churn)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._wake: tuple[int, int] | None = None  # a pipe: stop() wakes the blocked reader
        self.overflowed = False
        self.watch_errors = 0

    def start(self) -> str | None:
        """Watch every live directory and start the reader thread; an error message if not."""
        try:
            self._libc = _Libc()
            fd = self._libc.lib.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError) as exc:
            return f"inotify unavailable: {exc}"
        if fd < 0:
            return f"inotify_init1 failed: {os.strerror(ctypes.get_errno())}"
        self._fd = fd
        for rel in self._walk():
            self._known.add(rel)
            err = self._add(rel)
            if err is not None and rel == "/":
                self.stop()
                return f"cannot watch {self.top}: {err}"
        self._wake = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._run, name="cgroup-churn", daemon=True)
        self._thread.start()
        return None

    def _walk(self) -> Iterator[str]:
        stack = [(str(self.top), "/")]
        while stack:
            path, rel = stack.pop()
            yield rel
            try:
                with os.scandir(path) as it:
                    kids = [e.name for e in it if e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            base = "" if rel == "/" else rel
            stack.extend((path + "/" + k, base + "/" + k) for k in kids)

    def _abs(self, rel: str) -> str:
        return str(self.top) if rel == "/" else str(self.top) + rel

    def _add(self, rel: str) -> str | None:
        assert self._libc is not None
        wd = self._libc.lib.inotify_add_watch(self._fd, os.fsencode(self._abs(rel)), self.MASK)
        if wd < 0:
            err = ctypes.get_errno()
            if err not in (errno.ENOENT, errno.ENOTDIR):  # gone already: a short-lived cgroup
                self.watch_errors += 1
            return os.strerror(err)
        self._wd_path[wd] = rel
        return None

    def _run(self) -> None:
        # block until cgroups change or stop() writes the pipe: no timed wake-ups, so an idle
        # node costs this thread nothing
        assert self._wake is not None
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake[0], select.POLLIN)
        while not self._stop.is_set():
            try:
                ready = poller.poll()
            except (OSError, ValueError):
                return
            if self._stop.is_set() or not any(fd == self._fd for fd, _ in ready):
                continue
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                return
            events, _ = parse_inotify_events(data)
            self.handle(events)

    def handle(self, events: list[InotifyEvent]) -> None:
        """Count events; watch new directories (so their children are counted too)."""
        for ev in events:
            if ev.mask & IN_Q_OVERFLOW:
                self.overflowed = True
                continue
            if ev.mask & IN_IGNORED:
                self._wd_path.pop(ev.wd, None)
                continue
            parent = self._wd_path.get(ev.wd)
            if parent is None or not ev.mask & IN_ISDIR or not ev.name:
                continue
            child = ("" if parent == "/" else parent) + "/" + ev.name
            if ev.mask & IN_CREATE:
                if child in self._known:
                    continue  # already found by scanning its new parent
                self._count(parent, created=1)
                self._watch_new(child)
            elif ev.mask & IN_DELETE:
                self._known.discard(child)
                self._count(parent, removed=1)

    def _count(self, parent: str, created: int = 0, removed: int = 0) -> None:
        with self._lock:
            c = self._counts[parent]
            c.created += created
            c.removed += removed

    def _watch_new(self, rel: str) -> None:
        """Watch a new directory, then look inside: a runtime makes a pod's and a
        container's cgroups in quick succession, before the watch on the first exists."""
        stack = [rel]
        while stack and self._fd >= 0:
            cur = stack.pop()
            self._known.add(cur)
            if self._add(cur) is not None:
                continue
            try:
                with os.scandir(self._abs(cur)) as it:
                    kids = [e.name for e in it if e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            for k in kids:
                sub = cur + "/" + k
                if sub not in self._known:
                    self._count(cur, created=1)
                    stack.append(sub)

    def drain(self) -> dict[str, Churn]:
        """Counts since the last drain, per parent (relative path)."""
        with self._lock:
            out = dict(self._counts)
            self._counts = defaultdict(Churn)
        return out

    @property
    def watches(self) -> int:
        return len(self._wd_path)

    def stop(self) -> None:
        self._stop.set()
        if self._wake is not None:
            with contextlib.suppress(OSError):
                os.write(self._wake[1], b"x")
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._wake is not None:
            for fd in self._wake:
                os.close(fd)
            self._wake = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def snapshot_churn(prev: dict[str, tuple[str, ...]], cur: dict[str, tuple[str, ...]]
                   ) -> dict[str, Churn]:
    """Children that appeared or vanished between two walks: a lower bound on churn, for when
    inotify is unavailable (a cgroup born and gone between walks is not seen)."""
    out: dict[str, Churn] = {}
    for parent in set(prev) | set(cur):
        if parent not in cur and parent not in prev:
            continue
        before = set(prev.get(parent, ()))
        after = set(cur.get(parent, ()))
        if parent not in prev:
            # a new parent: its children are counted as created (they were not there)
            before = set()
        if parent not in cur:
            continue  # the parent itself went away; its removal is counted at its parent
        c = Churn(len(after - before), len(before - after))
        if c.created or c.removed:
            out[parent] = c
    return out
