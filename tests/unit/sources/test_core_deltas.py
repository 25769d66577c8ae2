"""sources/procstat.CoreDeltas, the sampling hot path, gives exactly what the full parse and
`delta` give, over a sequence of real and hand-edited /proc/stat texts: same CPUs, a CPU
going offline and back, counters going backwards, extra columns, garbage, an empty read."""

from __future__ import annotations

import random
from array import array

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.sources.procstat import SMALL_CPUS, CoreDeltas, carry, delta, parse_proc_stat
from support import FIXTURES, synth_procstat

D = FIXTURES / "procstat"
SEQ = ["vm-2cpu-6.18.stat", "vm-2cpu-6.18.stat.next", "vm-2cpu-6.18.stat.next",
       "vm-2cpu-6.18.stat", "hotplug-1.stat", "hotplug-2.stat", "hotplug-3.stat",
       "hotplug-1.stat", "garbage-mixed.stat", "garbage-truncated.stat", "synth-96cpu.stat",
       "synth-96cpu.stat.next", "synth-96cpu.stat", "synth-192cpu.stat",
       "synth-192cpu.stat.next", "", "vm-2cpu-6.18.stat", "vm-2cpu-6.18.stat.next"]


def _as_dict(sample) -> dict[int, tuple[int, ...]]:
    return {cpu: tuple(int(x) for x in sample.deltas[cpu]) for cpu in sample.deltas}


def _check(texts: list[bytes]) -> None:
    it = iter(texts)
    fast = CoreDeltas(lambda: next(it))
    prev = parse_proc_stat(texts[0])
    assert dict(fast.reset().cpus) == dict(prev.cpus)
    for i, text in enumerate(texts[1:], 1):
        got = fast.sample(float(i), 1.0)
        cur = parse_proc_stat(text)
        want = delta(prev, cur, float(i), 1.0)
        assert _as_dict(got) == _as_dict(want), i
        assert got.t == want.t and got.interval_s == want.interval_s
        prev = carry(prev, cur)  # offline CPUs keep their last counters


def test_fixture_sequence_matches_the_full_parse() -> None:
    _check([(D / n).read_bytes() if n else b"" for n in SEQ])


def test_the_fast_path_is_taken_while_cpus_stay_the_same() -> None:
    texts = [(D / n).read_bytes() for n in ("synth-96cpu.stat", "synth-96cpu.stat.next")]
    it = iter(texts)
    fast = CoreDeltas(lambda: next(it))
    fast.reset()
    s = fast.sample(1.0, 1.0)
    assert isinstance(s.deltas.flat, np.ndarray) and len(s.deltas) == 96
    assert fast._prev is None  # no ProcStat built on the fast path


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["vm-2cpu-6.18.stat", "vm-2cpu-6.18.stat.next",
                                           "hotplug-1.stat", "hotplug-2.stat",
                                           "hotplug-3.stat", "garbage-mixed.stat"]),
                          st.integers(-3, 3)), min_size=2, max_size=8))
def test_any_sequence_matches_the_full_parse(steps: list[tuple[str, int]]) -> None:
    texts = []
    for name, bump in steps:
        data = (D / name).read_bytes()
        if bump:  # move one counter of the first cpu line, up or down
            head, _, rest = data.partition(b"\ncpu0 ")
            nums = rest.split(b" ", 3)
            if len(nums) > 3 and nums[2].isdigit():
                nums[2] = str(max(0, int(nums[2]) + bump * 1000)).encode()
                data = head + b"\ncpu0 " + b" ".join(nums)
        texts.append(data)
    _check(texts)


def test_stored_rows_follow_the_cpu_set_through_hotplug(tmp_path) -> None:
    # the row's CPU list is encoded once per CPU set and kept: a set that changes (and
    # changes back) must be written as it is at each tick
    from corescope.store.db import Store
    from corescope.store.series import read_samples
    from corescope.store.series_writer import SeriesWriter

    # each set read twice running, so each is sampled on the fast path too
    names = ("hotplug-1.stat", "hotplug-1.stat", "hotplug-2.stat", "hotplug-2.stat",
             "hotplug-3.stat", "hotplug-3.stat", "hotplug-1.stat", "hotplug-1.stat")
    feed = iter([(D / name).read_bytes() for name in names])
    cd = CoreDeltas(lambda: next(feed))
    cd.reset()
    wrote = [cd.sample(1.7e9 + k, 1.0) for k in range(len(names) - 1)]
    with Store.open(tmp_path / "s") as store:
        w = SeriesWriter(store)
        for s in wrote:
            w.append(s)
        got = read_samples(store, 0, 2e9)
    assert [dict(s.deltas) for s in got] == [dict(s.deltas) for s in wrote]
    assert len({tuple(s.deltas) for s in wrote}) > 1


def test_a_few_cpus_take_the_list_path_and_match_the_full_parse() -> None:
    texts = [(D / n).read_bytes() for n in ("vm-2cpu-6.18.stat", "vm-2cpu-6.18.stat.next",
                                            "vm-2cpu-6.18.stat")]
    it = iter(texts)
    fast = CoreDeltas(lambda: next(it))
    fast.reset()
    s = fast.sample(1.0, 1.0)
    assert isinstance(s.deltas.flat, array) and len(s.deltas) == 2
    assert fast._prev is None
    _check(texts)  # and the counters going back (the third text) clamp to 0, as sysstat


@pytest.mark.parametrize("ncpu", [1, SMALL_CPUS, SMALL_CPUS + 1])
def test_either_side_of_the_small_path_matches_the_full_parse(ncpu: int) -> None:
    # synthetic text in the kernel's format (tests/synth_procstat.py), a CPU going offline
    # and back, and a counter that goes backwards
    rng = random.Random(ncpu)
    counters = synth_procstat.initial(ncpu, rng)
    texts = []
    for k in range(6):
        synth_procstat.advance(counters, rng, busy=k % 2 == 0)
        cur = dict(counters)
        if k == 3 and ncpu > 1:
            del cur[ncpu - 1]
        if k == 4:
            cur[0] = [max(0, x - 50) for x in cur[0]]
        texts.append(synth_procstat.render(cur, seq=k).encode())
    _check(texts)


def test_the_live_metrics_read_a_list_path_sample_as_the_full_parse() -> None:
    from corescope.metrics.live import _matrix

    texts = [(D / n).read_bytes() for n in ("vm-2cpu-6.18.stat", "vm-2cpu-6.18.stat.next")]
    it = iter(texts)
    fast = CoreDeltas(lambda: next(it))
    fast.reset()
    got = fast.sample(1.0, 1.0)
    want = delta(parse_proc_stat(texts[0]), parse_proc_stat(texts[1]), 1.0, 1.0)
    (ids, m), (wids, wm) = _matrix(got), _matrix(want)
    assert ids == wids == (0, 1) and m.dtype == np.int64 and (m == wm).all()
