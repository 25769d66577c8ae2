"""What symbolising each ring chunk when it closes costs, against keeping raw perf.data.

One real chunk (`record`'s own perf argv, 49 Hz, system-wide, BENCH_SECONDS long, with a
/dev/zero burner on cpu 1 for stack variety) is finished both ways:
- before: `perf script -F time` to count samples, then zstd of the perf.data (what was kept);
- now: `perf script -F <ring fields>` streamed into zstd text (`sources.perf.symbolise`).
Prints stored bytes per hour per CPU for both, and the CPU each finish takes (perf's and
ours, from rusage), as % of one core amortised over the chunk. Needs root and perf. Medians
of 3; the machine is shared and busy, so the stacks are those of a busy node.
"""

from __future__ import annotations

import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _profile_common import record_raw
from corescope.runner import Runner
from corescope.sources.perf import compress_file, count_samples, symbolise

SECONDS = float(os.environ.get("BENCH_SECONDS", "120"))


def cpu_of(fn: Callable[[], object]) -> float:
    """CPU seconds of fn: this process plus the children it waited for."""
    s0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    fn()
    s1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return sum(getattr(b, f) - getattr(a, f) for a, b in ((s0, s1), (c0, c1))
               for f in ("ru_utime", "ru_stime"))


def main() -> None:
    runner = Runner()
    ncpu = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as d:
        raw = Path(d) / "chunk.data"
        record_raw(raw, SECONDS)
        lo, hi = 0.0, time.clock_gettime(time.CLOCK_MONOTONIC) + 1
        old_zst, txt = Path(d) / "chunk.perf.zst", Path(d) / "chunk.txt.zst"
        samples: list[int] = []

        def before() -> None:
            samples.append(count_samples(runner, raw, lo, hi) or 0)
            compress_file(raw, old_zst)

        def now() -> None:
            n = symbolise(runner, raw, lo, hi, txt)
            assert isinstance(n, int), n

        old_cpu = statistics.median(cpu_of(before) for _ in range(3))
        new_cpu = statistics.median(cpu_of(now) for _ in range(3))
        n = samples[0]
        per_h = 3600 / SECONDS / ncpu / 1e6
        print(f"one {SECONDS:.0f} s chunk at 49 Hz on {ncpu} CPUs: {n} samples "
              f"(busy shared machine: other sessions' load is in the stacks)")
        print(f"perf.data raw {raw.stat().st_size / 1e6:.2f} MB")
        print(f"stored, before (perf.data zstd): {old_zst.stat().st_size * per_h:.2f} MB per "
              f"hour per CPU")
        print(f"stored, now (symbolised text zstd): {txt.stat().st_size * per_h:.2f} MB per "
              f"hour per CPU  (ratio {txt.stat().st_size / old_zst.stat().st_size:.2f})")
        print(f"finish CPU, before (count + compress): {old_cpu:.2f} s = "
              f"{100 * old_cpu / SECONDS:.3f}% of one core over the chunk")
        print(f"finish CPU, now (perf script + compress): {new_cpu:.2f} s = "
              f"{100 * new_cpu / SECONDS:.3f}% of one core over the chunk "
              f"(ratio {new_cpu / max(old_cpu, 1e-9):.2f})")


if __name__ == "__main__":
    main()
