"""NIC counters (ethtool -S through the ioctl, no process; sysfs statistics, per-queue
tx_timeout), the NIC queue interrupt map and NET_RX/NET_TX softirqs per core,
every netdev_interval_s (5 s by default)."""

from __future__ import annotations

import time

from corescope.model.common import SensorStatus
from corescope.model.events import QueueIrq
from corescope.sensors.base import Sensor, SensorEnv
from corescope.sources import interrupts as irqs
from corescope.sources import netdev
from corescope.sources.ethtool import EthtoolReader
from corescope.store import events as store_events
from corescope.store.db import Store

# sysfs statistics worth a file read every tick (the other ~20 files are never stored)
_SYS_KEEP = ("rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "tx_carrier_errors")
# counters worth keeping as a series (everything else is only diffed for events)
_KEEP = set(netdev.TRIGGERS) | {"interface_down", "interface_up"} | set(_SYS_KEEP)
IRQ_MAP_EVERY_S = 60.0
# re-list interfaces and re-read their driver/bus id links this often: they rarely change, and
# a 5 s tick need not re-list the hundreds of veths of a Kubernetes node
LINKS_EVERY_S = 60.0
ETHTOOL_RETRY_TICKS = 60


class NetdevSensor(Sensor):
    name = "netdev"

    def __init__(self, env: SensorEnv) -> None:
        super().__init__(env)
        self.interval_s = env.options.netdev_interval_s
        self._store: Store | None = None
        self._prev: dict[str, netdev.NicCounters] = {}
        self._no_ethtool: dict[str, int] = {}  # iface → ticks until retry
        # driver counters come from the live kernel: not from a replayed --root tree
        self._ethtool = EthtoolReader() if env.root.is_live else None
        self._prev_irq: irqs.Interrupts | None = None
        self._prev_soft: dict[str, dict[int, int]] | None = None
        self._prev_mono = 0.0
        self._last_map: list[tuple] | None = None
        self._last_map_wall = 0.0
        self._ifaces: list[str] = []
        self._devmap: dict[str, str] = {}
        self._drivers: dict[str, tuple[str | None, str | None]] = {}
        self._links_at: float | None = None
        self.notes: list[str] = []

    def open(self, store: Store) -> SensorStatus:
        self._store = store
        ifaces, _ = self._links()
        virtual = len(netdev.list_ifaces(self.env.root)) - len(ifaces)
        parts = [f"{len(ifaces)} interfaces ({', '.join(ifaces) or 'none'}) every "
                 f"{self.interval_s:g}s"
                 + (f" ({virtual} virtual ones without a device not read)" if virtual else "")]
        if self._ethtool is None:
            parts.append("driver counters (ethtool -S) are read from the live kernel only: "
                         "not measured under --root")
        else:
            for iface in ifaces:
                stats, why = netdev.read_ethtool(self._ethtool, iface)
                if stats is None:
                    self._no_ethtool[iface] = ETHTOOL_RETRY_TICKS
                    parts.append(why)
        try:
            self._prev_irq = irqs.parse_proc_interrupts(
                self.env.root.read_text("/proc/interrupts"))
        except OSError as exc:
            parts.append(f"/proc/interrupts unreadable ({exc.strerror}): no interrupt map")
        if not ifaces and self._prev_irq is None:
            return SensorStatus(self.name, False, "no network interfaces and no "
                                "/proc/interrupts: NIC counters not measured")
        self.tick_counters(0.0, first=True)
        return SensorStatus(self.name, True, "; ".join(parts))

    def _read(self, iface: str) -> netdev.NicCounters:
        driver, device = self._drivers.get(iface, (None, None))
        stats: dict[str, int] = {}
        left = self._no_ethtool.get(iface)
        if self._ethtool is None:
            pass
        elif left is None:
            got, _why = netdev.read_ethtool(self._ethtool, iface)
            if got is None:
                self._no_ethtool[iface] = ETHTOOL_RETRY_TICKS
            else:
                stats = got
        elif left <= 0:
            del self._no_ethtool[iface]
        else:
            self._no_ethtool[iface] = left - 1
        sys_stats, timeouts = netdev.read_sys(self.env.root, iface, _SYS_KEEP)
        return netdev.NicCounters(iface=iface, driver=driver, device=device, ethtool=stats,
                                  sys=sys_stats, tx_timeouts=timeouts)

    def _links(self) -> tuple[list[str], dict[str, str]]:
        """The device-backed interfaces, their drivers, and the bus id → interface map, from
        sysfs at most once every LINKS_EVERY_S."""
        now = time.monotonic()
        if self._links_at is None or now - self._links_at >= LINKS_EVERY_S:
            root = self.env.root
            self._ifaces = netdev.list_ifaces(root, with_device=True)
            self._devmap = irqs.dev_to_iface_map(root)
            self._drivers = {i: netdev.iface_driver_device(root, i) for i in self._ifaces}
            self._links_at = now
        return self._ifaces, self._devmap

    def tick_counters(self, wall: float, first: bool = False,
                      ifaces: list[str] | None = None) -> None:
        assert self._store is not None
        events = []
        rows: dict[str, dict[str, int]] = {}
        for iface in self._links()[0] if ifaces is None else ifaces:
            cur = self._read(iface)
            prev = self._prev.get(iface)
            if prev is not None and not first:
                events.extend(netdev.counter_events(prev, cur, wall))
            self._prev[iface] = cur
            if not first:
                keep = {k: v for k, v in cur.ethtool.items() if k in _KEEP}
                keep.update({f"sys.{k}": v for k, v in cur.sys.items() if k in _KEEP})
                keep.update({f"tx-{q}.tx_timeout": v for q, v in cur.tx_timeouts.items()})
                rows[iface] = keep
        store_events.insert_counters_many(self._store, wall, rows)
        if events:
            store_events.insert_events(self._store, events)
            self.env.tap.events(events)

    def tick(self, wall: float, mono: float) -> None:
        assert self._store is not None
        root = self.env.root
        ifaces, devmap = self._links()
        try:
            cur = irqs.parse_proc_interrupts(root.read_text("/proc/interrupts"))
        except OSError:
            cur = None
        try:
            soft, _ = irqs.parse_softirqs(root.read_text("/proc/softirqs"))
        except OSError:
            soft = None
        # counters, events, the queue map and softirqs in one commit (a commit costs more
        # than the rows it carries)
        with self._store.write():
            self._store_tick(wall, mono, ifaces, devmap, cur, soft)

    def _store_tick(self, wall: float, mono: float, ifaces: list[str], devmap: dict[str, str],
                    cur: irqs.Interrupts | None, soft: dict[str, dict[int, int]] | None) -> None:
        assert self._store is not None
        root = self.env.root
        self.tick_counters(wall, ifaces=ifaces)
        if cur is not None:
            qmap = irqs.live_queue_map(root, cur, self._prev_irq, set(ifaces), devmap)
            self._maybe_store_map(wall, qmap)
            self._prev_irq = cur
        if soft is not None:
            if self._prev_soft is not None and self._prev_mono:
                d = irqs.softirq_delta(self._prev_soft, soft)
                store_events.insert_softirqs(self._store, wall, mono - self._prev_mono,
                                             d.get("NET_RX", {}), d.get("NET_TX", {}))
            self._prev_soft, self._prev_mono = soft, mono

    def close(self) -> None:
        if self._ethtool is not None:
            self._ethtool.close()

    def _maybe_store_map(self, wall: float, qmap: list[QueueIrq]) -> None:
        """A snapshot when who-serves-what changed, and once a minute anyway."""
        assert self._store is not None
        key = [(q.iface, q.queue, q.irq, q.cpus) for q in qmap]
        if key != self._last_map or wall - self._last_map_wall >= IRQ_MAP_EVERY_S:
            if qmap:
                store_events.insert_irq_map(self._store, wall, qmap)
            self._last_map, self._last_map_wall = key, wall


def build(env: SensorEnv) -> list[Sensor]:
    return [NetdevSensor(env)] if env.options.netdev else []
