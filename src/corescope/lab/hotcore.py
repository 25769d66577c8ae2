"""A burner pinned to one core that burns kernel (system) time: a tight loop of 1 MiB reads
from /dev/zero, so almost every cycle is the kernel zero-filling user memory."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time

BURNER_NAME = "corescope-burn"
_PR_SET_NAME = 15
_CHUNK = 1 << 20


def set_process_name(name: str) -> None:
    """Rename this thread (what perf and ps show as comm). Best effort."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass


def allowed_cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


def burn(cpu: int, seconds: float) -> int:
    """Pin to `cpu` and burn system time for `seconds`. Returns the number of reads done."""
    os.sched_setaffinity(0, {cpu})
    set_process_name(BURNER_NAME)
    # Like kernel work that cannot be argued with (kubelet's memcg walk), the burner should
    # own its core even on a busy machine: highest CFS weight when allowed.
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, -20)
    stop = False

    def _stop(_signum: int, _frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    buf = bytearray(_CHUNK)
    reads = 0
    fd = os.open("/dev/zero", os.O_RDONLY | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + seconds
        readinto = os.readv
        views = [buf]
        while not stop:
            for _ in range(64):  # check the clock rarely: keep user time near zero
                readinto(fd, views)
            reads += 64
            if time.monotonic() >= deadline:
                break
    finally:
        os.close(fd)
    return reads
