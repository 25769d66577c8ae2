"""Overhead of our streaming parse on top of `perf script` for the same window:
(perf script + parse + aggregate) ÷ (perf script alone, output discarded). Goal ≤ 1.3."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from _profile_common import median_time, record_raw
from corescope.analysis.flame import Profile
from corescope.runner import Runner
from corescope.sources import perf_script
from corescope.sources.perf_query import SCRIPT_FIELDS, script_lines


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
            for s in perf_script.parse(script_lines(Runner(), raw)):
                prof.add(s)
            n["samples"] = prof.samples

        floor()  # warm the page cache and perf's symbol loading equally
        base = median_time(floor)
        mine = median_time(ours)
        print(f"window: 20 s, 2 CPUs at 99 Hz, {n['samples']} samples")
        print(f"perf script alone:           {base * 1000:8.1f} ms (median of 5)")
        print(f"perf script + parse + fold:  {mine * 1000:8.1f} ms")
        print(f"overhead ratio:              {mine / base:8.2f}  (goal <= 1.3)")


if __name__ == "__main__":
    main()
