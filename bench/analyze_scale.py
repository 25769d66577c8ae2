"""`corescope analyze HOUR --json` end to end on one generated 96-CPU incident hour: import into
a temporary store, build the investigation, render its JSON. Against the same floor as
bench/ingest_scale.py: decompress + `json.loads` of the mpstat file plus reading the perf text.

The hour is `lab scenario zombie_chain` with a 10,000-line dmesg (mpstat JSON with 3,600
entries of 96 CPUs, 30 `perf script` chunks of 2 min at 49 Hz on 2 CPUs, census loop, /proc
snapshots, systemctl/crictl, pressure loops). The analyze side runs the real command in its
own process (`python -m corescope analyze`; perf chunks are parsed and stored too), and its
wall time and peak RSS are that child's.
Interleaved with the floor, three times; medians. It also checks the answer: the expected hot
CPU's episodes and incidents preceded on it.

Goal (issue 8): ≤ 3x the floor and ≤ 500 MB peak RSS.

Run: python bench/analyze_scale.py [SEED]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO
from ingest_scale import run as run_floor


def run_analyze(hour: Path) -> dict:
    """One `corescope analyze HOUR --json` in a child; wall time and the child's peak RSS."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    # a fresh grandchild per run: RUSAGE_CHILDREN's max is per waited-for process tree, so
    # measure in a wrapper that runs exactly one analyze
    wrapper = (
        "import json, resource, subprocess, sys, time\n"
        "t0 = time.perf_counter()\n"
        "p = subprocess.run([sys.executable, '-m', 'corescope', 'analyze', sys.argv[1],"
        " '--json'], capture_output=True, text=True)\n"
        "wall = time.perf_counter() - t0\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "print(json.dumps({'wall': wall, 'rss_mb': rss, 'rc': p.returncode,"
        " 'out': p.stdout, 'err': p.stderr[-2000:]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", wrapper, str(hour)], capture_output=True,
                         text=True, check=True, env=env)
    return json.loads(out.stdout)


def check(result: dict, expected: dict) -> str:
    if result["rc"] not in (0, 1):
        return f"analyze exited {result['rc']}: {result['err']}"
    inv = json.loads(result["out"])["investigation"]
    eps = inv["cores"]["episodes"]
    hot = expected["hot_cpu"]
    incidents = inv["report"]["incidents"]
    preceded = sum(1 for i in incidents
                   if any(p["cpu"] == hot and p.get("serves_queue") for p in
                          i["preceding_episodes"]))
    kinds: dict[str, int] = {}
    for f in json.loads(result["out"])["import"]["files"]:
        kinds[f["kind"] or "skipped"] = kinds.get(f["kind"] or "skipped", 0) + f["records"]
    return (f"episodes on cpu{hot}: {sum(1 for e in eps if e['cpu'] == hot)} of {len(eps)}; "
            f"incidents preceded on it (serving the queue): {preceded}/{len(incidents)}; "
            f"records by kind: {kinds}")


def main() -> None:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    from corescope.lab.scenarios import generate

    with tempfile.TemporaryDirectory(prefix="corescope-bench-") as tmp:
        hour = Path(tmp) / "hour"
        t0 = time.perf_counter()
        expected = generate("zombie_chain", hour, cpus=96, seed=seed, dmesg_lines=10_000)
        gen_s = time.perf_counter() - t0
        floor, ours = [], []
        for _ in range(3):
            floor.append(run_floor("floor", hour))
            ours.append(run_analyze(hour))
        fw = statistics.median(r["wall"] for r in floor)
        ow = statistics.median(r["wall"] for r in ours)
        print("machine shared with other sessions and busier than usual: read the ratio, "
              "not the seconds")
        print(f"generated the hour in {gen_s:.1f} s (seed {seed}, "
              f"{sum(f.stat().st_size for f in hour.rglob('*') if f.is_file()) / 1e6:.0f} MB "
              "on disk)")
        print(f"floor (decompress + json.loads mpstat + decompress and decode perf text): "
              f"{fw:.2f} s, peak RSS {statistics.median(r['rss_mb'] for r in floor):.0f} MB")
        print(f"corescope analyze --json: {ow:.2f} s, peak RSS "
              f"{max(r['rss_mb'] for r in ours):.0f} MB (max of 3)")
        print(f"  {check(ours[0], expected)}")
        print(f"ratio analyze / floor: {ow / fw:.2f}x (goal <= 3x; RSS goal <= 500 MB)")


if __name__ == "__main__":
    main()
