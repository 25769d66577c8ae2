"""Shared helpers for the profile-ring benchmarks (not run by the test suite)."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))


def median_time(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def record_raw(out: Path, seconds: float, hz: int = 49, burn_cpu: int | None = 1) -> None:
    """A real perf.data of `seconds`, with a /dev/zero burner on burn_cpu for stack variety."""
    burner = None
    if burn_cpu is not None:
        code = (f"import os,time\nos.sched_setaffinity(0,{{{burn_cpu}}})\n"
                "fd=os.open('/dev/zero',0)\nb=[bytearray(1<<20)]\n"
                f"t=time.time()+{seconds + 2}\nwhile time.time()<t: os.readv(fd,b)\n")
        burner = subprocess.Popen([sys.executable, "-c", code])
    try:
        p = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", str(hz), "-a", "-g",
                              "-k", "CLOCK_MONOTONIC", "-N", "-q", "-o", str(out)])
        time.sleep(seconds)
        p.send_signal(signal.SIGINT)
        p.wait()
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO / "src")
    return e


def cli_env(pycache: Path) -> dict[str, str]:
    """The benches' environment, with modules compiled (once, into `pycache`) as an
    installed package has them: the dev shell's PYTHONDONTWRITEBYTECODE would make every
    run compile them again."""
    e = env()
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    e["PYTHONPYCACHEPREFIX"] = str(pycache)
    return e
