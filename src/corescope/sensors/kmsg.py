"""The kernel log sensor: streams /dev/kmsg on its own thread, classifies every record and
stores it with its wall time. It starts from "now" (SEEK_END): history before the recorder is
in `dmesg` and `corescope events --file`. Lost records (EPIPE) are counted from the sequence
gap and stored, so a report can say what it did not see.

Clock: at start, when it can write /dev/kmsg (root), it writes one marker record and reads
back the kernel's stamp for it, which measures the kmsg clock against CLOCK_MONOTONIC; every
tick it re-anchors CLOCK_MONOTONIC to the wall clock (NTP steps) keeping that skew.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time

from corescope.analysis.classify import classify_record
from corescope.model.common import SensorStatus
from corescope.model.events import KernelEvent
from corescope.sensors.base import Sensor, SensorEnv
from corescope.sources.boot import read_boot_id
from corescope.sources.kmsg import (
    ClockAnchor,
    KmsgReader,
    anchor_clock,
    calibrate_with_marker,
    open_kmsg,
)
from corescope.store import events as store_events
from corescope.store.db import Store

log = logging.getLogger(__name__)

REANCHOR_S = 10.0
POLL_MS = 200


class KmsgSensor(Sensor):
    name = "kmsg"

    def __init__(self, env: SensorEnv) -> None:
        super().__init__(env)
        self.interval_s = REANCHOR_S
        self._fd: int | None = None
        self._store: Store | None = None
        self._reader: KmsgReader | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._skew_s = 0.0
        self.anchor: ClockAnchor | None = None
        self.boot_id: str | None = None
        self.stored = 0
        self.errors = 0
        self._lost_seen = 0
        self._epipe_seen = 0

    def open(self, store: Store) -> SensorStatus:
        if not self.env.root.is_live:
            return SensorStatus(self.name, False, "--root replay has no live kernel log; "
                                "kernel events not recorded (use `events --file`)")
        try:
            self._fd = open_kmsg(self.env.root, from_end=True)
        except OSError as exc:
            return SensorStatus(self.name, False, f"cannot read /dev/kmsg: {exc.strerror}; "
                                "kernel events not recorded (needs root or "
                                "kernel.dmesg_restrict=0)")
        self._store = store
        self.boot_id = read_boot_id(self.env.root)
        self._reader = KmsgReader(self._read)
        detail = "clock anchored on CLOCK_MONOTONIC"
        cal = calibrate_with_marker(self.env.root) if os.geteuid() == 0 else None
        if cal is not None:
            self._skew_s = cal.skew_s
            self.anchor = cal.anchor
            detail = (f"clock verified with a marker record (kmsg − monotonic "
                      f"{cal.skew_s * 1e3:+.2f} ms, ±{cal.anchor.error_s * 1e3:.2f} ms)")
            store_events.record_anchor(store, cal.anchor.taken_wall, "marker",
                                       cal.anchor.offset_s, cal.anchor.error_s, cal.skew_s)
        else:
            self.anchor = anchor_clock()
        self._thread = threading.Thread(target=self._run, name="corescope-kmsg", daemon=True)
        self._thread.start()
        return SensorStatus(self.name, True, f"streaming /dev/kmsg from now; {detail}")

    def _read(self, n: int) -> bytes:
        assert self._fd is not None
        return os.read(self._fd, n)

    def _run(self) -> None:
        assert self._fd is not None and self._reader is not None
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        while not self._stop.is_set():
            try:
                poller.poll(POLL_MS)
                self.drain()
            except Exception:  # keep streaming: one bad batch must not end the sensor
                self.errors += 1
                self._stop.wait(0.5)

    def drain(self) -> list[KernelEvent]:
        """Read what is there, classify and store it (one transaction)."""
        assert self._reader is not None and self._store is not None
        records = self._reader.read_available()
        anchor = self.anchor or anchor_clock()
        events = [classify_record(r, anchor.wall_of(r.usec) if r.usec is not None else time.time())
                  for r in records]
        if events:
            self.stored += store_events.insert_events(self._store, events, self.boot_id)
            self.env.tap.events(events)
        lost, epipe = self._reader.lost_records, self._reader.epipe_count
        if lost != self._lost_seen or epipe != self._epipe_seen:
            store_events.record_loss(self._store, time.time(), lost - self._lost_seen,
                                     epipe - self._epipe_seen)
            self._lost_seen, self._epipe_seen = lost, epipe
        return events

    def tick(self, wall: float, mono: float) -> None:
        # re-anchor: the wall clock may have been stepped (NTP) since the last anchor
        new = anchor_clock(skew_s=self._skew_s)
        old = self.anchor
        self.anchor = new
        if self._store is not None and (old is None or abs(new.offset_s - old.offset_s) > 1e-3):
            store_events.record_anchor(self._store, new.taken_wall, "monotonic", new.offset_s,
                                       new.error_s, self._skew_s)

    def close(self) -> None:
        self._stop.set()
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
