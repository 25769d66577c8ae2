"""What one artifact parser returns: model records, the clock anchors it found, diagnostics.

Records are already on the wall clock (UTC epoch seconds) when the artifact says when they
happened. Kernel log records may be boot-relative only (`KmsgRecord.usec`); the importer places
them once every file has been read and a boot time is known (see `boot_times`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from corescope.model.cgroups import MemcgCensus, RestartRecord
from corescope.model.common import Diagnostic
from corescope.model.cores import CoreSample
from corescope.model.events import KmsgRecord, QueueIrq
from corescope.model.matrix import CoreMatrix

# Parsers keep at most this many diagnostics per file: a garbage file must not grow memory.
MAX_DIAGNOSTICS = 200


@dataclass(frozen=True)
class BootTime:
    """A boot time (UTC epoch seconds) that an artifact states or implies, and how."""

    epoch: float
    how: str  # e.g. "btime in /proc/stat", "journal realtime - monotonic"
    error_s: float = 1.0  # how far off it may be
    # from wall-clock stamps that print no zone (read in this machine's): off by a time zone
    # when the node's differed
    zoneless: bool = False


@dataclass
class Parsed:
    """One artifact, parsed. `kind` is the detected kind; every list may be empty.

    `undated` marks snapshots that carry no time of their own (a single `systemctl show`,
    `crictl ps`, `/proc/interrupts` or `/proc/cgroups` read): their records hold t=0.0 and the
    importer places them at the end of the imported time span (when the evidence was most
    likely collected), else at the file's modification time.
    """

    kind: str
    source: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # a list, or a CoreMatrix for long per-core series (a day of 96 CPUs)
    samples: Sequence[CoreSample] = field(default_factory=list)
    kernel: list[KmsgRecord] = field(default_factory=list)
    censuses: list[MemcgCensus] = field(default_factory=list)
    restarts: list[RestartRecord] = field(default_factory=list)
    irq_maps: list[tuple[float, list[QueueIrq]]] = field(default_factory=list)
    boot_times: list[BootTime] = field(default_factory=list)
    # a kernel log of several boots, read block by block: each boot's wall − since-boot
    # offset by its own lines, None where none places it (analysis.boots, from the pass over
    # the whole log; a log parsed whole is counted from `kernel`)
    boot_offsets: tuple[float | None, ...] = ()
    # what was read but approximated or repaired (not a loss: the import is still complete)
    notes: list[str] = field(default_factory=list)
    undated: bool = False
    # a plug-in kind's own payload (e.g. perf samples), written by its registered writer
    extra: Any = None
    # what the plug-in knows before writing: record count, wall span, CPUs
    extra_records: int = 0
    extra_span: tuple[float, float] | None = None
    extra_cpus: tuple[int, ...] = ()

    def diag(self, message: str, line: int | None = None) -> None:
        if len(self.diagnostics) < MAX_DIAGNOSTICS:
            self.diagnostics.append(Diagnostic(self.source, message, line))

    @property
    def records(self) -> int:
        return (len(self.samples) + len(self.kernel) + len(self.censuses) + len(self.restarts)
                + len(self.irq_maps) + self.extra_records)

    def cpus(self) -> tuple[int, ...]:
        found: set[int] = set(self.extra_cpus)
        if isinstance(self.samples, CoreMatrix):
            found.update(self.samples.online_cpus())
        else:
            for s in self.samples:
                found.update(s.deltas)
        return tuple(sorted(found))

    def span(self) -> tuple[float, float] | None:
        """Wall-clock span of the dated records (kernel records only if they carry a wall
        clock of their own; boot-relative ones are placed by the importer)."""
        times: list[float] = []
        if len(self.samples):
            first, last = self.samples[0], self.samples[len(self.samples) - 1]
            times += [first.t - first.interval_s, last.t]
        times += [c.t for c in self.censuses]
        times += [t for t, _ in self.irq_maps]
        if not self.undated:
            times += [r.t for r in self.restarts]
        walls = [r.wall for r in self.kernel if r.wall is not None]
        if walls:
            times += [min(walls), max(walls)]
        if self.extra_span is not None:
            times += list(self.extra_span)
        times = [t for t in times if t > 0]
        return (min(times), max(times)) if times else None
