"""Classifier throughput on a generated 1M-line dmesg, as a ratio to `grep -E` with the same
patterns (analysis.classify.grep_patterns). Ours parses the dmesg text into records and
classifies every one (kind, driver, device, fields); grep only selects matching lines.

Run: python bench/classify_throughput.py [LINES]
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO
from corescope.analysis.classify import classify, grep_patterns
from corescope.sources.kmsg_records import parse_kmsg_dump
from corescope.sources.kmsg_text import parse_dmesg

FIX = REPO / "tests" / "fixtures" / "events"


def generate(path: Path, lines: int, seed: int = 4) -> int:
    """Boot-log lines from the real capture, with 1 in 200 an incident line of every variant."""
    rng = random.Random(seed)
    boring = [r.message.replace("\n", " ")
              for r in parse_kmsg_dump((FIX / "kmsg_capture_virtio_vm.bin").read_bytes())[0]
              if "corescope" not in r.message]
    incidents = [r.message.replace("\n", " ")
                 for r in parse_dmesg((FIX / "dmesg_incidents.txt").read_text())[0]
                 if classify(r.message).kind != "other"]
    n_inc = 0
    with path.open("w") as f:
        for i in range(lines):
            if rng.random() < 0.005:
                msg = rng.choice(incidents)
                n_inc += 1
            else:
                msg = rng.choice(boring)
            f.write(f"[{i // 1000:5d}.{(i % 1000) * 1000:06d}] {msg}\n")
    return n_inc


def ours(path: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    recs, _ = parse_dmesg(path.read_bytes())
    hits = sum(1 for r in recs if classify(r.message).kind != "other")
    return time.perf_counter() - t0, hits


def grep(path: Path, env: dict[str, str]) -> tuple[float, int]:
    args = ["grep", "-c", "-E"]
    for p in grep_patterns():
        args += ["-e", p]
    t0 = time.perf_counter()
    out = subprocess.run([*args, str(path)], capture_output=True, text=True, env=env, check=False)
    return time.perf_counter() - t0, int(out.stdout.strip() or 0)


def main(lines: int = 1_000_000, repeat: int = 3) -> None:
    if shutil.which("grep") is None:
        sys.exit("grep not found")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dmesg.txt"
        n_inc = generate(path, lines)
        size = path.stat().st_size
        o = [ours(path) for _ in range(repeat)]
        g = [grep(path, dict(os.environ)) for _ in range(repeat)]
        gc = [grep(path, {**os.environ, "LC_ALL": "C"}) for _ in range(repeat)]
    to, tg, tgc = (statistics.median(t for t, _ in x) for x in (o, g, gc))
    print(f"classify throughput: {lines} lines ({size / 1e6:.0f} MB), {n_inc} incident lines")
    print(f"  corescope parse+classify: {to:.2f} s ({lines / to / 1e6:.2f} M lines/s), "
          f"{o[0][1]} classified")
    print(f"  grep -E (same patterns, {os.environ.get('LANG', 'default locale')}): {tg:.2f} s, "
          f"{g[0][1]} matched")
    print(f"  grep -E (LC_ALL=C): {tgc:.2f} s, {gc[0][1]} matched")
    print(f"  ratio corescope / grep -E: {to / tg:.1f}x (LC_ALL=C: {to / tgc:.1f}x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
