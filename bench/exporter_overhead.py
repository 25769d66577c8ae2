"""What `record --listen` costs with Prometheus scraping it every second, against the same
`record` without a listener, and node_exporter's cost under the same scrapes, side by side.

Both recorders (every sensor but the perf ring) and node_exporter run at the same time, so
they see the same machine; a real Prometheus (Debian's) scrapes the listening recorder and
node_exporter every 1 s. CPU is utime + stime (+ waited-for children) from /proc/<pid>/stat
over each round, after a warm-up; medians over the rounds. Goal: the listening recorder within
0.05 % of one core of the plain one. The exporter's diagnosis refresh (every 60 s) is inside
the rounds' windows.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO

ROUND_S = float(os.environ.get("BENCH_DURATION", "60"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SCRAPE = os.environ.get("BENCH_SCRAPE", "1s")  # "0": no Prometheus (the tap alone)
WARMUP_S = 15.0
HZ = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    prometheus = shutil.which("prometheus")
    node_exporter = shutil.which("prometheus-node-exporter")
    if prometheus is None or node_exporter is None:
        print("needs Debian's prometheus and prometheus-node-exporter (scripts/setup.sh test)")
        return 0
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    p_cs, p_ne, p_prom = free_port(), free_port(), free_port()
    total = WARMUP_S + ROUNDS * ROUND_S + 10
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cfg = tmp / "prometheus.yml"
        cfg.write_text(
            f"global:\n  scrape_interval: {SCRAPE}\n  scrape_timeout: 1s\n"
            "scrape_configs:\n"
            f"  - job_name: corescope\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{p_cs}']\n"
            f"  - job_name: node\n    static_configs:\n      - targets: ['127.0.0.1:{p_ne}']\n")
        rec = [sys.executable, "-m", "corescope", "record", "--no-profile", "--duration",
               f"{total:g}s"]
        procs = {
            "record": subprocess.Popen([*rec, "--store", str(tmp / "plain")], env=env,
                                       stderr=subprocess.DEVNULL),
            "record --listen": subprocess.Popen(
                [*rec, "--store", str(tmp / "listen"), "--listen", f"127.0.0.1:{p_cs}"],
                env=env, stderr=subprocess.DEVNULL),
            # node_exporter's default collectors, as a node runs it
            "node_exporter": subprocess.Popen(
                [node_exporter, f"--web.listen-address=127.0.0.1:{p_ne}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        }
        prom_argv = [prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                     f"--web.listen-address=127.0.0.1:{p_prom}"]
        prom = subprocess.Popen(["sleep", "infinity"] if SCRAPE == "0" else prom_argv,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rounds: dict[str, list[float]] = {k: [] for k in procs}
        try:
            time.sleep(WARMUP_S)
            for _ in range(ROUNDS):
                a = {k: cpu_ticks(p.pid) for k, p in procs.items()}
                t0 = time.monotonic()
                time.sleep(ROUND_S)
                b = {k: cpu_ticks(p.pid) for k, p in procs.items()}
                dt = time.monotonic() - t0
                for k in procs:
                    rounds[k].append(100.0 * (b[k] - a[k]) / HZ / dt)
        finally:
            for p in (prom, *procs.values()):
                p.terminate()
            for p in (prom, *procs.values()):
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
    med = {k: statistics.median(v) for k, v in rounds.items()}
    extra = med["record --listen"] - med["record"]
    scraping = "no scrapes" if SCRAPE == "0" else f"Prometheus scraping every {SCRAPE}"
    print(f"exporter overhead, {ROUNDS} rounds of {ROUND_S:g}s, {scraping} "
          f"(shared, busy machine: other sessions' load is in every figure)")
    for k, v in rounds.items():
        print(f"  {k:<16} median {med[k]:.3f} % of one core  (rounds: "
              + ", ".join(f"{x:.3f}" for x in v) + ")")
    print(f"  listener's extra cost: {extra:+.3f} % of one core (goal: within 0.05)")
    if med["node_exporter"] > 0:
        print(f"  record --listen ÷ node_exporter under the same scrapes: "
              f"{med['record --listen'] / med['node_exporter']:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
