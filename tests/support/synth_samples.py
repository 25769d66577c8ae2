"""Random per-core records for the store and episode tests: `rand_samples` (every CPU, a
sample a second) and `random_record` (gaps, hotplug, offline CPUs, rows on the CLI's
thresholds). Shared by tests/unit, tests/cli and the journal's kill -9 child process."""

from __future__ import annotations

import random

import pytest

from corescope.model.cores import FIELDS, CoreSample


def rand_samples(n: int, ncpu: int, seed: int = 0, t0: float = 1_800_000_000.0,
                 drop: float = 0.0, big: bool = False) -> list[CoreSample]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        deltas = {}
        for c in range(ncpu):
            if rng.random() < drop:
                continue
            hi = 70000 if big else 100
            deltas[c] = tuple(rng.randint(0, hi) for _ in FIELDS)
        out.append(CoreSample(t=t0 + i + 0.25, interval_s=1.0 + rng.random() / 1000,
                              deltas=deltas))
    return out


def same(a: list[CoreSample], b: list[CoreSample]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.t == pytest.approx(y.t, abs=1e-3)
        assert x.interval_s == pytest.approx(y.interval_s, abs=1e-6)
        assert x.deltas == y.deltas


# rows that land exactly on, just under and just over the thresholds the CLI uses
EDGE = [
    (0, 0, 90, 10, 0, 0, 0, 0, 0, 0), (0, 0, 89, 11, 0, 0, 0, 0, 0, 0),
    (0, 0, 80, 10, 0, 5, 5, 0, 0, 0), (0, 0, 30, 3, 0, 30, 30, 0, 0, 0),
    (0, 0, 0, 0, 0, 0, 0, 0, 0, 0), (5, 0, 0, 0, 0, 0, 0, 0, 9, 0),  # guest > user
    (40, 7, 3, 0, 0, 0, 0, 0, 40, 9), (0, 0, 100, 0, 0, 0, 0, 0, 0, 0),
    (0, 0, 29, 1, 0, 1, 0, 0, 0, 0), (1, 0, 27, 2, 0, 0, 0, 0, 0, 0),
]


def random_record(seed: int, n: int, ncpu: int, p_gap: float, p_off: float,
                  p_hot: float, big: bool = False, t0: float = 1.8e9) -> list[CoreSample]:
    rng = random.Random(seed)
    t = t0 + rng.random() * 100
    online = set(range(ncpu))
    out = []
    for _ in range(n):
        iv = rng.choice([1.0, 1.0, 1.0, 0.5, 2.0, 1.0 + rng.random() / 100])
        t += iv
        if rng.random() < p_gap:
            t += rng.choice([3.0, 10.0, 61.0, 400.0])
        if rng.random() < 0.05:  # hotplug: a CPU goes away or comes (back)
            online ^= {rng.randrange(ncpu + 2)}
        deltas = {}
        for c in sorted(online):
            if rng.random() < p_off:
                continue
            if rng.random() < p_hot:
                deltas[c] = rng.choice(EDGE)
            else:
                hi = 70000 if big else 100
                deltas[c] = tuple(rng.randint(0, hi) if rng.random() < 0.6 else 0
                                  for _ in FIELDS)
        out.append(CoreSample(t=round(t, 3), interval_s=iv, deltas=deltas))
    return out


def assert_same_samples(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.t == y.t and x.interval_s == y.interval_s
        assert dict(x.deltas) == dict(y.deltas)


# (mode, threshold %, minimum seconds): the episode searches the equivalence tests run
PARAMS = [("kernel", 90.0, 2.0), ("kernel", 30.0, 1.0), ("busy", 50.0, 0.5), ("sys", 89.0, 2.0),
          ("user", 10.0, 3.0), ("idle", 100.0, 1.0), ("usr", 0.0, 0.0), ("guest", 5.0, 1.0)]
