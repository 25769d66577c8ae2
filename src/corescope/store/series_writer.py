"""Writing the per-core series: each sample committed at once as a raw row (or journalled),
folded every BLOCK_SAMPLES samples into one columnar block with its zone map (see
store/series.py for the layout)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence

import numpy as np

from corescope.errors import InvalidInput
from corescope.model.cores import CoreSample
from corescope.model.matrix import NF, CoreMatrix
from corescope.store import journal
from corescope.store.db import Store
from corescope.store.series_codec import (
    MAX_BLOCK_SPAN_S,
    SeriesFormatError,
    block_parts,
    check_sample_time,
    compressor,
    decode_row,
    encode_row,
)
from corescope.store.series_zones import encode_zone

BLOCK_SAMPLES = 60


class InvalidSample(InvalidInput, ValueError):
    """A sample whose time or interval cannot be stored; the message says which and why."""


def block_row(t: np.ndarray, interval_s: np.ndarray, cpus: np.ndarray, ticks: np.ndarray,
              present: np.ndarray) -> tuple[float, float, int, bytes, bytes]:
    """(t0, t1, n, payload, zone): a core_blocks row for these samples (see encode_arrays)."""
    head, vals = block_parts(t, interval_s, cpus, ticks, present)
    return (float(t[0]), float(t[-1]), len(t), compressor().compress(head + vals),
            encode_zone(head, ticks, present))


INSERT_BLOCK = "INSERT INTO core_blocks (t0, t1, n, payload, zone) VALUES (?, ?, ?, ?, ?)"


_APPEND = "INSERT OR REPLACE INTO core_recent (t, interval_s, payload) VALUES (?, ?, ?)"


class SeriesWriter:
    """Appends samples; folds raw rows into a block every `block_samples` samples.

    With `journal_cpus` (the recorder's live path) the raw rows go to the store's journal
    (store/journal.py: one pwrite, no commit) and the fold commits them; rows from a previous
    run's journal or `core_recent` are folded first, each exactly once. Without it (or when
    another recorder holds the journal, or it cannot be made) each row is committed to
    `core_recent` on its own, as before."""

    def __init__(self, store: Store, block_samples: int = BLOCK_SAMPLES,
                 journal_cpus: int | None = None) -> None:
        self.store = store
        self.block_samples = block_samples
        self._pending = store.query("SELECT COUNT(*) FROM core_recent")[0][0]
        self._cursor = store.conn.cursor()  # one per tick would be allocated and dropped
        self._journal: journal.JournalWriter | None = None
        # why samples are not journalled, or what was wrong with the last run's journal
        self.journal_note: str | None = None
        # said once when the journal stops taking rows mid-run (the sensor passes it on)
        self.notes: list[str] = []
        self._fault_said = False
        if journal_cpus is not None:
            self._open_journal(journal_cpus)

    def _open_journal(self, ncpu: int) -> None:
        try:
            j = journal.JournalWriter.lock(self.store.directory)
        except OSError as exc:
            self.journal_note = f"{exc}; each sample is committed to SQLite instead"
            return
        try:
            old = journal.read(self.store.directory)
            if old.diagnostics:  # the rows before the damage are stored below
                self.journal_note = "the last run's journal: " + "; ".join(
                    d.message for d in old.diagnostics)
            folded = self._folded()
            # what the last run left (a kill -9, a crash between fold and reset) and any
            # core_recent rows (older versions, a full journal): stored once, now
            self._fold(old.unfolded(folded), (old.epoch, len(old.rows)))
            epoch = (max(old.epoch, journal.parse_folded(folded)[0]) + 1) & 0xFFFFFFFF
            # four minutes of rows: a fold the store refuses for a while loses nothing
            j.create(epoch, journal.capacity_for(max(ncpu, os.cpu_count() or 1),
                                                 4 * self.block_samples))
        except OSError as exc:  # no room for the file, say: recording goes on without it
            j.close()
            self.journal_note = f"cannot make the journal: {exc}; each sample is committed " \
                                "to SQLite instead"
            return
        except BaseException:
            j.close()
            raise
        self._journal = j

    def _folded(self) -> str | None:
        rows = self.store.query("SELECT value FROM store_meta WHERE key = ?",
                                (journal.FOLDED_KEY,))
        return rows[0][0] if rows else None

    def append(self, sample: CoreSample) -> None:
        """Store one sample. Raises InvalidSample (storing nothing) for an unusable time."""
        why = check_sample_time(sample.t, sample.interval_s)
        if why is not None:
            raise InvalidSample(why)
        payload = encode_row(sample)
        j = self._journal
        if j is None or not j.append(sample.t, sample.interval_s, payload):
            if j is not None and j.fault is not None and not self._fault_said:
                self._fault_said = True
                self.journal_note = (f"the journal {j.path} cannot be written "
                                     f"({j.fault.strerror or j.fault}); each sample is "
                                     "committed to SQLite instead")
                self.notes.append(self.journal_note)
            # one statement is its own transaction (the connection is in autocommit mode):
            # as atomic and as durable as BEGIN/INSERT/COMMIT, and two statements fewer
            with self.store.lock:
                self.store.check_mapped()
                self._cursor.execute(_APPEND, (sample.t, sample.interval_s, payload))
        self._pending += 1
        if self._pending >= self.block_samples:
            self.flush()

    def append_many(self, samples: Sequence[CoreSample]) -> int:
        """Finished samples (an import, a list or a CoreMatrix) straight into blocks, one
        transaction per block: no raw rows, since nothing is being sampled that a crash could
        lose. Samples with an unusable time are left out; returns how many were stored."""
        self.flush()
        m = samples if isinstance(samples, CoreMatrix) else CoreMatrix.from_samples(samples)
        if not len(m):
            return 0
        order = np.argsort(m.t, kind="stable")
        m = m.rows(order)
        ok = np.array([check_sample_time(float(t), float(iv)) is None
                       for t, iv in zip(m.t, m.interval_s, strict=True)], bool)
        m = m.rows(ok)
        start = 0
        n = len(m)
        while start < n:
            # at most block_samples per block, spanning at most MAX_BLOCK_SPAN_S
            end = min(n, start + self.block_samples)
            end = start + max(1, int(np.searchsorted(m.t[start:end],
                                                      m.t[start] + MAX_BLOCK_SPAN_S, "right")))
            with self.store.write() as c:
                c.execute(INSERT_BLOCK, block_row(m.t[start:end], m.interval_s[start:end],
                                                  m.cpus, m.ticks[start:end],
                                                  m.present[start:end]))
            start = end
        return n

    def flush(self) -> None:
        """Fold every raw row into blocks (one transaction: all or nothing). A row that cannot
        be decoded or stored (written by an older, unchecked version) is dropped, not kept
        forever in the way of every later fold."""
        j = self._journal
        if j is None or not j.rows:
            self._fold([], None)
            return
        self._fold(j.rows, (j.epoch, len(j.rows)))
        j.reset()  # after the commit: a crash in between is what FOLDED_KEY is for

    def _fold(self, extra: list[tuple[float, float, bytes]],
              done: tuple[int, int] | None) -> None:
        """Fold core_recent's rows and `extra` (journal rows) into blocks; with `done`
        (journal epoch, rows), record in the same transaction that those rows are stored."""
        with self.store.write() as c:
            rows = c.execute("SELECT t, interval_s, payload FROM core_recent ORDER BY t").fetchall()
            had_recent = bool(rows)
            if extra:
                rows = sorted(rows + list(extra), key=lambda r: r[0]) if rows else list(extra)
            if rows:
                self._store_rows(c, rows)
            if had_recent:
                c.execute("DELETE FROM core_recent")
            if done is not None and done[1]:
                c.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)",
                          (journal.FOLDED_KEY, f"{done[0]} {done[1]}"))
        self._pending = 0

    @staticmethod
    def _store_rows(c: sqlite3.Connection, rows: list[tuple]) -> None:
        m = _one_run(rows)
        if m is not None:  # the usual minute: one block, straight from the rows' bytes
            c.execute(INSERT_BLOCK, block_row(m.t, m.interval_s, m.cpus, m.ticks, m.present))
            return
        good: list[CoreSample] = []
        for t, iv, payload in rows:
            try:
                if check_sample_time(t, iv) is None:
                    good.append(decode_row(t, iv, payload))
            except SeriesFormatError:
                pass
        for group in _block_groups(good):
            if sorted(s.t for s in group) != [s.t for s in group]:
                raise ValueError("block samples out of time order")
            m = CoreMatrix.from_samples(group)
            c.execute(INSERT_BLOCK, block_row(m.t, m.interval_s, m.cpus, m.ticks, m.present))

    def close(self) -> None:
        """Fold what is left and let go of the journal (its file stays, empty)."""
        try:
            self.flush()
        finally:
            if self._journal is not None:
                self._journal.close()
                self._journal = None


def _one_run(rows: list[tuple]) -> CoreMatrix | None:
    """Raw rows (sorted by time) as one block's matrix when they are what one run of the
    sampler writes: every time usable, every row from the same CPUs (ascending), within one
    block's span. The same matrix the per-sample fold builds, without a Python object per
    sample and CPU; None for anything else, which that fold handles."""
    first = rows[0][2]
    if not isinstance(first, bytes) or len(first) < 4 or len(rows) > 0xFFFF:
        return None
    ncpu = int.from_bytes(first[:4], "little")
    size = 4 * (1 + ncpu + ncpu * NF)
    head = first[: 4 * (1 + ncpu)]
    for t, iv, payload in rows:
        if not (isinstance(payload, bytes) and len(payload) == size
                and payload.startswith(head)) or check_sample_time(t, iv) is not None:
            return None
    if rows[-1][0] - rows[0][0] > MAX_BLOCK_SPAN_S:
        return None
    values = np.frombuffer(b"".join(r[2] for r in rows), np.uint32).reshape(len(rows), -1)
    cpus = values[0, 1 : 1 + ncpu].astype(np.int64)
    if ncpu == 0 or (ncpu > 1 and not (np.diff(cpus) > 0).all()):
        return None
    return CoreMatrix.from_ticks(
        np.array([r[0] for r in rows], np.float64), np.array([r[1] for r in rows], np.float64),
        cpus, values[:, 1 + ncpu :].reshape(len(rows), ncpu, NF),
        np.ones((len(rows), ncpu), bool))


def _block_groups(samples: list[CoreSample]) -> Iterator[list[CoreSample]]:
    """Consecutive runs of at most 0xFFFF samples spanning at most MAX_BLOCK_SPAN_S."""
    group: list[CoreSample] = []
    for s in samples:
        if group and (s.t - group[0].t > MAX_BLOCK_SPAN_S or len(group) >= 0xFFFF):
            yield group
            group = []
        group.append(s)
    if group:
        yield group
