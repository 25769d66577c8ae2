"""The agent's cheap paths on the real kernel: driver counters through the ethtool ioctl
equal what `ethtool -S` prints for every interface here, with no process spawned."""

from __future__ import annotations

import subprocess
from pathlib import Path

from corescope.sources import netdev
from corescope.sources.ethtool import EthtoolReader
from live.conftest import need_tool


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
