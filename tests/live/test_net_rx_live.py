"""NET_RX per CPU as `record` stores it, on real softirqs: a process pinned to CPU 1 sends
loopback UDP as fast as it can. Loopback transmit hands each packet to the receive path on
the sending CPU (netif_rx on the backlog), so the NET_RX softirq runs there. What `record`
stored for cpu1 during the traffic must stand well above what it stored for cpu1 just before,
in this test's own window (the machine's other load moves both)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from corescope.evidence.store import StoreEvidence
from corescope.store.db import Store
from live.conftest import MACHINE, recording_process

pytestmark = MACHINE

CPU = 1
SENDER = """
import os, socket, sys, time
os.sched_setaffinity(0, {int(sys.argv[2])})
rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rx.bind(("127.0.0.1", 0))
rx.setblocking(False)
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
addr, payload, end = rx.getsockname(), b"x" * 64, time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for _ in range(200):
        tx.sendto(payload, addr)
    try:
        while True:
            rx.recv(2048)
    except BlockingIOError:
        pass
"""


def _rates(rows, t0: float, t1: float) -> list[float]:
    """cpu1's NET_RX per second in each reading wholly inside [t0, t1]."""
    return [r.net_rx[CPU] / r.interval_s for r in rows
            if r.t - r.interval_s >= t0 and r.t <= t1 and CPU in r.net_rx and r.interval_s > 0]


def test_record_stores_net_rx_raised_on_the_sending_cpu(tmp_path: Path) -> None:
    with recording_process(tmp_path / "store", "--no-profile", "--no-census", "--no-kmsg",
                           "--netdev-interval", "1s"):
        time.sleep(1.5)
        base0 = time.time()
        time.sleep(6)
        base1 = send0 = time.time()
        sender = subprocess.run([sys.executable, "-c", SENDER, "6", str(CPU)], capture_output=True,
                                text=True, timeout=60)
        send1 = time.time()
        assert sender.returncode == 0, sender.stderr
        time.sleep(2.5)  # the reading that closes the traffic's last second
    store = Store.open(tmp_path / "store", create=False)
    try:
        rows = StoreEvidence(store).softirqs(base0 - 1, send1 + 5)
    finally:
        store.close()
    before = _rates(rows, base0, base1)
    during = _rates(rows, send0 + 0.5, send1)
    assert len(before) >= 3 and len(during) >= 3, (before, during, rows)
    base = statistics.median(before)
    peak = statistics.median(during)
    print(f"cpu{CPU} NET_RX/s: before {before}, during {during}")
    assert peak >= 2000, (before, during)
    assert peak >= 10 * max(base, 1.0), (before, during)
