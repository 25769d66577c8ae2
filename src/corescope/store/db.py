"""The store: one SQLite database in WAL mode inside a private directory.

Each feature keeps its tables in its own module under store/ and lists its DDL in
`SCHEMA_MODULES`; `Store.open` applies them all. Every write is its own transaction, so a
`kill -9` loses at most the write in flight and never corrupts what was committed.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DB_NAME = "corescope.db"

# Modules that define `DDL: str` and optionally `retain(store, cutoff_wall)`.
SCHEMA_MODULES: tuple[str, ...] = (
    "corescope.store.series",
    "corescope.store.profiles",
    "corescope.store.census",
    "corescope.store.events",
    "corescope.store.imports",
    "corescope.store.meta",
    "corescope.store.pressure",
)


class StoreError(RuntimeError):
    """The store cannot be opened or used; the message says why and what to do."""


def default_store_dir() -> Path:
    if os.geteuid() == 0:
        return Path("/var/lib/corescope")
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "corescope"


def ensure_private_dir(path: Path) -> None:
    """Create `path` 0700, or accept an existing one only if it is a real directory we own
    (tightened to 0700): stacks and command lines must not land where others can swap files."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{path} is a symlink or not a directory; refusing to keep data there")
    if st.st_uid != os.geteuid():
        raise OSError(f"{path} belongs to uid {st.st_uid}, not us (uid {os.geteuid()}); "
                      "refusing to keep data there")
    if stat.S_IMODE(st.st_mode) & 0o077:
        path.chmod(0o700)


class Store:
    """A handle on the store. Thread-safe: sensors on their own threads share one lock."""

    def __init__(self, directory: Path, conn: sqlite3.Connection) -> None:
        self.directory = directory
        self.conn = conn
        self.lock = threading.RLock()

    @classmethod
    def open(cls, directory: str | Path, create: bool = True) -> Store:
        directory = Path(directory)
        db = directory / DB_NAME
        if not create and not db.exists():
            raise StoreError(f"no store at {directory} (run `corescope record` first)")
        try:
            ensure_private_dir(directory)
            old = os.umask(0o077)  # the db, -wal and -shm files are born 0600
            try:
                conn = sqlite3.connect(
                    str(db), timeout=10.0, isolation_level=None, check_same_thread=False
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: crash-safe for kill -9
                conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
                conn.execute("PRAGMA busy_timeout=10000")
            finally:
                os.umask(old)
            for p in (db, db.with_name(DB_NAME + "-wal"), db.with_name(DB_NAME + "-shm")):
                if p.exists() and stat.S_IMODE(p.stat().st_mode) & 0o077:
                    p.chmod(0o600)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open store at {directory}: {exc}") from exc
        store = cls(directory, conn)
        store._apply_schema()
        return store

    def _apply_schema(self) -> None:
        # executescript manages its own transaction; each DDL is idempotent (IF NOT EXISTS)
        try:
            with self.lock:
                for name in SCHEMA_MODULES:
                    self.conn.executescript(importlib.import_module(name).DDL)
        except sqlite3.Error as exc:
            raise StoreError(f"store at {self.directory} is not usable: {exc}") from exc

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One transaction; committed on success, rolled back on error."""
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def query(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with self.lock:
            return self.conn.execute(sql, params).fetchall()

    def size_bytes(self) -> int:
        """Bytes in use by the database (free pages excluded) plus the WAL."""
        with self.lock:
            page = self.conn.execute("PRAGMA page_size").fetchone()[0]
            count = self.conn.execute("PRAGMA page_count").fetchone()[0]
            free = self.conn.execute("PRAGMA freelist_count").fetchone()[0]
        return page * (count - free)

    def reclaim(self) -> None:
        """Give freed pages back to the filesystem and trim the WAL."""
        with self.lock:
            self.conn.execute("PRAGMA incremental_vacuum")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
