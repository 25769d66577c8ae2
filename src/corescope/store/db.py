"""The store: one SQLite database in WAL mode inside a private directory.

Each feature keeps its tables in its own module under store/ and lists its DDL in
`SCHEMA_MODULES`; `Store.open` applies them all. Every write is its own transaction (or a
savepoint of an enclosing one: a sensor's tick may commit its tables together), so a
`kill -9` loses at most the write in flight and never corrupts what was committed.

The schema has a version (`PRAGMA user_version`). Opening an older store runs the
`MIGRATIONS` it lacks, in order, each in its own transaction with the new version; a store
written by a newer corescope is refused rather than misread.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from corescope.errors import StoreFault
from corescope.store.watch import unwritable_flag

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


class StoreError(StoreFault, RuntimeError):
    """The store cannot be opened or used; the message says why and what to do."""

    def __init__(self, message: str, corrupt: bool = False) -> None:
        super().__init__(message)
        self.corrupt = corrupt


def is_corruption(exc: BaseException) -> bool:
    """SQLite says the file is damaged or not a database (as opposed to busy, full, denied)."""
    if isinstance(exc, StoreError):
        return exc.corrupt
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


def _corrupt_message(directory: Path, problem: object) -> str:
    return (f"store at {directory} is corrupt ({problem}); `corescope record` moves it aside "
            "and starts a fresh one on its next start")


def move_aside(directory: Path) -> Path:
    """Rename the database (and its -wal/-shm) to corescope.db.corrupt-<UTC time>, 0600."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    db = directory / DB_NAME
    aside = directory / f"{DB_NAME}.corrupt-{stamp}"
    n = 1
    while aside.exists():
        n += 1
        aside = directory / f"{DB_NAME}.corrupt-{stamp}-{n}"
    for suffix in ("", "-wal", "-shm"):
        src = db.with_name(DB_NAME + suffix)
        if src.exists():
            dst = aside.with_name(aside.name + suffix)
            os.rename(src, dst)
            dst.chmod(0o600)
    return aside


def ensure_private_dir(path: Path) -> None:
    """Create `path` 0700, or accept an existing one only if it is a real directory we own
    that nobody else can write to (then tightened to 0700): stacks and command lines must not
    land where others can swap files, and a file another user planted there (a symlink to
    /etc/shadow) must never be opened, by root least of all."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{path} is a symlink or not a directory; refusing to keep data there")
    if st.st_uid != os.geteuid():
        raise OSError(f"{path} belongs to uid {st.st_uid}, not us (uid {os.geteuid()}); "
                      "refusing to keep data there")
    if stat.S_IMODE(st.st_mode) & 0o022:
        raise OSError(f"{path} is writable by other users (mode "
                      f"{stat.S_IMODE(st.st_mode):04o}): anyone could have planted a file or "
                      "symlink in it; refusing to keep data there (use a private directory, "
                      f"or `chmod 700 {path}` after checking its contents)")
    if stat.S_IMODE(st.st_mode) & 0o077:
        path.chmod(0o700)


def check_own_file(path: Path) -> None:
    """An existing store file must be a regular file we own, never a symlink: the directory is
    private by now, so what passes this check stays what it is."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path} is a symlink or not a regular file; refusing to open it")
    if st.st_uid != os.geteuid():
        raise OSError(f"{path} belongs to uid {st.st_uid}, not us; refusing to open it")


def _private_db_file(db: Path) -> None:
    """The database file made (or narrowed to) 0600 before SQLite opens it: SQLite creates
    -wal and -shm with the database file's own mode (os_unix.c findCreateFileMode and the shm
    open), so they are born 0600 too. By the mode asked for, not by narrowing the umask,
    which is the whole process's: another thread's files would be born 0600 meanwhile."""
    fd = os.open(db, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != 0o600:
            os.fchmod(fd, 0o600)  # an existing one left wider, or the umask took owner bits
    finally:
        os.close(fd)


# --- schema versions -----------------------------------------------------------------------

def _drop_unusable_core_rows(conn: sqlite3.Connection) -> None:
    """Rows with a time that is not a finite epoch time before 2106 (NaN is stored as NULL)
    came from an unchecked clock or capture and stop blocks from being folded."""
    conn.execute("DELETE FROM core_recent WHERE t IS NULL OR NOT (t > 0 AND t < 4294967296.0) "
                 "OR interval_s IS NULL OR NOT (interval_s > 0 AND interval_s < 4294.0)")
    conn.execute("DELETE FROM core_blocks WHERE t0 IS NULL OR t1 IS NULL "
                 "OR NOT (t0 > 0 AND t1 < 4294967296.0)")


def _add_block_zone_column(conn: sqlite3.Connection) -> None:
    """Blocks gain a zone map (per CPU per mode maxima) written with them; older blocks keep
    NULL there and are read in full."""
    cols = [r[1] for r in conn.execute("PRAGMA table_info(core_blocks)")]
    if "zone" not in cols:
        conn.execute("ALTER TABLE core_blocks ADD COLUMN zone BLOB")


def _core_recent_without_rowid(conn: sqlite3.Connection) -> None:
    """The raw per-core rows move to a table clustered on its time key (WITHOUT ROWID): the
    old one kept a rowid b-tree and an index on t, two pages written per 1 Hz commit. Rows
    are copied as stored (same declared types, so the same values come back)."""
    try:
        conn.execute("SELECT rowid FROM core_recent LIMIT 0")
    except sqlite3.OperationalError:
        return  # no rowid: created by this version's DDL already
    conn.execute(_CORE_RECENT_V4.format(name="core_recent_v4"))
    # a NULL time was never readable (read_matrix skips it) and cannot be a WITHOUT ROWID key
    conn.execute("INSERT INTO core_recent_v4 (t, interval_s, payload) "
                 "SELECT t, interval_s, payload FROM core_recent WHERE t IS NOT NULL")
    conn.execute("DROP TABLE core_recent")
    conn.execute("ALTER TABLE core_recent_v4 RENAME TO core_recent")


# the table as version 4 has it (series.DDL creates the same for a new store)
_CORE_RECENT_V4 = ("CREATE TABLE {name} (t REAL PRIMARY KEY, interval_s REAL NOT NULL, "
                   "payload BLOB NOT NULL) WITHOUT ROWID")


def _zone_before_payload(conn: sqlite3.Connection) -> None:
    """Blocks keep their zone map ahead of the payload in the row. A query reads every zone
    map of its window but decodes few payloads, and SQLite reaches a column stored after a
    large blob only by walking the blob's overflow pages: with the zone map behind it, reading
    a 96-CPU day's zone maps read all 26 MB of its payloads. Rows are copied with their
    rowids (diagnostics name blocks by them)."""
    cols = [r[1] for r in conn.execute("PRAGMA table_info(core_blocks)")]
    if cols.index("zone") < cols.index("payload"):
        return  # created by this version's DDL already
    conn.execute(_CORE_BLOCKS_V6.format(name="core_blocks_v6"))
    conn.execute("INSERT INTO core_blocks_v6 (rowid, t0, t1, n, zone, payload) "
                 "SELECT rowid, t0, t1, n, zone, payload FROM core_blocks")
    conn.execute("DROP TABLE core_blocks")  # (and its index)
    conn.execute("ALTER TABLE core_blocks_v6 RENAME TO core_blocks")
    conn.execute("CREATE INDEX IF NOT EXISTS core_blocks_t1 ON core_blocks (t1)")


# the table as version 6 has it (series.DDL creates the same for a new store)
_CORE_BLOCKS_V6 = ("CREATE TABLE {name} (t0 REAL NOT NULL, t1 REAL NOT NULL, "
                   "n INTEGER NOT NULL, zone BLOB, payload BLOB NOT NULL)")


# (version, what it does, how). Version 1 is every table as the schema modules create them
# (stores from before versioning have user_version 0); append new steps, never edit old ones.
MIGRATIONS: tuple[tuple[int, str, object], ...] = (
    (1, "baseline tables", None),
    (2, "drop per-core rows with unusable times", _drop_unusable_core_rows),
    (3, "per-block zone maps for the per-core series", _add_block_zone_column),
    (4, "raw per-core rows keyed by time without a rowid", _core_recent_without_rowid),
    # the recorder's raw rows live in cores.journal beside the database until folded (see
    # store/journal.py); a version that does not read it would miss the newest minute
    (5, "per-core raw rows journalled beside the database", None),
    (6, "per-core blocks hold the zone map before the payload", _zone_before_payload),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]
# how long a reading command spends checking the store's integrity when it opens it
READER_CHECK_S = 0.25
# tables a reading command does not check when it opens the store: the per-core blocks are
# most of its pages (every compressed minute), and a query reads only the blocks it decodes;
# SQLite checks the pages it reads then (a damaged page is an error the command reports as
# a corrupt store, an undecodable block a skipped one)
READER_UNCHECKED = ("core_blocks",)


_SHM_NAME = os.fsencode(DB_NAME + "-shm")
# connections whose close would have written an immutable mapping (see Store._close_conn)
_ABANDONED: list[sqlite3.Connection] = []


class Store:
    """A handle on the store. Thread-safe: sensors on their own threads share one lock."""

    def __init__(self, directory: Path, conn: sqlite3.Connection) -> None:
        self.directory = directory
        self.conn = conn
        self.lock = threading.RLock()
        self._depth = 0  # write() nesting on the thread holding the lock
        self.closed = False
        self._pins = 0  # readers that need the connection after close (see pin)
        # SQLite maps <db>-shm and writes its pages directly: once the file is immutable, a
        # write into a page the kernel has cleaned is SIGBUS, not an error. Every use checks
        # its flags first (`check_mapped`), by name inside the directory SQLite opened (a
        # descriptor on a directory, unlike one on the file, holds no POSIX lock to lose)
        self._dir_fd = -1
        with suppress(OSError):
            self._dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        # set when close() had to leave the connection open (see close)
        self.abandoned: str | None = None

    @classmethod
    def open(cls, directory: str | Path, create: bool = True) -> Store:
        directory = Path(directory)
        db = directory / DB_NAME
        if not create and not db.exists():
            raise StoreError(f"no store at {directory} (run `corescope record` first)")
        conn: sqlite3.Connection | None = None
        try:
            ensure_private_dir(directory)
            files = (db, db.with_name(DB_NAME + "-wal"), db.with_name(DB_NAME + "-shm"))
            for p in files:
                check_own_file(p)
            _private_db_file(db)
            conn = sqlite3.connect(
                str(db), timeout=10.0, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: crash-safe for kill -9
            conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            conn.execute("PRAGMA busy_timeout=10000")
            for p in files[1:]:  # left wider by an older corescope
                if p.exists() and stat.S_IMODE(p.stat().st_mode) & 0o077:
                    p.chmod(0o600)
        except (OSError, sqlite3.Error) as exc:
            if conn is not None:  # else the traceback's cycle holds its descriptors until gc
                conn.close()
            if is_corruption(exc):
                raise StoreError(_corrupt_message(directory, exc), corrupt=True) from exc
            raise StoreError(f"cannot open store at {directory}: {exc}") from exc
        store = cls(directory, conn)
        try:
            store._apply_schema()
            if not create:
                # a reader checks what it can in a moment, so a damaged store is reported
                # rather than read as "nothing there"; the recorder checks all of it
                problem = store.integrity_problem(budget_s=READER_CHECK_S,
                                                  skip=READER_UNCHECKED)
                if problem is not None:
                    raise StoreError(_corrupt_message(directory, problem), corrupt=True)
        except BaseException:
            store._close_conn()  # the connection and the directory's descriptor
            raise
        return store

    @classmethod
    def open_or_replace(cls, directory: str | Path, log: Callable[[str], None]) -> Store:
        """For the recorder: open the store, and if it is corrupt, move it aside (kept, 0600,
        named with the time) and start a fresh one, saying so, so recording goes on."""
        directory = Path(directory)
        problem: str | None
        try:
            store = cls.open(directory)
        except StoreError as exc:
            if not exc.corrupt:
                raise
            problem = str(exc.__cause__ or exc)
        else:
            problem = store.integrity_problem()
            if problem is None:
                return store
            store.close()
        aside = move_aside(directory)
        log(f"store {directory / DB_NAME} is corrupt ({problem}); moved it aside to {aside} "
            "and started a fresh store")
        return cls.open(directory)

    def integrity_problem(self, budget_s: float | None = None,
                          skip: tuple[str, ...] = ()) -> str | None:
        """SQLite's quick check (reads every page once): None when the store is sound, or
        when the check ran out of `budget_s` before finding anything. With `skip`, every
        table but those is checked (with its indexes), one at a time."""
        deadline = None if budget_s is None else time.monotonic() + budget_s

        def out_of_time() -> bool:
            return deadline is not None and time.monotonic() > deadline

        try:
            with self.lock:
                self.conn.set_progress_handler(out_of_time, 10_000)
                try:
                    if not skip:
                        rows = self.conn.execute("PRAGMA quick_check(5)").fetchall()
                    else:
                        rows = []
                        for (name,) in self.conn.execute(
                                "SELECT name FROM sqlite_master WHERE type = 'table'"
                                ).fetchall():
                            if name not in skip:
                                rows += self.conn.execute(
                                    "SELECT * FROM pragma_quick_check(?)",
                                    (name,)).fetchall()
                finally:
                    self.conn.set_progress_handler(None, 0)
        except sqlite3.OperationalError as exc:
            if "interrupt" in str(exc).lower():
                return None  # no time to check it all: nothing found in what was read
            return str(exc) if is_corruption(exc) else None
        except sqlite3.DatabaseError as exc:
            return str(exc)
        problems = [r[0] for r in rows if r[0] != "ok"]
        return "; ".join(problems) if problems else None

    def _apply_schema(self) -> None:
        try:
            with self.lock:
                version = self.conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"store at {self.directory} has schema version {version}, written by a "
                        f"newer corescope; this one knows up to version {SCHEMA_VERSION}. "
                        "Upgrade corescope, or point --store elsewhere")
                # executescript manages its own transaction; each DDL is idempotent
                for name in SCHEMA_MODULES:
                    self.conn.executescript(importlib.import_module(name).DDL)
                for step, _what, fn in MIGRATIONS:
                    if step <= version:
                        continue
                    self.conn.execute("BEGIN IMMEDIATE")
                    try:
                        # another process may have migrated since we looked
                        if self.conn.execute("PRAGMA user_version").fetchone()[0] < step:
                            if callable(fn):
                                fn(self.conn)
                            self.conn.execute(f"PRAGMA user_version = {int(step)}")
                    except BaseException:
                        self.conn.execute("ROLLBACK")
                        raise
                    self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if is_corruption(exc):
                raise StoreError(_corrupt_message(self.directory, exc), corrupt=True) from exc
            raise StoreError(f"store at {self.directory} is not usable: {exc}") from exc

    def check_mapped(self) -> None:
        """Raise StoreError, touching nothing, when SQLite's mapped index cannot be written:
        one statx (about a microsecond) before each statement, so that an immutable -shm
        is an error a sensor reports, not a SIGBUS that kills the recorder."""
        if self._dir_fd >= 0:
            flag = unwritable_flag(self._dir_fd, _SHM_NAME)
            if flag is not None:
                raise StoreError(f"store file {self.directory / (DB_NAME + '-shm')} is {flag} "
                                 "(chattr): the store cannot be used until it is writable")

    def schema_version(self) -> int:
        return int(self.query("PRAGMA user_version")[0][0])

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One transaction; committed on success, rolled back on error.

        Inside another `write` on the same thread it is a savepoint of that one (an error
        undoes only its own writes; the outer one commits or rolls back all), so a sensor can
        store its several tables in one commit: at 1 Hz the commit is most of a write's cost.
        """
        with self.lock:
            if self._depth:
                yield from self._nested()
                return
            self.check_mapped()
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self._depth = 0
                self.conn.execute("ROLLBACK")
                raise
            self._depth = 0
            try:
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:  # a failed COMMIT may leave it open
                    with suppress(sqlite3.Error):
                        self.conn.execute("ROLLBACK")
                raise

    def _nested(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("SAVEPOINT nested_write")
        self._depth += 1
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK TO nested_write")
            self.conn.execute("RELEASE nested_write")
            raise
        finally:
            self._depth -= 1
        self.conn.execute("RELEASE nested_write")

    def query(self, sql: str, params: tuple | list = ()) -> list[tuple]:
        with self.lock:
            if not self._depth:
                self.check_mapped()
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
            self.closed = True
            if not self._pins:  # else the last unpin closes it
                self._close_conn()

    def _close_conn(self) -> None:
        """Close the connection, unless its mapped index is immutable: SQLite's close
        checkpoints, writing that mapping (SIGBUS). Then the connection is left open for the
        process's life (every commit is in the WAL, which the next open replays) and
        `abandoned` says why."""
        try:
            self.check_mapped()
        except StoreError as exc:
            self.abandoned = str(exc)
            _ABANDONED.append(self.conn)
            # a reference that is never dropped: not even interpreter shutdown closes it
            import ctypes

            ctypes.pythonapi.Py_IncRef(ctypes.py_object(self.conn))
        else:
            self.conn.close()
        if self._dir_fd >= 0:
            os.close(self._dir_fd)
            self._dir_fd = -1

    def pin(self) -> None:
        """Keep the connection open past `close` until `unpin`: a matrix read lazily reads
        its blocks' payloads when it is rendered, after the command closed its evidence (and
        after `analyze` removed its temporary store: the open file is still read)."""
        with self.lock:
            self._pins += 1

    def unpin(self) -> None:
        with self.lock:
            self._pins -= 1
            if self.closed and not self._pins:
                self._close_conn()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
