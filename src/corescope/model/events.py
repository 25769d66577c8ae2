"""Kernel events, NIC interrupt maps and correlation results. Plain records, no I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

# Kinds the classifier produces. "other" keeps every unrecognised line (never dropped).
KINDS: tuple[str, ...] = (
    "nic_tx_stall",
    "nic_reset",
    "nic_keepalive_timeout",
    "nic_tx_timeout",
    "soft_lockup",
    "hard_lockup",
    "rcu_stall",
    "hung_task",
    "oom_kill",
    "hw_error",
    "link_down",
    "link_up",
    "other",
)

# Kinds that count as incidents for correlation and doctor. link_up is recovery, not a fault;
# "other" is noise by definition.
INCIDENT_KINDS: frozenset[str] = frozenset(KINDS) - {"link_up", "other"}

# The text every lab-written line carries, so a real node's log never misleads anyone later.
LAB_MARKER = "corescope-lab"


_NO_META: Mapping[str, str] = MappingProxyType({})


class KmsgRecord(NamedTuple):
    """One /dev/kmsg record (or one line of a saved log) before classification.

    `usec` is the kernel's clock since boot (None when the source had no timestamp);
    `wall` is set only by sources that carry a wall clock of their own (journald).
    A NamedTuple rather than a frozen dataclass: a saved log can hold millions of lines, and
    this is ten times cheaper to build while just as immutable.
    """

    message: str
    usec: int | None = None
    seq: int | None = None
    level: int | None = None  # syslog severity 0..7
    facility: int | None = None
    flags: str = ""
    dict_: Mapping[str, str] = _NO_META  # continuation KEY=value lines
    wall: float | None = None
    source: str = "kmsg"


@dataclass(frozen=True, slots=True)  # slots: a big log's window holds a million of them
class KernelEvent:
    """A classified kernel event on the wall-clock timeline (UTC epoch seconds)."""

    time: float
    kind: str
    raw: str
    driver: str | None = None
    device: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    lab: bool = False
    mono_usec: int | None = None
    seq: int | None = None
    level: int | None = None
    source: str = "kmsg"
    id: int | None = None

    @property
    def is_incident(self) -> bool:
        return self.kind in INCIDENT_KINDS

    @property
    def iface(self) -> str | None:
        v = self.fields.get("iface")
        return v if isinstance(v, str) else None

    @property
    def queue(self) -> int | None:
        v = self.fields.get("queue")
        return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass(frozen=True)
class QueueIrq:
    """One NIC queue interrupt line and the CPUs that serve it."""

    iface: str | None  # None when the IRQ name could not be tied to an interface
    queue: int | None
    irq: int
    name: str
    direction: str  # "txrx" | "tx" | "rx" | "other"
    cpus: tuple[int, ...]  # CPUs that serve it (see serving_cpus below)
    basis: str  # how `cpus` was decided: "delta" | "affinity" | "total"

    @property
    def device(self) -> str | None:
        """The bus id the IRQ name holds, as the driver's log prefix prints it: virtio's
        `virtio1-output.2` → `virtio1`, mlx5's `mlx5_comp2@pci:0000:08:00.0` →
        `0000:08:00.0` (what ties the queue to its NIC when no /sys/class/net says which
        interface it is: a saved /proc/interrupts)."""
        m = _IRQ_DEVICE.search(self.name)
        return (m.group(1) or m.group(2)) if m else None


_IRQ_DEVICE = re.compile(  # `@pci:BDF` (mlx5, gve), `@BDF` (mlx4's `mlx4-1@0000:00:08.0`)
    r"^(virtio\d+)-|@(?:pci:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])$")


def names_iface(irq_iface: str, iface: str) -> bool:
    """Whether an IRQ name's interface part is `iface`: i40e, ice and iavf put the driver's
    name first (`i40e-eth1-TxRx-3`), which nothing strips in a saved /proc/interrupts (no
    /sys/class/net there to say which interfaces exist)."""
    return irq_iface == iface or irq_iface.endswith("-" + iface)


def serving_cpus(qmap: list[QueueIrq], iface: str | None, queue: int | None,
                 device: str | None = None) -> frozenset[int] | None:
    """CPUs that serve (iface, queue): its TX or combined IRQ. None when unknown. An IRQ
    not tied to an interface is the queue's when its name holds the NIC's `device`."""
    if queue is None or (iface is None and device is None):
        return None
    hits = [q for q in qmap if q.queue == queue and q.direction != "rx"
            and (iface is not None and names_iface(q.iface, iface) if q.iface is not None
                 else device is not None and q.device == device)]
    if not hits:
        return None
    return frozenset(c for q in hits for c in q.cpus)


@dataclass(frozen=True)
class SoftirqSample:
    """NET_RX and NET_TX softirqs run on each CPU in the `interval_s` ending at `t` (the
    increase of /proc/softirqs' counters)."""

    t: float
    interval_s: float
    net_rx: Mapping[int, int]
    net_tx: Mapping[int, int]


@dataclass(frozen=True)
class PrecedingEpisode:
    cpu: int
    start: float
    end: float
    lead_s: float  # event time − episode end, clamped at 0 while the episode still runs
    serves_queue: bool | None
    peak_pct: float | None = None


@dataclass(frozen=True)
class Incident:
    event: KernelEvent
    preceding: tuple[PrecedingEpisode, ...]
    related: tuple[KernelEvent, ...] = ()  # later lines of the same burst (same device)

    @property
    def nearest(self) -> PrecedingEpisode | None:
        """The episode most likely to have starved the event: one on a CPU that serves the
        event's queue when the interrupt map says so (a busy neighbour that happened to end
        later is not the cause), else the one that ended last before it."""
        return min(self.preceding, key=lambda p: (p.serves_queue is not True, p.lead_s, p.cpu),
                   default=None)


@dataclass(frozen=True)
class CorrelationSummary:
    events: int
    preceded: int
    preceded_fraction: float | None
    base_rate: float | None
    base_samples: int
    median_lead_s: float | None
    top_cpu: int | None
    top_cpu_count: int
    serves_queue_fraction: float | None
    p_value: float | None  # P(≥ preceded | base_rate), one-sided binomial
    window_s: float
