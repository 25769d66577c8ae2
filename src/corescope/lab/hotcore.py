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
from collections.abc import Callable
from pathlib import Path

BURNER_NAME = "corescope-burn"
_PR_SET_NAME = 15
_PR_SET_PDEATHSIG = 1
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


def burn(cpu: int, seconds: float, stat_file: str | None = None,
         started: Callable[[int], None] | None = None) -> int:
    """Pin to `cpu` and burn system time for `seconds`: reads of /dev/zero, or of
    `stat_file` (a memory.stat) when given. Returns the number of reads done; `started` is
    told the burner's pid (a child process) before it burns.

    Like kernel work that cannot be argued with (kubelet's memcg walk), the burner should own
    its core even on a busy machine: the highest CFS weight when allowed. With autogroup on
    (the default on most distributions) a nice value ranks a task only inside its session's
    group, and another session's load on the core takes an equal share however nice we are.
    So the burn runs in a child in a session of its own whose group is at nice -20 too (root;
    without it the burn goes on at the weight it could get). The child dies with us
    (PDEATHSIG), and SIGINT/SIGTERM stop it."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the burner
        code = 1
        try:
            os.close(rfd)
            _libc_prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() == 1:  # the parent died before the line above
                os._exit(1)
            os.setsid()
            with contextlib.suppress(OSError):
                Path("/proc/self/autogroup").write_text("-20")
            reads = _burn_here(cpu, seconds, stat_file)
            os.write(wfd, str(reads).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    if started is not None:
        started(pid)

    def _stop(_signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)

    old = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        os.waitpid(pid, 0)
        with os.fdopen(rfd, "rb") as f:
            out = f.read()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return int(out) if out.isdigit() else 0


def _libc_prctl(option: int, arg: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0)


def _burn_here(cpu: int, seconds: float, stat_file: str | None) -> int:
    os.sched_setaffinity(0, {cpu})
    set_process_name(BURNER_NAME)
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
