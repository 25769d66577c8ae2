"""The kernel log sensor: streams /dev/kmsg on its own thread, classifies every record and
stores it with its wall time.

Continuity: it reads from the oldest record the kernel still holds. On a boot's first start it
imports all of it; after a restart it skips through the last sequence number stored for this
boot (the store's cursor), so a record the ring still holds is stored exactly once across
restarts. Records the ring overwrote before they were read (EPIPE while streaming, or a restart
gap longer than the ring) are counted from the sequence gap and stored as loss.

Records read but not yet stored (the store refused the write: disk full, say) wait in memory,
bounded, and are retried; past the bound the oldest are dropped and counted as lost.

Clock: every tick re-anchors CLOCK_MONOTONIC to the wall clock. printk's clock drifts from
CLOCK_MONOTONIC (NTP slews only the latter), so the skew between them is learned from the
records streamed as they arrive (`SkewBound`: a record read at monotonic m was stamped no later
than m). Only with `record --kmsg-clock-check` does it also write one marker record into the
kernel log and read back the kernel's stamp for it: by default `record` never writes to the
node's kernel log.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from dataclasses import replace

from corescope.analysis.classify import classify_record
from corescope.analysis.reports import ReportJoiner
from corescope.model.common import SensorStatus
from corescope.model.events import KernelEvent, KmsgRecord
from corescope.sensors.base import Sensor, SensorEnv
from corescope.sources.boot import read_boot_id
from corescope.sources.clock import boot_wall_time
from corescope.sources.kmsg_clock import ClockAnchor, SkewBound, anchor_clock
from corescope.sources.kmsg_reader import KmsgReader, calibrate_with_marker, open_kmsg
from corescope.store import events as store_events
from corescope.store.db import Store

log = logging.getLogger(__name__)

REANCHOR_S = 10.0
# while records wait for a store that refused them, the reader retries this often; otherwise
# it blocks until the kernel logs something (no timed wake-ups on a quiet log)
RETRY_MS = 500
# records held in memory while the store refuses writes (a ring holds a few thousand)
MAX_PENDING = 50_000


class KmsgSensor(Sensor):
    name = "kmsg"
    tick_failure_loses_data = False  # records wait in memory; losses() says what was lost

    def __init__(self, env: SensorEnv) -> None:
        super().__init__(env)
        self.interval_s = REANCHOR_S
        self._fd: int | None = None
        self._store: Store | None = None
        self._reader: KmsgReader | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._wake: tuple[int, int] | None = None  # a pipe: close() wakes the blocked reader
        self._skew_s = 0.0  # kmsg clock − CLOCK_MONOTONIC, as the anchor uses it
        self._skew_bound = SkewBound()
        self._stored_skew = 0.0  # the skew the last stored anchor carries
        self._clock_lock = threading.Lock()  # the reader learns the skew, tick() re-anchors
        self.anchor: ClockAnchor | None = None
        self.boot_id: str | None = None
        self.stored = 0
        self.errors = 0
        self._lost_seen = 0
        self._epipe_seen = 0
        self._pending: list[KernelEvent] = []  # read, not yet stored (the store refused)
        # stored reports' heads whose fields grew in a later batch, not yet rewritten
        self._updates: dict[int | None, KernelEvent] = {}
        self.dropped = 0
        self.last_error = ""
        self._gap_at_start = 0  # records lost before this run (the ring wrapped meanwhile)
        self._joiner = ReportJoiner()  # one multi-line report, one event (across batches)

    def open(self, store: Store) -> SensorStatus:
        if not self.env.root.is_live:
            return SensorStatus(self.name, False, "--root replay has no live kernel log; "
                                "kernel events not recorded (use `events --file`)")
        self.boot_id = read_boot_id(self.env.root)
        # without a boot id, sequence numbers cannot be told apart across boots: from now only
        resume = store_events.resume_seq(store, self.boot_id) if self.boot_id else None
        try:
            self._fd = open_kmsg(self.env.root, from_end=self.boot_id is None)
        except OSError as exc:
            return SensorStatus(self.name, False, f"cannot read /dev/kmsg: {exc.strerror}; "
                                "kernel events not recorded (needs root or "
                                "kernel.dmesg_restrict=0)")
        self._store = store
        self._reader = KmsgReader(self._read, resume_after=resume)
        clock = self._set_clock(store)
        backlog = self._import_backlog()
        self._wake = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._run, name="corescope-kmsg", daemon=True)
        self._thread.start()
        return SensorStatus(self.name, True, f"{backlog}; {clock}")

    def _set_clock(self, store: Store) -> str:
        # a restart in the same boot resumes the skew the last run learned (the backlog's
        # lines are placed with it); streamed lines refine it
        known = store_events.latest_skew(store, boot_wall_time())
        self._skew_s = self._stored_skew = known if known is not None else 0.0
        self.anchor = anchor_clock(skew_s=self._skew_s)
        if not self.env.options.kmsg_clock_check:
            if known is not None:
                return (f"clock anchored on CLOCK_MONOTONIC, kmsg skew {known * 1e3:+.1f} ms "
                        "as learned earlier this boot")
            return "clock anchored on CLOCK_MONOTONIC"
        cal = calibrate_with_marker(self.env.root) if os.geteuid() == 0 else None
        if cal is None:
            return ("clock anchored on CLOCK_MONOTONIC (--kmsg-clock-check: could not write "
                    "and read back a marker; needs root)")
        self._skew_s = cal.skew_s
        self._skew_bound.observe(cal.usec, cal.usec / 1e6 - cal.skew_s)
        self.anchor = cal.anchor
        try:
            store_events.record_anchor(store, cal.anchor.taken_wall, "marker",
                                       cal.anchor.offset_s, cal.anchor.error_s, cal.skew_s)
            self._stored_skew = cal.skew_s
        except Exception as exc:  # the store may be full: the clock is still right
            log.warning("kmsg: marker anchor not stored: %s", exc)
        return (f"clock verified with a marker record (kmsg − monotonic "
                f"{cal.skew_s * 1e3:+.2f} ms, ±{cal.anchor.error_s * 1e3:.2f} ms)")

    def _import_backlog(self) -> str:
        """Store what the ring holds past the cursor, before streaming; say what happened."""
        assert self._reader is not None
        resumed = self._reader.last_seq
        if self.boot_id is None:
            return "streaming /dev/kmsg from now (no boot id: history not imported)"
        n = 0
        try:
            while batch := self.drain():
                n += len(batch)
        except Exception as exc:  # kept pending in memory, retried by the stream thread
            self.last_error = str(exc)
            self._gap_at_start = self._reader.lost_records
            return (f"{len(self._pending)} records from the kernel ring not stored yet "
                    f"({exc}; will retry), then streaming")
        # lost while no recorder ran: stored as loss and said here, not this run's loss
        gap = self._gap_at_start = self._reader.lost_records
        if resumed is None:
            first = self._reader.first_seq
            held = f"; {first} earlier records had already left the ring" if first else ""
            return f"imported {n} records the kernel ring held{held}, then streaming"
        lost = f"; {gap} records left the ring while not recording (lost)" if gap else ""
        return f"resumed after record {resumed}: {n} new records{lost}, then streaming"

    def _read(self, n: int) -> bytes:
        assert self._fd is not None
        return os.read(self._fd, n)

    def _run(self) -> None:
        assert self._fd is not None and self._reader is not None and self._wake is not None
        poller = select.poll()
        # POLLERR/POLLPRI come with POLLIN when the ring overwrote unread records (EPIPE)
        poller.register(self._fd, select.POLLIN | select.POLLPRI)
        poller.register(self._wake[0], select.POLLIN)
        while not self._stop.is_set():
            try:
                ready = poller.poll(RETRY_MS if self._pending else None)
            except (OSError, ValueError):
                return
            if self._stop.is_set():
                return
            if any(ev & select.POLLNVAL for _, ev in ready):
                return  # a descriptor was closed under us: nothing more to read
            kmsg_ready = any(fd == self._fd for fd, _ in ready)
            if not kmsg_ready and not self._pending:
                continue
            try:
                got = self.drain(learn_skew=True)
            except Exception as exc:  # keep streaming: one bad batch must not end the sensor
                self.errors += 1
                self.last_error = str(exc)
                self._stop.wait(RETRY_MS / 1000)
                continue
            if kmsg_ready and not got:
                # readable yet nothing kept (unparseable records, a failing read): pace
                # ourselves rather than spin on a descriptor that stays readable
                self._stop.wait(0.2)

    def drain(self, learn_skew: bool = False) -> list[KernelEvent]:
        """Read what is there, classify and store it with what is still pending (one
        transaction). Raises when the store refuses: the events stay pending. `learn_skew`:
        the records were stamped while this reader waited for them (not the backlog), so
        their read time bounds the kmsg clock's skew."""
        assert self._reader is not None and self._store is not None
        records = self._reader.read_available()
        if learn_skew and records:
            self._learn_skew(records, time.clock_gettime(time.CLOCK_MONOTONIC))
        anchor = self.anchor or anchor_clock(skew_s=self._skew_s)
        events = self._joiner.feed(
            classify_record(r, anchor.wall_of(r.usec) if r.usec is not None else time.time())
            for r in records)
        if events:
            self.env.tap.events(events)  # live metrics: as read, stored or not
        self._pending.extend(events)
        if len(self._pending) > MAX_PENDING:
            drop = len(self._pending) - MAX_PENDING
            del self._pending[:drop]
            self.dropped += drop
        self._updates.update((u.seq, u) for u in self._joiner.take_updates())
        if self._pending or self._updates:
            self.stored += store_events.insert_events(self._store, self._pending, self.boot_id,
                                                      updates=list(self._updates.values()))
            self._pending = []
            self._updates = {}
        lost, epipe = self._reader.lost_records + self.dropped, self._reader.epipe_count
        if lost != self._lost_seen or epipe != self._epipe_seen:
            store_events.record_loss(self._store, events[0].time if events else time.time(),
                                     lost - self._lost_seen, epipe - self._epipe_seen)
            self._lost_seen, self._epipe_seen = lost, epipe
        return events

    def _learn_skew(self, records: list[KmsgRecord], read_mono: float) -> None:
        for r in records:
            if r.usec is not None:
                self._skew_bound.observe(r.usec, read_mono)
        skew = self._skew_bound.value
        if skew is None or abs(skew - self._skew_s) < 1e-4:
            return
        with self._clock_lock:
            if self.anchor is not None:
                self.anchor = replace(self.anchor,
                                      offset_s=self.anchor.offset_s + self._skew_s - skew)
            self._skew_s = skew

    def losses(self) -> list[str]:
        out = []
        lost = self._reader.lost_records - self._gap_at_start if self._reader else 0
        if lost:
            out.append(f"{lost} kernel log records left the ring before they were read")
        if self.dropped:
            out.append(f"{self.dropped} kernel log records could not be stored "
                       f"(last error: {self.last_error})")
        if self._pending:
            out.append(f"{len(self._pending)} kernel log records were never stored "
                       f"(last error: {self.last_error})")
        return out

    def tick(self, wall: float, mono: float) -> None:
        if self._pending:  # the stream thread cannot store: say so on the recorder's schedule
            raise RuntimeError(f"{len(self._pending)} kernel log records waiting to be stored: "
                               f"{self.last_error}")
        # re-anchor: the wall clock may have been stepped (NTP) since the last anchor
        with self._clock_lock:
            new = anchor_clock(skew_s=self._skew_s)
            old = self.anchor
            self.anchor = new
        # stored when the clock moved or the skew was learned anew (doctor reads it back for
        # lines only the ring holds); the reader's skew update already shifted `old`
        moved = old is None or abs(new.offset_s - old.offset_s) > 1e-3
        if self._store is not None and (moved or abs(self._skew_s - self._stored_skew) > 1e-3):
            store_events.record_anchor(self._store, new.taken_wall, "monotonic", new.offset_s,
                                       new.error_s, self._skew_s)
            self._stored_skew = self._skew_s

    def close(self) -> None:
        self._stop.set()
        if self._wake is not None:
            with contextlib.suppress(OSError):
                os.write(self._wake[1], b"x")
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            if self._thread.is_alive():
                # still inside a drain (a slow store, say): draining here too would run the
                # shared, unsynchronized reader from two threads, and closing the fd under
                # it could make it read whatever file reuses the number. Skip the final
                # drain and leave the fd to process exit (the thread is a daemon).
                log.warning("kmsg reader thread did not stop within 2s; final drain skipped")
                return
            self._thread = None
        if self._wake is not None:
            for end in self._wake:
                with contextlib.suppress(OSError):
                    os.close(end)
            self._wake = None
        if self._fd is not None:
            try:
                if self._store is not None and self._reader is not None:
                    self.drain()  # what arrived during shutdown
            except Exception:
                pass
            os.close(self._fd)
            self._fd = None


def build(env: SensorEnv) -> list[Sensor]:
    return [KmsgSensor(env)] if env.options.kmsg else []
