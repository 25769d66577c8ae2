"""The store's files are 0600 in a 0700 directory by the modes they are created with, not by
narrowing the process-wide umask while they are made: a file another thread creates while a
store opens (the recorder's sensors, serve's page threads) keeps the mode it asked for."""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
from pathlib import Path

from corescope.store.db import DB_NAME, Store
from support.thread_modes import modes_beside

_FILES = (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm")


def _modes_opened_under_umask_0(directory: Path) -> dict[str, int]:
    """The modes of the database, -wal and -shm of a store opened and written to while the
    umask allows everything."""
    old = os.umask(0)
    try:
        with Store.open(directory) as st:
            st.conn.execute("CREATE TABLE IF NOT EXISTS t (x)")
            return {f: stat.S_IMODE(os.stat(directory / f).st_mode) for f in _FILES}
    finally:
        os.umask(old)


def test_a_file_another_thread_creates_while_stores_open_keeps_its_mode(
        tmp_path: Path) -> None:
    n = itertools.count()

    def open_one() -> None:
        with Store.open(tmp_path / f"s{next(n)}") as st:
            st.conn.execute("SELECT 1")

    assert modes_beside(open_one, tmp_path / "other") == {0o644}


def test_db_wal_and_shm_are_0600_whatever_the_umask(tmp_path: Path) -> None:
    """SQLite creates -wal and -shm with the database file's own mode (os_unix.c,
    findCreateFileMode), so the database is created 0600 and they follow."""
    assert _modes_opened_under_umask_0(tmp_path / "s") == dict.fromkeys(_FILES, 0o600)
    assert stat.S_IMODE(os.stat(tmp_path / "s").st_mode) == 0o700


def test_an_existing_wider_database_is_narrowed_before_its_wal_is_made(tmp_path: Path) -> None:
    """A database left 0644 (copied in, an old version): narrowed to 0600 before SQLite
    makes its -wal and -shm, which take its mode."""
    Store.open(tmp_path / "s").close()
    for f in _FILES[1:]:  # gone after a clean close already, as a rule
        with contextlib.suppress(FileNotFoundError):
            (tmp_path / "s" / f).unlink()
    os.chmod(tmp_path / "s" / DB_NAME, 0o644)
    assert _modes_opened_under_umask_0(tmp_path / "s") == dict.fromkeys(_FILES, 0o600)
