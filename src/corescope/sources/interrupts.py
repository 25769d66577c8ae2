"""/proc/interrupts → which CPUs serve each NIC queue's IRQ; /proc/softirqs → NET_RX and
NET_TX per CPU. Parsers are pure and total."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from corescope.model.common import Diagnostic
from corescope.model.events import QueueIrq
from corescope.rootfs import Root


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
        head, sep, rest = line.partition(":")
        head = head.strip()
        if not sep or not head.isdecimal():
            continue
        toks = rest.split()
        counts: dict[int, int] = {}
        k = 0
        while k < len(toks) and k < len(cpus) and toks[k].isdecimal():
            counts[cpus[k]] = int(toks[k])
            k += 1
        if k < len(cpus) and k < len(toks):
            diags.append(Diagnostic(source, f"IRQ {head}: {k} of {len(cpus)} counts", lineno))
        tail = toks[k:]
        chip = tail[0] if tail else ""
        # actions follow the hwirq-trigger token ("1-edge"); without one, the last token
        idx = next((j for j, t in enumerate(tail) if _TRIGGER.match(t)), None)
        action_text = " ".join(tail[idx + 1:]) if idx is not None else " ".join(tail[-1:])
        actions = tuple(a.strip() for a in action_text.split(",") if a.strip())
        rows.append(IrqRow(irq=int(head), counts=counts, chip=chip, actions=actions))
    return Interrupts(tuple(cpus), tuple(rows), tuple(diags))


# Queue IRQ names by driver family.
_TXRX = re.compile(r"^(?P<iface>[\w.@-]+?)-(?:Tx-Rx|TxRx|txrx|tx-rx|fp|comb|combined)-(?P<q>\d+)$")
_DIR = re.compile(r"^(?P<iface>[\w.@-]+?)-(?P<dir>rx|tx|Rx|Tx|RX|TX)-(?P<q>\d+)$")
_VIRTIO = re.compile(r"^(?P<dev>virtio\d+)-(?P<dir>input|output)\.(?P<q>\d+)$")
_MLX5 = re.compile(r"^mlx5_comp(?P<q>\d+)@pci:(?P<bdf>[0-9a-fA-F:.]+)$")


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
              affinity: dict[int, tuple[int, ...]] | None = None,
              ifaces: set[str] | None = None) -> list[QueueIrq]:
    """The CPUs serving each NIC queue IRQ. Best evidence first: the CPUs whose count rose
    since `prev` (who actually took it), else the effective affinity, else any CPU that ever
    took it."""
    prev_rows = {r.irq: r for r in prev.rows} if prev else {}
    out: list[QueueIrq] = []
    for row in cur.rows:
        for name in row.actions:
            q = queue_of(name, dev_to_iface, ifaces)
            if q is None:
                continue
            iface, queue, direction = q
            cpus: tuple[int, ...] = ()
            basis = ""
            p = prev_rows.get(row.irq)
            if p is not None:
                cpus = tuple(sorted(c for c, n in row.counts.items() if n > p.counts.get(c, 0)))
                basis = "delta"
            if not cpus and affinity and affinity.get(row.irq):
                cpus, basis = affinity[row.irq], "affinity"
            if not cpus:
                cpus = tuple(sorted(c for c, n in row.counts.items() if n > 0))
                basis = "total"
            out.append(QueueIrq(iface=iface, queue=queue, irq=row.irq, name=name,
                                direction=direction, cpus=cpus, basis=basis))
    return out


def serving_cpus(qmap: list[QueueIrq], iface: str | None, queue: int | None
                 ) -> frozenset[int] | None:
    """CPUs that serve (iface, queue): its TX or combined IRQ. None when unknown."""
    if iface is None or queue is None:
        return None
    hits = [q for q in qmap if q.iface == iface and q.queue == queue and q.direction != "rx"]
    if not hits:
        return None
    return frozenset(c for q in hits for c in q.cpus)


def parse_softirqs(text: str, source: str = "/proc/softirqs"
                   ) -> tuple[dict[str, dict[int, int]], list[Diagnostic]]:
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
        if len(toks) < 2 or not toks[0].endswith(":"):
            continue
        vals: dict[int, int] = {}
        for cpu, t in zip(cpus, toks[1:], strict=False):
            if not t.isdecimal():
                diags.append(Diagnostic(source, f"bad count in {toks[0]}", i + 1))
                break
            vals[cpu] = int(t)
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
                   ifaces: set[str], devmap: dict[str, str] | None = None) -> list[QueueIrq]:
    """The NIC queue map now. Affinity files are read only for NIC queue IRQs: a node has
    hundreds of other IRQs and this runs every few seconds. `devmap`: a recent
    dev_to_iface_map, so a caller on a timer need not re-read the sysfs links each time."""
    devmap = dev_to_iface_map(root) if devmap is None else devmap
    nic = {r.irq for r in cur.rows
           if any(queue_of(name, devmap, ifaces) is not None for name in r.actions)}
    affinity = {irq: read_affinity(root, irq) for irq in nic}
    return queue_map(cur, prev, devmap, affinity, ifaces)

