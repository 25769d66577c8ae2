"""Stored memcg censuses, churn per parent, v2 locations, stat-read costs and restart
snapshots: the history that growth, projection and suspect ranking need."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from corescope.store.db import Store

# the records load when rows are read: every store open imports this module for its DDL, and
# a command that reads no cgroup history (cores, events) need not define them
if TYPE_CHECKING:
    from corescope.model.cgroups import (
        ChurnCount,
        Location,
        MemcgCensus,
        RestartRecord,
        StatReadCost,
    )

DDL = """
CREATE TABLE IF NOT EXISTS memcg_census (
    t REAL NOT NULL,
    layout TEXT NOT NULL,
    hierarchy TEXT,
    kernel_count INTEGER,
    live INTEGER,
    dying INTEGER,
    source TEXT NOT NULL,
    walk_ms REAL NOT NULL,
    boot_id TEXT NOT NULL,
    uptime_s REAL,
    stable INTEGER NOT NULL,
    proc_cgroups_count INTEGER,
    churn_interval_s REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS memcg_census_t ON memcg_census(t);
CREATE TABLE IF NOT EXISTS memcg_churn (
    t REAL NOT NULL,
    parent TEXT NOT NULL,
    created INTEGER NOT NULL,
    removed INTEGER NOT NULL,
    children INTEGER NOT NULL,
    interval_s REAL NOT NULL,
    method TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memcg_churn_t ON memcg_churn(t);
CREATE TABLE IF NOT EXISTS memcg_location (
    t REAL NOT NULL,
    path TEXT NOT NULL,
    dying INTEGER NOT NULL,
    subtree_dying INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memcg_location_t ON memcg_location(t);
CREATE TABLE IF NOT EXISTS memcg_stat_cost (
    t REAL NOT NULL,
    file TEXT NOT NULL,
    median_ms REAL NOT NULL,
    max_ms REAL NOT NULL,
    reads INTEGER NOT NULL,
    dying INTEGER
);
CREATE INDEX IF NOT EXISTS memcg_stat_cost_t ON memcg_stat_cost(t);
CREATE TABLE IF NOT EXISTS unit_restarts (
    t REAL NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    restarts INTEGER,
    state TEXT NOT NULL,
    cgroup TEXT,
    detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS unit_restarts_t ON unit_restarts(t);
"""

_TABLES = ("memcg_census", "memcg_churn", "memcg_location", "memcg_stat_cost", "unit_restarts")


def write_census(store: Store, c: MemcgCensus, churn: Sequence[ChurnCount] = (),
                 locations: Sequence[Location] = ()) -> None:
    """One census with its churn rows and top locations, in one transaction."""
    with store.write() as db:
        db.execute(
            "INSERT INTO memcg_census VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (c.t, c.layout, c.hierarchy, c.kernel_count, c.live, c.dying, c.source, c.walk_ms,
             c.boot_id, c.uptime_s, int(c.stable), c.proc_cgroups_count, c.churn_interval_s),
        )
        _insert_churn(db, churn)
        _insert_locations(db, c.t, locations)


def _insert_churn(db: sqlite3.Connection, churn: Sequence[ChurnCount]) -> None:
    db.executemany(
        "INSERT INTO memcg_churn VALUES (?,?,?,?,?,?,?)",
        [(r.t, r.parent, r.created, r.removed, r.children, r.interval_s, r.method)
         for r in churn],
    )


def _insert_locations(db: sqlite3.Connection, t: float, locations: Sequence[Location]) -> None:
    db.executemany(
        "INSERT INTO memcg_location VALUES (?,?,?,?)",
        [(t, loc.path, loc.dying, loc.subtree_dying) for loc in locations],
    )


def write_churn(store: Store, churn: Sequence[ChurnCount]) -> None:
    with store.write() as db:
        _insert_churn(db, churn)


def write_locations(store: Store, t: float, locations: Sequence[Location]) -> None:
    with store.write() as db:
        _insert_locations(db, t, locations)


def write_stat_costs(store: Store, costs: Sequence[StatReadCost]) -> None:
    with store.write() as db:
        db.executemany(
            "INSERT INTO memcg_stat_cost VALUES (?,?,?,?,?,?)",
            [(s.t, s.file, s.median_ms, s.max_ms, s.reads, s.dying) for s in costs],
        )


def write_restarts(store: Store, records: Sequence[RestartRecord]) -> None:
    with store.write() as db:
        db.executemany(
            "INSERT INTO unit_restarts VALUES (?,?,?,?,?,?,?)",
            [(r.t, r.kind, r.name, r.restarts, r.state, r.cgroup,
              json.dumps(r.detail, default=str)) for r in records],
        )


def read_censuses(store: Store, t0: float, t1: float) -> list[MemcgCensus]:
    from corescope.model.cgroups import MemcgCensus

    rows = store.query(
        "SELECT t, layout, hierarchy, kernel_count, live, dying, source, walk_ms, boot_id, "
        "uptime_s, stable, proc_cgroups_count, churn_interval_s FROM memcg_census "
        "WHERE t >= ? AND t <= ? ORDER BY t", (t0, t1))
    return [MemcgCensus(t=r[0], layout=r[1], hierarchy=r[2], kernel_count=r[3], live=r[4],
                        dying=r[5], source=r[6], walk_ms=r[7], boot_id=r[8], uptime_s=r[9],
                        stable=bool(r[10]), proc_cgroups_count=r[11], churn_interval_s=r[12])
            for r in rows]


def read_churn(store: Store, t0: float, t1: float) -> list[ChurnCount]:
    from corescope.model.cgroups import ChurnCount

    rows = store.query(
        "SELECT t, parent, created, removed, children, interval_s, method FROM memcg_churn "
        "WHERE t >= ? AND t <= ? ORDER BY t", (t0, t1))
    return [ChurnCount(*r) for r in rows]


def read_stat_costs(store: Store, t0: float, t1: float) -> list[StatReadCost]:
    from corescope.model.cgroups import StatReadCost

    rows = store.query(
        "SELECT t, file, median_ms, max_ms, reads, dying FROM memcg_stat_cost "
        "WHERE t >= ? AND t <= ? ORDER BY t", (t0, t1))
    return [StatReadCost(*r) for r in rows]


def read_restarts(store: Store, t0: float, t1: float) -> list[RestartRecord]:
    from corescope.model.cgroups import RestartRecord

    rows = store.query(
        "SELECT t, kind, name, restarts, state, cgroup, detail FROM unit_restarts "
        "WHERE t >= ? AND t <= ? ORDER BY t", (t0, t1))
    out: list[RestartRecord] = []
    for r in rows:
        try:
            detail = json.loads(r[6])
        except ValueError:
            detail = {}
        out.append(RestartRecord(r[0], r[1], r[2], r[3], r[4], r[5],
                                 detail if isinstance(detail, dict) else {}))
    return out


def retain(store: Store, cutoff_wall: float) -> None:
    with store.write() as db:
        for table in _TABLES:
            db.execute(f"DELETE FROM {table} WHERE t < ?", (cutoff_wall,))


def read_locations(store: Store, t0: float, t1: float) -> list[Location]:
    """The locations stored with the newest census in [t0, t1] (v2 only), worst first."""
    from corescope.model.cgroups import Location

    rows = store.query(
        "SELECT path, dying, subtree_dying FROM memcg_location WHERE t = (SELECT MAX(t) FROM "
        "memcg_location WHERE t >= ? AND t <= ?) ORDER BY dying DESC", (t0, t1))
    return [Location(r[0], r[1], r[2], None) for r in rows]


def span(store: Store) -> tuple[float, float] | None:
    lo, hi = store.query("SELECT MIN(t), MAX(t) FROM memcg_census")[0]
    return None if lo is None else (lo, hi)
