"""Where a store's data came from: one row per file `corescope analyze` (the importer) read,
imported or skipped, so a kept store can say what it holds and what it left out."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from corescope.store.db import Store

DDL = """
CREATE TABLE IF NOT EXISTS imports (
    id INTEGER PRIMARY KEY,
    imported_at REAL NOT NULL,   -- wall clock of the import
    file TEXT NOT NULL,          -- as given, or bundle!member for bundle members
    kind TEXT,                   -- detected kind; NULL when unknown
    records INTEGER NOT NULL,
    span_start REAL,             -- UTC epoch seconds of the data written
    span_end REAL,
    cpus TEXT NOT NULL,          -- JSON list
    status TEXT NOT NULL,        -- imported | partial | unanchored | skipped
    reason TEXT,                 -- why skipped, or what was approximated
    sha256 TEXT                  -- of the decompressed content (re-imports are recognised)
);
CREATE INDEX IF NOT EXISTS imports_sha ON imports(sha256);
"""


@dataclass(frozen=True)
class ImportRow:
    file: str
    kind: str | None
    records: int
    span: tuple[float, float] | None
    cpus: tuple[int, ...]
    status: str
    reason: str | None
    sha256: str | None = None
    imported_at: float = 0.0


def record_imports(store: Store, rows: Sequence[ImportRow], at: float | None = None) -> None:
    now = time.time() if at is None else at
    with store.write() as c:
        c.executemany(
            "INSERT INTO imports (imported_at, file, kind, records, span_start, span_end, cpus, "
            "status, reason, sha256) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [(now, r.file, r.kind, r.records, r.span[0] if r.span else None,
              r.span[1] if r.span else None, json.dumps(list(r.cpus)), r.status, r.reason,
              r.sha256) for r in rows])


def read_imports(store: Store) -> list[ImportRow]:
    out = []
    for at, file, kind, records, s0, s1, cpus, status, reason, sha in store.query(
            "SELECT imported_at, file, kind, records, span_start, span_end, cpus, status, "
            "reason, sha256 FROM imports ORDER BY id"):
        try:
            cl = tuple(int(c) for c in json.loads(cpus))
        except (ValueError, TypeError):
            cl = ()
        out.append(ImportRow(file, kind, records, (s0, s1) if s0 is not None else None, cl,
                             status, reason, sha, at))
    return out


def imported_before(store: Store, sha256: str) -> float | None:
    """When content with this hash was imported into this store (and written), else None."""
    rows = store.query("SELECT MIN(imported_at) FROM imports WHERE sha256 = ? AND "
                       "status != 'skipped'", (sha256,))
    return rows[0][0] if rows and rows[0][0] is not None else None
