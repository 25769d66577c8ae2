"""A --root tree of one NIC as the kernel shows it, built from the captured fixtures
(tests/fixtures/events: the virtio VM's /proc/interrupts and /proc/softirqs): the NIC sensor's
tests, the undecodable-names tests and the sysfs readers' tests read it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from corescope.rootfs import Root
from corescope.sources import interrupts as irqs
from support import FIXTURES


def irq_tree(tmp: Path, text: str, cpus: str = "0-1") -> Root:
    """/proc/interrupts and, for every numbered IRQ, /sys/kernel/irq/N/{per_cpu_count,actions}
    as the kernel prints them (counts of every possible CPU, comma-separated, no newline)."""
    (tmp / "proc").mkdir(parents=True, exist_ok=True)
    (tmp / "proc/interrupts").write_text(text)
    cpu = tmp / "sys/devices/system/cpu"
    cpu.mkdir(parents=True, exist_ok=True)
    (cpu / "online").write_text(cpus + "\n")
    (cpu / "possible").write_text(cpus + "\n")
    for row in irqs.parse_proc_interrupts(text).rows:
        d = tmp / f"sys/kernel/irq/{row.irq}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "per_cpu_count").write_text(",".join(str(row.counts[c]) for c in sorted(row.counts)))
        (d / "actions").write_text(",".join(row.actions) + "\n")
    return Root(tmp)


def virtio_eth0(tmp: Path, stats: Mapping[str, int], tx_timeouts: Sequence[int]) -> Path:
    """/sys as the virtio VM has it: eth0 → virtio2 under PCI 0000:00:03.0, bound to
    virtio_net, with these statistics and a TX queue per timeout count. Its directory."""
    dev = tmp / "sys/devices/pci0000:00/0000:00:03.0/virtio2"
    (dev / "net").mkdir(parents=True)
    drv = tmp / "sys/bus/virtio/drivers/virtio_net"
    drv.mkdir(parents=True)
    # relative links, as sysfs has them (an absolute one would point outside a captured tree)
    os.symlink(os.path.relpath(drv, dev), dev / "driver")
    net = tmp / "sys/class/net/eth0"
    (net / "statistics").mkdir(parents=True)
    for name, value in stats.items():
        (net / "statistics" / name).write_text(f"{value}\n")
    for q, timeouts in enumerate(tx_timeouts):
        (net / f"queues/tx-{q}").mkdir(parents=True)
        (net / f"queues/tx-{q}/tx_timeout").write_text(f"{timeouts}\n")
    os.symlink(os.path.relpath(dev, net), net / "device")
    return net


def nic_tree(tmp: Path) -> Path:
    """A virtio VM's eth0 (driver links as sysfs has them), its statistics and one TX queue,
    and the captured /proc/interrupts and /proc/softirqs."""
    net = virtio_eth0(tmp, dict.fromkeys(("rx_errors", "tx_errors", "rx_dropped", "tx_dropped",
                                          "tx_carrier_errors"), 0), [0])
    (net / "flags").write_text("0x1003\n")
    (net / "carrier_changes").write_text("2\n")
    irq_tree(tmp, (FIXTURES / "events" / "proc_interrupts_virtio_2cpu.txt").read_text())
    (tmp / "proc/softirqs").write_text((FIXTURES / "events" / "proc_softirqs_2cpu.txt").read_text())
    return net
