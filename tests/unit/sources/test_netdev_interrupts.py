"""sources/netdev and sources/interrupts: ethtool -S, sysfs counters, the NIC queue IRQ map."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.model.events import serving_cpus
from corescope.rootfs import Root
from corescope.sources import interrupts as irqs
from corescope.sources import netdev
from corescope.sources.ethtool import EthtoolReader
from support import FIXTURES
from support.nic_tree import virtio_eth0

FIX = FIXTURES / "events"


def _ena(name: str) -> dict[str, int]:
    stats, diags = netdev.parse_ethtool_stats((FIX / name).read_text())
    assert not diags
    return stats


def test_ethtool_ena_layout() -> None:
    stats = _ena("ethtool_S_ena_32q_before.txt")
    assert stats["tx_timeout"] == 0 and stats["conntrack_allowance_available"] == 2097152
    assert sum(1 for k in stats if k.endswith("_tx_missed_tx")) == 32
    assert "NIC statistics" not in stats


def test_ethtool_virtio_capture() -> None:
    stats, diags = netdev.parse_ethtool_stats((FIX / "ethtool_S_virtio_net.txt").read_text())
    assert not diags and "tx0_tx_timeouts" in stats and "tx_kicks" in stats


def test_ethtool_bad_output() -> None:
    stats, diags = netdev.parse_ethtool_stats("no stats available\n")
    assert stats == {} and diags
    stats, diags = netdev.parse_ethtool_stats("NIC statistics:\n     a: 1\n     b: x\n")
    assert stats == {"a": 1} and len(diags) == 1


def test_counter_increases_become_events() -> None:
    before = netdev.NicCounters("eth0", "ena", "0000:00:05.0", _ena("ethtool_S_ena_32q_before.txt"),
                                tx_timeouts={5: 0})
    after = netdev.NicCounters("eth0", "ena", "0000:00:05.0",
                               _ena("ethtool_S_ena_32q_after_reset.txt"), tx_timeouts={5: 1})
    evs = netdev.counter_events(before, after, 1000.0)
    by = {e.fields["counter"]: e for e in evs}
    assert set(by) == {"tx_timeout", "wd_expired", "total_resets", "missing_tx_cmpl",
                       "suspected_poll_starvation", "queue_5_tx_missed_tx", "tx-5/tx_timeout"}
    assert by["total_resets"].kind == "nic_reset"
    assert by["wd_expired"].kind == "nic_keepalive_timeout"
    assert by["queue_5_tx_missed_tx"].fields["queue"] == 5
    assert by["queue_5_tx_missed_tx"].fields["delta"] == 129
    assert by["tx-5/tx_timeout"].source == "sysfs" and by["tx_timeout"].source == "ethtool"
    assert all(e.time == 1000.0 and e.driver == "ena" and e.is_incident for e in evs)
    # a reading that went down (driver reload) is a new baseline, not an event
    assert netdev.counter_events(after, before, 1005.0) == []
    assert netdev.counter_events(after, after, 1005.0) == []


def test_read_ethtool_reports_why_not() -> None:
    # the ioctl on interfaces that cannot answer: a reason, never an exception
    reader = EthtoolReader()
    try:
        stats, why = netdev.read_ethtool(reader, "corescope-none0")
        assert stats is None and "ethtool -S corescope-none0: " in why
        stats, why = netdev.read_ethtool(reader, "x" * 40)
        assert stats is None and "not an interface name" in why
        stats, why = netdev.read_ethtool(reader, "lo")  # loopback has no driver counters
        assert stats is None and why
    finally:
        reader.close()


def test_sysfs_readers(tmp_path: Path) -> None:
    net = virtio_eth0(tmp_path, {"tx_errors": 3, "rx_packets": 1234}, [0, 1])
    (net / "queues/rx-0").mkdir(parents=True)
    (tmp_path / "sys/class/net/lo").mkdir(parents=True)
    root = Root(tmp_path)
    assert netdev.list_ifaces(root) == ["eth0"]
    assert netdev.iface_driver_device(root, "eth0") == ("virtio_net", "virtio2")
    stats, timeouts = netdev.read_sys(root, "eth0")
    assert stats == {"tx_errors": 3, "rx_packets": 1234}
    assert timeouts == {0: 0, 1: 1}
    assert irqs.dev_to_iface_map(root) == {"virtio2": "eth0", "0000:00:03.0": "eth0"}


def test_interrupts_96_cpus_32_queue_ena() -> None:
    cur = irqs.parse_proc_interrupts((FIX / "proc_interrupts_ena_32q_96cpu_t5.txt").read_text())
    prev = irqs.parse_proc_interrupts((FIX / "proc_interrupts_ena_32q_96cpu.txt").read_text())
    assert not cur.diagnostics and cur.cpus == tuple(range(96))
    names = [a for r in cur.rows for a in r.actions]
    assert "ena-mgmnt@pci:0000:00:05.0" in names and "nvme0q48" in names
    qmap = irqs.queue_map(cur, prev, {"0000:00:05.0": "eth0"}, ifaces={"eth0"})
    assert len(qmap) == 32 and {q.queue for q in qmap} == set(range(32))
    assert all(q.basis == "delta" and q.iface == "eth0" for q in qmap)
    assert serving_cpus(qmap, "eth0", 5) == {39}
    assert serving_cpus(qmap, "eth0", 7) == {7}
    assert serving_cpus(qmap, "eth0", 40) is None
    assert serving_cpus(qmap, None, 5) is None
    # without a previous reading: every CPU that ever took it (queue 5 moved from 5 to 39)
    total = irqs.queue_map(cur, None, {}, ifaces={"eth0"})
    assert serving_cpus(total, "eth0", 5) == {5, 39}


def test_interrupts_virtio_capture() -> None:
    cur = irqs.parse_proc_interrupts((FIX / "proc_interrupts_virtio_2cpu.txt").read_text())
    assert cur.cpus == (0, 1) and not cur.diagnostics
    qmap = irqs.queue_map(cur, None, {"virtio2": "eth0"}, ifaces={"eth0"})
    by = {(q.queue, q.direction): q for q in qmap}
    assert set(by) == {(0, "rx"), (0, "tx")}
    assert by[(0, "rx")].name == "virtio2-input.0" and by[(0, "rx")].iface == "eth0"
    # virtio3-rx / virtio3-tx (vsock) and virtio1-req.0 (block) are not NIC queues
    assert all(q.name.startswith("virtio2-") for q in qmap)
    assert serving_cpus(qmap, "eth0", 0) == frozenset(by[(0, "tx")].cpus)


def test_interrupts_mlx5_and_i40e_names() -> None:
    cur = irqs.parse_proc_interrupts((FIX / "proc_interrupts_mlx5_i40e_4cpu.txt").read_text())
    qmap = irqs.queue_map(cur, None, {"0000:08:00.0": "eth2"}, ifaces={"eth1", "eth2"})
    got = {(q.iface, q.queue): q.cpus for q in qmap}
    assert got == {("eth2", 0): (0,), ("eth2", 1): (1,), ("eth2", 2): (2,), ("eth2", 3): (3,),
                   ("eth1", 0): (0,), ("eth1", 1): (1,)}


def test_affinity_is_used_without_a_delta() -> None:
    cur = irqs.parse_proc_interrupts((FIX / "proc_interrupts_mlx5_i40e_4cpu.txt").read_text())
    qmap = irqs.queue_map(cur, cur, {"0000:08:00.0": "eth2"}, affinity={31: (2, 3)})
    q0 = next(q for q in qmap if q.irq == 31)
    assert (q0.cpus, q0.basis) == ((2, 3), "affinity")


def test_queue_name_patterns() -> None:
    m = {"virtio0": "eth0", "0000:00:06.0": "ens6"}
    assert irqs.queue_of("eth0-Tx-Rx-5", m) == ("eth0", 5, "txrx")
    assert irqs.queue_of("eth0-TxRx-12", m) == ("eth0", 12, "txrx")
    assert irqs.queue_of("virtio0-input.0", m) == ("eth0", 0, "rx")
    assert irqs.queue_of("virtio0-output.3", m) == ("eth0", 3, "tx")
    assert irqs.queue_of("mlx5_comp5@pci:0000:00:06.0", m) == ("ens6", 5, "txrx")
    assert irqs.queue_of("eth1-tx-2", m) == ("eth1", 2, "tx")
    assert irqs.queue_of("i40e-eth1-TxRx-3", m, {"eth1"}) == ("eth1", 3, "txrx")
    for other in ("ena-mgmnt@pci:0000:00:05.0", "nvme0q3", "timer", "virtio1-req.0", ""):
        assert irqs.queue_of(other, m) is None


def test_cpulist() -> None:
    assert irqs.parse_cpulist("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert irqs.parse_cpulist("") == () and irqs.parse_cpulist("x,5-2,7") == (7,)


def test_softirqs_capture_and_delta() -> None:
    cur, diags = irqs.parse_softirqs((FIX / "proc_softirqs_2cpu.txt").read_text())
    assert not diags and set(cur["NET_RX"]) == {0, 1}
    later = {k: {c: v + (10 if k == "NET_RX" else 0) for c, v in d.items()}
             for k, d in cur.items()}
    d = irqs.softirq_delta(cur, later)
    assert d == {"NET_RX": {0: 10, 1: 10}, "NET_TX": {0: 0, 1: 0}}
    assert irqs.softirq_delta(later, cur)["NET_RX"] == {0: 0, 1: 0}  # clamped


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=500))
def test_property_parsers_never_raise(text: str) -> None:
    netdev.parse_ethtool_stats(text)
    ints = irqs.parse_proc_interrupts(text)
    irqs.queue_map(ints, ints, {})
    irqs.parse_softirqs(text)
    irqs.parse_cpulist(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["CPU0", "CPU1", " ", "\n", "38:", "12", "x", "PCI-MSI",
                                 "1-edge", "eth0-Tx-Rx-5", "virtio2-input.0", "NMI:", ","]),
                max_size=40).map("".join))
def test_property_interrupts_near_misses(text: str) -> None:
    ints = irqs.parse_proc_interrupts(text)
    for q in irqs.queue_map(ints, None, {"virtio2": "eth0"}):
        assert q.queue is None or q.queue >= 0


def test_vmxnet3_and_nfp_rxtx_vectors_are_queues() -> None:
    # vmxnet3 (buddy-shared vectors, its default), nfp and octeontx2 name a queue's vector
    # `IFACE-rxtx-N`: a VMware guest's TX timeout has to find the CPU serving its queue
    assert irqs.queue_of("ens192-rxtx-3", {}) == ("ens192", 3, "txrx")
    assert irqs.queue_of("ens192-event-4", {}) is None
    data = (FIX / "proc_interrupts_vmxnet3_4cpu.txt").read_bytes()
    rows = irqs.parse_queue_rows(data)
    qmap = irqs.queue_map(rows, None, {})
    assert sorted((q.iface, q.queue, q.cpus) for q in qmap) == [
        ("ens192", 0, (3,)), ("ens192", 1, (1,)), ("ens192", 2, (0,)), ("ens192", 3, (2,))]


def test_a_saved_map_without_sysfs_ties_mlx5_and_virtio_queues_by_their_device() -> None:
    # a saved /proc/interrupts comes without /sys/class/net: mlx5's and virtio's IRQ names
    # hold no interface, but they hold the bus id the driver's log lines print
    # (`mlx5_core 0000:08:00.0 eth2: TX timeout on queue: 2`, `virtio_net virtio2 eth0: ...`)
    mlx = irqs.parse_proc_interrupts((FIX / "proc_interrupts_mlx5_i40e_4cpu.txt").read_text())
    qmap = irqs.queue_map(mlx, None, {})
    assert {q.iface for q in qmap if q.name.startswith("mlx5")} == {None}
    assert serving_cpus(qmap, "eth2", 2, "0000:08:00.0") == {2}
    assert serving_cpus(qmap, "eth2", 2, "0000:09:00.0") is None  # another NIC's
    assert serving_cpus(qmap, "eth2", 2) is None
    # i40e names its vectors after the driver and the interface (`i40e-eth1-TxRx-1`):
    # without sysfs the driver's name stays on, and still names eth1's queue
    assert serving_cpus(qmap, "eth1", 1, "0000:18:00.1") == {1}
    assert serving_cpus(qmap, "th1", 1, "0000:18:00.1") is None
    vio = irqs.parse_proc_interrupts((FIX / "proc_interrupts_virtio_2cpu.txt").read_text())
    vmap = irqs.queue_map(vio, None, {})
    tx = next(q for q in vmap if q.name == "virtio2-output.0")
    assert serving_cpus(vmap, "eth0", 0, "virtio2") == frozenset(tx.cpus)
    assert serving_cpus(vmap, "eth0", 0, "virtio3") is None


def test_gve_notification_blocks_are_tx_then_rx_queues() -> None:
    # gve gives each notification block a vector; the first half serve TX queues, the
    # second half RX queues: `Timeout on tx queue, 2` on a GCP VM is block 2's CPU
    data = (FIX / "proc_interrupts_gve_4cpu.txt").read_bytes()
    qmap = irqs.queue_map(irqs.parse_queue_rows(data), None, {})
    got = sorted((q.queue, q.direction, q.cpus) for q in qmap)
    assert got == [(0, "rx", (0,)), (0, "tx", (0,)), (1, "rx", (1,)), (1, "tx", (1,)),
                   (2, "rx", (2,)), (2, "tx", (2,)), (3, "rx", (3,)), (3, "tx", (3,))]
    assert all(q.device == "0000:00:04.0" for q in qmap)
    assert serving_cpus(qmap, "ens4", 2, "0000:00:04.0") == {2}
    assert irqs.queue_of("gve-mgmnt@pci:0000:00:04.0", {}) is None


def test_mlx4_and_sfc_queue_vectors_are_queues() -> None:
    # mlx4 4.5+: `mlx4-N@BDF`, one per completion EQ (EQ 0 is async): ring N-1 on a one-node
    # machine; tied to its interface by the PCI device, or by the device alone when saved
    data = (FIX / "proc_interrupts_mlx4_4cpu.txt").read_bytes()
    qmap = irqs.queue_map(irqs.parse_queue_rows(data), None, {"0000:00:08.0": "eth0"},
                          ifaces={"eth0"})
    assert sorted((q.iface, q.queue, q.direction, q.cpus) for q in qmap) == [
        ("eth0", 0, "txrx", (0,)), ("eth0", 1, "txrx", (1,)), ("eth0", 2, "txrx", (2,)),
        ("eth0", 3, "txrx", (3,))]
    saved = irqs.queue_map(irqs.parse_proc_interrupts(data.decode()), None, {})
    assert serving_cpus(saved, "eth0", 2, "0000:00:08.0") == {2}
    assert irqs.queue_of("mlx4-async@pci:0000:00:08.0", {}) is None
    # 3.x mlx4_en: `eth2-N`, RX ring N's vector (TX ring N shares it); mlx4_ib's are not
    data = (FIX / "proc_interrupts_mlx4en_3x_4cpu.txt").read_bytes()
    for ifaces in ({"eth2"}, None):  # with /sys/class/net, and a saved file without it
        qmap = irqs.queue_map(irqs.parse_queue_rows(data), None, {}, ifaces=ifaces)
        assert sorted((q.iface, q.queue, q.cpus) for q in qmap) == [
            ("eth2", 0, (0,)), ("eth2", 1, (1,)), ("eth2", 2, (2,)), ("eth2", 3, (3,))]
    # sfc: `eth0-N` (combined channels), `eth1-rx-N`/`eth1-tx-N`; `-xdp-N` is no netdev queue
    data = (FIX / "proc_interrupts_sfc_4cpu.txt").read_bytes()
    qmap = irqs.queue_map(irqs.parse_queue_rows(data), None, {}, ifaces={"eth0", "eth1"})
    assert sorted((q.iface, q.queue, q.direction, q.cpus) for q in qmap) == [
        ("eth0", 0, "txrx", (0,)), ("eth0", 1, "txrx", (1,)), ("eth0", 2, "txrx", (2,)),
        ("eth0", 3, "txrx", (3,)), ("eth1", 0, "rx", (0,)), ("eth1", 0, "tx", (2,)),
        ("eth1", 1, "rx", (1,)), ("eth1", 1, "tx", (3,))]
    assert serving_cpus(qmap, "eth0", 3) == {3} and serving_cpus(qmap, "eth1", 1) == {3}
    # a number after a name is a queue only for an interface: not another device's vector
    assert irqs.queue_of("megasas0-msix-3", {}, {"eth0"}) is None
    assert irqs.queue_of("eth9-1", {}, {"eth0"}) is None
    # the fast row finder keeps every row the full parse maps
    for name in ("proc_interrupts_mlx4_4cpu.txt", "proc_interrupts_mlx4en_3x_4cpu.txt",
                 "proc_interrupts_sfc_4cpu.txt"):
        raw = (FIX / name).read_bytes()
        full = irqs.queue_map(irqs.parse_proc_interrupts(raw.decode()), None, {})
        fast = irqs.queue_map(irqs.parse_queue_rows(raw), None, {})
        assert fast == full
