"""The NIC sensor's cheaper reads give what the full reads give: the queue rows of
/proc/interrupts found by byte search, the queue IRQs' counts from /sys/kernel/irq between full
reads, the statistics files kept open; and the sensor stores a counters row only when a
counter moved (or a minute passed). Trees are built in the kernel's formats from the captured
fixtures (tests/fixtures/events: the virtio VM's /proc/interrupts and /proc/softirqs)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.rootfs import Root
from corescope.runner import RecordedRunner
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sensors.netdev import NetdevSensor
from corescope.sources import interrupts as irqs
from corescope.sources import netdev
from corescope.store import events as store_events
from corescope.store.db import Store
from support import FIXTURES
from support.nic_tree import irq_tree, nic_tree

FIX = FIXTURES / "events"
# (fixture, its previous reading or None, bus id → iface, ifaces)
CAPTURES = [
    ("proc_interrupts_ena_32q_96cpu_t5.txt", "proc_interrupts_ena_32q_96cpu.txt",
     {"0000:00:05.0": "eth0"}, {"eth0"}),
    ("proc_interrupts_virtio_2cpu.txt", None, {"virtio2": "eth0"}, {"eth0"}),
    ("proc_interrupts_mlx5_i40e_4cpu.txt", None, {"0000:08:00.0": "eth2"}, {"eth1", "eth2"}),
]


def test_queue_rows_give_the_full_parse_map() -> None:
    for name, prev_name, devmap, ifaces in CAPTURES:
        data = (FIX / name).read_bytes()
        full = irqs.parse_proc_interrupts(data.decode())
        lazy = irqs.parse_queue_rows(data)
        assert lazy.cpus == full.cpus and not lazy.diagnostics
        # every queue row, exactly as parsed in full, and (here) no other row
        queue_rows = [r for r in full.rows
                      if any(irqs.queue_of(a, devmap, ifaces) for a in r.actions)]
        assert list(lazy.rows) == queue_rows
        prev_full = prev_lazy = None
        if prev_name:
            prev_data = (FIX / prev_name).read_bytes()
            prev_full = irqs.parse_proc_interrupts(prev_data.decode())
            prev_lazy = irqs.parse_queue_rows(prev_data)
        assert irqs.queue_map(lazy, prev_lazy, devmap, ifaces=ifaces) == \
            irqs.queue_map(full, prev_full, devmap, ifaces=ifaces)


def test_queue_rows_without_a_header_line_parse_in_full() -> None:
    text = "garbage first\n" + (FIX / "proc_interrupts_virtio_2cpu.txt").read_text()
    assert irqs.parse_queue_rows(text.encode()) == irqs.parse_proc_interrupts(text)


_QUEUE_NAMES = st.one_of(
    st.from_regex(irqs._TXRX, fullmatch=True), st.from_regex(irqs._DIR, fullmatch=True),
    st.from_regex(irqs._VIRTIO, fullmatch=True), st.from_regex(irqs._MLX5, fullmatch=True))


@settings(max_examples=400, deadline=None)
@given(_QUEUE_NAMES)
def test_every_queue_name_holds_a_hint(name: str) -> None:
    # the byte search may pass other lines (queue_of decides), never a queue IRQ's line
    if irqs.queue_of(name, {}) is not None:
        line = f" 38:          0       4164 PCI-MSIX-0000:00:03.0   1-edge      {name}\n"
        data = b"           CPU0       CPU1       \n" + line.encode()
        assert [r.actions for r in irqs.parse_queue_rows(data).rows] == [(name,)]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_queue_rows_never_raise(data: bytes) -> None:
    irqs.parse_queue_rows(data)
    irqs.parse_queue_rows(b"CPU0 CPU1\n" + data)


def _is_queue(row: irqs.IrqRow) -> bool:
    return any(irqs.queue_of(a, {"virtio2": "eth0"}, {"eth0"}) for a in row.actions)


def test_queue_irq_reader_between_full_reads(tmp_path: Path) -> None:
    text = (FIX / "proc_interrupts_virtio_2cpu.txt").read_text()
    root = irq_tree(tmp_path, text)
    reader = irqs.QueueIrqReader(root, full_every_s=60.0)
    try:
        first = reader.read(0.0, _is_queue, "sig")
        assert reader.full_reads == 1
        assert [r for r in first.rows if _is_queue(r)] == \
            [r for r in irqs.parse_proc_interrupts(text).rows if _is_queue(r)]
        # the kernel counts on: sysfs moves, /proc/interrupts (not read now) is left stale
        (tmp_path / "sys/kernel/irq/38/per_cpu_count").write_text("5,4170")
        later = reader.read(5.0, _is_queue, "sig")
        assert reader.full_reads == 1
        moved = text.replace("0       4164", "5       4170")
        assert later.rows == tuple(r for r in irqs.parse_proc_interrupts(moved).rows
                                   if _is_queue(r))
        qmap = irqs.queue_map(later, first, {"virtio2": "eth0"}, ifaces={"eth0"})
        assert {q.name: (q.cpus, q.basis) for q in qmap if q.basis == "delta"} == \
            {"virtio2-input.0": ((0, 1), "delta")}
        # each of these reads /proc/interrupts in full again
        reader.read(6.0, _is_queue, "ifdown")  # the caller's signal moved
        assert reader.full_reads == 2
        reader.read(70.0, _is_queue, "ifdown")  # the minute's refresh
        assert reader.full_reads == 3
        (tmp_path / "sys/kernel/irq/39/actions").write_text("eth0-renamed\n")
        reader.read(71.0, _is_queue, "ifdown")  # a queue IRQ's names changed
        assert reader.full_reads == 4
        (tmp_path / "sys/kernel/irq/39/actions").write_text("virtio2-output.0\n")
        reader.read(72.0, _is_queue, "ifdown")
        assert reader.full_reads == 4
        (tmp_path / "sys/devices/system/cpu/online").write_text("0\n")
        reader.read(73.0, _is_queue, "ifdown")  # a CPU went offline
        assert reader.full_reads == 5
        (tmp_path / "sys/kernel/irq/38/per_cpu_count").unlink()
        reader.close()  # so the file is opened again, and found missing
        reader.read(74.0, _is_queue, "ifdown")
        assert reader.full_reads == 6
        reader.read(75.0, _is_queue, "ifdown")  # a queue IRQ's counts cannot be read
        assert reader.full_reads == 7
    finally:
        reader.close()


def test_queue_irq_reader_without_sys_kernel_irq_reads_in_full(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    text = (FIX / "proc_interrupts_virtio_2cpu.txt").read_text()
    (tmp_path / "proc/interrupts").write_text(text)
    reader = irqs.QueueIrqReader(Root(tmp_path))
    try:
        for t in range(3):
            got = reader.read(float(t), _is_queue)
            assert [r for r in got.rows if _is_queue(r)] == \
                [r for r in irqs.parse_proc_interrupts(text).rows if _is_queue(r)]
        assert reader.full_reads == 3
    finally:
        reader.close()


def test_sys_files_read_what_read_sys_reads(tmp_path: Path) -> None:
    net = nic_tree(tmp_path)
    root = Root(tmp_path)
    files = netdev.SysFiles(root)
    names = ("rx_errors", "tx_errors")
    try:
        assert files.read("eth0", names) == netdev.read_sys(root, "eth0", names)
        (net / "statistics/rx_errors").write_text("7\n")
        (net / "queues/tx-1").mkdir()
        (net / "queues/tx-1/tx_timeout").write_text("1\n")
        assert files.read("eth0", names) == netdev.read_sys(root, "eth0", names) == \
            ({"rx_errors": 7, "tx_errors": 0}, {0: 0, 1: 1})
        assert files.signal("eth0") == (0x1003, 2, (0, 1))
        (net / "statistics/tx_errors").write_text("garbage\n")
        assert files.read("eth0", names) == netdev.read_sys(root, "eth0", names)
    finally:
        files.close()


def test_sensor_stores_counters_when_they_move(tmp_path: Path) -> None:
    net = nic_tree(tmp_path / "r")
    env = SensorEnv(Root(tmp_path / "r"), RecordedRunner({}), tmp_path / "s",
                    RecordOptions(netdev_interval_s=5.0))
    sensor = NetdevSensor(env)
    with Store.open(tmp_path / "s") as store:
        assert sensor.open(store).ok
        try:
            t0 = time.time()
            for k in range(3):  # nothing moves: one row, then none
                sensor.tick(t0 + 5 * k, 100.0 + 5 * k)
            (net / "queues/tx-0/tx_timeout").write_text("1\n")  # a TX timeout: row and event
            sensor.tick(t0 + 15, 115.0)
            sensor.tick(t0 + 20, 120.0)
            sensor.tick(t0 + 75, 175.0)  # a minute after the last row: stored anyway
        finally:
            sensor.close()
        rows = store.query("SELECT time, counters FROM nic_counters ORDER BY time")
        assert [round(t - t0) for t, _ in rows] == [0, 15, 75]
        assert json.loads(rows[1][1])["tx-0.tx_timeout"] == 1
        assert json.loads(rows[0][1])["sys.rx_errors"] == 0
        [ev] = store.query("SELECT kind FROM kernel_events")
        assert ev == ("nic_tx_timeout",)
        # the softirq deltas every tick after the first, the queue map when first seen
        assert len(store_events.read_softirqs(store, 0, t0 + 100)) == 5
        qmap = store_events.irq_map_at(store, t0 + 100)
        assert {q.name for q in qmap} == {"virtio2-input.0", "virtio2-output.0"}
