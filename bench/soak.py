"""Soak: `corescope record` at 10 Hz with every sensor and the perf ring, for an hour.

Every minute it prints the recorder's RSS (and its perf child's), its open fds, the store's
bytes on disk (in all; the database with its WAL and cores journal; the closed profile-ring
chunks, and how many; the chunk being recorded), the recorder's CPU over that minute and the
load average. At the end it checks that RSS, fds, the database's bytes and the number of ring
chunks stay flat within the budgets below, once the warm-up is over, and exits 1 if one does
not.

Retention is short (`--retain`/`--profile-retain` 15 min by default) so that the store reaches
its steady state inside the hour: from then on, bytes must stay flat, not grow.

The run uses a private copy of `src/` (taken at start), so editing the checkout during the hour
does not change the code under test. Each minute's figures are also appended as JSON lines to
`<out>/soak.jsonl`, so a run cut short still leaves its figures.

    nice -n 10 python bench/soak.py [--duration 3600] [--every 60] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO

HZ = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

# Budgets, after the warm-up (the first `--warmup` minutes, or the retention span for bytes).
# Each compares the median of the last third of the steady samples with the median of the
# first third: a trend moves both medians apart, one low or high minute moves neither (the
# store's bytes swing with the ring's 120 s chunks, fds with perf's restarts).
RSS_GROWTH_MB = 10.0  # recorder RSS, MB
FD_GROWTH = 4  # open fds
BYTES_GROWTH = 0.25  # database bytes once retention is reached, as a fraction of the first third
CHUNK_GROWTH = 2  # closed profile-ring chunks once retention is reached
# The store's bytes are budgeted by what the recorder controls: the database (SQLite file,
# WAL, cores journal), which retention keeps flat, and the NUMBER of closed ring chunks, which
# the ring's retention bounds. A chunk's bytes, and the raw perf.data of the chunk being
# recorded, follow how much the CPUs run and how varied their stacks are: on a machine whose
# load changes during the hour they change with it, leak or not, so they are shown (beside the
# load average) rather than budgeted.


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE // 1024
    except (OSError, IndexError, ValueError):
        return 0


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15])  # utime stime cutime cstime


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return kids


def _store_parts(path: Path) -> dict[str, int]:
    """Bytes on disk of the store: the database files (top level), the closed ring chunks
    (`profiles/*.zst`, and how many) and what is being recorded (perf.data and the like)."""
    parts = {"store_bytes": 0, "db_bytes": 0, "ring_bytes": 0, "ring_chunks": 0,
             "inflight_bytes": 0}
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:  # a file retention removed meanwhile
                size = os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                continue
            parts["store_bytes"] += size
            if Path(dirpath) == path:
                parts["db_bytes"] += size
            elif name.endswith(".zst") and not name.startswith("."):
                parts["ring_bytes"] += size
                parts["ring_chunks"] += 1
            else:
                parts["inflight_bytes"] += size
    return parts


def thirds_growth(values: list[float]) -> tuple[float, float] | None:
    """(median of the first third, median of the last third) of `values`; None under 3."""
    if len(values) < 3:
        return None
    k = len(values) // 3
    return statistics.median(values[:k]), statistics.median(values[-k:])


def _flat(rows: list[dict], warmup_min: float, retain_min: float) -> list[str]:
    """Budget verdicts over the steady rows (empty list: all within budget)."""
    problems = []
    steady = [r for r in rows if r["minute"] >= warmup_min]
    rss = thirds_growth([r["rss_kb"] / 1024 for r in steady])
    if rss and rss[1] - rss[0] > RSS_GROWTH_MB:
        problems.append(f"RSS grew {rss[1] - rss[0]:.1f} MB after warm-up, median of the "
                        f"first third to the last (budget {RSS_GROWTH_MB} MB)")
    fds = thirds_growth([r["fds"] for r in steady])
    if fds and fds[1] - fds[0] > FD_GROWTH:
        problems.append(f"open fds grew by {fds[1] - fds[0]:g} after warm-up, median of the "
                        f"first third to the last (budget {FD_GROWTH})")
    full = [r for r in rows if r["minute"] >= retain_min + 2]
    db = thirds_growth([r["db_bytes"] for r in full])
    if db:
        growth = (db[1] - db[0]) / max(1, db[0])
        if growth > BYTES_GROWTH:
            problems.append(f"database bytes grew {100 * growth:.0f}% once retention was "
                            f"reached, median of the first third to the last "
                            f"(budget {100 * BYTES_GROWTH:.0f}%)")
    chunks = thirds_growth([r["ring_chunks"] for r in full])
    if chunks and chunks[1] - chunks[0] > CHUNK_GROWTH:
        problems.append(f"closed ring chunks grew by {chunks[1] - chunks[0]:g} once retention "
                        f"was reached, median of the first third to the last "
                        f"(budget {CHUNK_GROWTH})")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=3600.0, help="seconds (default 1 h)")
    ap.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    ap.add_argument("--retain", type=int, default=15, help="retention, minutes")
    ap.add_argument("--warmup", type=float, default=5.0, help="warm-up, minutes")
    ap.add_argument("--out", type=Path, default=None, help="work dir (default: a temp dir)")
    args = ap.parse_args()

    out = args.out or Path(tempfile.mkdtemp(prefix="corescope-soak-"))
    out.mkdir(parents=True, exist_ok=True)
    src = out / "src"
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(REPO / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
    store = out / "store"
    store.mkdir(mode=0o700, exist_ok=True)
    jsonl = (out / "soak.jsonl").open("a")
    env = dict(os.environ, PYTHONPATH=str(src))
    cmd = [sys.executable, "-m", "corescope", "record", "--store", str(store),
           "--interval", "0.1s", "--retain", f"{args.retain}m",
           "--profile-retain", f"{args.retain}m", "--duration", f"{int(args.duration + 120)}s"]
    with (out / "record.stderr").open("wb") as err:
        proc = subprocess.Popen(cmd, env=env, stderr=err, stdout=subprocess.DEVNULL)
    print(f"soak: {' '.join(cmd[1:])}\n  pid {proc.pid}, work dir {out}; "
          f"the machine is shared and busy (other engineers' tests), so CPU is noisy", flush=True)
    print(f"{'min':>4} {'rss MB':>7} {'perf MB':>7} {'fds':>4} {'store MB':>8} {'db MB':>6} "
          f"{'ring MB':>7} {'chunks':>6} {'rec MB':>6} {'cpu %':>6} {'load':>5}", flush=True)
    rows: list[dict] = []
    t0 = time.monotonic()
    last_ticks, last_t = _cpu_ticks(proc.pid), t0
    try:
        for i in range(1, int(args.duration // args.every) + 1):
            time.sleep(max(0.0, t0 + i * args.every - time.monotonic()))
            if proc.poll() is not None:
                print(f"soak: record exited early with {proc.returncode}", flush=True)
                break
            ticks, now = _cpu_ticks(proc.pid), time.monotonic()
            row = {
                "minute": round((now - t0) / 60, 2),
                "rss_kb": _rss_kb(proc.pid),
                "perf_rss_kb": sum(_rss_kb(c) for c in _children(proc.pid)),
                "fds": _fds(proc.pid),
                **_store_parts(store),
                "cpu_pct": round(100 * (ticks - last_ticks) / HZ / (now - last_t), 3),
                "load1": os.getloadavg()[0],
            }
            last_ticks, last_t = ticks, now
            rows.append(row)
            jsonl.write(json.dumps(row) + "\n")
            jsonl.flush()
            print(f"{row['minute']:>4.0f} {row['rss_kb'] / 1024:>7.1f} "
                  f"{row['perf_rss_kb'] / 1024:>7.1f} {row['fds']:>4} "
                  f"{row['store_bytes'] / 1e6:>8.2f} {row['db_bytes'] / 1e6:>6.2f} "
                  f"{row['ring_bytes'] / 1e6:>7.2f} {row['ring_chunks']:>6} "
                  f"{row['inflight_bytes'] / 1e6:>6.2f} {row['cpu_pct']:>6.2f} "
                  f"{row['load1']:>5.2f}", flush=True)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        rc = proc.wait()
    print(f"soak: record exited {rc}; its stderr is in {out / 'record.stderr'}")
    if not rows:
        return 1
    problems = _flat(rows, args.warmup, args.retain)
    rss = [r["rss_kb"] / 1024 for r in rows if r["minute"] >= args.warmup] or [0]
    fds = [r["fds"] for r in rows if r["minute"] >= args.warmup] or [0]
    after = [r for r in rows if r["minute"] >= args.retain + 2]
    full = [r["store_bytes"] / 1e6 for r in after] or [0]
    db = [r["db_bytes"] / 1e6 for r in after] or [0]
    chunks = [r["ring_chunks"] for r in after] or [0]
    per_chunk = [r["ring_bytes"] / r["ring_chunks"] / 1e6 for r in after if r["ring_chunks"]] or [0]
    load = [r["load1"] for r in after] or [0]

    def span(values: list[float], unit: str) -> str:
        m = thirds_growth(values)
        medians = f" (medians, first third {m[0]:g} → last {m[1]:g}{unit})" if m else ""
        return f"{min(values):g}–{max(values):g}{unit}{medians}"

    print(f"steady: RSS {span([round(v, 1) for v in rss], ' MB')}, fds {span(fds, '')}, "
          f"over {rows[-1]['minute']:.0f} min; once retention was reached: database "
          f"{span([round(v, 2) for v in db], ' MB')}, closed ring chunks {span(chunks, '')}; "
          f"shown, not budgeted: a chunk {span([round(v, 3) for v in per_chunk], ' MB')} "
          f"at load average {span([round(v, 2) for v in load], '')}, the whole store "
          f"{span([round(v, 2) for v in full], ' MB')}")
    for p in problems:
        print(f"OVER BUDGET: {p}")
    return 1 if problems or rc not in (0, -signal.SIGTERM) else 0


if __name__ == "__main__":
    sys.exit(main())
