"""Overhead of our streaming parse on top of `perf script` for the same window:
(perf script + parse + aggregate) ÷ (perf script alone, output discarded). Goal ≤ 1.3."""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _profile_common import record_raw
from corescope.analysis.flame import Profile
from corescope.runner import Runner
from corescope.sources import perf_script
from corescope.store.profile_query import SCRIPT_FIELDS, script_blocks


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        raw = Path(d) / "w.data"
        record_raw(raw, 20.0, hz=99)
        argv = ["perf", "script", "-i", str(raw), "-F", SCRIPT_FIELDS]
        n = {"samples": 0}

        def floor() -> None:
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)

        def ours() -> None:
            prof = Profile()
            for s in perf_script.parse_blocks(script_blocks(Runner(), raw)):
                prof.add(s)
            n["samples"] = prof.samples

        floor()  # warm the page cache and perf's symbol loading equally
        # interleaved pairs, so drift on a shared machine hits both sides alike
        bases, mines = [], []
        for _ in range(11):
            bases.append(timed(floor))
            mines.append(timed(ours))
        base, mine = statistics.median(bases), statistics.median(mines)
        ratio = statistics.median(m / b for m, b in zip(mines, bases, strict=True))
        print(f"window: 20 s, 2 CPUs at 99 Hz, {n['samples']} samples")
        print(f"perf script alone:           {base * 1000:8.1f} ms (median of 11)")
        print(f"perf script + parse + fold:  {mine * 1000:8.1f} ms")
        print(f"overhead ratio:              {ratio:8.2f}  (median of 11 paired ratios; "
              "goal <= 1.3)")


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
