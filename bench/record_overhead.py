"""`corescope record`'s own CPU: % of one core over 60 s at 1 Hz (goal ≤ 0.3%) and at 10 Hz.

Measured from the kernel's rusage of the child. Interpreter start-up is reported apart (a
`--duration 0.1` run), because an agent pays it once, not per minute."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from _common import REPO

DURATION = float(os.environ.get("BENCH_DURATION", "60"))


def cpu_seconds(args: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.Popen([sys.executable, "-m", "corescope", "record", "--store", d,
                                 "--no-profile", "--no-kmsg", *args], env=env,
                                stderr=subprocess.DEVNULL)
        _, _, ru = os.wait4(proc.pid, 0)
    return ru.ru_utime + ru.ru_stime


def main() -> None:
    startup = cpu_seconds(["--duration", "0.1"])
    print(f"start-up (once): {startup * 1000:.0f} ms CPU")
    for interval in ("1s", "0.1s"):
        total = cpu_seconds(["--interval", interval, "--duration", str(DURATION)])
        steady = max(0.0, total - startup)
        print(f"record at {interval:>4} for {DURATION:g}s: {100 * steady / DURATION:.3f}% of one "
              f"core steady (incl. start-up {100 * total / DURATION:.3f}%)"
              + ("   goal ≤ 0.3%" if interval == "1s" else ""))


if __name__ == "__main__":
    main()
