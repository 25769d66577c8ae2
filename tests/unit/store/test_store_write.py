"""Store.write nests: an inner write is a savepoint of the outer transaction, so a sensor can
commit several tables at once and an error still undoes exactly what it should."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from corescope.store.db import Store


def _rows(store: Store) -> list[float]:
    return [r[0] for r in store.query("SELECT t FROM core_recent ORDER BY t")]


def _put(conn, t: float) -> None:  # type: ignore[no-untyped-def]
    conn.execute("INSERT INTO core_recent (t, interval_s, payload) VALUES (?, 1.0, x'00')",
                 (t,))


def test_inner_error_undoes_only_the_inner_writes(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        with store.write() as c:
            _put(c, 1.0)
            with pytest.raises(RuntimeError), store.write() as inner:
                _put(inner, 2.0)
                raise RuntimeError("boom")
            with store.write() as inner:
                _put(inner, 3.0)
        assert _rows(store) == [1.0, 3.0]
        # a new connection sees it: committed, not just visible to the writer
        with Store.open(tmp_path / "s", create=False) as other:
            assert _rows(other) == [1.0, 3.0]


def test_outer_error_undoes_everything_inside(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        with pytest.raises(RuntimeError), store.write() as c:
            _put(c, 1.0)
            with store.write() as inner:
                _put(inner, 2.0)
            raise RuntimeError("boom")
        assert _rows(store) == []
        with store.write() as c:  # and the store takes writes again
            _put(c, 4.0)
        assert _rows(store) == [4.0]


def test_a_writer_on_another_thread_waits_for_the_outer_commit(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s") as store:
        done = threading.Event()

        def other() -> None:
            with store.write() as c:  # not nested: its own transaction after ours
                _put(c, 9.0)
            done.set()

        with store.write() as c:
            _put(c, 1.0)
            t = threading.Thread(target=other)
            t.start()
            assert not done.wait(0.2)
        t.join(5)
        assert done.is_set() and _rows(store) == [1.0, 9.0]
