"""A store that cannot be opened (written by a newer corescope) is refused without leaking a
descriptor: `serve` opens the store on every request, so one leaked per failed open runs a
long-lived server out of descriptors."""

from __future__ import annotations

import gc
import os
import sqlite3
from pathlib import Path

import pytest

from corescope.store.db import DB_NAME, Store, StoreError


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("create", [True, False])
def test_failed_opens_leak_no_descriptor(tmp_path: Path, create: bool) -> None:
    Store.open(tmp_path / "s").close()
    conn = sqlite3.connect(tmp_path / "s" / DB_NAME)
    conn.execute("PRAGMA user_version = 9999")  # a schema from the future
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        Store.open(tmp_path / "s", create=create)  # the first may open lazy module state
    before = _open_fds()
    for _ in range(50):
        with pytest.raises(StoreError, match="newer"):
            Store.open(tmp_path / "s", create=create)
    assert _open_fds() == before


def test_a_corrupt_store_is_refused_with_its_descriptors_closed(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store, store.write() as conn:
        conn.execute("CREATE TABLE filler (x BLOB)")
        conn.executemany("INSERT INTO filler VALUES (?)", [(os.urandom(900),)] * 200)
    db = tmp_path / "s" / DB_NAME
    raw = bytearray(db.read_bytes())
    for page in range(1, len(raw) // 4096):  # every page's cells overwritten, the header kept
        raw[page * 4096 + 8 : page * 4096 + 1000] = os.urandom(992)
    db.write_bytes(raw)
    # gc off: the failed open's traceback is a reference cycle, and the gc's timing must not
    # be what closes the descriptors (a server under load runs out before a collection)
    gc.disable()
    try:
        before = _open_fds()
        for _ in range(20):
            with pytest.raises(StoreError) as err:
                Store.open(tmp_path / "s", create=False)
            assert err.value.corrupt
            del err
        assert _open_fds() == before
    finally:
        gc.enable()
