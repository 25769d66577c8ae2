"""/proc/interrupts → which CPUs serve each NIC queue's IRQ; /proc/softirqs → NET_RX and
NET_TX per CPU. Parsers are pure and total."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from corescope.model.common import Diagnostic
from corescope.model.events import QueueIrq
from corescope.rootfs import KeptFile, KeptFiles, Root
from corescope.sources.text import count_of


@dataclass(frozen=True)
class IrqRow:
    irq: int
    counts: dict[int, int]  # cpu → count
    chip: str
    actions: tuple[str, ...]


@dataclass(frozen=True)
class Interrupts:
    cpus: tuple[int, ...]
    rows: tuple[IrqRow, ...]
    diagnostics: tuple[Diagnostic, ...] = field(default=())


_TRIGGER = re.compile(r"^\S*-(?:edge|level|fasteoi|EDGE|LEVEL)$|^(?:edge|level)$")


def parse_proc_interrupts(text: str, source: str = "/proc/interrupts") -> Interrupts:
    """Numbered IRQ rows only (NMI, LOC, ... are per-CPU system counters, not device IRQs)."""
    diags: list[Diagnostic] = []
    if not isinstance(text, str):
        return Interrupts((), (), (Diagnostic(source, "not text"),))
    lines = text.splitlines()
    cpus: list[int] = []
    start = 0
    for i, line in enumerate(lines):
        toks = line.split()
        if toks and all(t.startswith("CPU") and t[3:].isdecimal() for t in toks):
            cpus = [int(t[3:]) for t in toks]
            start = i + 1
            break
    if not cpus:
        return Interrupts((), (), (Diagnostic(source, "no CPU header line"),))
    rows: list[IrqRow] = []
    for lineno, line in enumerate(lines[start:], start + 1):
        row = _parse_row(line, cpus, source, lineno, diags)
        if row is not None:
            rows.append(row)
    return Interrupts(tuple(cpus), tuple(rows), tuple(diags))


def _parse_row(line: str, cpus: list[int], source: str, lineno: int,
               diags: list[Diagnostic]) -> IrqRow | None:
    """One numbered IRQ row; None for any other line (a system counter, garbage)."""
    head, sep, rest = line.partition(":")
    head = head.strip()
    if not sep or count_of(head) is None:
        return None
    toks = rest.split()
    counts: dict[int, int] = {}
    k = 0
    while k < len(toks) and k < len(cpus) and toks[k].isdecimal():
        n = count_of(toks[k])
        if n is None:  # a count no kernel keeps (its counters are 32 or 64 bits)
            diags.append(Diagnostic(source, f"IRQ {head}: count {toks[k][:30]!r} past what a "
                                    "store holds: row skipped", lineno))
            return None
        counts[cpus[k]] = n
        k += 1
    if k < len(cpus) and k < len(toks):
        diags.append(Diagnostic(source, f"IRQ {head}: {k} of {len(cpus)} counts", lineno))
    tail = toks[k:]
    chip = tail[0] if tail else ""
    # actions follow the hwirq-trigger token ("1-edge"); without one, the last token
    idx = next((j for j, t in enumerate(tail) if _TRIGGER.match(t)), None)
    action_text = " ".join(tail[idx + 1:]) if idx is not None else " ".join(tail[-1:])
    actions = tuple(a.strip() for a in action_text.split(",") if a.strip())
    return IrqRow(irq=int(head), counts=counts, chip=chip, actions=actions)


# Queue IRQ names by driver family: ENA `eth0-Tx-Rx-5`; Intel, bnxt_en `eth0-TxRx-3`; qede,
# bnx2x `eth0-fp-2`; vmxnet3 (its default buddy-shared vectors), nfp, octeontx2
# `ens192-rxtx-0` (vmxnet3_request_irqs, nfp_net_prepare_vector: `%s-rxtx-%d`).
_TXRX = re.compile(r"^(?P<iface>[\w.@-]+?)-(?:Tx-Rx|TxRx|txrx|tx-rx|rxtx|fp|comb|combined)"
                   r"-(?P<q>\d+)$")
_DIR = re.compile(r"^(?P<iface>[\w.@-]+?)-(?P<dir>rx|tx|Rx|Tx|RX|TX)-(?P<q>\d+)$")
_VIRTIO = re.compile(r"^(?P<dev>virtio\d+)-(?P<dir>input|output)\.(?P<q>\d+)$")
_MLX5 = re.compile(r"^mlx5_comp(?P<q>\d+)@pci:(?P<bdf>[0-9a-fA-F:.]+)$")
# gve (Google Cloud): one vector per notification block, `gve-ntfy-blkN@pci:BDF`; the first
# half of the blocks serve TX queues 0.., the second half RX queues 0.. (gve.h
# gve_tx_idx_to_ntfy, gve_rx_idx_to_ntfy): which half takes the device's block count
_GVE = re.compile(r"^gve-ntfy-blk(?P<q>\d+)@pci:(?P<bdf>[0-9a-fA-F:.]+)$")
# mlx4 (4.5+, eq.c mlx4_assign_eq): one vector per completion EQ, `mlx4-%d@%s` with the EQ's
# number and the PCI device (`mlx4-1@0000:00:08.0`; EQ 0 is `mlx4-async@pci:...`). mlx4_en's
# RX ring i asks for the EQ after its first affinity CPU (cpumask_local_spread(i, node)) and
# TX ring i shares RX ring i's: EQ N serves ring N-1 where ring i's CPU is i (a one-node
# machine, an Azure VM's VF).
_MLX4 = re.compile(r"^mlx4-(?P<q>\d+)@(?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}"
                   r"\.[0-7])$")
# The interface and a number alone: sfc's channels (efx_get_channel_name `%s%s-%d`, type ""
# when TX and RX share channels: `eth0-0`) and 3.x-4.4 mlx4_en's RX rings
# (mlx4_en_activate_cq `%s-%d`, TX ring i on RX ring i's vector). Many other IRQ names end
# so: only a known interface's (or, with none known, a netdev-like name's)
_BARE = re.compile(r"^(?P<iface>[\w.@-]+?)-(?P<q>\d+)$")
_NETDEV_LIKE = re.compile(r"^(?:eth|en[a-zA-Z]|em|p\d+p|ib|bond)\w*$")


# What every IRQ name queue_of accepts contains (each pattern above needs one of these): a
# superset (no digit asked for: the patterns take any Unicode digit), queue_of still
# decides. parse_queue_rows parses only the lines holding one.
_QUEUE_HINT = re.compile(rb"-(?:input|output)\.|mlx5_comp|gve-ntfy-blk|mlx4-"
                         rb"|-(?:Tx-Rx|TxRx|txrx|tx-rx|rxtx|fp|comb|combined|rx|tx|Rx|Tx|RX|TX)-"
                         rb"|-\d+(?=[ \t]*(?:,|\r?\n|\Z))")  # ends an action: `eth0-0`


def parse_queue_rows(data: bytes, source: str = "/proc/interrupts") -> Interrupts:
    """The rows of /proc/interrupts that can be NIC queue IRQs, parsed as
    parse_proc_interrupts parses them, and no other: the lines are found by one regex search
    over the bytes, so the hundreds of other rows of a large node (and the per-CPU system
    counters, a line of 96 numbers each) are never split. The queue map made from these rows
    is the one the full parse gives. A file whose first line is not the CPU header goes
    through the full parse."""
    nl = data.find(b"\n")
    toks = (data if nl < 0 else data[:nl]).split()
    if not toks or not all(t.startswith(b"CPU") and t[3:].isdigit() for t in toks):
        return parse_proc_interrupts(data.decode(errors="replace"), source)
    cpus = [int(t[3:]) for t in toks]
    rows: list[IrqRow] = []
    diags: list[Diagnostic] = []
    end = nl
    for m in _QUEUE_HINT.finditer(data, nl + 1):
        if m.start() < end:
            continue  # a second hint on a line already parsed
        start = data.rfind(b"\n", 0, m.start()) + 1
        end = data.find(b"\n", m.end())
        if end < 0:
            end = len(data)
        line = data[start:end].decode(errors="replace")
        row = _parse_row(line, cpus, source, data.count(b"\n", 0, start) + 1, diags)
        if row is not None:
            rows.append(row)
    return Interrupts(tuple(cpus), tuple(rows), tuple(diags))


def queue_of(name: str, dev_to_iface: dict[str, str], ifaces: set[str] | None = None
             ) -> tuple[str | None, int | None, str] | None:
    """(iface, queue, direction) for a NIC queue IRQ name, or None when it is not one."""
    m = _VIRTIO.match(name)
    if m:
        d = "tx" if m.group("dir") == "output" else "rx"
        return dev_to_iface.get(m.group("dev")), int(m.group("q")), d
    m = _MLX5.match(name)
    if m:
        return dev_to_iface.get(m.group("bdf")), int(m.group("q")), "txrx"
    m = _GVE.match(name)
    if m:  # the block's number: queue_map makes it a TX or RX queue
        return dev_to_iface.get(m.group("bdf")), int(m.group("q")), "block"
    m = _MLX4.match(name)
    if m:
        return dev_to_iface.get(m.group("bdf")), int(m.group("q")) - 1, "txrx"
    for pattern, direction in ((_TXRX, "txrx"), (_DIR, None)):
        m = pattern.match(name)
        if not m:
            continue
        iface = m.group("iface")
        if ifaces is not None and iface not in ifaces:
            # i40e-eth0-TxRx-3: the driver name comes first
            tail = iface.split("-", 1)[-1]
            if tail in ifaces:
                iface = tail
        d = direction or m.group("dir").lower()
        return iface, int(m.group("q")), d
    m = _BARE.match(name)
    if m and (m.group("iface") in ifaces if ifaces is not None
              else _NETDEV_LIKE.match(m.group("iface")) is not None):
        return m.group("iface"), int(m.group("q")), "txrx"
    return None


def parse_cpulist(text: str) -> tuple[int, ...]:
    """`0-3,8,10-11` → (0, 1, 2, 3, 8, 10, 11); bad parts are skipped."""
    out: set[int] = set()
    for part in text.strip().split(","):
        a, _, b = part.partition("-")
        try:
            lo, hi = int(a), int(b) if b else int(a)
        except ValueError:
            continue
        if 0 <= lo <= hi and hi - lo < 65536:
            out.update(range(lo, hi + 1))
    return tuple(sorted(out))


def read_affinity(root: Root, irq: int) -> tuple[int, ...]:
    for name in ("effective_affinity_list", "smp_affinity_list"):
        try:
            cpus = parse_cpulist(root.read_text(f"/proc/irq/{irq}/{name}"))
        except OSError:
            continue
        if cpus:
            return cpus
    return ()


def dev_to_iface_map(root: Root) -> dict[str, str]:
    """Bus ids → interface: `virtio2` and its PCI parent `0000:00:03.0` both → `eth0`."""
    out: dict[str, str] = {}
    try:
        names = os.listdir(root.path("/sys/class/net"))
    except OSError:
        return out
    for iface in names:
        link = root.path(f"/sys/class/net/{iface}/device")
        try:
            if not link.exists():
                continue
            real = os.path.realpath(link)
        except OSError:
            continue
        out[os.path.basename(real)] = iface
        parent = os.path.basename(os.path.dirname(real))
        if re.match(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$", parent):
            out.setdefault(parent, iface)
    return out


def queue_map(cur: Interrupts, prev: Interrupts | None, dev_to_iface: dict[str, str],
              affinity: Mapping[int, tuple[int, ...]] | Callable[[int], tuple[int, ...]]
              | None = None, ifaces: set[str] | None = None) -> list[QueueIrq]:
    """The CPUs serving each NIC queue IRQ. Best evidence first: the CPUs whose count rose
    since `prev` (who actually took it), else the effective affinity, else any CPU that ever
    took it. `affinity`: IRQ → CPUs, or a function asked only for the IRQs it is needed for
    (those whose counts did not move)."""
    lookup = _affinity_lookup(affinity)
    prev_rows = {r.irq: r for r in prev.rows} if prev else {}
    blocks: dict[str, int] = {}  # gve: notification blocks per device
    for row in cur.rows:
        for name in row.actions:
            if (g := _GVE.match(name)) is not None:
                blocks[g.group("bdf")] = blocks.get(g.group("bdf"), 0) + 1
    out: list[QueueIrq] = []
    for row in cur.rows:
        for name in row.actions:
            q = queue_of(name, dev_to_iface, ifaces)
            if q is None:
                continue
            iface, queue, direction = q
            if direction == "block" and queue is not None:
                half = blocks.get(name.split("@pci:", 1)[1], 0) // 2
                queue, direction = (queue, "tx") if queue < half else (queue - half, "rx")
            cpus: tuple[int, ...] = ()
            basis = ""
            p = prev_rows.get(row.irq)
            if p is not None:
                cpus = tuple(sorted(c for c, n in row.counts.items() if n > p.counts.get(c, 0)))
                basis = "delta"
            if not cpus:
                aff = lookup(row.irq)
                if aff:
                    cpus, basis = aff, "affinity"
            if not cpus:
                cpus = tuple(sorted(c for c, n in row.counts.items() if n > 0))
                basis = "total"
            out.append(QueueIrq(iface=iface, queue=queue, irq=row.irq, name=name,
                                direction=direction, cpus=cpus, basis=basis))
    return out


def _affinity_lookup(affinity: Mapping[int, tuple[int, ...]] | Callable[[int], tuple[int, ...]]
                     | None) -> Callable[[int], tuple[int, ...]]:
    if affinity is None:
        return lambda irq: ()
    if callable(affinity):
        get, seen = affinity, {}  # a shared IRQ (several queue names) is read once

        def once(irq: int) -> tuple[int, ...]:
            if irq not in seen:
                seen[irq] = get(irq)
            return seen[irq]
        return once
    return lambda irq: affinity.get(irq, ())


def parse_softirqs(text: str, source: str = "/proc/softirqs",
                   only: tuple[str, ...] | None = None
                   ) -> tuple[dict[str, dict[int, int]], list[Diagnostic]]:
    """Per-CPU counts by softirq name; `only`: just these names (the other lines are not
    read: the recorder keeps NET_RX and NET_TX)."""
    diags: list[Diagnostic] = []
    out: dict[str, dict[int, int]] = {}
    if not isinstance(text, str):
        return out, [Diagnostic(source, "not text")]
    lines = text.splitlines()
    cpus: list[int] = []
    for i, line in enumerate(lines):
        toks = line.split()
        if not cpus:
            if toks and all(t.startswith("CPU") and t[3:].isdecimal() for t in toks):
                cpus = [int(t[3:]) for t in toks]
            continue
        if len(toks) < 2 or not toks[0].endswith(":") or (only is not None
                                                          and toks[0][:-1] not in only):
            continue
        vals: dict[int, int] = {}
        for cpu, t in zip(cpus, toks[1:], strict=False):
            n = count_of(t)
            if n is None:
                diags.append(Diagnostic(source, f"bad count in {toks[0]}", i + 1))
                break
            vals[cpu] = n
        out[toks[0][:-1]] = vals
    if not cpus:
        diags.append(Diagnostic(source, "no CPU header line"))
    return out, diags


def softirq_delta(prev: dict[str, dict[int, int]], cur: dict[str, dict[int, int]],
                  names: tuple[str, ...] = ("NET_RX", "NET_TX")) -> dict[str, dict[int, int]]:
    """Per-CPU increases. The kernel's counters are 32-bit: a fall of more than half the
    range is a wrap (a busy NET_RX core wraps in days); any other fall counts 0 (a CPU that
    went offline and back)."""
    out: dict[str, dict[int, int]] = {}
    for n in names:
        a, b = prev.get(n, {}), cur.get(n, {})
        out[n] = {c: _increase(a[c], v) for c, v in b.items() if c in a}
    return out


def _increase(a: int, b: int) -> int:
    if b >= a:
        return b - a
    return b + 2**32 - a if a - b > 2**31 and a < 2**32 else 0


def live_queue_map(root: Root, cur: Interrupts, prev: Interrupts | None,
                   ifaces: set[str], devmap: dict[str, str] | None = None,
                   affinity: Callable[[int], tuple[int, ...]] | None = None) -> list[QueueIrq]:
    """The NIC queue map now. Affinity files are read only for NIC queue IRQs whose counts did
    not move (a node has hundreds of other IRQs and this runs every few seconds). `devmap`: a
    recent dev_to_iface_map, so a caller on a timer need not re-read the sysfs links each
    time; `affinity`: an IRQ's CPUs (an AffinityReader keeps the files open), else
    read_affinity."""
    devmap = dev_to_iface_map(root) if devmap is None else devmap
    return queue_map(cur, prev, devmap,
                     affinity or (lambda irq: read_affinity(root, irq)), ifaces)


class AffinityReader:
    """read_affinity with the files kept open, for a caller that reads a NIC's queue IRQs
    every few seconds: one pread each. An IRQ freed since (its /proc/irq directory is gone)
    reads as an error, and its files are opened again next time; a file this kernel lacks
    (effective_affinity_list before 4.15, or without the generic affinity support) is not
    looked for again until `reset`."""

    NAMES = ("effective_affinity_list", "smp_affinity_list")

    def __init__(self, root: Root) -> None:
        self.root = root
        self._files: dict[tuple[int, str], KeptFile | None] = {}

    def __call__(self, irq: int) -> tuple[int, ...]:
        for name in self.NAMES:
            key = (irq, name)
            if key not in self._files:
                try:
                    self._files[key] = KeptFile(self.root.path(f"/proc/irq/{irq}/{name}"))
                except OSError:
                    self._files[key] = None
            f = self._files[key]
            if f is None:
                continue
            try:
                cpus = parse_cpulist(f.read().decode(errors="replace"))
            except OSError:
                f.close()
                del self._files[key]  # gone (the IRQ was freed): opened again next time
                continue
            if cpus:
                return cpus
        return ()

    def reset(self) -> None:
        """Close every file: the next reads open them again (and look again for missing ones)."""
        for f in self._files.values():
            if f is not None:
                f.close()
        self._files.clear()

    close = reset



class QueueIrqReader:
    """The NIC queue IRQ rows of /proc/interrupts, for a reader every few seconds, without
    having the kernel print the whole file each time (on this 2-CPU VM that alone is ~0.1-0.2
    ms of kernel time at a cold cache; on a 96-CPU node it is hundreds of rows of 96 numbers).

    A full read (parse_queue_rows of /proc/interrupts) finds the queue IRQs. Until the next
    one, a read takes each queue IRQ's per-CPU counts from /sys/kernel/irq/N/per_cpu_count and
    checks its names in /sys/kernel/irq/N/actions (two small files, kept open). It reads
    /proc/interrupts in full again, and so sees IRQs requested, freed or renamed since:
    - every `full_every_s` (the queue map's own refresh, 60 s);
    - when the caller's `signal` changes (the sensor passes each interface's flags, carrier
      change count and TX queues: ifup/ifdown, a driver reset and `ethtool -L` move them);
    - when a queue IRQ's names changed or its files cannot be read (freed), or the online
      CPUs changed (per_cpu_count lists every possible CPU, /proc/interrupts the online ones);
    - always, where /sys/kernel/irq is missing (kernels before 4.11 or without SPARSE_IRQ, a
      captured tree without it).
    The rows are those the full read would give, counts and names."""

    def __init__(self, root: Root, full_every_s: float = 60.0) -> None:
        self.root = root
        self.full_every_s = full_every_s
        self.full_reads = 0  # how many times /proc/interrupts was read (tests, the README)
        self._proc: KeptFile | None = None
        self._files = KeptFiles(1 << 20)
        self._rows: list[IrqRow] | None = None  # the queue rows of the last read
        self._cpus: tuple[int, ...] = ()
        self._full_at = 0.0
        self._signal: object = None
        self._online: bytes | None = None
        self._possible: list[int] | None = None

    def read(self, mono: float, is_queue: Callable[[IrqRow], bool],
             signal: object = None) -> Interrupts:
        """The queue rows now (raises OSError when /proc/interrupts cannot be read)."""
        if (self._rows is not None and signal == self._signal
                and mono - self._full_at < self.full_every_s):
            rows = self._quick()
            if rows is not None:
                self._rows = rows
                return Interrupts(self._cpus, tuple(rows))
        return self._full(mono, is_queue, signal)

    def _full(self, mono: float, is_queue: Callable[[IrqRow], bool],
              signal: object) -> Interrupts:
        self.full_reads += 1
        self._rows = None
        # the online CPUs before the file: a CPU that comes online between the two reads is
        # in the header, and the next read sees the list moved and reads in full again
        online: bytes | None
        try:
            online = self._small("/sys/devices/system/cpu/online")
        except OSError:
            online = None  # no sysfs: every read is a full one
        if self._proc is None:
            self._proc = KeptFile(self.root.path("/proc/interrupts"))
        try:
            cur = parse_queue_rows(self._proc.read())
        except OSError:
            self._proc.close()
            self._proc = None
            raise
        if self._possible is None and online is not None:
            try:
                self._possible = list(parse_cpulist(
                    self._small("/sys/devices/system/cpu/possible").decode(errors="replace")))
            except OSError:
                self._possible = []
        if online is not None and not cur.diagnostics and self._possible:
            self._rows = [r for r in cur.rows if is_queue(r)]
            self._cpus, self._online = cur.cpus, online
            self._full_at, self._signal = mono, signal
        return cur

    def _small(self, path: str) -> bytes:
        return self._kept(path, path)

    def _kept(self, key: object, path: str) -> bytes:
        return self._files.read(key, self.root.path(path))

    def _quick(self) -> list[IrqRow] | None:
        """The rows from sysfs, or None when a full read is needed."""
        assert self._rows is not None and self._possible is not None
        try:
            if self._small("/sys/devices/system/cpu/online") != self._online:
                return None
            rows = []
            for row in self._rows:
                base = f"/sys/kernel/irq/{row.irq}/"
                names = self._kept((row.irq, 0), base + "actions").decode(errors="replace")
                if tuple(a.strip() for a in names.split(",") if a.strip()) != row.actions:
                    return None
                counts = self._kept((row.irq, 1), base + "per_cpu_count").split(b",")
                if len(counts) != len(self._possible):
                    return None
                by_cpu = dict(zip(self._possible, counts, strict=True))
                rows.append(IrqRow(row.irq, {c: int(by_cpu[c]) for c in self._cpus},
                                   row.chip, row.actions))
        except (OSError, ValueError, KeyError):
            return None
        return rows

    def close(self) -> None:
        if self._proc is not None:
            self._proc.close()
            self._proc = None
        self._files.close()
        self._rows = None
