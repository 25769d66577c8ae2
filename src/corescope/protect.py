"""The recorder protects itself on a starved node, the node it exists to record.

- CPU: a negative nice level (default -10), not a real-time policy. The starved core is busy
  in the kernel (softirq, a cgroup walk), which no user-space policy preempts, so what the
  recorder needs is to be picked promptly on the *other* cores when user work saturates them:
  at nice -10 its CFS weight is ~9x a normal task's, so it runs within a few ms. SCHED_FIFO/RR
  would instead let any burst in the recorder (a flood of kernel log lines to classify, a large
  census) take a core ahead of every workload, and a bug would be an outage; RT throttling
  only caps that at 95%.
- Memory: mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT), so pages the recorder has touched
  (its code, the interpreter, the store's cache) are never reclaimed under memory pressure and
  a sample never waits on a major fault. MCL_ONFAULT locks pages only as they are touched: plain
  MCL_CURRENT would fault in every mapped library (numpy and its BLAS are tens of MB) and
  grow the RSS for nothing. Only where allowed: as root (CAP_IPC_LOCK), or when RLIMIT_MEMLOCK
  is unlimited; otherwise MCL_FUTURE would make allocations fail past the limit. A locked
  recorder that grows past RSS_BUDGET unlocks itself, so a leak cannot pin memory the node
  needs.
"""

from __future__ import annotations

import ctypes
import os
import resource
from dataclasses import dataclass

DEFAULT_NICE = -10
RSS_BUDGET = 256 * 1024 * 1024
MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT = 1, 2, 4


@dataclass
class Protection:
    nice: int | None = None  # the nice level now in force
    locked: bool = False
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        parts = [f"nice {self.nice}" if self.nice is not None else "",
                 "memory locked (on fault)" if self.locked else "", *self.notes]
        return "; ".join(p for p in parts if p)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def lock_allowed() -> tuple[bool, str]:
    """(may we mlockall with MCL_FUTURE without making allocations fail, why not)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if os.geteuid() == 0 or soft == resource.RLIM_INFINITY:
        return True, ""
    return False, (f"memory not locked: not root and RLIMIT_MEMLOCK is {soft} bytes "
                   "(locking future allocations would make them fail)")


def set_nice(target: int) -> tuple[int | None, str]:
    """Move to nice `target` (below the current level needs root). Returns (the level in
    force, a note when not done)."""
    try:
        now = os.getpriority(os.PRIO_PROCESS, 0)
    except OSError as exc:
        return None, f"nice not read: {exc.strerror}"
    if target == now:
        return now, ""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, target)
    except OSError as exc:
        return now, f"nice {target} not set ({exc.strerror}; needs root): running at nice {now}"
    return os.getpriority(os.PRIO_PROCESS, 0), ""


def lock_memory() -> tuple[bool, str]:
    ok, why = lock_allowed()
    if not ok:
        return False, why
    libc = _libc()
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0:
        err = ctypes.get_errno()
        return False, f"memory not locked: mlockall: {os.strerror(err)}"
    return True, ""


def unlock_memory() -> None:
    _libc().munlockall()


def protect(nice: int | None = DEFAULT_NICE, lock: bool = True) -> Protection:
    """Apply both protections as far as this process is allowed; say what was not done."""
    notes: list[str] = []
    level = None
    if nice is not None:
        level, note = set_nice(nice)
        if note:
            notes.append(note)
    locked = False
    if lock:
        locked, note = lock_memory()
        if note:
            notes.append(note)
    return Protection(nice=level, locked=locked, notes=tuple(notes))


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read(64).split()[1]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


class MemoryGuard:
    """Checked by the recorder every minute: a locked recorder past the budget unlocks."""

    def __init__(self, prot: Protection, budget: int = RSS_BUDGET) -> None:
        self.prot = prot
        self.budget = budget

    def check(self) -> str | None:
        if not self.prot.locked:
            return None
        rss = rss_bytes()
        if rss <= self.budget:
            return None
        unlock_memory()
        self.prot.locked = False
        return (f"RSS {rss // 1_000_000} MB is past the {self.budget // 1_000_000} MB budget: "
                "memory unlocked so the node can reclaim it")
