"""`corescope record`'s own CPU in steady state: % of one core over 60 s, per-core sampling alone
at 1 Hz (goal ≤ 0.3%) and 10 Hz, and with every sensor but the perf ring.

Read from /proc/<pid>/stat (utime + stime + the children it waited for, e.g. ethtool) at 10 s
and again 60 s later, so interpreter start-up, which an agent pays once, is not in the figure."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from _common import REPO

DURATION = float(os.environ.get("BENCH_DURATION", "60"))
WARMUP = 10.0
HZ = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[11..14] are utime, stime, cutime, cstime (stat(5) fields 14-17)
    return sum(int(x) for x in fields[11:15])


def steady_pct(args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.Popen([sys.executable, "-m", "corescope", "record", "--store", d,
                                 "--no-profile", "--duration", str(WARMUP + DURATION + 5),
                                 *args], env=env, stderr=subprocess.DEVNULL)
        try:
            time.sleep(WARMUP)
            a, ta = cpu_ticks(proc.pid), time.monotonic()
            time.sleep(DURATION)
            b, tb = cpu_ticks(proc.pid), time.monotonic()
        finally:
            proc.terminate()
            proc.wait()
    return 100.0 * (b - a) / HZ / (tb - ta)


def main() -> None:
    only_cores = ["--no-kmsg", "--no-census", "--no-netdev"]
    runs = [("per-core sampling only, 1 Hz", ["--interval", "1s", *only_cores], "  goal ≤ 0.3%"),
            ("per-core sampling only, 10 Hz", ["--interval", "0.1s", *only_cores], ""),
            ("all sensors but perf, 1 Hz", ["--interval", "1s"], "")]
    print(f"record's own CPU over {DURATION:g} s after a {WARMUP:g} s warm-up "
          f"(resolution {100 / HZ / DURATION:.3f}%)")
    for label, args, goal in runs:
        print(f"{label:<32} {steady_pct(args):.3f}% of one core{goal}")


if __name__ == "__main__":
    main()
