"""A burner pinned to one core that burns kernel (system) time. The default walker reads
1 MiB at a time from /dev/zero (the kernel zero-filling user memory: `read_iter_zero`); the
`memcg` walker reads the lab parent's `memory.stat` in a loop, the way kubelet's stats read
did in the incident, so the stacks show the memcg stat path (`memory_stat_show`,
`mem_cgroup_iter` over the lab's dying memcgs)."""

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


WALKERS = ("zero", "memcg")


def burn(cpu: int, seconds: float, stat_file: str | None = None) -> int:
    """Pin to `cpu` and burn system time for `seconds`: reads of /dev/zero, or of
    `stat_file` (a memory.stat) when given. Returns the number of reads done."""
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
    fd = os.open(stat_file or "/dev/zero", os.O_RDONLY | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + seconds
        views = [buf]
        # a seq file is read from offset 0 each time: every read formats (walks) it anew;
        # cgroupfs refuses preadv, plain pread works
        read = (lambda: os.pread(fd, 1 << 16, 0)) if stat_file else (lambda: os.readv(fd, views))
        while not stop:
            for _ in range(64):  # check the clock rarely: keep user time near zero
                read()
            reads += 64
            if time.monotonic() >= deadline:
                break
    finally:
        os.close(fd)
    return reads
