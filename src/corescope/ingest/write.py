"""Parsed artifacts → the store, through the store's own APIs, so every command reads an
import exactly as it reads a recording.

Clock rules, applied here once every file has been read:
- records with a wall clock of their own keep it;
- boot-relative kernel records are placed at boot time + their stamp, with the boot time
  settled for the whole import (`WriteContext.boot_time`);
- without one they are written unanchored: at their seconds since boot counted from the
  epoch (1970), flagged `unanchored` in the import report, so nothing is lost and nothing is
  misplaced near real data; re-import with `--boot-time` to place them;
- undated snapshots are placed at `WriteContext.undated_t`.
"""

from __future__ import annotations

import dataclasses
import importlib
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from corescope.analysis.boots import Boots
from corescope.analysis.classify import classify_record
from corescope.analysis.reports import ReportJoiner
from corescope.model.cgroups import MemcgCensus, RestartRecord
from corescope.model.events import KmsgRecord
from corescope.model.matrix import CoreMatrix
from corescope.sources.artifacts.base import BootTime, Parsed
from corescope.store import census as census_store
from corescope.store import events as events_store
from corescope.store.db import Store
from corescope.store.series_writer import SeriesWriter

# Plug-in writers for kinds whose parser returns its own payload in Parsed.extra:
# kind -> "module:function", function(parsed, store, ctx) -> Written.
EXTRA_WRITERS: dict[str, str] = {
    "corescope_native": "corescope.ingest.native_write:write_native",
    "corescope_manifest": "corescope.ingest.native_write:write_native",
    "psi_loop": "corescope.ingest.write_pressure:write",
    "schedstat_loop": "corescope.ingest.write_pressure:write",
    "vmstat_loop": "corescope.ingest.write_pressure:write",
    "softirqs_loop": "corescope.ingest.write_softirqs:write",
    # `mpstat -I SCPU` tables: NET_RX/NET_TX beside (or instead of) the CPU load
    "mpstat_text": "corescope.ingest.write_softirqs:write",
    "mpstat_json": "corescope.ingest.write_softirqs:write",
    "perf_script": "corescope.ingest.perf_write:write_profile",
    "folded": "corescope.ingest.perf_write:write_profile",
}


@dataclass
class WriteContext:
    boot_time: float | None  # settled boot time (UTC epoch), None when unanchored
    boot_time_how: str | None
    undated_t: float  # where snapshots without a time of their own are placed
    # (start, end) of core samples already written, to keep one sample source per stretch
    covered: list[tuple[float, float]] = field(default_factory=list)
    # the same for softirq readings (a /proc/softirqs loop and mpstat's SCPU tables)
    softirqs_covered: list[tuple[float, float]] = field(default_factory=list)
    # kernel messages already written, to drop twin logs' duplicates
    seen_kernel: SeenLines = field(default_factory=lambda: SeenLines())
    # only worth remembering when more than one file holds kernel records
    dedupe_kernel: bool = True


@dataclass
class Written:
    records: int
    span: tuple[float, float] | None
    cpus: tuple[int, ...] = ()
    notes: list[str] = field(default_factory=list)
    unanchored: bool = False


def _span(times: list[float]) -> tuple[float, float] | None:
    return (min(times), max(times)) if times else None


def overlapping(t: np.ndarray, interval_s: np.ndarray,
                covered: list[tuple[float, float]]) -> np.ndarray:
    """Which intervals (t - interval_s, t] overlap a stretch an earlier source covered."""
    hit = np.zeros(len(t), bool)
    start = t - interval_s
    for a, b in covered:
        hit |= ((t >= a - 1e-6) & (t <= b + 1e-6)) | ((start + 1e-6 > a) & (start + 1e-6 < b))
    return hit


def write_samples(p: Parsed, store: Store, ctx: WriteContext) -> Written:
    m = p.samples if isinstance(p.samples, CoreMatrix) else CoreMatrix.from_samples(p.samples)
    # one per-core source per stretch of time: a sample overlapping what an earlier (more
    # exact) source covered is dropped
    keep = ~overlapping(m.t, m.interval_s, ctx.covered)
    dropped = int((~keep).sum())
    m = m.rows(keep)
    notes = []
    if dropped:
        notes.append(f"{dropped} samples overlap per-core samples from another source "
                     "(kept the more exact one)")
    stored = SeriesWriter(store).append_many(m) if len(m) else 0
    if stored < len(m):
        notes.append(f"{len(m) - stored} samples with an unusable time were left out")
    if not stored:
        return Written(0, None, (), notes)
    lo, hi = float((m.t - m.interval_s).min()), float(m.t.max())
    ctx.covered.append((lo, hi))
    return Written(stored, (lo, hi), tuple(m.online_cpus()), notes)


class SeenLines:
    """Kernel lines written from earlier files of the import (message hash, time, file), to
    drop a twin log's duplicates (a dmesg and its `dmesg -T` copy): in a private temporary
    SQLite database on disk, so three 200 MB logs never hold their messages in memory."""

    def __init__(self) -> None:
        self._db: sqlite3.Connection | None = None
        self.file = 0

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = sqlite3.connect("")  # "": a temporary database, deleted on close
            self._db.executescript(
                "CREATE TABLE seen (h INTEGER, t REAL, f INTEGER);"
                "CREATE INDEX seen_h ON seen (h);"
                "CREATE TEMP TABLE cur (i INTEGER PRIMARY KEY, h INTEGER, t REAL);")
        return self._db

    def next_file(self) -> None:
        self.file += 1

    def duplicates(self, lines: list[tuple[str, float]]) -> set[int]:
        """Which of `lines` (message, time) an earlier file wrote within 1.5 s (dmesg -T
        prints whole seconds, and btime is whole seconds too); the others are remembered as
        this file's."""
        db = self._conn()
        with db:
            db.execute("DELETE FROM cur")
            db.executemany("INSERT INTO cur (i, h, t) VALUES (?, ?, ?)",
                           ((i, hash(m), t) for i, (m, t) in enumerate(lines)))
            dups = {i for (i,) in db.execute(
                "SELECT DISTINCT cur.i FROM cur JOIN seen ON seen.h = cur.h AND seen.f != ? "
                "AND seen.t BETWEEN cur.t - 1.5 AND cur.t + 1.5", (self.file,))}
            db.executemany("INSERT INTO seen (h, t, f) SELECT h, t, ? FROM cur WHERE i = ?",
                           ((self.file, i) for i in range(len(lines)) if i not in dups))
        return dups

    def remember(self, lines: list[tuple[str, float]]) -> None:
        """`lines` (message, time) as this file's, unchecked."""
        with self._conn() as db:
            db.executemany("INSERT INTO seen (h, t, f) VALUES (?, ?, ?)",
                           ((hash(m), t, self.file) for m, t in lines))

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def zone_shift(own: Sequence[BootTime], boot: float | None) -> float:
    """How far a log's zone-less wall stamps are off by a time zone: its own boot time (its
    syslog stamps against the kernel's since-boot stamps of the same lines, a kern.log's)
    against the boot time settled from the other artifacts, when they differ by whole
    quarter hours (a zone offset, at most 14 h; a `/proc/stat` btime is UTC). 0 otherwise:
    agreeing, or off by anything else (a reboot, another node) is not a zone."""
    if boot is None:
        return 0.0
    for b in own:
        d = b.epoch - boot
        q = round(d / 900.0) * 900.0
        if b.zoneless and 900.0 <= abs(q) <= 14 * 3600.0 and abs(d - q) <= b.error_s + 2.0:
            return q
    return 0.0


class KernelWriter:
    """One file's kernel records, written batch by batch (a big log block by block): the
    report joiner and the counts run across batches, the notes are said once at the end.
    `own`: the boot times the file itself gave (its syslog stamps were in another zone than
    this machine's when they are whole quarter hours off the settled one: shifted back)."""

    def __init__(self, store: Store, ctx: WriteContext, own: Sequence[BootTime] = (),
                 boots: Sequence[float | None] = ()) -> None:
        self.store, self.ctx = store, ctx
        self.shift = zone_shift(own, ctx.boot_time)
        self.joiner = ReportJoiner()
        self.untimed = self.dups = self.written = 0
        # a log of several boots (`boots`: each one's offset, analysis.boots): the boot time
        # places the last one only; an earlier boot's since-boot lines by its own offset, or
        # not at all
        self.boots = tuple(boots)
        self.numbering = Boots() if len(self.boots) > 1 else None
        self.unplaced = 0
        self.unanchored = False
        self.lo = self.hi = None  # type: float | None
        if ctx.dedupe_kernel:
            ctx.seen_kernel.next_file()

    def _time(self, r: KmsgRecord) -> float | None:
        ctx = self.ctx
        wall = r.wall - self.shift if r.wall is not None else None
        if wall is not None and not (r.usec is not None and ctx.boot_time is not None
                                     and r.source == "dmesg"
                                     and abs(ctx.boot_time + r.usec / 1e6 - wall) < 2.0):
            return wall
        if r.usec is not None:
            if ctx.boot_time is not None:
                # a kern.log line's whole-second syslog stamp is refined by the kernel's own
                return ctx.boot_time + r.usec / 1e6
            self.unanchored = True
            return r.usec / 1e6
        return None

    def add(self, records: list[KmsgRecord]) -> None:
        timed: list[tuple[KmsgRecord, float]] = []
        numbering, last = self.numbering, len(self.boots) - 1
        for r in records:
            if numbering is not None and (b := numbering.feed(r)) < last and r.wall is None \
                    and r.usec is not None:
                off = self.boots[b]
                if off is None:
                    self.unplaced += 1
                else:
                    timed.append((r, off + r.usec / 1e6))
                continue
            t = self._time(r)
            if t is None:
                self.untimed += 1
            else:
                timed.append((r, t))
        if self.ctx.dedupe_kernel and timed:
            dup = self.ctx.seen_kernel.duplicates([(r.message, t) for r, t in timed])
            self.dups += len(dup)
            timed = [x for i, x in enumerate(timed) if i not in dup]
        events = self.joiner.feed(classify_record(r, t) for r, t in timed)
        if not events:
            return
        self.written += events_store.insert_events(self.store, events)
        lo, hi = min(e.time for e in events), max(e.time for e in events)
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)

    def finish(self) -> Written:
        notes = []
        if self.shift:
            h = abs(self.shift) / 3600
            notes.append(f"its syslog stamps print no zone and read {h:g} h "
                         f"{'ahead of' if self.shift > 0 else 'behind'} what its kernel stamps "
                         f"and the boot time used ({self.ctx.boot_time_how}) say: the node's "
                         "time zone is not this machine's (TZ); its lines are placed by their "
                         "kernel stamps")
        if self.untimed:
            notes.append(f"{self.untimed} records without any timestamp were not imported")
        if len(self.boots) > 1:
            lost = sum(1 for off in self.boots[:-1] if off is None)
            notes.append(f"the log holds {len(self.boots)} boots (its since-boot stamps start "
                         "again): the boot time places the last; "
                         + (f"{self.unplaced} records of {lost} earlier boot(s) print only "
                            "since-boot stamps and nothing places their boot: not imported"
                            if self.unplaced else
                            "the earlier ones are placed by their own lines (kern.log stamps, "
                            "the RTC's `setting system clock to`)"))
        if self.dups:
            notes.append(f"{self.dups} records were already imported from another file (the "
                         "same log in another format)")
        if self.unanchored:
            notes.append("boot-relative timestamps and no boot time found: written as seconds "
                         "since boot counted from 1970-01-01 (unanchored); pass --boot-time "
                         "(the node's `uptime -s`, or btime from its /proc/stat) to place them")
        span = (self.lo, self.hi) if self.lo is not None and self.hi is not None else None
        return Written(self.written, span, (), notes, self.unanchored)


def write_kernel(p: Parsed, store: Store, ctx: WriteContext) -> Written:
    boots = Boots()
    for r in p.kernel:
        boots.feed(r)
    w = KernelWriter(store, ctx, p.boot_times, boots.offsets())
    w.add(p.kernel)
    return w.finish()


def write_censuses(p: Parsed, store: Store, ctx: WriteContext) -> Written:
    out: list[MemcgCensus] = []
    for c in p.censuses:
        t = c.t if c.t > 0 else ctx.undated_t
        up = c.uptime_s
        if up is None and ctx.boot_time is not None and t > ctx.boot_time:
            up = t - ctx.boot_time
        c = dataclasses.replace(c, t=t, uptime_s=up)
        census_store.write_census(store, c)
        out.append(c)
    return Written(len(out), _span([c.t for c in out]))


def write_restarts(p: Parsed, store: Store, ctx: WriteContext) -> Written:
    recs: list[RestartRecord] = [
        r if r.t > 0 else dataclasses.replace(r, t=ctx.undated_t) for r in p.restarts]
    if recs:
        census_store.write_restarts(store, recs)
    return Written(len(recs), _span([r.t for r in recs]))


def write_irq_maps(p: Parsed, store: Store, ctx: WriteContext) -> Written:
    times = []
    for t, qmap in p.irq_maps:
        t = t if t > 0 else ctx.undated_t
        if qmap:  # a snapshot without NIC queues says nothing about the map
            events_store.insert_irq_map(store, t, qmap)
            times.append(t)
    cpus = tuple(sorted({c for _, q in p.irq_maps for m in q for c in m.cpus}))
    return Written(len(times), _span(times), cpus)


def write_parsed(p: Parsed, store: Store, ctx: WriteContext) -> Written:
    """Everything one artifact holds. Plug-in payloads go to their registered writer."""
    parts: list[Written] = []
    for fn, present in ((write_samples, p.samples), (write_kernel, p.kernel),
                        (write_censuses, p.censuses), (write_restarts, p.restarts),
                        (write_irq_maps, p.irq_maps)):
        if present:
            parts.append(fn(p, store, ctx))
    if p.extra is not None:
        writer = extra_writer(p.kind)
        if writer is None:
            parts.append(Written(0, None, (), [f"no importer for {p.kind} is installed in "
                                               "this build: recognised, not imported"]))
        else:
            parts.append(writer(p, store, ctx))
    times = [t for w in parts if w.span for t in w.span]
    return Written(
        records=sum(w.records for w in parts), span=_span(times),
        cpus=tuple(sorted({c for w in parts for c in w.cpus})),
        notes=[n for w in parts for n in w.notes],
        unanchored=any(w.unanchored for w in parts),
    )


def extra_writer(kind: str) -> Callable[[Parsed, Store, WriteContext], Written] | None:
    ref = EXTRA_WRITERS.get(kind)
    if ref is None:
        return None
    mod, _, fn = ref.partition(":")
    return getattr(importlib.import_module(mod), fn)  # type: ignore[no-any-return]
