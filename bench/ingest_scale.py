"""Importing one generated 96-CPU incident hour (`corescope.ingest.import_paths`), against a
floor: decompressing and `json.loads` of the same mpstat file plus reading the perf text.

The hour is `lab scenario zombie_chain` (mpstat JSON with 3,600 entries of 96 CPUs, 30
`perf script` chunks of 2 min at 49 Hz on 2 CPUs, a 10,000-line dmesg, a census loop and the
/proc snapshots). Each side runs in its own process (peak RSS is per process), interleaved,
three times; medians. Goal: import ≤ 3x the floor and ≤ 500 MB peak RSS.

Run: python bench/ingest_scale.py [SEED]
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import REPO

CHILD = r"""
import gzip, json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
d = Path(sys.argv[2])
t0 = time.perf_counter()
if sys.argv[1] == "floor":
    mp = next(d.glob("mpstat.json*"))
    raw = mp.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    n = 0
    for p in sorted((d / "perf").iterdir()):
        b = p.read_bytes()
        n += len((gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b).decode())
    what = {"entries": len(doc["sysstat"]["hosts"][0]["statistics"]), "perf_bytes": n}
else:
    def hwm_mb():
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
from corescope.ingest import import_paths
    from corescope.store.db import Store
    with Store.open(Path(sys.argv[4])) as st:
        rep = import_paths([d], st)
    what = {f.kind or "skipped": 0 for f in rep.files}
    for f in rep.files:
        what[f.kind or "skipped"] += f.records
    what["not imported"] = sorted({f.kind for f in rep.files if f.kind and not f.records})
wall = time.perf_counter() - t0
rss = hwm_mb()
print(json.dumps({"wall": wall, "rss_mb": rss, "what": what}))
"""


def run(mode: str, hour: Path, store: Path | None = None) -> dict:
    args = [sys.executable, "-c", CHILD, mode, str(hour), str(REPO / "src")]
    if store is not None:
        args.append(str(store))
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    from corescope.lab.scenarios import generate

    with tempfile.TemporaryDirectory(prefix="corescope-bench-") as tmp:
        hour = Path(tmp) / "hour"
        generate("zombie_chain", hour, cpus=96, seed=seed, dmesg_lines=10_000)
        floor, ours = [], []
        for i in range(3):
            floor.append(run("floor", hour))
            ours.append(run("import", hour, Path(tmp) / f"store{i}"))
        fw = statistics.median(r["wall"] for r in floor)
        ow = statistics.median(r["wall"] for r in ours)
        print("machine shared with other sessions and busier than usual: read the ratio, "
              "not the seconds")
        print(f"floor (decompress + json.loads mpstat + decompress and decode perf text): "
              f"{fw:.2f} s, "
              f"peak RSS {statistics.median(r['rss_mb'] for r in floor):.0f} MB "
              f"({floor[0]['what']})")
        print(f"import_paths: {ow:.2f} s, peak RSS "
              f"{max(r['rss_mb'] for r in ours):.0f} MB (max of 3)")
        print(f"  records by kind: {ours[0]['what']}")
        print(f"ratio import / floor: {ow / fw:.2f}x (goal <= 3x; RSS goal <= 500 MB)")


if __name__ == "__main__":
    main()
