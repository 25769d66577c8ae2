"""`parse_batches` (samples as columns, what the import into a column chunk reads) must give
exactly `parse_blocks`' samples and notes, and a summary with a sink exactly the summary
without one, on every captured form, in any block size, cut and corrupted."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.sources import perf_script as ps
from support import FIXTURES

FIX = FIXTURES / "profiles"
NAMES = sorted(p.name for p in FIX.glob("*.txt"))
TEXTS = {n: (FIX / n).read_text(errors="replace") for n in NAMES}


def key(s: ps.StackSample) -> tuple:
    return (s.comm, s.pid, s.tid, s.cpu, s.time, s.event, tuple(f.key for f in s.frames),
            s.count, s.period, s.pid_known)


def blocks_of(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def check(text: str, size: int) -> None:
    blocks = blocks_of(text, size)
    d1: list = []
    d2: list = []
    want = [key(s) for s in ps.parse_blocks(blocks, d1)]
    batches = list(ps.parse_batches(blocks, d2))
    got = [key(s) for b in batches for s in b.samples()]
    assert got == want
    assert [str(d) for d in d2] == [str(d) for d in d1]
    assert all(len(b) for b in batches)
    d3: list = []
    d4: list = []
    plain = ps.summarize_blocks(blocks, d3)
    seen: list[ps.Batch] = []
    sunk = ps.summarize_blocks(blocks, d4, sink=seen.append)
    assert (sunk.samples, sunk.first, sunk.last, sunk.cpus, list(sunk.events.items()),
            sunk.layout) == (plain.samples, plain.first, plain.last, plain.cpus,
                             list(plain.events.items()), plain.layout)
    assert [str(d) for d in d4] == [str(d) for d in d3]
    assert [key(s) for b in seen for s in b.samples()] == want


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("size", [1 << 20, 333])
def test_batches_are_the_block_parsers_samples(name: str, size: int) -> None:
    check(TEXTS[name], size)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NAMES), cut=st.floats(0, 1), at=st.floats(0, 1),
       junk=st.sampled_from(["", "\n", "\n\n", "garbage line\n", "\tffff x (y)\n",
                             "# comment\n", "a 1 [000] 1.5: cpu-clock:\n", "\r\n"]),
       size=st.integers(1, 5000))
def test_batches_cut_and_corrupted(name: str, cut: float, at: float, junk: str,
                                   size: int) -> None:
    text = TEXTS[name]
    text = text[: int(len(text) * (0.5 + cut / 2))]
    i = int(len(text) * at)
    check(text[:i] + junk + text[i:], size)


def test_batch_round_trip() -> None:
    samples, _ = ps.parse_text(TEXTS["two_events_default.txt"])
    assert [key(s) for s in ps.Batch.of(samples).samples()] == [key(s) for s in samples]
