"""Overhead of our streaming parse on top of `perf script` for the same window:
(perf script + parse + aggregate) ÷ (perf script alone, output discarded). Goal ≤ 1.3.
`--fields LIST`: perf script's -F list instead of the ring's (`tid,time,ip,sym,dso`, `ip,sym`:
the layouts without some header fields, which have their own patterns)."""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from _profile_common import record_raw
from corescope.analysis.flame import Profile
from corescope.evidence.profile_query import SCRIPT_FIELDS, script_blocks
from corescope.runner import Runner
from corescope.sources import perf_script
from corescope.sources.perf_import import BLOCK


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fields", default=SCRIPT_FIELDS, help="perf script -F list")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        raw = Path(d) / "w.data"
        record_raw(raw, 20.0, hz=99)
        argv = ["perf", "script", "-i", str(raw), "-F", args.fields]
        n = {"samples": 0}

        def blocks() -> Iterator[str]:
            if args.fields == SCRIPT_FIELDS:
                yield from script_blocks(Runner(), raw)  # what flame runs on the ring
                return
            with subprocess.Popen(argv, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL) as proc:
                assert proc.stdout is not None
                text = io.TextIOWrapper(proc.stdout, encoding="utf-8", errors="replace")
                while block := text.read(BLOCK):
                    yield block

        def floor() -> None:
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)

        def ours() -> None:
            prof = Profile()
            for s in perf_script.parse_blocks(blocks()):
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
        print(f"window: 20 s, 2 CPUs at 99 Hz, {n['samples']} samples, -F {args.fields}")
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
