"""Kernel events, kmsg loss accounting, clock anchors, NIC queue IRQ maps, NET softirqs and
NIC counters."""

from __future__ import annotations

import bisect
import json
import logging
import sqlite3
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from corescope.analysis.event_focus import EventBudget, FocusedEvents, focus
from corescope.model.events import KernelEvent, QueueIrq, SoftirqSample
from corescope.store.db import Store

log = logging.getLogger(__name__)

DDL = """
CREATE TABLE IF NOT EXISTS kernel_events (
    id INTEGER PRIMARY KEY,
    time REAL NOT NULL,          -- wall clock, UTC epoch seconds
    stored_at REAL NOT NULL,     -- wall clock when it reached the store
    mono_usec INTEGER,           -- the kernel's own stamp (usec since boot)
    boot_id TEXT,
    seq INTEGER,
    kind TEXT NOT NULL,
    driver TEXT,
    device TEXT,
    fields TEXT NOT NULL,        -- JSON object
    lab INTEGER NOT NULL DEFAULT 0,
    level INTEGER,
    source TEXT NOT NULL,
    raw TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS kernel_events_time ON kernel_events(time);
-- a record read twice (recorder restarted) is stored once
CREATE UNIQUE INDEX IF NOT EXISTS kernel_events_boot_seq ON kernel_events(boot_id, seq)
    WHERE seq IS NOT NULL AND boot_id IS NOT NULL;
-- the kernel log sensor's own record: lost records (loss) and clock anchors (anchor)
CREATE TABLE IF NOT EXISTS kmsg_log (
    time REAL NOT NULL,
    what TEXT NOT NULL,          -- 'loss' | 'anchor'
    lost INTEGER,                -- loss: records overwritten before we read them (seq gap)
    epipe INTEGER,               -- loss: EPIPE returns seen
    method TEXT,                 -- anchor: monotonic | marker
    offset_s REAL,               -- anchor: wall = usec/1e6 + offset_s
    error_s REAL,
    skew_s REAL                  -- anchor: kmsg clock - CLOCK_MONOTONIC (marker measured)
);
-- where the kernel log sensor stopped reading, per boot: a restarted recorder resumes after
-- it (kept apart from kernel_events, whose rows retention deletes)
CREATE TABLE IF NOT EXISTS kmsg_cursor (
    boot_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,        -- the last sequence number stored
    time REAL NOT NULL           -- wall clock when it was stored
);
CREATE TABLE IF NOT EXISTS irq_map (
    time REAL NOT NULL,
    iface TEXT,
    queue INTEGER,
    irq INTEGER NOT NULL,
    name TEXT NOT NULL,
    direction TEXT NOT NULL,
    cpus TEXT NOT NULL,          -- JSON list
    basis TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS softirq_samples (
    time REAL NOT NULL,
    interval_s REAL NOT NULL,
    net_rx TEXT NOT NULL,        -- JSON {cpu: delta}
    net_tx TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS nic_counters (
    time REAL NOT NULL,
    iface TEXT NOT NULL,
    counters TEXT NOT NULL       -- JSON {name: value}
);
"""

_CURSOR_BOOTS = 10

_COLS = "id, time, mono_usec, seq, kind, driver, device, fields, lab, level, source, raw"


def retain(store: Store, cutoff_wall: float) -> None:
    with store.write() as c:
        for table in ("kernel_events", "kmsg_log", "irq_map",
                      "softirq_samples", "nic_counters"):
            c.execute(f"DELETE FROM {table} WHERE time < ?", (cutoff_wall,))
        # cursors are tiny and must outlive their rows (a quiet kernel log): keep recent boots
        c.execute("DELETE FROM kmsg_cursor WHERE boot_id NOT IN "
                  f"(SELECT boot_id FROM kmsg_cursor ORDER BY time DESC LIMIT {_CURSOR_BOOTS})")


def insert_events(store: Store, events: Iterable[KernelEvent], boot_id: str | None = None,
                  stored_at: float | None = None, keep_ids: bool = False,
                  updates: Sequence[KernelEvent] = ()) -> int:
    """Insert in one transaction; returns how many were new. `keep_ids`: events that carry
    an id keep it (a capture bundle read back), unless the store already uses that id. With a
    boot id, the boot's cursor (see resume_seq) moves to the newest sequence number in the
    same transaction, so a recorder killed at any point resumes exactly after what it
    stored. `updates`: events stored earlier (this boot's, by sequence number and stamp) whose
    fields are rewritten in the same transaction (a report's head that gained its further
    lines' fields: analysis.reports)."""
    now = time.time() if stored_at is None else stored_at
    rows = [
        (e.id if keep_ids else None, e.time, now, e.mono_usec,
         boot_id if e.seq is not None else None, e.seq, e.kind, e.driver, e.device,
         json.dumps(e.fields, default=str), int(e.lab), e.level, e.source, e.raw)
        for e in events
    ]
    changed = [(json.dumps(e.fields, default=str), e.seq, e.mono_usec, boot_id)
                for e in updates if e.seq is not None]
    if not rows and not changed:
        return 0
    top = max((r[5] for r in rows if r[5] is not None), default=None)  # seq
    with store.write() as c:
        if keep_ids:
            taken = {r[0] for r in c.execute("SELECT id FROM kernel_events")}
            rows = [r if r[0] not in taken else (None, *r[1:]) for r in rows]
        before = c.total_changes
        c.executemany(
            "INSERT OR IGNORE INTO kernel_events (id, time, stored_at, mono_usec, boot_id, seq, "
            "kind, driver, device, fields, lab, level, source, raw) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        added = c.total_changes - before
        if changed:
            c.executemany("UPDATE kernel_events SET fields = ? WHERE seq = ? AND mono_usec IS ? "
                          "AND boot_id IS ?", changed)
        if boot_id is not None and top is not None:
            c.execute("INSERT INTO kmsg_cursor (boot_id, seq, time) VALUES (?,?,?) "
                      "ON CONFLICT(boot_id) DO UPDATE SET seq = MAX(seq, excluded.seq), "
                      "time = excluded.time", (boot_id, top, now))
        return added


def resume_seq(store: Store, boot_id: str) -> int | None:
    """The last kernel log sequence number stored for this boot (None: nothing yet).

    Stores written before the cursor existed are read from their rows."""
    rows = store.query(
        "SELECT MAX(s) FROM (SELECT seq AS s FROM kmsg_cursor WHERE boot_id = ? UNION ALL "
        "SELECT MAX(seq) FROM kernel_events WHERE boot_id = ?)", (boot_id, boot_id))
    return int(rows[0][0]) if rows and rows[0][0] is not None else None


def _event(row: Sequence) -> KernelEvent:
    try:
        fields = {} if row[7] == "{}" else json.loads(row[7])
        if not isinstance(fields, dict):
            fields = {}
    except ValueError:
        fields = {}
    # kinds, drivers, devices and sources repeat over millions of rows: one string each
    return KernelEvent(id=row[0], time=row[1], mono_usec=row[2], seq=row[3],
                       kind=_intern(row[4]), driver=_intern(row[5]), device=_intern(row[6]),
                       fields=fields, lab=bool(row[8]), level=row[9], source=_intern(row[10]),
                       raw=row[11])


def _intern(s: str | None) -> Any:
    return sys.intern(s) if isinstance(s, str) else s


def read_events(store: Store, t0: float, t1: float, kinds: Sequence[str] | None = None,
                limit: int | None = None) -> list[KernelEvent]:
    sql = f"SELECT {_COLS} FROM kernel_events WHERE time >= ? AND time <= ?"
    params: list = [t0, t1]
    if kinds:
        sql += f" AND kind IN ({','.join('?' * len(kinds))})"
        params += list(kinds)
    sql += " ORDER BY time, id"
    if limit:
        sql += " LIMIT ?"
        params.append(limit)
    # row by row from the cursor: a window of a million lines never holds its rows and its
    # events at once
    with store.lock:
        store.check_mapped()  # the recorder's diagnosis thread reads here: no SIGBUS
        return [_event(r) for r in store.conn.execute(sql, params)]


def read_focused(store: Store, t0: float, t1: float, budget: EventBudget | None
                 ) -> FocusedEvents:
    """The window's events as analysis.event_focus keeps them, decoded row by row from the
    cursor: the lines left out are counted, never held."""
    sql = f"SELECT {_COLS} FROM kernel_events WHERE time >= ? AND time <= ? ORDER BY time, id"
    with store.lock:
        store.check_mapped()
        return focus((_event(r) for r in store.conn.execute(sql, (t0, t1))), budget)


def get_event(store: Store, event_id: int) -> KernelEvent | None:
    rows = store.query(f"SELECT {_COLS} FROM kernel_events WHERE id = ?", (event_id,))
    return _event(rows[0]) if rows else None


def stored_at(store: Store, event_id: int) -> float | None:
    rows = store.query("SELECT stored_at FROM kernel_events WHERE id = ?", (event_id,))
    return rows[0][0] if rows else None


def record_loss(store: Store, t: float, lost: int, epipe: int) -> None:
    if lost or epipe:
        with store.write() as c:
            c.execute("INSERT INTO kmsg_log (time, what, lost, epipe) VALUES (?,'loss',?,?)",
                      (t, lost, epipe))


def lost_records(store: Store, t0: float, t1: float) -> int:
    rows = store.query("SELECT COALESCE(SUM(lost), 0) FROM kmsg_log WHERE what = 'loss' "
                       "AND time >= ? AND time <= ?", (t0, t1))
    return int(rows[0][0]) if rows else 0


def record_anchor(store: Store, t: float, method: str, offset_s: float, error_s: float,
                  skew_s: float | None) -> None:
    with store.write() as c:
        c.execute("INSERT INTO kmsg_log (time, what, method, offset_s, error_s, skew_s) "
                  "VALUES (?,'anchor',?,?,?,?)", (t, method, offset_s, error_s, skew_s))


def latest_skew(store: Store, since: float) -> float | None:
    """The kmsg clock's skew (kmsg − CLOCK_MONOTONIC) the recorder last knew, if it anchored
    after `since` (this boot's start: the skew is a property of one boot)."""
    try:
        rows = store.query("SELECT skew_s FROM kmsg_log WHERE what = 'anchor' AND time >= ? "
                           "AND skew_s IS NOT NULL ORDER BY time DESC LIMIT 1", (since,))
    except sqlite3.Error as exc:  # a damaged log table: the skew is unknown, nothing breaks
        log.warning("kmsg: stored clock skew not read: %s", exc)
        return None
    return float(rows[0][0]) if rows else None


def insert_irq_map(store: Store, t: float, qmap: Sequence[QueueIrq]) -> None:
    with store.write() as c:
        c.executemany(
            "INSERT INTO irq_map (time, iface, queue, irq, name, direction, cpus, basis) "
            "VALUES (?,?,?,?,?,?,?,?)",
            [(t, q.iface, q.queue, q.irq, q.name, q.direction, json.dumps(list(q.cpus)), q.basis)
             for q in qmap])


def irq_map_at(store: Store, t: float) -> list[QueueIrq]:
    """The snapshot in force at `t` (the latest at or before it, else the first after it)."""
    row = store.query("SELECT MAX(time) FROM irq_map WHERE time <= ?", (t,))
    snap = row[0][0] if row and row[0][0] is not None else None
    if snap is None:
        row = store.query("SELECT MIN(time) FROM irq_map WHERE time > ?", (t,))
        snap = row[0][0] if row and row[0][0] is not None else None
    if snap is None:
        return []
    return _irq_snapshot(store, snap)


class IrqMaps:
    """irq_map_at for many times (an investigation asks once or twice per incident): the
    snapshot times read once, each snapshot once; the same snapshot for each time."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._times: list[float] | None = None
        self._maps: dict[float, list[QueueIrq]] = {}

    def at(self, t: float) -> list[QueueIrq]:
        if self._times is None:
            self._times = [r[0] for r in self.store.query(
                "SELECT DISTINCT time FROM irq_map WHERE time IS NOT NULL ORDER BY time")]
        if not self._times:
            return []
        i = bisect.bisect_right(self._times, t)  # snapshots at or before t: _times[:i]
        snap = self._times[i - 1] if i else self._times[0]
        if snap not in self._maps:
            self._maps[snap] = _irq_snapshot(self.store, snap)
        return list(self._maps[snap])


def _irq_snapshot(store: Store, snap: float) -> list[QueueIrq]:
    out = []
    for iface, queue, irq, name, direction, cpus, basis in store.query(
            "SELECT iface, queue, irq, name, direction, cpus, basis FROM irq_map WHERE time = ? "
            "ORDER BY iface, queue, irq", (snap,)):
        try:
            cl = tuple(int(c) for c in json.loads(cpus))
        except (ValueError, TypeError):
            cl = ()
        out.append(QueueIrq(iface=iface, queue=queue, irq=irq, name=name, direction=direction,
                            cpus=cl, basis=basis))
    return out


def insert_softirqs(store: Store, t: float, interval_s: float, net_rx: dict[int, int],
                    net_tx: dict[int, int]) -> None:
    with store.write() as c:
        c.execute("INSERT INTO softirq_samples (time, interval_s, net_rx, net_tx) VALUES (?,?,?,?)",
                  (t, interval_s, json.dumps(net_rx), json.dumps(net_tx)))


def insert_softirqs_many(store: Store, rows: Sequence[SoftirqSample]) -> None:
    """Many readings in one transaction (an imported loop)."""
    with store.write() as c:
        c.executemany(
            "INSERT INTO softirq_samples (time, interval_s, net_rx, net_tx) VALUES (?,?,?,?)",
            [(r.t, r.interval_s, json.dumps(dict(r.net_rx)), json.dumps(dict(r.net_tx)))
             for r in rows])


def read_softirqs(store: Store, t0: float, t1: float
                  ) -> list[tuple[float, float, dict[int, int], dict[int, int]]]:
    out = []
    for t, itv, rx, tx in store.query(
            "SELECT time, interval_s, net_rx, net_tx FROM softirq_samples "
            "WHERE time >= ? AND time <= ? ORDER BY time", (t0, t1)):
        try:
            out.append((t, itv, {int(k): v for k, v in json.loads(rx).items()},
                        {int(k): v for k, v in json.loads(tx).items()}))
        except (ValueError, AttributeError):
            continue
    return out


def insert_nic_tick(store: Store, t: float, by_iface: dict[str, dict[str, int]],
                    net: tuple[float, dict[int, int], dict[int, int]] | None,
                    events: Sequence[KernelEvent] = (), qmap: Sequence[QueueIrq] = ()
                    ) -> None:
    """One NIC sensor tick in one transaction: the counters rows and the NET_RX/NET_TX deltas
    (interval_s, rx, tx) as insert_counters_many and insert_softirqs store them, written
    straight into it (a savepoint each costs more than the row), and the rarer events and
    queue map snapshot."""
    if not by_iface and net is None and not events and not qmap:
        return
    with store.write() as c:
        if by_iface:
            c.executemany("INSERT INTO nic_counters (time, iface, counters) VALUES (?,?,?)",
                          [(t, iface, json.dumps(v)) for iface, v in by_iface.items()])
        if net is not None:
            c.execute("INSERT INTO softirq_samples (time, interval_s, net_rx, net_tx) "
                      "VALUES (?,?,?,?)", (t, net[0], json.dumps(net[1]), json.dumps(net[2])))
        if events:
            insert_events(store, events)
        if qmap:
            insert_irq_map(store, t, qmap)


def insert_counters(store: Store, t: float, iface: str, counters: dict[str, int]) -> None:
    insert_counters_many(store, t, {iface: counters})


def insert_counters_many(store: Store, t: float, by_iface: dict[str, dict[str, int]]) -> None:
    """Every interface's counters of one reading in one transaction (one commit per tick)."""
    if not by_iface:
        return
    with store.write() as c:
        c.executemany("INSERT INTO nic_counters (time, iface, counters) VALUES (?,?,?)",
                      [(t, iface, json.dumps(v)) for iface, v in by_iface.items()])


def span(store: Store) -> tuple[float, float] | None:
    lo, hi = store.query("SELECT MIN(time), MAX(time) FROM kernel_events")[0]
    return None if lo is None else (lo, hi)
