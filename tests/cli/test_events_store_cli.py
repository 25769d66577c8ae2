"""store/events and the `events` / `report` commands over a store built from known data."""

from __future__ import annotations

import json
from pathlib import Path

from corescope.model.cores import CoreSample
from corescope.model.events import KernelEvent, QueueIrq
from corescope.store import events as store_events
from corescope.store.db import Store
from corescope.store.series_writer import SeriesWriter
from support import FIXTURES, run_cli, run_cli_json

FIX = FIXTURES / "events"


def _event(t: float, seq: int | None, kind: str = "nic_tx_stall", lab: bool = False
           ) -> KernelEvent:
    return KernelEvent(time=t, kind=kind, raw=f"line {seq}", driver="ena", device="0000:00:05.0",
                       fields={"iface": "eth0", "queue": 5}, lab=lab, seq=seq, mono_usec=seq)


def test_insert_read_dedupe(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        assert store_events.insert_events(store, [_event(10, 1), _event(11, 2)], "boot-a") == 2
        # the same records read again after a restart are stored once
        assert store_events.insert_events(store, [_event(10, 1), _event(12, 3)], "boot-a") == 1
        # another boot reuses sequence numbers
        assert store_events.insert_events(store, [_event(20, 1)], "boot-b") == 1
        # counter events have no seq and are never deduplicated
        assert store_events.insert_events(store, [_event(30, None), _event(30, None)]) == 2
        evs = store_events.read_events(store, 0, 100)
        assert [e.time for e in evs] == [10, 11, 12, 20, 30, 30]
        assert evs[0].fields == {"iface": "eth0", "queue": 5} and evs[0].queue == 5
        assert [e.time for e in store_events.read_events(store, 11, 12)] == [11, 12]
        assert store_events.read_events(store, 0, 100, kinds=["nic_reset"]) == []
        got = store_events.get_event(store, evs[1].id or 0)
        assert got is not None and got.raw == "line 2"
        assert store_events.stored_at(store, evs[1].id or 0) is not None


def test_loss_and_irq_map(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        store_events.record_loss(store, 100, 30, 1)
        store_events.record_loss(store, 200, 5, 1)
        store_events.record_loss(store, 300, 0, 0)  # nothing to record
        assert store_events.lost_records(store, 0, 1000) == 35
        assert store_events.lost_records(store, 150, 1000) == 5
        q = QueueIrq("eth0", 5, 79, "eth0-Tx-Rx-5", "txrx", (39,), "delta")
        store_events.insert_irq_map(store, 100, [q])
        store_events.insert_irq_map(store, 200, [QueueIrq("eth0", 5, 79, "eth0-Tx-Rx-5", "txrx",
                                                          (5,), "delta")])
        assert store_events.irq_map_at(store, 150)[0].cpus == (39,)
        assert store_events.irq_map_at(store, 250)[0].cpus == (5,)
        assert store_events.irq_map_at(store, 50)[0].cpus == (39,)  # first after
        store_events.retain(store, 150)
        assert store_events.lost_records(store, 0, 1000) == 5


def test_irq_maps_read_once_give_what_irq_map_at_gives(tmp_path: Path) -> None:
    """An investigation asks for the map at every incident: IrqMaps reads the snapshot times
    once and each snapshot once, and must give irq_map_at's answer for any time (before the
    first snapshot, on one, between, after the last; several queues per snapshot)."""
    with Store.open(tmp_path / "s") as store:
        assert store_events.IrqMaps(store).at(100.0) == store_events.irq_map_at(store, 100.0)
        for t, cpus in ((100.0, (39,)), (200.0, (5,)), (260.5, (1, 2))):
            store_events.insert_irq_map(store, t, [
                QueueIrq("eth0", q, 79 + q, f"eth0-Tx-Rx-{q}", "txrx", cpus, "delta")
                for q in (5, 2)] + [QueueIrq(None, None, 30, "virtio0-config", "other", (),
                                             "total")])
        maps = store_events.IrqMaps(store)
        for t in (-1e18, 50.0, 99.999, 100.0, 100.001, 150.0, 199.99, 200.0, 260.5, 261.0,
                  1e18):
            assert maps.at(t) == store_events.irq_map_at(store, t), t
        assert maps.at(150.0) and maps.at(150.0) is not maps.at(150.0)  # callers' own lists


def _samples(t0: float, n: int, hot: dict[int, tuple[float, float]]) -> list[CoreSample]:
    """2 CPUs at 1 s; cpu c is at 100% system time during hot[c] = (start, end)."""
    out = []
    for k in range(1, n + 1):
        t = t0 + k
        deltas = {}
        for cpu in (0, 1):
            lo, hi = hot.get(cpu, (0, 0))
            if lo < t <= hi:
                deltas[cpu] = (0, 0, 100, 0, 0, 0, 0, 0, 0, 0)
            else:
                deltas[cpu] = (3, 0, 2, 95, 0, 0, 0, 0, 0, 0)
        out.append(CoreSample(t=t, interval_s=1.0, deltas=deltas))
    return out


def _build_store(path: Path, now: float) -> None:
    with Store.open(path) as store:
        w = SeriesWriter(store)
        for s in _samples(now - 120, 118, {1: (now - 30, now - 26)}):
            w.append(s)
        w.flush()
        store_events.insert_events(store, [
            _event(now - 24, 100, lab=True),
            _event(now - 23.9, 101, "nic_reset", lab=True),
            KernelEvent(time=now - 23, kind="other", raw="boring", seq=102),
        ], "boot")
        store_events.insert_irq_map(store, now - 100, [
            QueueIrq("eth0", 5, 79, "eth0-Tx-Rx-5", "txrx", (1,), "delta")])


def test_latest_skew_is_this_boots_newest_anchor(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s")
    assert store_events.latest_skew(store, 0.0) is None
    store_events.record_anchor(store, 1000.0, "monotonic", 1.7e9, 1e-6, -0.030)  # last boot
    store_events.record_anchor(store, 2000.0, "marker", 1.7e9, 1e-6, -0.011)
    store_events.record_anchor(store, 2010.0, "monotonic", 1.7e9, 1e-6, None)  # no skew known
    store_events.record_anchor(store, 2020.0, "monotonic", 1.7e9, 1e-6, -0.018)
    assert store_events.latest_skew(store, 1500.0) == -0.018
    assert store_events.latest_skew(store, 3000.0) is None  # nothing anchored this boot
    store.close()


def test_report_json_contract(tmp_path: Path) -> None:
    import math
    import time

    # monitors' windows are epoch-aligned: pin the burn to seconds 29-33 of a minute, so it
    # straddles one 30 s boundary and sits inside one 60 s window
    now = math.floor(time.time() / 60) * 60 - 1
    _build_store(tmp_path / "s", now)
    data = run_cli_json("--store", str(tmp_path / "s"), "report", "--last", "10m", "--json")
    assert set(data) >= {"incidents", "summary"}
    assert set(data["summary"]) >= {"events", "preceded_fraction", "base_rate",
                                    "median_lead_s", "top_cpu"}
    (inc,) = data["incidents"]
    assert inc["event"]["kind"] == "nic_tx_stall" and inc["event"]["lab"] is True
    assert [e["kind"] for e in inc["related_events"]] == ["nic_reset"]
    (pre,) = inc["preceding_episodes"]
    assert set(pre) >= {"cpu", "start", "end", "lead_s", "serves_queue"}
    assert pre["cpu"] == 1 and pre["serves_queue"] is True
    assert 0 <= pre["lead_s"] <= 10
    assert data["summary"]["top_cpu"] == 1 and data["summary"]["preceded_fraction"] == 1.0
    res = inc["resolution"]
    assert res["peak_1s_pct"] == 100.0
    # 4 hot seconds of 30 and of 60: the coarse samplers hide the spike
    assert 10 < res["at_30s_pct"] < 20 and 5 < res["at_60s_pct"] < 10
    assert res["machine_peak_1s_pct"] < 60
    text = run_cli("--store", str(tmp_path / "s"), "report", "--last", "10m")
    assert text.returncode == 1 and "cpu1" in text.stdout and "serves this queue" in text.stdout
    one = run_cli_json("--store", str(tmp_path / "s"), "report", "--event",
                       str(inc["event"]["id"]), "--json")
    assert one["incidents"][0]["event"]["id"] == inc["event"]["id"]


def test_events_json_contract_from_store(tmp_path: Path) -> None:
    import time

    _build_store(tmp_path / "s", time.time())
    data = run_cli_json("--store", str(tmp_path / "s"), "events", "--json")
    assert set(data) >= {"events", "lost_records"}
    assert [e["kind"] for e in data["events"]] == ["nic_tx_stall", "nic_reset"]
    for e in data["events"]:
        assert set(e) >= {"id", "time", "kind", "driver", "device", "fields", "lab", "raw"}
    every = run_cli_json("--store", str(tmp_path / "s"), "events", "--all", "--json")
    assert [e["kind"] for e in every["events"]][-1] == "other"
    only = run_cli_json("--store", str(tmp_path / "s"), "events", "--kind", "nic_reset", "--json")
    assert [e["kind"] for e in only["events"]] == ["nic_reset"]


def test_events_from_saved_files() -> None:
    data = run_cli_json("events", "--file", str(FIX / "dmesg_incidents.txt"), "--json", "--all")
    expected = json.loads((FIX / "dmesg_incidents.expected.json").read_text())
    assert len(data["events"]) == len(expected)
    for e, x in zip(data["events"], expected, strict=True):
        # a further line of a multi-line report is "other", part of its first line's event
        part_of = e["fields"].get("part_of")
        assert e["kind"] == ("other" if part_of else x["kind"])
        assert part_of is None or x["kind"] in ("other", part_of)
    assert data["lost_records"] == 0 and "boot" in data["clock"]
    j = run_cli_json("events", "--file", str(FIX / "journal_k.json"), "--json")
    assert j["events"][0]["time"] == 1701630111.0024
    assert j["events"][0]["device"] == "0000:00:05.0"
    k = run_cli_json("events", "--file", str(FIX / "kmsg_capture_virtio_vm.bin"), "--json",
                     "--kind", "nic_tx_stall")
    assert k["events"] and all(e["lab"] for e in k["events"])


def test_events_errors() -> None:
    proc = run_cli("--store", "/nonexistent/corescope-x", "events")
    assert proc.returncode == 2 and "no store" in proc.stderr
    proc = run_cli("events", "--file", "/nonexistent/file")
    assert proc.returncode == 2 and "cannot read" in proc.stderr


def test_lab_nicreset_needs_consent() -> None:
    proc = run_cli("lab", "nicreset")
    assert proc.returncode == 2 and "--yes" in proc.stderr


def test_kmsg_sensor_drain_stores_events_and_loss(tmp_path: Path) -> None:
    """The sensor's batch step over a fake descriptor: classified rows, and EPIPE loss."""
    import errno

    from corescope.rootfs import Root
    from corescope.runner import Runner
    from corescope.sensors.base import RecordOptions, SensorEnv
    from corescope.sensors.kmsg import KmsgSensor
    from corescope.sources.kmsg_clock import ClockAnchor
    from corescope.sources.kmsg_reader import KmsgReader

    script: list[bytes | int] = [
        b"3,10,5000000,-;ena 0000:00:05.0 eth0: Trigger reset is on\n SUBSYSTEM=pci\n",
        errno.EPIPE,
        b"6,25,6000000,-;something ordinary\n",
    ]

    def read(n: int) -> bytes:
        if not script:
            raise BlockingIOError(errno.EAGAIN, "EAGAIN")
        item = script.pop(0)
        if isinstance(item, int):
            raise OSError(item, "fake")
        return item

    with Store.open(tmp_path / "s") as store:
        sensor = KmsgSensor(SensorEnv(Root(), Runner(), tmp_path, RecordOptions()))
        sensor._store = store
        sensor._reader = KmsgReader(read)
        sensor.anchor = ClockAnchor(offset_s=1_000_000.0, error_s=0, method="monotonic",
                                    taken_wall=0)
        sensor.boot_id = "boot"
        got = sensor.drain()
        assert [e.kind for e in got] == ["nic_reset", "other"]
        evs = store_events.read_events(store, 0, 2e9)
        assert [(e.time, e.seq) for e in evs] == [(1_000_005.0, 10), (1_000_006.0, 25)]
        assert store_events.lost_records(store, 0, 2e10) == 14
        assert sensor.drain() == []  # nothing new: no second loss row
        assert store_events.lost_records(store, 0, 2e10) == 14
