"""Zone maps (per-block per-CPU per-mode bounds written with each block) and the lazy read
that uses them: the episodes, views and cells must be exactly what a full decode gives, on
records with gaps, hotplug and offline CPUs, for any threshold, and on stores written before
zone maps existed."""

from __future__ import annotations

import gc
import shutil
import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis import episodes as ep
from corescope.analysis.usage import bound_of, mode_bounds, mode_pct
from corescope.investigate.build import resolution
from corescope.model.cores import MODES, CoreSample
from corescope.model.matrix import UNKNOWN_BOUND, CoreMatrix, LazyCoreMatrix
from corescope.store.db import DB_NAME, SCHEMA_VERSION, Store
from corescope.store.series import read_matrix
from corescope.store.series_codec import decode_arrays
from corescope.store.series_writer import SeriesWriter
from corescope.store.series_zones import decode_zone
from support import reference_impl as ref
from support.synth_samples import PARAMS, assert_same_samples, random_record

THRESHOLDS = [0.0, 5.0, 29.999, 30.0, 50.0, 89.0, 90.0, 90.0001, 100.0]


def stored(tmp_path, samples: list[CoreSample], block: int) -> Store:
    store = Store.open(tmp_path)
    w = SeriesWriter(store, block_samples=block)
    for s in samples:
        w.append(s)
    w.flush()
    return store


def every_result(m, samples):
    """What an investigation reads off a matrix: episodes for every mode and threshold,
    covered spans, coarse views and the resolution series around a few times."""
    out = []
    for mode, _thr, mind in PARAMS:
        for thr in THRESHOLDS:
            out.append(ep.find_episodes(m, thr, mind, mode))
    out.append(ep.covered_spans(m))
    for k in (0, len(samples) // 2, len(samples) - 1):
        t = samples[k].t
        for cpu in (0, 3, 77):
            out.append(resolution(m, cpu, t, 60.0))
            out.append(ep.coarse_view(m, cpu, t - 100, t, 30.0, "kernel"))
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 300), st.integers(1, 8), st.integers(1, 70),
       st.sampled_from([0.0, 0.03]), st.sampled_from([0.0, 0.2]),
       st.sampled_from([0.0, 0.05, 0.6]))
def test_lazy_zoned_read_gives_what_a_full_decode_gives(tmp_path_factory, seed, n, ncpu,
                                                         block, p_gap, p_off, p_hot):
    store = stored(tmp_path_factory.mktemp("s"), random_record(seed, n, ncpu, p_gap, p_off,
                                                                p_hot), block)
    # what the store holds (its times in ms, intervals in µs), decoded the reference way
    samples = ref.read_samples(store, 0, 4e9)
    lazy = read_matrix(store, 0, 4e9)
    assert isinstance(lazy, LazyCoreMatrix) and lazy.zone is not None
    full = CoreMatrix.from_samples(samples)  # no zone map: every cell examined
    assert every_result(lazy, samples) == every_result(full, samples)
    # the per-sample reference agrees on the default search too
    assert ep.find_episodes(lazy) == ref.find_episodes(samples)
    # a slice (the window inside its context) and a concatenation (store + live samples)
    # keep the zone map and still agree
    lo = samples[len(samples) // 3].t
    assert ep.find_episodes(lazy.between(lo, 4e9), 30.0, 1.0) == \
        ref.find_episodes([s for s in samples if s.t >= lo], 30.0, 1.0)
    lazy2 = read_matrix(store, 0, 4e9)
    live = [CoreSample(t=samples[-1].t + 1, interval_s=1.0,
                       deltas={0: (0, 0, 95, 5, 0, 0, 0, 0, 0, 0)})]
    both = lazy2 + live
    assert ep.find_episodes(both, 90.0, 0.5) == ref.find_episodes(samples + live, 90.0, 0.5)
    # and everything read in full is the same samples
    assert_same_samples(list(both), samples + live)
    assert_same_samples(list(lazy), samples)
    store.close()


def test_a_block_that_cannot_be_hot_is_never_decoded(tmp_path):
    calm = (50, 0, 5, 45, 0, 0, 0, 0, 0, 0)
    hot = (0, 0, 95, 5, 0, 0, 0, 0, 0, 0)
    samples = [CoreSample(t=1.8e9 + i, interval_s=1.0,
                          deltas={c: hot if (c == 2 and 130 <= i < 135) else calm
                                  for c in range(4)}) for i in range(300)]
    store = stored(tmp_path / "s", samples, 60)
    m = read_matrix(store, 0, 4e9)
    loads = []
    inner = m._source
    m._source = lambda lo, hi: (loads.append((lo, hi)), inner(lo, hi))[1]
    eps = ep.find_episodes(m, 90.0, 2.0, "kernel")
    assert [(e.cpu, e.samples) for e in eps] == [(2, 5)]
    # the hot block (samples 120..179) and the coarse views' neighbours: never the day
    assert all(hi - lo <= 180 for lo, hi in loads)
    assert eps == ref.find_episodes(ref.read_samples(store, 0, 4e9), 90.0, 2.0, "kernel")
    store.close()


def test_a_threshold_just_below_or_above_a_blocks_max(tmp_path):
    # cpu 1's kernel time peaks at exactly 50 % (sys 30 + irq 10 + soft 10 of 100 ticks)
    peak = (50, 0, 30, 0, 0, 10, 10, 0, 0, 0)
    calm = (80, 0, 10, 10, 0, 0, 0, 0, 0, 0)
    samples = [CoreSample(t=1.8e9 + i, interval_s=1.0,
                          deltas={0: calm, 1: peak if 20 <= i < 24 else calm})
               for i in range(60)]
    store = stored(tmp_path / "s", samples, 60)
    (blob,) = store.query("SELECT zone FROM core_blocks")[0]
    z = decode_zone(blob)
    assert z is not None
    # the bound is strictly above the highest % of each part: 30 → 31, 10 → 11, 0 → 1
    assert bound_of(z.bounds, "kernel").tolist() == [11 + 1 + 1, 31 + 11 + 11]
    m = read_matrix(store, 0, 4e9)
    for thr, want in ((49.999999, 1), (50.0, 1), (50.000001, 0), (52.9, 0), (53.0, 0)):
        got = ep.find_episodes(m, thr, 2.0, "kernel")
        assert len(got) == want, thr
        assert got == ref.find_episodes(ref.read_samples(store, 0, 4e9), thr, 2.0, "kernel")
    store.close()


def test_mode_bounds_are_strictly_above_every_cell():
    rng = np.random.default_rng(5)
    fields = rng.integers(0, 200, (10, 7, 50)).astype(np.uint8)
    fields[:, 3, 10] = 0  # an empty interval: never hot, not counted
    present = rng.random((50, 7)) > 0.2
    present[:, 6] = False  # offline throughout: bound 0
    b = mode_bounds(fields, present)
    assert b[6].tolist() == [0] * len(MODES)
    ticks = fields.transpose(1, 2, 0)
    for j, mode in enumerate(MODES):
        itv, pct = mode_pct(ticks, mode)
        ok = present.T & (itv > 0)
        top = np.where(ok, pct, -1).max(axis=1)
        assert (b[:, j] > top).all()
        assert (b[:, j] <= np.floor(np.maximum(top, -1)) + 1).all()


def test_an_old_store_without_zone_maps_reads_the_same(tmp_path):
    samples = random_record(8, 400, 5, 0.02, 0.1, 0.5)
    store = stored(tmp_path / "s", samples, 50)
    want = every_result(read_matrix(store, 0, 4e9), samples)
    # what a store written before zone maps holds: no zone, or one this version can't read
    with store.write() as c:
        c.execute("UPDATE core_blocks SET zone = NULL WHERE rowid % 2 = 0")
        c.execute("UPDATE core_blocks SET zone = x'28b52ffd00' WHERE rowid % 3 = 0")
    m = read_matrix(store, 0, 4e9)
    assert every_result(m, samples) == want
    assert m.diagnostics == []
    with store.write() as c:
        c.execute("UPDATE core_blocks SET zone = NULL")
    m = read_matrix(store, 0, 4e9)
    assert not isinstance(m, LazyCoreMatrix) and m.zone is None
    assert every_result(m, samples) == want
    store.close()


def test_a_version_2_store_gains_the_zone_column(tmp_path):
    samples = random_record(9, 120, 3, 0.0, 0.0, 0.5)
    d = tmp_path / "s"
    store = stored(d, samples, 60)
    want = ep.find_episodes(read_matrix(store, 0, 4e9), 30.0, 1.0)
    store.close()
    conn = sqlite3.connect(d / DB_NAME)
    conn.execute("ALTER TABLE core_blocks DROP COLUMN zone")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with Store.open(d, create=False) as s:
        assert s.schema_version() == SCHEMA_VERSION >= 3
        assert s.query("SELECT COUNT(*), COUNT(zone) FROM core_blocks")[0] == (2, 0)
        assert ep.find_episodes(read_matrix(s, 0, 4e9), 30.0, 1.0) == want
        # new blocks in a migrated store get their zone map
        SeriesWriter(s).append_many(random_record(10, 30, 3, 0, 0, 0, t0=1.9e9))
        assert s.query("SELECT COUNT(zone) FROM core_blocks")[0] == (1,)


def test_a_corrupt_block_behind_a_good_zone_map_is_skipped_when_read(tmp_path):
    store = stored(tmp_path / "s", random_record(12, 180, 3, 0.0, 0.0, 0.9), 60)
    samples = ref.read_samples(store, 0, 4e9)
    with store.write() as c:
        c.execute("UPDATE core_blocks SET payload = x'28b52ffd0067617262616765' "
                  "WHERE rowid = 2")
    m = read_matrix(store, 0, 4e9)
    m.fields  # noqa: B018  (reading every cell decodes every block)
    assert [d.message for d in m.diagnostics if "block 2 skipped" in d.message]
    assert not m.present[60:120].any()  # its samples are not online, not zero
    assert_same_samples(list(m)[:60], samples[:60])
    store.close()


def per_block_zone(store: Store, t0: float, t1: float, cpus: np.ndarray
                   ) -> tuple[list[int], np.ndarray]:
    """The matrix's zone map built the obvious way: block by block, in time order, each
    block's own bounds (UNKNOWN_BOUND without a zone map) over the samples it contributes."""
    starts: list[int] = []
    bounds: list[np.ndarray] = []
    k = 0
    for zone_blob, payload in store.query(
            "SELECT zone, payload FROM core_blocks WHERE t1 >= ? AND t0 <= ? ORDER BY t1",
            (t0, t1)):
        z = decode_zone(zone_blob)
        times = [s.t for s in ref.decode_block(payload)]
        kept = sum(1 for t in times if t0 <= t <= t1)
        if not kept:
            continue
        b = np.zeros((len(cpus), len(MODES)), np.uint8)
        if z is None:  # the CPUs the block lists, whether or not online in it
            b[np.searchsorted(cpus, decode_arrays(payload).cpus)] = UNKNOWN_BOUND
        else:
            b[np.searchsorted(cpus, z.head.cpus)] = z.bounds
        starts.append(k)
        bounds.append(b)
        k += kept
    return starts, np.array(bounds, np.uint8).reshape(len(bounds), len(cpus), len(MODES))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**9), st.lists(st.tuples(st.integers(1, 150), st.integers(1, 6),
                                                 st.integers(1, 70)), min_size=1, max_size=4),
       st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.sampled_from([0, 2, 3]))
def test_blocks_read_together_are_read_as_one_by_one(tmp_path_factory, seed, parts, lo_f,
                                                     span_f, drop_zone_every):
    """Zone maps are decoded a run of alike blocks at a time: records written in parts with
    different block sizes and CPU counts (so the runs break), some blocks without a zone map,
    any window (blocks cut at either end) read the same samples and the same zone map as a
    block-by-block read, and every result a full decode gives."""
    store = Store.open(tmp_path_factory.mktemp("s"))
    t = 1.8e9
    for i, (n, ncpu, block) in enumerate(parts):
        rec = random_record(seed + i, n, ncpu, 0.02, 0.1, 0.3, t0=t)
        SeriesWriter(store, block_samples=block).append_many(rec)
        t = rec[-1].t + 5
    if drop_zone_every:
        with store.write() as c:
            c.execute("UPDATE core_blocks SET zone = NULL WHERE rowid % ? = 0",
                      (drop_zone_every,))
    samples = ref.read_samples(store, 0, 4e9)
    a = samples[0].t + lo_f * (samples[-1].t - samples[0].t)
    b = a + span_f * (samples[-1].t - a)
    want = ref.read_samples(store, a, b)
    m = read_matrix(store, a, b)
    assert_same_samples(list(m), want)
    if want and m.zone is not None:
        starts, bounds = per_block_zone(store, a, b, m.cpus)
        assert m.zone.starts.tolist() == starts
        assert np.array_equal(m.zone.bounds, bounds)
    full = CoreMatrix.from_samples(want)
    if want:
        assert every_result(m, want) == every_result(full, want)
    store.close()


def test_a_version_5_store_gets_its_zone_maps_before_the_payloads(tmp_path):
    """Version 6 moves the zone column ahead of the payload (a query then reads the zone maps
    without walking every payload's pages): same rows, same rowids, same reads."""
    samples = random_record(14, 200, 4, 0.02, 0.1, 0.5)
    d = tmp_path / "s"
    store = stored(d, samples, 50)
    with store.write() as c:  # a block without a zone map, as an older version wrote it
        c.execute("UPDATE core_blocks SET zone = NULL WHERE rowid = 2")
    want_rows = store.query("SELECT rowid, t0, t1, n, zone, payload FROM core_blocks")
    want = every_result(read_matrix(store, 0, 4e9), samples)
    store.close()
    # the table as version 5 had it: the zone column last
    conn = sqlite3.connect(d / DB_NAME)
    conn.executescript("""
        CREATE TABLE old (t0 REAL NOT NULL, t1 REAL NOT NULL, n INTEGER NOT NULL,
                          payload BLOB NOT NULL, zone BLOB);
        INSERT INTO old (rowid, t0, t1, n, payload, zone)
            SELECT rowid, t0, t1, n, payload, zone FROM core_blocks;
        DROP TABLE core_blocks;
        ALTER TABLE old RENAME TO core_blocks;
        CREATE INDEX core_blocks_t1 ON core_blocks (t1);
        PRAGMA user_version = 5;
    """)
    conn.close()
    with Store.open(d, create=False) as s:
        assert s.schema_version() == SCHEMA_VERSION >= 6
        cols = [r[1] for r in s.query("PRAGMA table_info(core_blocks)")]
        assert cols == ["t0", "t1", "n", "zone", "payload"]
        assert s.query("SELECT rowid, t0, t1, n, zone, payload FROM core_blocks") == want_rows
        assert s.query("SELECT name FROM sqlite_master WHERE tbl_name = 'core_blocks' "
                       "AND type = 'index'") == [("core_blocks_t1",)]
        assert every_result(read_matrix(s, 0, 4e9), samples) == want
        # the writer's INSERT names its columns: new blocks land in the new layout
        SeriesWriter(s).append_many(random_record(15, 30, 4, 0, 0, 0, t0=1.9e9))
        assert s.query("SELECT COUNT(zone) FROM core_blocks WHERE t0 >= 1.9e9")[0] == (1,)


def test_blocks_decoded_after_the_store_closed_are_read_the_same(tmp_path):
    """A command renders its matrix after its evidence closed the store (the `cores` map,
    the HTML heatmap), and `analyze` after removing its temporary store: the connection stays
    open while the matrix may read payloads, and gives the samples an open store gives; it
    closes when the matrix is gone."""
    samples = random_record(16, 300, 4, 0.02, 0.1, 0.3)
    store = stored(tmp_path / "s", samples, 60)
    want = ref.read_samples(store, 0, 4e9)
    m = read_matrix(store, 0, 4e9)
    assert isinstance(m, LazyCoreMatrix)
    store.close()  # nothing decoded yet: every payload is read after the close
    shutil.rmtree(tmp_path / "s")
    assert ep.find_episodes(m, 30.0, 1.0) == ref.find_episodes(want, 30.0, 1.0)
    assert_same_samples(list(m), want)
    assert m.diagnostics == []
    conn = store.conn
    del m
    gc.collect()
    with pytest.raises(sqlite3.ProgrammingError):  # closed now
        conn.execute("SELECT 1")


def test_a_block_deleted_before_it_is_decoded_is_skipped_and_said(tmp_path):
    """Retention may delete a block between the zone-map read and the decode: its samples
    are then not online (as a corrupt block's), and the diagnostic names it."""
    samples = random_record(17, 180, 3, 0.0, 0.0, 0.9)
    store = stored(tmp_path / "s", samples, 60)
    want = ref.read_samples(store, 0, 4e9)
    m = read_matrix(store, 0, 4e9)
    with store.write() as c:
        c.execute("DELETE FROM core_blocks WHERE rowid = 2")
    m.fields  # noqa: B018  (reading every cell decodes every block)
    assert [d.message for d in m.diagnostics] == \
        ["block 2 skipped: deleted from the store since the query began"]
    assert not m.present[60:120].any()
    assert_same_samples(list(m)[:60] + list(m)[120:], want[:60] + want[120:])
    store.close()
