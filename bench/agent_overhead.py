"""The agent's own cost, side by side with mpstat in ONE run (same load, same minutes):
`corescope record` with cores only and with every sensor but perf, at 1 Hz, against
`mpstat -P ALL 1`. Goals: cores alone ≤ 0.05 % of one core, all sensors but perf ≤ 0.1 %.

CPU is read from /proc/<pid>/stat (utime + stime + cutime + cstime: the children it waited
for, such as a tool it spawned) at the end of a warm-up and again at the end of the run, so
interpreter start-up, which an agent pays once, is not in the figure. /proc/<pid>/stat counts
in clock ticks (10 ms), so the run is long; the per-window medians use /proc/<pid>/task/*/
schedstat (ns) to show the spread. Then the start-up time of `corescope --version` and
`corescope events --file` against the interpreter's own start-up (CPU time, compiled
bytecode, medians of interleaved runs; `--imports-only` runs just that part).

`--baseline-src DIR` adds a cores-only recorder run from another source tree (say a checkout
of the previous commit's src/), so old and new are compared in the same minutes.

Environment: BENCH_DURATION (s, default 150), BENCH_WARMUP (default 15), BENCH_WITH_PERF=1
adds a recorder with the perf ring (root)."""

from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _common import REPO

DURATION = float(os.environ.get("BENCH_DURATION", "150"))
WARMUP = float(os.environ.get("BENCH_WARMUP", "15"))
WINDOW = 15.0
HZ = os.sysconf("SC_CLK_TCK")
ENV = dict(os.environ, PYTHONPATH=str(REPO / "src"))
# an installed package has its bytecode compiled (pip does it); a dev shell may forbid writing
# it, and then every start compiles every module from source
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
FIXTURE = REPO / "tests" / "fixtures" / "events" / "dmesg_incidents.txt"


def stat_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime


def sched_ns(pid: int) -> int:
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that just exited
    return total


def load_note() -> str:
    with open("/proc/loadavg") as f:
        one = float(f.read().split()[0])
    return f"load average {one:.2f} on {os.cpu_count()} CPUs"


# the per-core recorder alone: every other sensor off (pressure, PSI and run-queue wait, is
# a sensor of its own, counted with the others in "all sensors but perf")
CORES_ONLY = ("--no-profile", "--no-kmsg", "--no-census", "--no-netdev", "--no-pressure")


def cores_only_flags(env: dict[str, str]) -> tuple[str, ...]:
    """CORES_ONLY as the tree in `env` accepts it (a tree from before a sensor existed has
    no flag to turn it off, and records without it)."""
    helptext = subprocess.run([sys.executable, "-m", "corescope", "record", "--help"],
                              env=env, capture_output=True, text=True, check=False).stdout
    return tuple(f for f in CORES_ONLY if f in helptext)


def overhead(baseline_src: str | None = None) -> None:
    store = tempfile.mkdtemp(prefix="agent-bench-")
    record = [sys.executable, "-m", "corescope", "record", "--duration",
              str(WARMUP + DURATION + 30), "--interval", "1s"]
    agents = {
        "mpstat -P ALL 1": ["mpstat", "-P", "ALL", "1"],
        "corescope, cores only": [*record, "--store", f"{store}/a", *CORES_ONLY],
        "corescope, all sensors but perf": [*record, "--store", f"{store}/b", "--no-profile"],
    }
    if os.environ.get("BENCH_WITH_PERF") == "1":
        agents["corescope, all sensors and the perf ring"] = [*record, "--store", f"{store}/c"]
    envs = {name: ENV for name in agents}
    if baseline_src is not None:
        name = "corescope, cores only, --baseline-src"
        envs[name] = dict(ENV, PYTHONPATH=baseline_src)
        agents[name] = [*record, "--store", f"{store}/base", *cores_only_flags(envs[name])]
    procs = {name: subprocess.Popen(argv, env=envs[name], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
             for name, argv in agents.items()}
    try:
        time.sleep(WARMUP)
        t0 = time.monotonic()
        ticks0 = {n: stat_ticks(p.pid) for n, p in procs.items()}
        windows: dict[str, list[float]] = {n: [] for n in procs}
        last = {n: sched_ns(p.pid) for n, p in procs.items()}
        t_last = t0
        note_start = load_note()
        while time.monotonic() - t0 < DURATION:
            time.sleep(min(WINDOW, DURATION - (time.monotonic() - t0)))
            now = time.monotonic()
            for n, p in procs.items():
                ns = sched_ns(p.pid)
                windows[n].append(100.0 * (ns - last[n]) / 1e9 / (now - t_last))
                last[n] = ns
            t_last = now
        elapsed = time.monotonic() - t0
        pct = {n: 100.0 * (stat_ticks(p.pid) - ticks0[n]) / HZ / elapsed
               for n, p in procs.items()}
        dead = [n for n, p in procs.items() if p.poll() is not None]
    finally:
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(store, ignore_errors=True)
    print(f"agent CPU side by side, {elapsed:.0f} s after a {WARMUP:g} s warm-up, 1 Hz "
          f"(/proc/pid/stat resolution {100 / HZ / elapsed:.4f} %)")
    print(f"the machine is busy today (other engineers' tests and burners): {note_start} at "
          f"the start, {load_note()} at the end")
    base = pct["mpstat -P ALL 1"]
    goals = {"corescope, cores only": 0.05, "corescope, all sensors but perf": 0.1,
             "corescope, cores only, --baseline-src": 0.05}
    if baseline_src is not None:
        print(f"--baseline-src: {baseline_src}")
    print(f"{'agent':<44} {'% of one core':>13} {'x mpstat':>9} {'median of':>10}  goal")
    print(f"{'':<44} {'(stat)':>13} {'':>9} {f'{WINDOW:g}s wins':>10}")
    for n in procs:
        ratio = f"{pct[n] / base:.1f}x" if base > 0 else "-"
        goal = goals.get(n)
        verdict = "" if goal is None else f"≤ {goal} %: {'met' if pct[n] <= goal else 'NOT met'}"
        print(f"{n:<44} {pct[n]:>12.4f}% {ratio:>9} {statistics.median(windows[n]):>9.4f}%"
              f"  {verdict}")
    if dead:
        print(f"warning: exited early: {', '.join(dead)}")


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall s, CPU s of the child: user + sys, which a busy run queue does not inflate)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def imports(runs: int = 21) -> None:
    py = sys.executable
    n_lines = len(FIXTURE.read_text().splitlines())
    cases = {
        "python -c pass (the floor)": [py, "-c", "pass"],
        "python -c 'import click'": [py, "-c", "import click"],
        "corescope --version": [py, "-m", "corescope", "--version"],
        "corescope --help": [py, "-m", "corescope", "--help"],
        f"corescope events --file (a {n_lines}-line dmesg)": [py, "-m", "corescope", "events",
                                                            "--file", str(FIXTURE)],
    }
    for argv in cases.values():
        run_once(argv)  # writes the bytecode
    got: dict[str, list[tuple[float, float]]] = {n: [] for n in cases}
    for _ in range(runs):  # interleaved, so a burst of load hits every case alike
        for n, argv in cases.items():
            got[n].append(run_once(argv))
    wall = {n: statistics.median(w for w, _ in v) for n, v in got.items()}
    cpu = {n: statistics.median(c for _, c in v) for n, v in got.items()}
    floor = "python -c pass (the floor)"
    print(f"\nstart-up with compiled bytecode, medians of {runs} interleaved runs "
          f"({load_note()}); goal ≤ 0.1 s")
    print(f"{'':<44} {'wall':>8} {'x floor':>8} {'CPU':>8} {'x floor':>8}  goal (CPU)")
    for n in cases:
        verdict = ("" if not n.startswith("corescope") else
                   "met" if cpu[n] <= 0.1 else "NOT met")
        print(f"{n:<44} {wall[n] * 1000:6.1f}ms {wall[n] / wall[floor]:7.2f}x "
              f"{cpu[n] * 1000:6.1f}ms {cpu[n] / cpu[floor]:7.2f}x  {verdict}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--imports-only", action="store_true",
                    help="only the start-up timings, not the 3-minute side-by-side run")
    ap.add_argument("--baseline-src", metavar="DIR",
                    help="also run a cores-only recorder with PYTHONPATH=DIR (another "
                         "source tree's src/), in the same run")
    ap.add_argument("--no-imports", action="store_true",
                    help="skip the start-up timings after the side-by-side run")
    args = ap.parse_args()
    if args.baseline_src is not None and not os.path.isdir(
            os.path.join(args.baseline_src, "corescope")):
        ap.error(f"--baseline-src {args.baseline_src}: no corescope package in it")
    if not args.imports_only:
        overhead(args.baseline_src)
    if not args.no_imports:
        imports()


if __name__ == "__main__":
    main()
