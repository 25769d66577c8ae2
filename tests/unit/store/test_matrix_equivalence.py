"""The vectorised store decoder and the matrix episode finder against the original per-sample
code (tests/support/reference_impl.py), on random records with gaps, hotplug and offline CPUs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis import episodes as ep
from corescope.model.cores import CoreSample
from corescope.model.matrix import CoreMatrix, sorted_unique
from corescope.render.records import as_json
from corescope.store.db import Store
from corescope.store.series import read_matrix, read_samples
from corescope.store.series_codec import decode_arrays, decode_block, encode_block
from corescope.store.series_writer import SeriesWriter
from support import reference_impl as ref
from support.synth_samples import PARAMS, assert_same_samples, random_record


def check_equivalent(samples: list[CoreSample]) -> None:
    m = CoreMatrix.from_samples(samples)
    for mode, thr, mind in PARAMS:
        assert ep.find_episodes_matrix(m, thr, mind, mode) == \
            ref.find_episodes(samples, thr, mind, mode)
    assert ep.covered_spans_matrix(m) == ref.covered_spans(samples)
    cpus = sorted({c for s in samples for c in s.deltas}) or [0]
    if samples:
        lo, hi = samples[0].t - 5, samples[-1].t + 5
        for cpu in (cpus[0], cpus[-1], 999):
            for window in (30.0, 60.0):
                for mode in ("kernel", "idle"):
                    a = (lo + hi) / 2
                    assert ep.coarse_view_matrix(m, cpu, a - 40, a + 17, window, mode) == \
                        ref.coarse_view(samples, cpu, a - 40, a + 17, window, mode)
                    assert ep.coarse_view(samples, cpu, lo, hi, window, mode) == \
                        ref.coarse_view(samples, cpu, lo, hi, window, mode)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9), st.integers(0, 150), st.integers(1, 12),
       st.sampled_from([0.0, 0.02, 0.2]), st.sampled_from([0.0, 0.1, 0.4]),
       st.sampled_from([0.0, 0.5, 0.9]))
def test_matrix_episodes_equal_the_per_sample_ones(seed, n, ncpu, p_gap, p_off, p_hot):
    check_equivalent(random_record(seed, n, ncpu, p_gap, p_off, p_hot))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 200), st.integers(1, 40),
       st.sampled_from([0.0, 0.02]), st.sampled_from([0.0, 0.2]), st.booleans())
def test_vectorised_block_codec_is_byte_identical(seed, n, ncpu, p_gap, p_off, big):
    s = random_record(seed, min(n, 0xFFFF), ncpu, p_gap, p_off, 0.3, big)[: max(1, n)]
    if not s:
        return
    payload = encode_block(s)
    assert payload == ref.encode_block(s)  # old stores and new ones are the same format
    assert_same_samples(decode_block(payload), ref.decode_block(payload))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 400), st.integers(1, 10),
       st.integers(1, 70))
def test_store_round_trip_gives_the_same_episodes(tmp_path_factory, seed, n, ncpu, block):
    samples = random_record(seed, n, ncpu, 0.03, 0.1, 0.6)
    store = Store.open(tmp_path_factory.mktemp("s"))
    w = SeriesWriter(store, block_samples=block)
    for s in samples:
        w.append(s)
    lo, hi = samples[len(samples) // 4].t, samples[-1].t + 1
    want = ref.read_samples(store, lo, hi)
    m = read_matrix(store, lo, hi)
    assert_same_samples(list(m), want)
    assert_same_samples(read_samples(store, lo, hi), want)
    assert m.diagnostics == []
    for mode, thr, mind in PARAMS[:3]:
        assert ep.find_episodes(m, thr, mind, mode) == ref.find_episodes(want, thr, mind, mode)
    store.close()


def test_hotplug_across_blocks_grows_the_cpu_axis(tmp_path):
    store = Store.open(tmp_path / "s")
    w = SeriesWriter(store, block_samples=5)
    row = (1, 0, 90, 9, 0, 0, 0, 0, 0, 0)
    samples = [CoreSample(t=1.8e9 + i, interval_s=1.0,
                          deltas={c: row for c in ([0, 1] if i < 7 else [0, 1, 5, 3])})
               for i in range(20)]
    for s in samples:
        w.append(s)
    w.flush()
    m = read_matrix(store, 0, 4e9)
    assert m.cpus.tolist() == [0, 1, 3, 5]
    assert m.present[:7].tolist() == [[True, True, False, False]] * 7
    assert_same_samples(list(m), samples)
    assert ep.find_episodes(m) == ref.find_episodes(samples)


def test_decoded_block_keeps_the_narrow_tick_type():
    s = random_record(1, 60, 8, 0, 0, 0)
    assert decode_arrays(encode_block(s)).ticks.dtype == np.uint8


def test_wrappers_keep_their_signatures():
    s = random_record(3, 80, 4, 0.05, 0.1, 0.8)
    assert ep.find_episodes(s) == ref.find_episodes(s)
    assert ep.covered_spans(s) == ref.covered_spans(s)
    with pytest.raises(ValueError, match="unknown mode"):
        ep.find_episodes(s, mode="bogus")


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 150), st.integers(1, 6))
def test_resolution_view_on_the_matrix_equals_the_per_sample_one(seed, n, ncpu):
    from corescope.investigate.build import resolution

    samples = random_record(seed, n, ncpu, 0.03, 0.1, 0.6)
    m = CoreMatrix.from_samples(samples)
    t = samples[len(samples) // 2].t
    for cpu in (0, ncpu - 1, 77):
        assert resolution(m, cpu, t, 60.0) == ref.resolution(samples, cpu, t, 60.0)
        assert resolution(samples, cpu, t, 30.0) == ref.resolution(samples, cpu, t, 30.0)
        # an edge exactly window_s before a sample: the strict bound
        assert resolution(m, cpu, t, t - samples[0].t) == \
            ref.resolution(samples, cpu, t, t - samples[0].t)


def test_cores_json_is_what_the_per_sample_code_printed(tmp_path):
    import json

    from click.testing import CliRunner

    from corescope.views.cli import cli

    samples = random_record(11, 900, 6, 0.01, 0.05, 0.5, t0=1.7e9)  # a past, stopped record
    store = Store.open(tmp_path / "s")
    w = SeriesWriter(store)
    for s in samples:
        w.append(s)
    old = ref.read_samples(store, samples[-1].t - 600, samples[-1].t)
    store.close()
    eps = ref.find_episodes(old, 30.0, 2.0, "kernel")
    ivs = sorted(s.interval_s for s in old)
    mid = len(ivs) // 2
    median = ivs[mid] if len(ivs) % 2 else (ivs[mid - 1] + ivs[mid]) / 2
    from corescope.render.json_contract import SCHEMA

    want = json.dumps({
        "schema": SCHEMA,
        "cpus": sorted({c for s in old for c in s.deltas}),
        "interval_s": round(median, 3),
        "start": round(old[0].t - old[0].interval_s, 3),
        "end": round(old[-1].t, 3),
        "samples": len(old),
        "mode": "kernel",
        "threshold_pct": 30.0,
        "episodes": [as_json(e) for e in eps],
    }, indent=2, default=str) + "\n"
    assert eps
    got = CliRunner().invoke(cli, ["--store", str(tmp_path / "s"), "cores", "--last", "600s",
                                   "--json", "--threshold", "30"])
    assert got.stdout == want, got.stderr


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 120), st.integers(1, 6))
def test_the_compensated_sum_path_gives_the_same_episodes(seed, n, ncpu):
    """Python 3.12+ sums floats with compensation: cells at the threshold are then decided
    by usage_of itself. Forced on here so that path is tested on any Python."""
    samples = random_record(seed, n, ncpu, 0.02, 0.1, 0.9)
    old = ep._COMPENSATED_SUM
    ep._COMPENSATED_SUM = True
    try:
        for mode, thr, mind in PARAMS:
            assert ep.find_episodes(samples, thr, mind, mode) == \
                ref.find_episodes(samples, thr, mind, mode)
    finally:
        ep._COMPENSATED_SUM = old


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2**62, 2**62), max_size=60) | st.lists(st.integers(0, 9)),
       st.sampled_from([np.int64, np.int32, np.uint16]))
def test_sorted_unique_is_np_unique(values, dtype):
    info = np.iinfo(dtype)
    a = np.array([v for v in values if info.min <= v <= info.max], dtype)
    got = sorted_unique(a)
    assert got.dtype == np.unique(a).dtype and np.array_equal(got, np.unique(a))
