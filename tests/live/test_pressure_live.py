"""Pressure on the real kernel: `record` stores PSI (and schedstat/vmstat where the kernel
has them), and 4 spinning processes on 2 cores show up as CPU pressure."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corescope.analysis import pressure as ap
from corescope.store import pressure as sp
from corescope.store.db import Store
from live.conftest import MACHINE, recording_process
from support import cli_env, run_cli


def _spinner(cpus: set[int], seconds: float) -> subprocess.Popen[str]:
    code = (f"import os,time; os.sched_setaffinity(0,{cpus!r}); e=time.monotonic()+{seconds}\n"
            "while time.monotonic()<e: pass")
    return subprocess.Popen([sys.executable, "-c", code], env=cli_env())


@MACHINE
def test_record_stores_pressure_and_sees_contention(tmp_path: Path) -> None:
    if not os.path.exists("/proc/pressure/cpu"):
        pytest.skip("this kernel has no PSI (/proc/pressure): nothing to measure")
    store_dir = tmp_path / "store"
    cpus = set(sorted(os.sched_getaffinity(0))[:2])
    with recording_process(store_dir, "--no-profile", "--no-kmsg", "--no-census",
                           "--no-netdev", "--pressure-interval", "1s"):
        time.sleep(2)
        burn = [_spinner(cpus, 8) for _ in range(2 * len(cpus))]
        t0 = time.time() + 1.5  # let the spinners start
        for b in burn:
            b.wait(timeout=60)
        t1 = time.time() - 0.5
        time.sleep(2)
    with Store.open(store_dir, create=False) as store:
        psi = sp.read_psi(store, 0, 1e12)
        vm = sp.read_vmstat(store, 0, 1e12)
        sched = sp.read_schedstat(store, 0, 1e12)
    cpu = [(s.t, s.some.total_us) for s in psi if s.resource == "cpu" and s.some]
    assert len(cpu) >= 8, psi
    assert {s.resource for s in psi} >= {"cpu", "memory"}
    # during the burn some task always waited for a CPU: "some" ran at most of wall time
    during = [r.per_s / 1e6 for r in ap.rates(cpu) if r.t0 >= t0 and r.t1 <= t1]
    assert during and sum(during) / len(during) > 0.5, during
    assert vm and "pgscan_kswapd" in vm[0].counters
    if os.path.exists("/proc/schedstat"):
        rates = ap.wait_rates(sched)
        waits = [r.per_s for c in cpus for r in rates.get(c, []) if r.t0 >= t0 - 6]
        assert waits and max(waits) > 0.3, waits
    else:
        assert sched == []


def test_missing_pressure_files_degrade_with_a_message(tmp_path: Path) -> None:
    """What the kernel lacks is named in record's status line; the rest still records."""
    p = run_cli("record", "--store", str(tmp_path / "s"), "--duration", "2s", "--no-profile",
                "--no-kmsg", "--no-census", "--no-netdev", timeout=60)
    assert p.returncode == 0, p.stderr
    assert "pressure" in p.stderr.splitlines()[0]
    if not os.path.exists("/proc/schedstat"):
        assert "CONFIG_SCHEDSTATS" in p.stderr and "run-queue wait not measured" in p.stderr
    # a root without any pressure file: the sensor is off with the reason, cores go on
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "stat").write_text(Path("/proc/stat").read_text())
    q = run_cli("record", "--root", str(root), "--store", str(tmp_path / "s2"), "--duration",
                "2s", "--no-profile", "--no-kmsg", "--no-census", "--no-netdev", timeout=60)
    assert q.returncode == 0, q.stderr
    assert "pressure off" in q.stderr and "psi=1" in q.stderr
