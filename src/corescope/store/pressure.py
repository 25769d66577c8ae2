"""Stored pressure: PSI per resource, run-queue time per CPU, reclaim counters. Rows hold the
kernel's cumulative counters; readers turn consecutive rows into rates (a counter that went
backwards, i.e. a reboot, starts over and yields no rate for that step).

Compact on purpose: one run-queue row per read holds every CPU (packed int64s, zlib), one
vmstat row holds its counters as JSON, so 96 CPUs cost a few MB a day."""

from __future__ import annotations

import json
import zlib
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from corescope.store.db import Store

# the records load when rows are read: every store open imports this module for its DDL, and
# a command that reads no pressure (cores, events) need not define them
if TYPE_CHECKING:
    from corescope.model.pressure import (
        Psi,
        PsiSample,
        RunQueue,
        SchedstatSample,
        VmstatSample,
    )

DDL = """
CREATE TABLE IF NOT EXISTS psi (
    t REAL NOT NULL,
    resource TEXT NOT NULL,
    some_avg10 REAL, some_avg60 REAL, some_avg300 REAL, some_total INTEGER,
    full_avg10 REAL, full_avg60 REAL, full_avg300 REAL, full_total INTEGER
);
CREATE INDEX IF NOT EXISTS psi_t ON psi(t);
CREATE TABLE IF NOT EXISTS runqueue (
    t REAL NOT NULL,
    version INTEGER,
    cpus BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS runqueue_t ON runqueue(t);
CREATE TABLE IF NOT EXISTS vmstat (
    t REAL NOT NULL,
    counters TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS vmstat_t ON vmstat(t);
"""

_TABLES = ("psi", "runqueue", "vmstat")


def _psi_cols(p: Psi | None) -> tuple:
    return (p.avg10, p.avg60, p.avg300, p.total_us) if p else (None, None, None, None)


def write(store: Store, psi: Sequence[PsiSample] = (), sched: Sequence[SchedstatSample] = (),
          vm: Sequence[VmstatSample] = ()) -> None:
    """One transaction for whatever one tick (or one imported file) read."""
    # a table with nothing to add is not asked (preparing an empty statement still costs:
    # the sensor has vmstat every 2nd tick and schedstat every 6th)
    with store.write() as db:
        if psi:
            db.executemany("INSERT INTO psi VALUES (?,?,?,?,?,?,?,?,?,?)",
                           [(s.t, s.resource, *_psi_cols(s.some), *_psi_cols(s.full))
                            for s in psi])
        if sched:
            db.executemany("INSERT INTO runqueue VALUES (?,?,?)",
                           [(s.t, s.version, _pack(s.cpus)) for s in sched])
        if vm:
            db.executemany("INSERT INTO vmstat VALUES (?,?)",
                           [(s.t, json.dumps(s.counters, sort_keys=True)) for s in vm])


_INT64 = (1 << 63) - 1


def _pack(cpus: Sequence[RunQueue]) -> bytes:
    flat = array("q")
    for q in cpus:
        flat.extend(min(v, _INT64) for v in (q.cpu, q.run_ns, q.wait_ns, q.timeslices))
    return zlib.compress(flat.tobytes(), 1)


def _unpack(blob: bytes) -> tuple[RunQueue, ...] | None:
    from corescope.model.pressure import RunQueue

    try:
        flat = array("q")
        flat.frombytes(zlib.decompress(blob))
    except (zlib.error, ValueError, TypeError):
        return None  # a damaged row is skipped, never raised
    return tuple(RunQueue(*flat[i:i + 4]) for i in range(0, len(flat) - 3, 4))


def _psi(row: Sequence) -> Psi | None:
    from corescope.model.pressure import Psi

    return None if row[0] is None else Psi(row[0], row[1], row[2], row[3])


def read_psi(store: Store, t0: float, t1: float) -> list[PsiSample]:
    from corescope.model.pressure import PsiSample

    rows = store.query("SELECT t, resource, some_avg10, some_avg60, some_avg300, some_total, "
                       "full_avg10, full_avg60, full_avg300, full_total FROM psi "
                       "WHERE t >= ? AND t <= ? ORDER BY t, resource", (t0, t1))
    return [PsiSample(r[0], r[1], _psi(r[2:6]), _psi(r[6:10])) for r in rows]


def read_schedstat(store: Store, t0: float, t1: float) -> list[SchedstatSample]:
    from corescope.model.pressure import SchedstatSample

    rows = store.query("SELECT t, version, cpus FROM runqueue WHERE t >= ? AND t <= ? "
                       "ORDER BY t", (t0, t1))
    out = []
    for t, version, blob in rows:
        cpus = _unpack(blob)
        if cpus is not None:
            out.append(SchedstatSample(t, version, cpus))
    return out


def read_vmstat(store: Store, t0: float, t1: float) -> list[VmstatSample]:
    from corescope.model.pressure import VmstatSample

    rows = store.query("SELECT t, counters FROM vmstat WHERE t >= ? AND t <= ? ORDER BY t",
                       (t0, t1))
    out = []
    for t, text in rows:
        try:
            c = json.loads(text)
        except ValueError:
            continue
        if isinstance(c, dict):
            out.append(VmstatSample(t, {k: v for k, v in c.items() if isinstance(v, int)}))
    return out


def retain(store: Store, cutoff_wall: float) -> None:
    with store.write() as db:
        for table in _TABLES:
            db.execute(f"DELETE FROM {table} WHERE t < ?", (cutoff_wall,))
