"""Schema versions: old stores are migrated on open, newer ones refused."""

from __future__ import annotations

import sqlite3

import pytest

from corescope.store.db import DB_NAME, SCHEMA_VERSION, Store, StoreError
from corescope.store.series import read_matrix
from support import run_cli


def test_a_new_store_has_the_current_version(tmp_path):
    with Store.open(tmp_path / "s") as s:
        assert s.schema_version() == SCHEMA_VERSION >= 2


def test_an_unversioned_store_is_migrated_and_keeps_its_data(tmp_path):
    d = tmp_path / "s"
    d.mkdir(mode=0o700)
    # a store as corescope wrote it before versions: the tables, user_version 0, and raw rows
    # with times an unchecked clock gave (NaN lands as NULL, inf as Inf)
    conn = sqlite3.connect(d / DB_NAME)
    conn.executescript("""
        CREATE TABLE core_recent (t REAL PRIMARY KEY, interval_s REAL NOT NULL,
                                  payload BLOB NOT NULL);
        CREATE TABLE core_blocks (t0 REAL NOT NULL, t1 REAL NOT NULL, n INTEGER NOT NULL,
                                  payload BLOB NOT NULL);
    """)
    row = (1).to_bytes(4, "little") + (0).to_bytes(4, "little") + bytes(40)
    conn.executemany("INSERT INTO core_recent VALUES (?, ?, ?)", [
        (1.7e9, 1.0, row), (None, 1.0, row), (float("inf"), 1.0, row), (1.7e9 + 1, -3.0, row),
    ])
    conn.commit()
    conn.close()
    (d / DB_NAME).chmod(0o600)
    with Store.open(d) as s:
        assert s.schema_version() == SCHEMA_VERSION
        assert s.query("SELECT t FROM core_recent") == [(1.7e9,)]
        assert len(read_matrix(s, 0, 4e9)) == 1
        # every feature's tables exist after the migration
        assert s.query("SELECT COUNT(*) FROM sqlite_master WHERE name = 'kernel_events'")


def test_a_store_from_a_newer_corescope_is_refused(tmp_path):
    d = tmp_path / "s"
    Store.open(d).close()
    conn = sqlite3.connect(d / DB_NAME)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer corescope"):
        Store.open(d)
    proc = run_cli("--store", str(d), "cores", "--json")
    assert proc.returncode == 2
    assert "newer corescope" in proc.stderr and "Traceback" not in proc.stderr
    # and nothing was changed
    conn = sqlite3.connect(d / DB_NAME)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    conn.close()


def _core_recent_indexes(s: Store) -> list[tuple]:
    return s.query("SELECT name FROM sqlite_master WHERE tbl_name = 'core_recent' "
                   "AND type = 'index'")


def test_raw_core_rows_are_one_btree_keyed_by_time(tmp_path):
    # a 1 Hz commit then writes one page, not a table page and a key index page
    with Store.open(tmp_path / "s") as s:
        assert _core_recent_indexes(s) == []
        with pytest.raises(sqlite3.OperationalError, match="rowid"):
            s.query("SELECT rowid FROM core_recent")


def test_a_version_3_store_keeps_its_raw_rows_through_version_4(tmp_path):
    from corescope.sources.procstat import delta, parse_proc_stat
    from corescope.store.series_writer import SeriesWriter

    d = tmp_path / "s"
    with Store.open(d) as s:  # rows as this version writes them, in the old table layout
        s.conn.executescript("""
            DROP TABLE core_recent;
            CREATE TABLE core_recent (t REAL PRIMARY KEY, interval_s REAL NOT NULL,
                                      payload BLOB NOT NULL);
            PRAGMA user_version = 3;
        """)
        w = SeriesWriter(s)
        prev = parse_proc_stat(b"cpu  1 0 1 9 0 0 0 0 0 0\ncpu0 1 0 1 9 0 0 0 0 0 0\n"
                               b"cpu1 0 0 0 9 0 0 0 0 0 0\n")
        for k in range(5):
            cur = parse_proc_stat(
                f"cpu  1 0 1 9 0 0 0 0 0 0\ncpu0 {1 + 7 * k} 0 1 {9 + k} 0 0 0 0 0 0\n"
                f"cpu1 {3 * k} 0 {k} 9 0 0 0 0 0 0\n".encode())
            w.append(delta(prev, cur, 1.7e9 + k + 0.25, 1.0 + k / 1000))
            prev = cur
        # what an older, unchecked recorder could have left stays as it was: still skipped
        s.conn.execute("INSERT INTO core_recent VALUES (?, ?, ?)", (1.7e9 + 9, 1.0, b"\x01"))
        before = s.query("SELECT t, interval_s, payload FROM core_recent ORDER BY t")
        m0 = read_matrix(s, 0, 4e9)
        assert _core_recent_indexes(s)  # the old layout had the extra b-tree
    with Store.open(d) as s:
        assert s.schema_version() == SCHEMA_VERSION >= 4
        assert _core_recent_indexes(s) == []
        assert s.query("SELECT t, interval_s, payload FROM core_recent ORDER BY t") == before
        m1 = read_matrix(s, 0, 4e9)
        for name in ("t", "interval_s", "cpus", "present", "ticks"):
            assert (getattr(m0, name) == getattr(m1, name)).all(), name
        assert [str(x) for x in m1.diagnostics] == [str(x) for x in m0.diagnostics] != []
        SeriesWriter(s).flush()  # and they fold into a block as before
        assert len(read_matrix(s, 0, 4e9)) == 5
