"""NIC counters (ethtool -S through the ioctl, no process; sysfs statistics, per-queue
tx_timeout), the NIC queue interrupt map and NET_RX/NET_TX softirqs per core,
every netdev_interval_s (5 s by default)."""

from __future__ import annotations

import time

from corescope.model.common import SensorStatus
from corescope.model.events import KernelEvent, QueueIrq
from corescope.model.text import valid_record, valid_text
from corescope.rootfs import KeptFiles
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
# an interface's counters row is stored when a kept counter changed, and at least this often
# (they are cumulative error counters: on a healthy node they do not move for days)
COUNTERS_EVERY_S = 60.0
# re-list interfaces and re-read their driver/bus id links this often: they rarely change, and
# a 5 s tick need not re-list the hundreds of veths of a Kubernetes node
LINKS_EVERY_S = 60.0
ETHTOOL_RETRY_TICKS = 60
_SOFTIRQS = ("NET_RX", "NET_TX")


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
        # an interface's name as stored and shown: a name that is not UTF-8 (os.fsdecode gave
        # it surrogates, which SQLite refuses) has them escaped; files are read by the real one
        self._shown: dict[str, str] = {}
        self._links_at: float | None = None
        self._last_rows: dict[str, tuple[dict[str, int], float]] = {}  # iface → (row, wall)
        # files read every tick, kept open (one pread each): the statistics and tx_timeout
        # files, the queue IRQs' affinity, /proc/interrupts and /proc/softirqs
        self._sys = netdev.SysFiles(env.root)
        self._affinity = irqs.AffinityReader(env.root)
        self._kept = KeptFiles()
        self._irqs = irqs.QueueIrqReader(env.root, IRQ_MAP_EVERY_S)
        self.notes: list[str] = []

    def open(self, store: Store) -> SensorStatus:
        self._store = store
        ifaces, _ = self._links()
        virtual = len(netdev.list_ifaces(self.env.root)) - len(ifaces)
        shown = [self._shown[i] for i in ifaces]
        parts = [f"{len(ifaces)} interfaces ({', '.join(shown) or 'none'}) every "
                 f"{self.interval_s:g}s"
                 + (f" ({virtual} virtual ones without a device not read)" if virtual else "")]
        parts += [f"interface name {self._shown[i]} is not valid UTF-8: stored with the "
                  "undecodable bytes escaped" for i in ifaces if self._shown[i] != i]
        if self._ethtool is None:
            parts.append("driver counters (ethtool -S) are read from the live kernel only: "
                         "not measured under --root")
        else:
            for iface in ifaces:
                stats, why = netdev.read_ethtool(self._ethtool, iface)
                if stats is None:
                    self._no_ethtool[iface] = ETHTOOL_RETRY_TICKS
                    parts.append(valid_text(why))
        try:
            self._prev_irq = self._read_irqs(time.monotonic(), ifaces)
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
        sys_stats, timeouts = self._sys.read(iface, _SYS_KEEP)
        return netdev.NicCounters(iface=self._shown.get(iface) or valid_text(iface),
                                  driver=driver, device=device, ethtool=stats,
                                  sys=sys_stats, tx_timeouts=timeouts)

    def _links(self) -> tuple[list[str], dict[str, str]]:
        """The device-backed interfaces, their drivers, and the bus id → interface map, from
        sysfs at most once every LINKS_EVERY_S."""
        now = time.monotonic()
        if self._links_at is None or now - self._links_at >= LINKS_EVERY_S:
            root = self.env.root
            self._ifaces = netdev.list_ifaces(root, with_device=True)
            self._devmap = irqs.dev_to_iface_map(root)
            self._drivers = {i: _valid_pair(netdev.iface_driver_device(root, i))
                             for i in self._ifaces}
            self._shown = {i: valid_text(i) for i in self._ifaces}
            self._links_at = now
            # kept files and cached counter names follow a device or an IRQ, not a name:
            # opened again by name whenever the names are read again
            self._sys.reset()
            self._affinity.reset()
            if self._ethtool is not None:
                self._ethtool.forget()
        return self._ifaces, self._devmap

    def tick_counters(self, wall: float, first: bool = False,
                      ifaces: list[str] | None = None) -> None:
        """Read every interface's counters now and store what changed (the first reading
        only sets the baseline)."""
        assert self._store is not None
        rows, events = self._counters(wall, first, ifaces)
        store_events.insert_nic_tick(self._store, wall, rows, None, events)
        self._rows_stored(wall, rows)
        if events:
            self.env.tap.events(events)

    def _counters(self, wall: float, first: bool = False, ifaces: list[str] | None = None
                  ) -> tuple[dict[str, dict[str, int]], list[KernelEvent]]:
        """(the counters rows to store: an interface's when a kept counter changed, or
        COUNTERS_EVERY_S after its last row; the events of counters that went up)."""
        events: list[KernelEvent] = []
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
                last = self._last_rows.get(cur.iface)  # keyed, as stored, by the shown name
                if last is None or last[0] != keep or wall - last[1] >= COUNTERS_EVERY_S:
                    rows[cur.iface] = keep
        return rows, events

    def _rows_stored(self, wall: float, rows: dict[str, dict[str, int]]) -> None:
        # only once committed: a row a failed write lost is written again next tick
        for iface, keep in rows.items():
            self._last_rows[iface] = (keep, wall)

    def tick(self, wall: float, mono: float) -> None:
        assert self._store is not None
        ifaces, devmap = self._links()
        try:
            cur = self._read_irqs(mono, ifaces)
        except OSError:
            cur = None
        try:
            soft, _ = irqs.parse_softirqs(self._read_kept("/proc/softirqs").decode(
                errors="replace"), only=_SOFTIRQS)
        except OSError:
            soft = None
        rows, events = self._counters(wall, ifaces=ifaces)
        snapshot: list[QueueIrq] = []
        if cur is not None:
            qmap = irqs.live_queue_map(self.env.root, cur, self._prev_irq, set(ifaces), devmap,
                                       self._affinity)
            snapshot = self._map_due(wall, [valid_record(q)[0] for q in qmap])
            self._prev_irq = cur
        net: tuple[float, dict[int, int], dict[int, int]] | None = None
        if soft is not None:
            if self._prev_soft is not None and self._prev_mono:
                d = irqs.softirq_delta(self._prev_soft, soft)
                net = (mono - self._prev_mono, d.get("NET_RX", {}), d.get("NET_TX", {}))
            self._prev_soft, self._prev_mono = soft, mono
        # counters, softirqs, events and the queue map in one commit (a commit costs more
        # than the rows it carries)
        store_events.insert_nic_tick(self._store, wall, rows, net, events, snapshot)
        self._rows_stored(wall, rows)
        if events:
            self.env.tap.events(events)

    def _read_irqs(self, mono: float, ifaces: list[str]) -> irqs.Interrupts:
        """The NIC queue rows of /proc/interrupts; read in full only when they may have
        changed (see QueueIrqReader): what ifup/ifdown, a reset or new queues move."""
        devmap, names = self._devmap, set(ifaces)

        def is_queue(row: irqs.IrqRow) -> bool:
            return any(irqs.queue_of(a, devmap, names) is not None for a in row.actions)

        return self._irqs.read(mono, is_queue, (tuple(ifaces), tuple(
            self._sys.signal(i) for i in ifaces)))

    def _read_kept(self, path: str) -> bytes:
        """A /proc file kept open; after a failed read it is opened again next time."""
        return self._kept.read(path, self.env.root.path(path))

    def close(self) -> None:
        if self._ethtool is not None:
            self._ethtool.close()
        self._sys.close()
        self._affinity.close()
        self._irqs.close()
        self._kept.close()

    def _map_due(self, wall: float, qmap: list[QueueIrq]) -> list[QueueIrq]:
        """The map to store now: when who-serves-what changed, and once a minute anyway."""
        key = [(q.iface, q.queue, q.irq, q.cpus) for q in qmap]
        if key != self._last_map or wall - self._last_map_wall >= IRQ_MAP_EVERY_S:
            self._last_map, self._last_map_wall = key, wall
            return qmap
        return []


def _valid_pair(pair: tuple[str | None, str | None]) -> tuple[str | None, str | None]:
    return tuple(None if x is None else valid_text(x) for x in pair)  # type: ignore[return-value]


def build(env: SensorEnv) -> list[Sensor]:
    return [NetdevSensor(env)] if env.options.netdev else []
