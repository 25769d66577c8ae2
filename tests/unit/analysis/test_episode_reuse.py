"""The window's episode search reuses what its context's search found (the window is a time
slice of the context): every episode must be exactly the one a search of the window alone
finds, wherever the window starts and whatever the record holds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis import episodes as ep
from corescope.model.cores import CoreSample
from corescope.model.matrix import CoreMatrix
from corescope.store.db import Store
from corescope.store.series import read_matrix
from corescope.store.series_writer import SeriesWriter
from support.synth_samples import PARAMS, random_record


def alone(m: CoreMatrix) -> CoreMatrix:
    """The same samples with no parent to reuse anything from."""
    return CoreMatrix(t=m.t.copy(), interval_s=m.interval_s.copy(), cpus=m.cpus,
                      fields=np.array(m.fields), present=m.present.copy())


def check(ctx: CoreMatrix, cut_f: float) -> None:
    cut = float(ctx.t[0] + cut_f * (ctx.t[-1] - ctx.t[0])) if len(ctx) else 0.0
    for mode, thr, mind in PARAMS:
        ep.find_episodes(ctx, thr, mind, mode)  # the context first, as investigate does
        window = ctx.between(cut, np.inf)
        want = ep.find_episodes(alone(window), thr, mind, mode)
        assert ep.find_episodes(window, thr, mind, mode) == want, (mode, thr, mind, cut)


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10**9), st.integers(0, 400), st.integers(1, 6),
       st.sampled_from([0.0, 0.03]), st.sampled_from([0.0, 0.2]),
       st.sampled_from([0.05, 0.3, 0.7]), st.floats(0.0, 1.0))
def test_a_window_reusing_its_contexts_episodes_finds_what_it_finds_alone(
        seed, n, ncpu, p_gap, p_off, p_hot, cut_f):
    check(CoreMatrix.from_samples(random_record(seed, n, ncpu, p_gap, p_off, p_hot)), cut_f)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10**9), st.integers(1, 400), st.integers(1, 5), st.integers(1, 70),
       st.floats(0.0, 1.0))
def test_the_same_on_a_lazy_read_joined_with_live_samples(tmp_path_factory, seed, n, ncpu,
                                                         block, cut_f):
    """As doctor has it: the stored record read lazily, live samples appended."""
    store = Store.open(tmp_path_factory.mktemp("s"))
    rec = random_record(seed, n, ncpu, 0.02, 0.1, 0.4)
    SeriesWriter(store, block_samples=block).append_many(rec)
    live = [CoreSample(t=rec[-1].t + 1 + k, interval_s=1.0,
                       deltas={0: (0, 0, 95, 5, 0, 0, 0, 0, 0, 0)}) for k in range(3)]
    check(read_matrix(store, 0, 4e9) + live, cut_f)
    store.close()


def test_the_window_is_spared_the_episodes_its_context_found(monkeypatch):
    """Not vacuous: a window holding its context's episodes well inside it computes none of
    them again (the search still finds each run; only the per-episode views are reused)."""
    hot = (0, 0, 95, 5, 0, 0, 0, 0, 0, 0)
    calm = (50, 0, 5, 45, 0, 0, 0, 0, 0, 0)
    samples = [CoreSample(t=1.8e9 + i, interval_s=1.0,
                          deltas={c: hot if c == 1 and i % 200 in range(100, 106) else calm
                                  for c in range(3)}) for i in range(1000)]
    ctx = CoreMatrix.from_samples(samples)
    found = ep.find_episodes(ctx, 90.0, 2.0, "kernel")
    assert len(found) == 5
    calls = []
    inner = ep._episode
    monkeypatch.setattr(ep, "_episode", lambda *a: (calls.append(a[2:4]), inner(*a))[1])
    # (the second episode is samples 300..305; its 60 s view reads samples 241..300)
    window = ctx.between(1.8e9 + 241, np.inf)
    assert ep.find_episodes(window, 90.0, 2.0, "kernel") == found[1:]
    assert calls == []
    # a window that cuts the samples that view reads: that episode is computed again
    window = ctx.between(1.8e9 + 242, np.inf)
    assert ep.find_episodes(window, 90.0, 2.0, "kernel") == found[1:]
    assert len(calls) == 1
