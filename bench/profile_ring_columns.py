"""Issue 22's figures for the profile ring at the sample volume of a 96-CPU node at 49 Hz,
simulated as the issue did: `perf record` (the ring's own argv) at BENCH_HZ=2352 on both
CPUs of this VM (2 x 2352 = 96 x 49 samples a second), BENCH_SECONDS (120) long, with a
nice-19 burner on each CPU for stack variety (it takes only idle time). The recording is cut
into BENCH_CHUNK_S (30 s) chunks, each closed as `record` closes it (`perf script` text,
zstd: no parse, so the agent stays cheap), then turned into columns as the first query that
reads it does (store/profile_query.migrate_chunk).

Printed, medians of BENCH_RUNS (5) interleaved runs (BENCH_TEXT_RUNS of the old text
path), ratios within this one run:
- the agent's close cost per chunk (CPU of perf + ours) against the floor (`perf script` of
  the same samples to /dev/null), as % of one core over the chunk's length, and the ratio
  (goal <= 1.5);
- the one-off migration of a chunk to columns, paid by the first query that reads it;
- ring bytes per sample, text and columns;
- `flame --cpu 1` and all CPUs over the whole window through the CLI on the column ring
  (`--format folded`, and the default top table), the same query on the text ring (the old
  path, sample by sample), and `perf script [-C 1] --time` of the same samples, with the
  ratios to the goals (<= 0.5 s and <= 0.5x perf script for one CPU, <= 1 s for all);
  `heatmap` and `--format html` of all CPUs; peak RSS of each query (goal <= 200 MB); and
  once, the first query on a text ring (it migrates the chunks it reads).

Each command runs under a small wrapper that times it and reads its peak RSS
(RUSAGE_CHILDREN of a wrapper that ran only it: a child's ru_maxrss otherwise carries the
high-water RSS of the process that spawned it), with the modules compiled once beforehand
(a private PYTHONPYCACHEPREFIX), as an installed corescope runs.

Needs root and perf. Run: `python3 bench/profile_ring_columns.py` (BENCH_SECONDS=30 for a
quick look; BENCH_VARIETY=1 records while the unit suite runs, for a busy node's thousands of
distinct stacks).
"""

from __future__ import annotations

import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _profile_common import REPO, cli_env, env
from corescope.evidence import profile_query
from corescope.model.profiles import ProfileChunk
from corescope.runner import Runner
from corescope.sources.perf import CLOCKID, TEXT_SUFFIX, record_argv, symbolise, time_arg
from corescope.store import profiles as ring
from corescope.store.db import Store
from profile_symbolise_cost import cpu_of

SECONDS = float(os.environ.get("BENCH_SECONDS", "120"))
HZ = int(os.environ.get("BENCH_HZ", "2352"))
CHUNK_S = float(os.environ.get("BENCH_CHUNK_S", "30"))
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
# BENCH_VARIETY=1: the unit suite runs beside the recording (not beside the timings)
VARIETY = os.environ.get("BENCH_VARIETY", "") not in ("", "0")
# the old text path takes a minute or more a query at this volume: fewer runs of it
TEXT_RUNS = int(os.environ.get("BENCH_TEXT_RUNS", "1"))
BURN = """
import os, sys, time, zlib
os.nice(19)
os.sched_setaffinity(0, {int(sys.argv[1])})
fd = os.open('/dev/zero', 0)
b = [bytearray(1 << 16)]
end = time.time() + float(sys.argv[2])
i = 0
while time.time() < end:
    i += 1
    if i % 3 == 0:
        os.readv(fd, b)
    elif i % 3 == 1:
        zlib.compress(bytes(b[0][: 1 << 12]) * 4)
    else:
        sorted(range(2000), key=lambda x: -x)
"""


# times one command and reads its peak RSS: a fresh wrapper per run, so RUSAGE_CHILDREN is
# that command's own (a child's ru_maxrss includes its spawner's high-water RSS at exec)
WRAP = r"""
import resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
dt = time.perf_counter() - t
print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)
sys.stderr.write(p.stderr.decode(errors="replace")[-500:])
"""


ENV: dict[str, str] = {}


def timed(argv: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of one command."""
    p = subprocess.run([sys.executable, "-c", WRAP, *argv], capture_output=True, text=True,
                       env=ENV or env())
    dt, rss, rc = p.stdout.split()
    if rc != "0":
        raise SystemExit(f"{argv[:4]}... failed: {p.stderr[-500:]}")
    return float(dt), int(rss) * 1024


def record(raw: Path) -> None:
    burners = [subprocess.Popen([sys.executable, "-c", BURN, str(c), str(SECONDS + 3)])
               for c in sorted(os.sched_getaffinity(0))]
    if VARIETY:
        # the unit suite, niced, while recording only: the stack variety of a busy node
        # (thousands of distinct stacks), gone before anything is timed
        burners.append(subprocess.Popen(
            ["nice", "-n", "19", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "tests/unit"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        p = subprocess.Popen(record_argv("perf", HZ, raw))
        time.sleep(SECONDS)
        p.send_signal(2)
        p.wait()
    finally:
        for b in burners:
            b.kill()
            b.wait()


def perf_times(raw: Path) -> list[float]:
    out = subprocess.run(["perf", "script", "-i", str(raw), "-F", "time"], check=True,
                         capture_output=True, text=True).stdout
    return [float(x.strip().rstrip(":")) for x in out.split() if x.strip()]


OLD_QUERY = """
import sys, json
from corescope.runner import Runner
from corescope.store.db import Store
from corescope.evidence.ring_profile import ring_profile
s = Store.open(sys.argv[1], create=False)
cpu = None if sys.argv[4] == "all" else int(sys.argv[4])
p = ring_profile(s, Runner(), float(sys.argv[2]), float(sys.argv[3]), cpu, migrate=False,
                 weight="period")
out = "".join(f"{k} {v}\\n" for k, v in sorted(p.folded().items()))
sys.stdout.write(out)
"""


def main() -> None:
    runner = Runner()
    with tempfile.TemporaryDirectory(prefix="ringbench-") as d:
        ENV.update(cli_env(Path(d) / "pycache"))
        raw = Path(d) / "ring.data"
        print(f"recording {SECONDS:.0f} s at {HZ} Hz on {len(os.sched_getaffinity(0))} CPUs"
              + (", the unit suite beside" if VARIETY else ""), flush=True)
        offset = time.time() - time.clock_gettime(time.CLOCK_MONOTONIC)
        record(raw)
        ts = perf_times(raw)
        keep = os.environ.get("BENCH_KEEP")  # a directory: keep the stores for profiling
        if keep:
            d = keep
        lo, hi = min(ts), max(ts) + 1e-6
        n_total = len(ts)
        bounds = [lo]
        while bounds[-1] + CHUNK_S < hi:
            bounds.append(bounds[-1] + CHUNK_S)
        bounds.append(hi)
        text = Store.open(Path(d) / "text")
        close: dict[str, list[float]] = {"text": [], "floor": [], "migrate": []}
        for i, (a, b) in enumerate(itertools.pairwise(bounds)):
            dst = ring.profile_dir(Path(text.directory)) / f"chunk-{i}{TEXT_SUFFIX}"
            got: list[int | str] = []

            def close_one(a: float = a, b: float = b, dst: Path = dst,
                          got: list = got) -> None:
                got.append(symbolise(runner, raw, a, b, dst))

            close["text"].append(cpu_of(close_one))
            n = got[0]
            assert isinstance(n, int), n
            ring.add_chunk(text, ProfileChunk(0, f"profiles/{dst.name}", CLOCKID, a, b,
                                              a + offset, b + offset, offset,
                                              dst.stat().st_size, raw.stat().st_size, n, HZ))
            close["floor"].append(cpu_of(lambda a=a, b=b: subprocess.run(
                ["perf", "script", "-i", str(raw), "--time", time_arg(a, b)],
                stdout=subprocess.DEVNULL, check=True)))
        text_bytes = sum(c.bytes for c in ring.all_chunks(text))
        text.close()
        shutil.copytree(Path(d) / "text", Path(d) / "first")  # for the first query below
        shutil.copytree(Path(d) / "text", Path(d) / "columns")
        with Store.open(Path(d) / "columns") as cstore:
            for c in ring.all_chunks(cstore):
                close["migrate"].append(cpu_of(
                    lambda c=c: profile_query.migrate_chunk(cstore, runner, c)))
            assert {c.format for c in ring.all_chunks(cstore)} == {"columns"}
            col_bytes = sum(c.bytes for c in ring.all_chunks(cstore))
        lens = [b - a for a, b in itertools.pairwise(bounds)]
        print(f"{n_total} samples in {hi - lo:.1f} s ({n_total / (hi - lo):.0f}/s), "
              f"{len(lens)} chunks")
        for kind, what in (("floor", "perf script of the chunk (floor)"),
                           ("text", "the agent's chunk close (text, zstd)")):
            pct = 100 * sum(close[kind]) / sum(lens)
            print(f"close cost, {what:40s}: {pct:5.2f} % of a core")
        print(f"agent close ÷ floor: {sum(close['text']) / sum(close['floor']):.2f} "
              f"(goal <= 1.5)")
        per = statistics.median(close["migrate"]) / statistics.median(lens)
        print(f"migration to columns, once per chunk by its first query: "
              f"{statistics.median(close['migrate']):.2f} s CPU a chunk "
              f"({1e6 * sum(close['migrate']) / n_total:.1f} us a sample; "
              f"{100 * per:.1f} % of a core if it ran as chunks close)")
        print(f"ring bytes per sample: text {text_bytes / n_total:.2f}, columns "
              f"{col_bytes / n_total:.2f} (columns ÷ text {col_bytes / text_bytes:.2f})")

        w_lo, w_hi = lo + offset, hi + offset
        py = sys.executable
        cli = [py, "-m", "corescope", "--store", str(Path(d) / "columns"), "flame",
               "--since", repr(w_lo), "--until", repr(w_hi), "--format", "folded"]
        first = [*cli[:4], str(Path(d) / "first"), *cli[5:]]
        t_first, rss_first = timed(first)
        print(f"first flame, all CPUs, on the text ring (migrates every chunk): "
              f"{t_first:.2f} s ({rss_first >> 20} MB)")
        for label, cpu in (("--cpu 1", "1"), ("all CPUs", "all")):
            argv_new = cli + (["--cpu", cpu] if cpu != "all" else [])
            argv_old = [py, "-c", OLD_QUERY, str(Path(d) / "text"), repr(w_lo), repr(w_hi),
                        cpu]
            argv_perf = ["perf", "script", "-i", str(raw), "--time", time_arg(lo, hi)] + (
                ["-C", cpu] if cpu != "all" else [])
            argv_top = [a for a in argv_new if a not in ("--format", "folded")]
            res: dict[str, list[tuple[float, int]]] = {"new": [], "top": [], "old": [],
                                                       "perf": []}
            # same answer both ways
            o_new = subprocess.run(argv_new, capture_output=True, env=ENV, check=True).stdout
            o_old = subprocess.run(argv_old, capture_output=True, env=ENV, check=True).stdout
            assert o_new == o_old, "the column ring answers differently"
            for i in range(RUNS):
                res["new"].append(timed(argv_new))
                res["top"].append(timed(argv_top))
                if i < TEXT_RUNS:
                    res["old"].append(timed(argv_old))
                res["perf"].append(timed(argv_perf))
            med = {k: statistics.median(t for t, _ in v) for k, v in res.items()}
            rss = {k: max(r for _, r in v) for k, v in res.items()}
            goal = 0.5 if cpu != "all" else 1.0
            print(f"flame {label}: columns {med['new']:.3f} s ({rss['new'] >> 20} MB; top "
                  f"table {med['top']:.3f} s, {rss['top'] >> 20} MB), text {med['old']:.3f} s "
                  f"({rss['old'] >> 20} MB), perf script {med['perf']:.3f} s; columns ÷ perf "
                  f"script {med['new'] / med['perf']:.2f}"
                  f"{' (goal <= 0.5)' if cpu != 'all' else ''}, columns ÷ {goal:g} s goal "
                  f"{med['new'] / goal:.2f}, columns ÷ text {med['new'] / med['old']:.2f}",
                  flush=True)
        for label, extra in (("heatmap, all CPUs", ["heatmap"]),
                             ("flame --format html, all CPUs", ["flame", "--format", "html"])):
            argv = [*cli[:5], *extra, *cli[6:10]]
            runs = [timed(argv) for _ in range(RUNS)]
            print(f"{label}: {statistics.median(t for t, _ in runs):.3f} s, "
                  f"{max(r for _, r in runs) >> 20} MB", flush=True)
        print("peak RSS goal: <= 200 MB for any query; load average "
              f"{os.getloadavg()[0]:.1f} at the end (2 CPUs)")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    main()
