"""Flame from a saved `perf script` file: corescope against FlameGraph's stackcollapse-perf.pl
on the same file, in one run, interleaved, medians (issue 22, goal: corescope >= 2x faster).

    python bench/perf_script_file.py --stackcollapse PATH/stackcollapse-perf.pl [--file F]

Without --file, a real system-wide capture is made here (`perf record -e cpu-clock -a -g`
with a burner for stack variety, 30 s at 999 Hz on this VM's 2 CPUs: ~60k samples, the
volume of the issue's 26 MB file) and printed with plain `perf script` (default fields: the
period is printed). corescope runs with its modules compiled (one uncounted run first, into
a temporary pycache), as an installed package has them. Figures per run:
  - stackcollapse-perf.pl --kernel FILE (perl, output discarded);
  - `corescope flame --perf-script FILE --format folded --include-idle` end to end (a fresh
    Python: start-up, then the whole file folded as it is parsed, evidence/perf_fold.py: no
    temporary ring, store or numpy);
  - in this process: the import's parse alone (perf_script.parse_batches), and the sample
    parser the ring's text chunks go through (parse_blocks into a Profile by period).
Both wall time and CPU time (user + system of the child) are timed: on a machine shared
with other work the CPU ratio moves less. The folded outputs are compared first (sorted),
so the speed is of the same answer."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _profile_common import cli_env, record_raw
from corescope.analysis.flame import Profile
from corescope.sources import perf_script
from corescope.sources.perf_import import BLOCK


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def child(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of argv, its output discarded."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def folded_lines(text: str) -> list[str]:
    return sorted(ln for ln in text.splitlines() if ln.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stackcollapse", type=Path, required=True,
                    help="FlameGraph's stackcollapse-perf.pl (run with perl)")
    ap.add_argument("--file", type=Path, default=None, help="a perf script text to use")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        env = cli_env(Path(d) / "pycache")
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
                              env=env).stdout  # (and the modules compiled)
        a, b = folded_lines(ref), folded_lines(ours)
        differ = len(set(a) ^ set(b))
        text = path.read_text(errors="replace")
        blocks = [text[i : i + BLOCK] for i in range(0, len(text), BLOCK)]
        n = {"samples": 0}

        def batches_only() -> None:
            n["samples"] = sum(len(x) for x in perf_script.parse_batches(blocks))

        def samples_and_fold() -> None:
            prof = Profile(include_idle=True, weight="period")
            for s in perf_script.parse_blocks(blocks):
                prof.add(s)

        refs, mine, batch, parse = [], [], [], []
        for _ in range(args.runs):  # interleaved: drift on a shared machine hits all alike
            refs.append(child(ref_argv, env))
            mine.append(child(ours_argv, env))
            batch.append(timed(batches_only))
            parse.append(timed(samples_and_fold))
        r_wall, r_cpu = (statistics.median(x) for x in zip(*refs, strict=True))
        m_wall, m_cpu = (statistics.median(x) for x in zip(*mine, strict=True))
        speed = statistics.median(x[0] / y[0] for x, y in zip(refs, mine, strict=True))
        cspeed = statistics.median(x[1] / y[1] for x, y in zip(refs, mine, strict=True))
        bt, pt = statistics.median(batch), statistics.median(parse)
        size = path.stat().st_size
        print(f"load average {os.getloadavg()[0]:.1f} at the end (2 CPUs)")
        print(f"file: {size / 1e6:.1f} MB, {n['samples']} samples; folded lines "
              f"{len(b)} (stackcollapse {len(a)}, {differ} differ: see docs/perf-script.md)")
        print(f"stackcollapse-perf.pl --kernel:      {r_wall * 1000:8.1f} ms wall, "
              f"{r_cpu * 1000:8.1f} ms CPU (medians of {args.runs})")
        print(f"corescope flame --format folded:     {m_wall * 1000:8.1f} ms wall, "
              f"{m_cpu * 1000:8.1f} ms CPU   speed-up {speed:5.2f}x wall, {cspeed:5.2f}x CPU "
              "(goal >= 2)")
        print(f"the import's parse (parse_batches):  {bt * 1000:8.1f} ms   "
              f"({r_wall / bt:5.2f}x stackcollapse's wall)")
        print(f"parse_blocks + Profile.add (text):   {pt * 1000:8.1f} ms   "
              f"({r_wall / pt:5.2f}x)")


if __name__ == "__main__":
    main()
