"""Flame from a saved `perf script` file: corescope against FlameGraph's stackcollapse-perf.pl
on the same file, in one run, interleaved, medians (issue 22, goal: corescope >= 2x faster).

    python bench/perf_script_file.py --stackcollapse PATH/stackcollapse-perf.pl [--file F]

Without --file, a real system-wide capture is made here (`perf record -e cpu-clock -a -g`
with a burner for stack variety) and printed with plain `perf script` (default fields: the
period is printed). Three figures per run:
  - stackcollapse-perf.pl --kernel FILE (perl, output discarded);
  - `corescope flame --perf-script FILE --format folded --include-idle` end to end (a fresh
    Python: start-up, the import into a temporary ring, the query, the fold);
  - the parser alone in this process (perf_script.parse_blocks into a Profile by period).
The folded outputs are compared first (sorted), so the speed is of the same answer."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _profile_common import env, record_raw
from corescope.analysis.flame import Profile
from corescope.sources import perf_script
from corescope.sources.perf_import import BLOCK


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def folded_lines(text: str) -> list[str]:
    return sorted(ln for ln in text.splitlines() if ln.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stackcollapse", type=Path, required=True,
                    help="FlameGraph's stackcollapse-perf.pl (run with perl)")
    ap.add_argument("--file", type=Path, default=None, help="a perf script text to use")
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = args.file
        if path is None:
            raw = Path(d) / "w.data"
            record_raw(raw, args.seconds, hz=args.hz)
            path = Path(d) / "w.txt"
            with path.open("wb") as out:
                subprocess.run(["perf", "script", "-i", str(raw)], stdout=out,
                               stderr=subprocess.DEVNULL, check=True)
        ref_argv = ["perl", str(args.stackcollapse), "--kernel", str(path)]
        ours_argv = [sys.executable, "-m", "corescope", "flame", "--perf-script", str(path),
                     "--format", "folded", "--include-idle"]
        ref = subprocess.run(ref_argv, capture_output=True, text=True, check=True).stdout
        ours = subprocess.run(ours_argv, capture_output=True, text=True, check=True,
                              env=env()).stdout
        a, b = folded_lines(ref), folded_lines(ours)
        differ = len(set(a) ^ set(b))
        text = path.read_text(errors="replace")
        blocks = [text[i : i + BLOCK] for i in range(0, len(text), BLOCK)]
        n = {"samples": 0}

        def parse_only() -> None:
            prof = Profile(include_idle=True, weight="period")
            for s in perf_script.parse_blocks(blocks):
                prof.add(s)
            n["samples"] = prof.samples

        def run(argv: list[str]) -> Callable[[], object]:
            return lambda: subprocess.run(argv, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, check=True, env=env())

        refs, mine, parse = [], [], []
        for _ in range(args.runs):  # interleaved: drift on a shared machine hits all alike
            refs.append(timed(run(ref_argv)))
            mine.append(timed(run(ours_argv)))
            parse.append(timed(parse_only))
        r, m, p = (statistics.median(x) for x in (refs, mine, parse))
        speed = statistics.median(x / y for x, y in zip(refs, mine, strict=True))
        pspeed = statistics.median(x / y for x, y in zip(refs, parse, strict=True))
        size = path.stat().st_size
        print(f"file: {size / 1e6:.1f} MB, {n['samples']} samples; folded lines "
              f"{len(b)} (stackcollapse {len(a)}, {differ} differ: see docs/perf-script.md)")
        print(f"stackcollapse-perf.pl --kernel:      {r * 1000:8.1f} ms (median of {args.runs})")
        print(f"corescope flame --format folded:     {m * 1000:8.1f} ms   speed-up "
              f"{speed:5.2f}x (goal >= 2)")
        print(f"parser + fold alone (in process):    {p * 1000:8.1f} ms   speed-up "
              f"{pspeed:5.2f}x")


if __name__ == "__main__":
    main()
