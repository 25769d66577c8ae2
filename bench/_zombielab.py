"""Shared by the zombie benchmarks: root and v1-memory checks, zombie creation and a
cleanup that always runs (also on Ctrl-C and SIGTERM)."""

from __future__ import annotations

import os
import signal
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from corescope.lab import zombies as labz
from corescope.rootfs import Root
from corescope.sources import cgroups as cg


def require_lab() -> labz.LabPaths:
    if os.geteuid() != 0:
        sys.exit("benchmark needs root (it creates real dying memory cgroups)")
    try:
        return labz.lab_paths()
    except labz.LabError as exc:
        sys.exit(str(exc))


def dying_now() -> int | None:
    root = Root()
    layout, _ = cg.read_layout(root)
    res = cg.take_census(root, layout)
    return res.census.dying if res.census else None


def grow_to(paths: labz.LabPaths, made: int, target: int) -> int:
    """Add zombies until `target` have been made by this run; returns the new total."""
    if target > made:
        t0 = time.monotonic()
        labz.make_zombies(target - made, paths)
        print(f"  made {target - made} zombies in {time.monotonic() - t0:.1f}s",
              file=sys.stderr, flush=True)
    return max(made, target)


def cleanup() -> None:
    res = labz.clean(drop_caches=True)
    after = labz.settle(dying_now, timeout_s=10.0)
    print(f"cleanup: removed {res.cgroups_removed} cgroups, {res.files_removed} files, "
          f"dropped caches; dying now {after}", file=sys.stderr)


def install_sigterm() -> None:
    def _raise(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _raise)


def median_ms(fn: Callable[[], object], runs: int, warmup: int = 3) -> float:
    for _ in range(warmup):  # caches and page tables warm, like a recorder in steady state
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)
