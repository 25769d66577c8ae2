"""NIC counters: `ethtool -S IFACE` (read by the ioctl in sources/ethtool; the text parser
here reads captured output), /sys/class/net/*/statistics and the per-queue
`queues/tx-N/tx_timeout`. Increases of the counters that mean a stall or a reset become
events, which catches resets whose log lines were lost (EPIPE, rate limits, a full ring)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from corescope.model.common import Diagnostic
from corescope.model.events import KernelEvent
from corescope.rootfs import KeptFiles, Root
from corescope.sources.ethtool import EthtoolReader

# ethtool -S counter → (event kind, fields). ENA names first (INCIDENT.md), then per-queue
# forms. Aggregates that double a per-queue counter (virtio's tx_tx_timeouts) are left out.
TRIGGERS: dict[str, tuple[str, dict[str, object]]] = {
    "tx_timeout": ("nic_tx_timeout", {}),
    "wd_expired": ("nic_keepalive_timeout", {}),
    "total_resets": ("nic_reset", {"stage": "counted"}),
    "reset_fail": ("nic_reset", {"stage": "failed"}),
    "missing_tx_cmpl": ("nic_tx_stall", {"signal": "missing_tx_cmpl"}),
    "suspected_poll_starvation": ("nic_tx_stall", {"signal": "suspected_poll_starvation"}),
}
_PER_QUEUE: list[tuple[re.Pattern[str], str, dict[str, object]]] = [
    # ENA: queue_5_tx_missed_tx
    (re.compile(r"^queue_(\d+)_tx_missed_tx$"), "nic_tx_stall", {"signal": "missing_tx_cmpl"}),
    # virtio_net: tx0_tx_timeouts
    (re.compile(r"^tx(\d+)_tx_timeouts$"), "nic_tx_timeout", {}),
]


@dataclass(frozen=True)
class NicCounters:
    """One reading of one interface's counters."""

    iface: str
    driver: str | None = None
    device: str | None = None
    ethtool: dict[str, int] = field(default_factory=dict)
    sys: dict[str, int] = field(default_factory=dict)
    tx_timeouts: dict[int, int] = field(default_factory=dict)  # queues/tx-N/tx_timeout


def parse_ethtool_stats(text: str, source: str = "ethtool -S"
                        ) -> tuple[dict[str, int], list[Diagnostic]]:
    """`NIC statistics:` then `     name: value` lines. Never raises on content."""
    stats: dict[str, int] = {}
    diags: list[Diagnostic] = []
    if not isinstance(text, str):
        return stats, [Diagnostic(source, "not text")]
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.endswith("statistics:") or s == "NIC statistics:":
            continue
        name, sep, value = s.rpartition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            diags.append(Diagnostic(source, f"not a counter line: {s[:60]!r}", lineno))
            continue
        try:
            stats[name] = int(value)
        except ValueError:
            diags.append(Diagnostic(source, f"not a number for {name[:40]!r}", lineno))
    if not stats:
        diags.append(Diagnostic(source, "no counters found"))
    return stats, diags


def read_ethtool(reader: EthtoolReader, iface: str) -> tuple[dict[str, int] | None, str]:
    """(the `ethtool -S` counters, "") or (None, why not), through the ioctl: no process."""
    try:
        stats = reader.stats(iface)
    except OSError as exc:
        return None, f"ethtool -S {iface}: {exc.strerror or exc}"
    return (stats, "") if stats else (None, f"ethtool -S {iface}: no counters")


def _read_int(path: os.PathLike[str] | str) -> int | None:
    """A small sysfs number: one open, one bounded read (never blocks on a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return int(os.read(fd, 64).strip())
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


CLASS_NET = "/sys/class/net"


def _link(root: Root, path: str) -> str | None:
    """Where the sysfs link `path` points, as a path in the root: a symlink's target, or a
    file holding it (a tree unpacked by a tool that writes a symlink as a one-line file, as
    some fixture archives are). None when `path` is not a link."""
    # the link itself, not what it points to (a tree's root resolves every component)
    real = root.path(os.path.dirname(path)) / os.path.basename(path)
    try:
        target = os.readlink(real)
    except OSError:
        try:
            if not real.is_file() or real.stat().st_size > 4096:
                return None
            target = real.read_text(errors="replace").strip()
        except OSError:
            return None
        if not target.startswith(("../", "/")) or "\n" in target:
            return None
    joined = target if target.startswith("/") else f"{os.path.dirname(path)}/{target}"
    return os.path.normpath(joined)


def iface_dir(root: Root, iface: str) -> str:
    """The interface's sysfs directory, as a path in the root."""
    entry = f"{CLASS_NET}/{iface}"
    return _link(root, entry) or entry


def list_ifaces(root: Root, with_device: bool = False) -> list[str]:
    """Interfaces but lo, found as node_exporter finds them: every entry of /sys/class/net that
    is not a plain file (bonding_masters is one). `with_device`: only those backed by a
    device (a NIC or a virtio queue pair); virtual ones (veth, ifb, bridges: hundreds on a
    Kubernetes node) have no driver TX queues that stall."""
    base = root.path(CLASS_NET)
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for e in entries:
        if e.name == "lo":
            continue
        try:
            plain = e.is_file(follow_symlinks=False)
        except OSError:
            continue
        if plain and _link(root, f"{CLASS_NET}/{e.name}") is None:
            continue
        if not with_device or iface_driver_device(root, e.name)[1] is not None:
            out.append(e.name)
    return out


def _uevent_driver(root: Root, device: str) -> str | None:
    try:
        text = root.read_text(f"{device}/uevent", limit=65536)
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("DRIVER="):
            return line[7:].strip() or None
    return None


def iface_driver_device(root: Root, iface: str) -> tuple[str | None, str | None]:
    """(driver, bus id) from the sysfs links, e.g. ("virtio_net", "virtio2") or
    ("ena", "0000:00:05.0"); (None, None) for virtual interfaces. The device is the
    interface's `device` link, or else the directory its class entry sits in
    (/sys/devices/<bus path>/<bus id>/net/<iface>; /sys/devices/virtual/ is no device); the
    driver is the device's `driver` link, or else the DRIVER= of its uevent."""
    where = iface_dir(root, iface)
    device = _link(root, f"{where}/device")
    up = os.path.dirname(where)  # /sys/devices/<bus path>/<bus id>/net
    if device is None and where.startswith("/sys/devices/") and \
            not where.startswith("/sys/devices/virtual/") and os.path.basename(up) == "net":
        device = os.path.dirname(up)
    if device is None:
        return None, None
    drv = _link(root, f"{device}/driver")
    driver = os.path.basename(drv) if drv else _uevent_driver(root, device)
    return driver, os.path.basename(device.rstrip("/")) or None


def read_sys(root: Root, iface: str, names: Iterable[str] | None = None
             ) -> tuple[dict[str, int], dict[int, int]]:
    """(/sys/class/net/IF/statistics/*, {queue: tx_timeout}). `names`: only these statistics
    (one open each: the recorder keeps five of the ~24 files)."""
    stats: dict[str, int] = {}
    base = str(root.path(iface_dir(root, iface)))
    sdir = base + "/statistics"
    try:
        for name in os.listdir(sdir) if names is None else names:
            v = _read_int(sdir + "/" + name)
            if v is not None:
                stats[name] = v
    except OSError:
        pass
    timeouts: dict[int, int] = {}
    qdir = base + "/queues"
    try:
        for q in os.listdir(qdir):
            if q.startswith("tx-") and q[3:].isdecimal():
                v = _read_int(qdir + "/" + q + "/tx_timeout")
                if v is not None:
                    timeouts[int(q[3:])] = v
    except OSError:
        pass
    return stats, timeouts


class SysFiles:
    """read_sys with the statistics and tx_timeout files kept open, for a reader on a timer:
    one pread a file rather than a path walk, open and close (the sensor reads about six files
    per interface every tick). The queue directories are listed every read, as read_sys does,
    so a queue added or removed is seen at once; a file whose queue or interface went away
    reads as an error and is dropped. The files follow the device, not its name: `reset`
    (the sensor calls it whenever it re-lists interfaces) reopens them by name."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self._files = KeptFiles(64)
        self._queues: dict[str, tuple[int, ...]] = {}
        self._bases: dict[str, str] = {}  # iface → its sysfs directory, resolved once

    def _int(self, path: str, base: int = 10) -> int | None:
        try:
            return int(self._files.read(path, path).strip(), base)
        except (OSError, ValueError):
            return None

    def read(self, iface: str, names: Iterable[str]) -> tuple[dict[str, int], dict[int, int]]:
        """(the named statistics, {queue: tx_timeout}), as read_sys(root, iface, names)."""
        base = self._base(iface)
        stats: dict[str, int] = {}
        for name in names:
            v = self._int(base + "/statistics/" + name)
            if v is not None:
                stats[name] = v
        timeouts: dict[int, int] = {}
        qdir = base + "/queues"
        try:
            queues = os.listdir(qdir)
        except OSError:
            queues = []
        for q in queues:
            if q.startswith("tx-") and q[3:].isdecimal():
                v = self._int(qdir + "/" + q + "/tx_timeout")
                if v is not None:
                    timeouts[int(q[3:])] = v
        self._queues[iface] = tuple(sorted(timeouts))
        return stats, timeouts

    def signal(self, iface: str) -> tuple[int | None, int | None, tuple[int, ...]]:
        """What moves when the interface's queue IRQs may have been freed or requested: its
        flags (ifup/ifdown), its carrier change count (a driver reset drops the carrier) and
        its TX queues (`ethtool -L`), the last as of the latest `read`."""
        base = self._base(iface)
        flags = self._int(base + "/flags", 16)
        return flags, self._int(base + "/carrier_changes"), self._queues.get(iface, ())

    def _base(self, iface: str) -> str:
        base = self._bases.get(iface)
        if base is None:
            base = self._bases[iface] = str(self.root.path(f"/sys/class/net/{iface}"))
        return base

    def reset(self) -> None:
        self._files.close()
        self._bases.clear()

    close = reset


def counter_events(prev: NicCounters, cur: NicCounters, wall: float) -> list[KernelEvent]:
    """Events for each trigger counter that went up between two readings. A counter that went
    down (driver reload) is a new baseline, not an event."""
    out: list[KernelEvent] = []

    def emit(kind: str, counter: str, delta: int, value: int, source: str,
             extra: dict[str, object], queue: int | None = None) -> None:
        fields: dict[str, object] = {"iface": cur.iface, "counter": counter, "delta": delta,
                                     "value": value, **extra}
        if queue is not None:
            fields["queue"] = queue
        raw = f"{cur.iface}: {counter} +{delta} (now {value})"
        out.append(KernelEvent(time=wall, kind=kind, raw=raw, driver=cur.driver,
                               device=cur.device, fields=fields, source=source))

    for name, value in cur.ethtool.items():
        before = prev.ethtool.get(name)
        if before is None or value <= before:
            continue
        if name in TRIGGERS:
            kind, extra = TRIGGERS[name]
            emit(kind, name, value - before, value, "ethtool", extra)
            continue
        for pattern, kind, extra in _PER_QUEUE:
            m = pattern.match(name)
            if m:
                emit(kind, name, value - before, value, "ethtool", extra, int(m.group(1)))
                break
    for q, value in cur.tx_timeouts.items():
        before = prev.tx_timeouts.get(q)
        if before is not None and value > before:
            emit("nic_tx_timeout", f"tx-{q}/tx_timeout", value - before, value, "sysfs", {}, q)
    return out
