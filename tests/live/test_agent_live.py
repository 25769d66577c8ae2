"""The agent on the real kernel: driver counters through the ethtool ioctl equal what
`ethtool -S` prints for every interface here; the recorder runs at nice -10 with its memory
locked on fault, and unlocks past its RSS budget."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from corescope.sources import netdev
from corescope.sources.ethtool import EthtoolReader
from live.conftest import need_tool, recording_process
from support import cli_env


def _ethtool_s(iface: str) -> tuple[int, dict[str, int]]:
    proc = subprocess.run([need_tool("ethtool"), "-S", iface], capture_output=True, text=True,
                          timeout=10, check=False)
    return proc.returncode, netdev.parse_ethtool_stats(proc.stdout)[0]


def test_ioctl_counters_equal_ethtool_S_on_every_interface() -> None:
    ifaces = sorted(p.name for p in Path("/sys/class/net").iterdir())
    reader = EthtoolReader()
    compared = 0
    try:
        for iface in ifaces:
            for _attempt in range(5):
                try:
                    before = reader.stats(iface)
                except OSError:
                    before = None
                rc, text = _ethtool_s(iface)
                if before is None:
                    # the ioctl refused exactly where ethtool -S has nothing to show
                    assert rc != 0 or not text, (iface, rc, text)
                    break
                after = reader.stats(iface)
                assert rc == 0 and set(text) == set(before) == set(after), iface
                # counters move while ethtool runs: each value must lie between our two reads
                if all(min(before[k], after[k]) <= v <= max(before[k], after[k])
                       for k, v in text.items()):
                    compared += 1
                    break
            else:
                raise AssertionError(f"{iface}: ethtool -S never matched the ioctl")
    finally:
        reader.close()
    assert compared >= 1, ifaces  # at least one NIC with driver counters (eth0 here)


def _status(pid: int) -> dict[str, str]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def test_record_runs_at_nice_minus_10_with_memory_locked_on_fault(tmp_path: Path) -> None:
    opts = ("--no-profile", "--no-kmsg", "--no-netdev", "--no-census")
    with recording_process(tmp_path / "a", *opts) as locked, \
            recording_process(tmp_path / "b", *opts, "--no-lock-memory", "--nice", "0") as plain:
        time.sleep(1.0)
        nice = {r: int(Path(f"/proc/{r.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[16])
                for r in (locked, plain)}
        st_l, st_p = _status(locked.proc.pid), _status(plain.proc.pid)
    assert nice[locked] == -10 and nice[plain] == 0
    assert int(st_l["VmLck"].split()[0]) > 0 and int(st_p["VmLck"].split()[0]) == 0
    # locked on fault: the resident set does not grow by the size of every mapped library
    rss_l, rss_p = int(st_l["VmRSS"].split()[0]), int(st_p["VmRSS"].split()[0])
    assert rss_l < rss_p + 20_000, (rss_l, rss_p)


def test_memory_guard_unlocks_past_its_budget() -> None:
    code = (
        "from corescope.protect import protect, MemoryGuard\n"
        "p = protect(None, lock=True)\n"
        "assert p.locked, p.notes\n"
        "def lck():\n"
        "    return [l for l in open('/proc/self/status') if l.startswith('VmLck')][0]\n"
        "print(lck().split()[1])\n"
        "print(MemoryGuard(p, budget=1).check())\n"
        "print(lck().split()[1], p.locked)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=cli_env(), timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    before, note, after = proc.stdout.splitlines()
    assert int(before) > 0 and "memory unlocked" in note and after == "0 False"


def test_perf_script_for_a_cpu_the_recording_lacks_is_an_error(tmp_path: Path) -> None:
    """The ring path of `flame --cpu N`: perf refuses a CPU it did not record, and that is a
    usage error (NoSuchCpu → exit 2), not a parser note with an empty graph and exit 0."""
    import os

    import pytest

    from corescope.evidence import profile_query
    from corescope.runner import Runner

    data = tmp_path / "perf.data"
    rec = subprocess.run([need_tool("perf"), "record", "-q", "-a", "-F", "49", "-o", str(data),
                          "--", "sleep", "0.3"], capture_output=True, text=True, timeout=60,
                         check=False)
    assert rec.returncode == 0, rec.stderr
    diags: list = []
    with pytest.raises(profile_query.NoSuchCpu) as exc:
        list(profile_query.script_blocks(Runner(), data, cpu=(os.cpu_count() or 1) + 5,
                                      diags=diags))
    assert "no such CPU" in str(exc.value)
    assert "".join(profile_query.script_blocks(Runner(), data, cpu=0, diags=diags))
