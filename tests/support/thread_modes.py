"""The modes another thread's new files are born with while this thread does something: the
umask is process-wide, so code that narrows it for a moment makes every file another thread
creates in that moment 0600 (a recorder's threads, serve's page threads)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path


def modes_beside(work: Callable[[], None], scratch: Path, times: int = 30) -> set[int]:
    """Run `work` `times` times while a second thread creates files (asking 0644, under a
    umask of 022) in `scratch` as fast as it can; the set of modes those files got. Thread
    switches are made as frequent as the interpreter allows meanwhile, so the second thread
    runs inside any window the work opens."""
    scratch.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    started = threading.Event()
    modes: set[int] = set()

    def creator() -> None:
        n = 0
        while not stop.is_set():
            path = scratch / f"f{n}"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            modes.add(os.fstat(fd).st_mode & 0o777)
            os.close(fd)
            os.unlink(path)
            n += 1
            started.set()

    old_umask = os.umask(0o022)
    old_switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    t = threading.Thread(target=creator, daemon=True)
    try:
        t.start()
        started.wait(10)
        for _ in range(times):
            work()
    finally:
        stop.set()
        t.join(10)
        sys.setswitchinterval(old_switch)
        os.umask(old_umask)
    return modes
