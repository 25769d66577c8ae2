"""Schema versions: old stores are migrated on open, newer ones refused."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import run_cli
from corescope.store.db import DB_NAME, SCHEMA_VERSION, Store, StoreError
from corescope.store.series import read_matrix


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
