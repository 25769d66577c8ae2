"""What the ring costs: bytes per hour per CPU at 49 Hz (compressed, as stored), and
`record`'s own CPU (the corescope process plus its perf children) with profiling on,
against `record --no-profile` as the floor."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from _profile_common import REPO, env

# Default: the shipped chunk length (120 s) over 250 s, so two whole chunks land in the ring.
SECONDS = int(os.environ.get("BENCH_SECONDS", "250"))
CHUNK = os.environ.get("BENCH_CHUNK", "120s")


def run_record(store: Path, *extra: str) -> float:
    """CPU seconds used by `corescope record` and its children over SECONDS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "corescope", "--store", str(store), "record",
                    "--duration", f"{SECONDS}s", *extra], env=env(), cwd=REPO,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    sys.path.insert(0, str(REPO / "src"))
    from corescope.store import profiles as ring
    from corescope.store.db import Store

    ncpu = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as d:
        cpu_off = run_record(Path(d) / "off", "--no-profile")
        cpu_on = run_record(Path(d) / "on", "--profile-chunk", CHUNK, "--profile-hz", "49")
        with Store.open(Path(d) / "on", create=False) as store:
            chunks = ring.all_chunks(store)
        span = sum(c.wall_end - c.wall_start for c in chunks)
        stored = sum(c.bytes for c in chunks)
        raw = sum(c.raw_bytes for c in chunks)
        samples = sum(c.samples for c in chunks)
    per_h_cpu = stored / span * 3600 / ncpu
    print(f"{len(chunks)} chunks over {span:.0f} s on {ncpu} CPUs at 49 Hz, {samples} samples")
    print(f"ring bytes per hour per CPU: {per_h_cpu / 1e6:.2f} MB compressed "
          f"({raw / span * 3600 / ncpu / 1e6:.2f} MB raw perf.data, "
          f"zstd ratio {raw / max(stored, 1):.1f}x)")
    print(f"  → 12 h on 96 CPUs: {per_h_cpu * 12 * 96 / 1e9:.2f} GB (default budget 2 GB)")
    print(f"record CPU, profiling on : {100 * cpu_on / SECONDS:.2f}% of one CPU "
          f"(corescope + perf record + chunk finishing)")
    print(f"record CPU, --no-profile : {100 * cpu_off / SECONDS:.2f}% of one CPU")
    print(f"ratio on/off             : {cpu_on / max(cpu_off, 1e-9):.1f}x")


if __name__ == "__main__":
    main()
