"""The per-core samples' journal (store/journal.py): rows round-trip, a torn or damaged file
is a diagnostic (never a traceback), and the fold stores every row exactly once (after a real
kill -9 too: tests/integration/test_journal_kill9.py)."""

from __future__ import annotations

import os
import stat
import struct
import zlib
from pathlib import Path

import pytest

from corescope.store import journal
from corescope.store.db import Store
from corescope.store.series import read_matrix, read_samples, time_span
from corescope.store.series_writer import SeriesWriter
from support.synth_samples import rand_samples, same

NCPU = 3


def _blocks(store: Store) -> int:
    return int(store.query("SELECT COALESCE(SUM(n), 0) FROM core_blocks")[0][0])


def _recent(store: Store) -> int:
    return int(store.query("SELECT COUNT(*) FROM core_recent")[0][0])


def test_rows_round_trip_and_readers_see_them_before_the_fold(tmp_path: Path) -> None:
    samples = rand_samples(25, NCPU)
    with Store.open(tmp_path / "s") as store:
        w = SeriesWriter(store, journal_cpus=NCPU)
        assert w.journal_note is None
        for x in samples:
            w.append(x)
        assert _recent(store) == 0 and _blocks(store) == 0  # nothing committed per tick
        st = (tmp_path / "s" / journal.NAME).lstat()
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        got = journal.read(tmp_path / "s")
        assert got.diagnostics == [] and len(got.rows) == 25
        assert [r[0] for r in got.rows] == [x.t for x in samples]
        same(read_samples(store, 0, 2e9), samples)
        assert time_span(store) == (samples[0].t, samples[-1].t)
        # a reader in another connection (another process) sees the same
        with Store.open(tmp_path / "s", create=False) as other:
            same(read_samples(other, 0, 2e9), samples)
        w.close()
        assert _blocks(store) == 25 and journal.read(tmp_path / "s").rows == []
        same(read_samples(store, 0, 2e9), samples)


def test_the_minute_fold_resets_the_journal(tmp_path: Path) -> None:
    samples = rand_samples(130, NCPU)
    with Store.open(tmp_path / "s") as store:
        w = SeriesWriter(store, block_samples=60, journal_cpus=NCPU)
        for x in samples:
            w.append(x)
        assert _blocks(store) == 120
        assert len(journal.read(tmp_path / "s").rows) == 10
        same(read_samples(store, 0, 2e9), samples)
        w.close()
        assert _blocks(store) == 130


def _append_rows(data: bytearray, epoch: int, rows: list[tuple[float, float, bytes]]) -> None:
    """Rows laid out as the module's docstring says (checked against the writer's file)."""
    pos = journal.HEADER_SIZE
    for t, iv, payload in rows:
        body = struct.pack("<IIdd", epoch, 0, t, iv) + payload
        data[pos : pos + 8] = struct.pack("<II", 8 + len(body), zlib.crc32(body))
        data[pos + 8 : pos + 8 + len(body)] = body
        pos += 8 + len(body)


def _journal_bytes(tmp_path: Path, n: int) -> bytes:
    with Store.open(tmp_path / "w") as store:
        w = SeriesWriter(store, journal_cpus=NCPU)
        for x in rand_samples(n, NCPU):
            w.append(x)
        data = (tmp_path / "w" / journal.NAME).read_bytes()
        w._journal.close()  # type: ignore[union-attr]  # as a kill leaves it: not folded
    return data


def test_the_layout_is_the_documented_one(tmp_path: Path) -> None:
    data = _journal_bytes(tmp_path, 4)
    got = journal.parse(data, journal.JournalRead(), "x")
    again = bytearray(len(data))
    again[: journal.HEADER_SIZE] = data[: journal.HEADER_SIZE]
    _append_rows(again, got.epoch, got.rows)
    assert bytes(again) == data


def _read_store(tmp_path: Path, data: bytes) -> tuple[int, list[str]]:
    d = tmp_path / "r"
    with Store.open(d):
        pass
    (d / journal.NAME).write_bytes(data)
    os.chmod(d / journal.NAME, 0o600)
    with Store.open(d, create=False) as store:
        m = read_matrix(store, 0, 2e9)
        return len(m), [x.message for x in m.diagnostics]


def _row_at(data: bytes, k: int) -> int:
    got = journal.parse(bytes(data), journal.JournalRead(), "x")
    return journal.HEADER_SIZE + sum(journal.ROW_HEAD + len(r[2]) for r in got.rows[:k])


@pytest.mark.parametrize("cut", ["zeroed-tail", "flipped-byte", "stale-epoch"])
def test_a_torn_row_ends_the_journal_and_the_rows_before_it_stand(tmp_path: Path,
                                                                   cut: str) -> None:
    data = bytearray(_journal_bytes(tmp_path, 5))
    last = _row_at(data, 4)
    if cut == "zeroed-tail":  # a kill mid-copy: the row's end never written
        data[last + journal.ROW_HEAD : last + journal.ROW_HEAD + 8] = bytes(8)
    elif cut == "flipped-byte":  # a power cut writing back part of a page
        data[last + journal.ROW_HEAD + 5] ^= 0xFF
    else:  # the header moved to the next epoch: every row there is stale
        data[8] += 1
    n, diags = _read_store(tmp_path, bytes(data))
    # the row in flight is the one lost, silently: that is what a kill -9 leaves
    assert (n, diags) == ((0, []) if cut == "stale-epoch" else (4, []))


def test_a_damaged_row_hides_the_rows_after_it(tmp_path: Path) -> None:
    data = bytearray(_journal_bytes(tmp_path, 5))
    data[_row_at(data, 2) + 4] ^= 0x01  # the third row's crc
    assert _read_store(tmp_path, bytes(data)) == (2, [])


@pytest.mark.parametrize("data", [
    b"", b"CSJ1", b"\x00" * 4096, os.urandom(4096),
    # version 1 (a row count in the header) or a later one
    struct.pack("<4sIIIQ", b"CSJ1", 1, 0, 0, 4096).ljust(4096, b"\0"),
    struct.pack("<4sIIIQ", b"CSJ1", 3, 0, 0, 4096).ljust(4096, b"\0"),
], ids=["empty", "magic-only", "zeros", "random", "version-1", "version-3"])
def test_a_garbage_journal_is_a_diagnostic(tmp_path: Path, data: bytes) -> None:
    n, diags = _read_store(tmp_path, data)
    assert n == 0 and len(diags) == 1
    assert "journal" in diags[0]


@pytest.mark.parametrize("row", [
    struct.pack("<I", 1 << 30),  # a size past the end of the file
    struct.pack("<IIIIdd", 31, 0, 7, 0, 1.7e9, 1.0),  # smaller than a row's head
    os.urandom(64 * 1024),
], ids=["huge-row", "tiny-row", "random-rows"])
def test_garbage_rows_under_a_good_header_are_no_rows(tmp_path: Path, row: bytes) -> None:
    head = struct.pack("<4sIIIQ", b"CSJ1", journal.VERSION, 7, 0, 4096).ljust(64, b"\0")
    assert _read_store(tmp_path, head + row) == (0, [])


def test_a_symlinked_journal_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "r"
    with Store.open(d):
        pass
    secret = tmp_path / "secret"
    secret.write_bytes(_journal_bytes(tmp_path, 3))
    (d / journal.NAME).symlink_to(secret)
    with Store.open(d, create=False) as store:
        m = read_matrix(store, 0, 2e9)
    assert len(m) == 0 and "cannot read the journal" in m.diagnostics[0].message
    # a recorder says so and replaces the link (rename does not follow it) with its own file
    before = secret.read_bytes()
    with Store.open(d) as store:
        w = SeriesWriter(store, journal_cpus=NCPU)
        assert "cannot read the journal" in (w.journal_note or "")
        assert w._journal is not None
        w.close()
    assert secret.read_bytes() == before
    assert not (d / journal.NAME).is_symlink()


def test_a_second_writer_commits_rows_to_sqlite(tmp_path: Path) -> None:
    samples = rand_samples(6, NCPU)
    with Store.open(tmp_path / "s") as store:
        first = SeriesWriter(store, journal_cpus=NCPU)
        second = SeriesWriter(store, journal_cpus=NCPU)
        assert first.journal_note is None
        assert "another recorder" in (second.journal_note or "")
        for x in samples[:3]:
            first.append(x)
        for x in samples[3:]:
            second.append(x)
        assert _recent(store) == 3
        same(read_samples(store, 0, 2e9), samples)
        second.close()
        first.close()
        same(read_samples(store, 0, 2e9), samples)
        assert _recent(store) == 0 and _blocks(store) == 6
        # the first one's close let go of the lock: the next recorder journals again
        third = SeriesWriter(store, journal_cpus=NCPU)
        assert third.journal_note is None
        third.close()


def test_a_full_journal_falls_back_to_sqlite(tmp_path: Path) -> None:
    samples = rand_samples(50, NCPU)
    with Store.open(tmp_path / "s") as store:
        w = SeriesWriter(store, block_samples=10**6, journal_cpus=NCPU)
        w._journal.create(w._journal.epoch, 4096)  # type: ignore[union-attr]  # ~30 rows
        for x in samples:
            w.append(x)
        kept = len(journal.read(tmp_path / "s").rows)
        assert 0 < kept < 50 and _recent(store) == 50 - kept
        same(read_samples(store, 0, 2e9), samples)
        w.close()
        assert _recent(store) == 0 and _blocks(store) == 50
        same(read_samples(store, 0, 2e9), samples)


def test_rows_an_older_version_committed_are_folded_at_start(tmp_path: Path) -> None:
    samples = rand_samples(8, NCPU)
    with Store.open(tmp_path / "s") as store:
        old = SeriesWriter(store)  # no journal: every row committed to core_recent
        for x in samples:
            old.append(x)
        assert _recent(store) == 8
        w = SeriesWriter(store, journal_cpus=NCPU)
        assert _recent(store) == 0 and _blocks(store) == 8
        same(read_samples(store, 0, 2e9), samples)
        w.close()
