from __future__ import annotations

import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.model.matrix import CoreMatrix
from corescope.store import retention
from corescope.store.db import Store, StoreError
from corescope.store.series import read_samples, time_span
from corescope.store.series_codec import SeriesFormatError, decode_block, encode_block
from corescope.store.series_writer import SeriesWriter, _one_run, block_row
from support.synth_samples import rand_samples, same


@pytest.mark.parametrize("drop,big", [(0.0, False), (0.2, False), (0.0, True)])
def test_block_round_trip(drop: float, big: bool):
    s = rand_samples(60, 24, drop=drop, big=big)
    same(decode_block(encode_block(s)), s)


def test_corrupt_block_is_a_clear_error():
    with pytest.raises(SeriesFormatError):
        decode_block(b"not zstd at all")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 70), st.integers(1, 40), st.floats(0, 0.5), st.integers(0, 10**6))
def test_block_round_trip_property(n: int, ncpu: int, drop: float, seed: int):
    s = rand_samples(n, ncpu, seed=seed, drop=drop)
    same(decode_block(encode_block(s)), s)


def test_writer_reader_and_permissions(tmp_path):
    d = tmp_path / "store"
    store = Store.open(d)
    w = SeriesWriter(store, block_samples=10)
    s = rand_samples(25, 8)
    for x in s:
        w.append(x)
    # 20 in two blocks, 5 still raw: all readable
    assert store.query("SELECT COUNT(*) FROM core_blocks")[0][0] == 2
    same(read_samples(store, 0, 2e9), s)
    same(read_samples(store, s[3].t, s[12].t), s[3:13])
    assert time_span(store)[0] == pytest.approx(s[0].t, abs=1e-3)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    for f in d.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
    store.close()


def test_retention_by_age_and_bytes(tmp_path):
    store = Store.open(tmp_path / "s")
    empty = store.size_bytes()  # every feature's empty tables: not ours to trim
    w = SeriesWriter(store, block_samples=60)
    s = rand_samples(3600, 16, seed=3)
    for x in s:
        w.append(x)
    w.flush()
    full = store.size_bytes()
    retention.enforce(store, now=s[-1].t, retain_s=1800, max_bytes=10**9)
    left = read_samples(store, 0, 2e9)
    assert left[0].t >= s[-1].t - 1800 - 60  # whole blocks go
    assert left[-1].t == pytest.approx(s[-1].t, abs=1e-3)  # newest kept
    budget = empty + (full - empty) // 4
    retention.enforce(store, now=s[-1].t, retain_s=10**6, max_bytes=budget)
    assert store.size_bytes() <= budget
    assert read_samples(store, 0, 2e9)[-1].t == pytest.approx(s[-1].t, abs=1e-3)
    store.close()


def test_unusable_store_is_a_clear_error(tmp_path):
    (tmp_path / "corescope.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError):
        Store.open(tmp_path)
    with pytest.raises(StoreError, match="no store"):
        Store.open(tmp_path / "missing", create=False)


def test_store_refuses_a_directory_it_does_not_own_or_a_symlink(tmp_path):
    if os.geteuid() == 0:  # only root can give a directory away
        foreign = tmp_path / "foreign"
        foreign.mkdir(mode=0o777)
        os.chown(foreign, 65534, 65534)
        with pytest.raises(StoreError, match="belongs to uid 65534"):
            Store.open(foreign)
        assert not (foreign / "corescope.db").exists()
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(StoreError, match="symlink"):
        Store.open(link)


def test_store_tightens_its_own_loose_directory(tmp_path):
    d = tmp_path / "mine"
    d.mkdir(mode=0o755)
    d.chmod(0o755)
    Store.open(d).close()
    assert stat.S_IMODE(d.stat().st_mode) == 0o700


@pytest.mark.parametrize("drop,big,ncpu", [(0.0, False, 12), (0.0, True, 96), (0.2, False, 12),
                                           (0.0, False, 1)])
def test_a_fold_stores_the_block_the_per_sample_fold_builds(tmp_path, drop, big, ncpu):
    # the usual minute (one run, same CPUs) is folded from the rows' bytes; it must store
    # byte for byte what folding sample by sample stores, and hotplug still folds that way
    samples = rand_samples(60, ncpu, drop=drop, big=big)
    with Store.open(tmp_path / "s") as store:
        w = SeriesWriter(store, block_samples=10**6)
        for x in samples:
            w.append(x)
        rows = store.query("SELECT t, interval_s, payload FROM core_recent ORDER BY t")
        assert (_one_run(rows) is not None) == (drop == 0)  # which way it folds
        w.flush()
        got = store.query("SELECT t0, t1, n, payload, zone FROM core_blocks")
        assert store.query("SELECT COUNT(*) FROM core_recent") == [(0,)]
        same(read_samples(store, 0, 2e9), samples)
    m = CoreMatrix.from_samples(samples)
    assert got == [block_row(m.t, m.interval_s, m.cpus, m.ticks, m.present)]
