"""ring_profile's column path decides idleness per stack on the chunk's tables (numpy) and
merges stacks across chunks on ids of its own: both must give what Profile.add gives sample
by sample, whatever the stack looks like (irq frames under the idle loop, no frames at all,
a pid perf did not know, swapper's name), and whatever the frame table's generation.

The samples are built from the kernel's own idle and interrupt paths as `perf script` shows
them on this machine (pv_native_safe_halt <- default_idle <- do_idle <- cpu_startup_entry;
asm_sysvec_apic_timer_interrupt over the idle loop; __do_softirq/net_rx_action)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from corescope.analysis.flame import Profile, is_idle
from corescope.evidence import ring_profile as rp
from corescope.model.profiles import ProfileChunk, StackSample
from corescope.runner import Runner
from corescope.sources.perf_script import intern_frame
from corescope.store import profile_columns as pcols
from corescope.store import profiles as ring
from corescope.store.db import Store


def _k(sym: str) -> object:
    return intern_frame(sym, "[kernel.kallsyms]", True, False)


IDLE_PATH = [_k(s) for s in ("pv_native_safe_halt", "default_idle", "default_idle_call",
                             "do_idle", "cpu_startup_entry", "start_secondary")]
IRQ_OVER_IDLE = [_k(s) for s in ("_raw_spin_unlock_irqrestore", "hrtimer_interrupt",
                                 "__sysvec_apic_timer_interrupt",
                                 "asm_sysvec_apic_timer_interrupt")] + IDLE_PATH
SOFTIRQ = [_k(s) for s in ("napi_gro_receive", "net_rx_action", "handle_softirqs",
                           "__irq_exit_rcu")] + IDLE_PATH
USER = [intern_frame(s, "/usr/bin/python3.11", False, False)
        for s in ("_PyEval_EvalFrameDefault", "PyEval_EvalCode", "run_mod", "main")]
INLINED = [intern_frame("memcpy_inline", "/usr/lib/libc.so.6", False, True), *USER]
STACKS = [(), tuple(IDLE_PATH), tuple(IRQ_OVER_IDLE), tuple(SOFTIRQ), tuple(USER),
          tuple(INLINED), tuple(IDLE_PATH[2:]), tuple(USER + IDLE_PATH)]
WHO = [("swapper", 0, 0, True), ("swapper/1", 0, 0, True), ("python3", 4242, 4243, True),
       ("python3", 4242, 4244, True), ("kworker/1:2", 91, 91, False), (":-1", -1, -1, True),
       ("idle thread", 0, 0, False)]


def samples(n: int, seed: int, t0: float) -> list[StackSample]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        comm, pid, tid, known = rnd.choice(WHO)
        out.append(StackSample(comm, pid, tid, rnd.choice([0, 1]), t0 + i * 0.001,
                               "cpu-clock", rnd.choice(STACKS), 1,
                               rnd.choice([None, 1000, 250000]), known))
    return out


def column_ring(d: Path, parts: list[list[StackSample]]) -> Store:
    store = Store.open(d)
    pdir = ring.profile_dir(Path(store.directory))
    for i, part in enumerate(parts):
        path = pdir / f"chunk-{i}{pcols.SUFFIX}"
        size = pcols.ColumnsBuilder().extend(part).write(path)
        lo = part[0].time
        hi = part[-1].time + 1e-3
        assert lo is not None and hi is not None
        ring.add_chunk(store, ProfileChunk(0, f"{ring.PROFILE_DIR}/{path.name}",
                                           "CLOCK_MONOTONIC", lo, hi, lo + 1e9, hi + 1e9, 1e9,
                                           size, size, len(part), 49))
    return store


def by_sample(parts: list[list[StackSample]], cpu: int | None, include_idle: bool,
              weight: str) -> Profile:
    prof = Profile(include_idle=include_idle, weight=weight, by_thread=True)
    for s in (s for p in parts for s in p):
        if cpu is None or s.cpu == cpu:
            prof.add(s)
    return prof


def same(a: Profile, b: Profile) -> None:
    assert (a.samples, a.idle_samples, a.total_weight, a.idle_weight) == \
        (b.samples, b.idle_samples, b.total_weight, b.idle_weight)
    assert list(a.stack_totals().items()) == list(b.stack_totals().items())
    assert list(a.stacks.items()) == list(b.stacks.items())
    assert list(a.threads.items()) == list(b.threads.items())
    assert sorted(a.folded(True).items()) == sorted(b.folded(True).items())


@pytest.mark.parametrize("include_idle", [False, True])
@pytest.mark.parametrize("cpu", [None, 1])
def test_column_counts_equal_sample_by_sample(tmp_path: Path, include_idle: bool,
                                              cpu: int | None) -> None:
    parts = [samples(400, seed, 100.0 + seed) for seed in range(3)]
    store = column_ring(tmp_path / "s", parts)
    chunks = ring.all_chunks(store)
    for weight in ("samples", "period"):
        got = rp.ring_profile(store, Runner(), chunks[0].wall_start, chunks[-1].wall_end, cpu,
                              include_idle=include_idle, weight=weight, by_thread=True)
        same(got, by_sample(parts, cpu, include_idle, weight))
    # every stack shape was met, idle and not
    assert {is_idle(s) for p in parts for s in p} == {True, False}


def test_idle_is_decided_as_is_idle_decides(tmp_path: Path) -> None:
    # one sample of every (who, stack): the idle count is exactly is_idle's
    parts = [[StackSample(c, p, t, 0, 1.0 + i * 0.01 + j * 1e-4, "cpu-clock", st, 1, None, k)
              for j, (c, p, t, k) in enumerate(WHO)] for i, st in enumerate(STACKS)]
    flat = [s for p in parts for s in p]
    flat.sort(key=lambda s: s.time or 0.0)
    store = column_ring(tmp_path / "s", [flat])
    c = ring.all_chunks(store)[0]
    got = rp.ring_profile(store, Runner(), c.wall_start, c.wall_end, include_idle=True)
    assert got.idle_samples == sum(map(is_idle, flat)) > 0
    assert got.samples == len(flat)


def test_frame_table_starting_over_keeps_answers(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    parts = [samples(300, seed, 200.0 + seed) for seed in range(2)]
    store = column_ring(tmp_path / "s", parts)
    chunks = ring.all_chunks(store)
    lo, hi = chunks[0].wall_start, chunks[-1].wall_end
    first = rp.ring_profile(store, Runner(), lo, hi, by_thread=True)
    gen = rp._TABLE.generation
    monkeypatch.setattr(rp, "_FRAME_MAX", 1)  # full: the next query starts the table over
    again = rp.ring_profile(store, Runner(), lo, hi, by_thread=True)
    assert rp._TABLE.generation > gen
    same(first, again)
    same(again, by_sample(parts, None, False, "samples"))


@pytest.mark.parametrize("dtype", ["<i8", "<i4", "<f8", "<u2", "|u1", ">i8"])
def test_byte_planes_read_back_as_written(dtype: str) -> None:
    """A column section is its values' byte planes (plane k: byte k of every value, the high
    bytes of ids and pids alike), read back into the same values, and the planes are laid out
    as every chunk written so far has them."""
    rng = random.Random(7)
    for n in (0, 1, 2, 7, 1000):
        dt = np.dtype(dtype)
        raw = bytes(rng.getrandbits(8) for _ in range(n * dt.itemsize))
        arr = np.frombuffer(raw, dtype=dt).copy()
        data = pcols._shuffle(arr)
        planes = [bytes(raw[i * dt.itemsize + k] for i in range(n)) for k in range(dt.itemsize)]
        assert data == (b"".join(planes) if dt.itemsize > 1 else raw)
        back = pcols._unshuffle(data, dt, n)
        assert back.dtype == dt and back.tobytes() == raw


def test_batches_build_the_columns_samples_build() -> None:
    """The import's column-at-a-time builder (add_batch) makes the same columns as adding the
    same samples one by one (the string table may be in another order: compared by value),
    on every captured perf script form."""
    from corescope.sources import perf_script as ps
    from support import FIXTURES

    def values(cb: pcols.ColumnsBuilder) -> dict[str, object]:
        s = list(cb._strings)
        frames = [(s[a], s[b], f) for a, b, f in cb._frame_rows]
        return {"stacks": [(s[c], [frames[i] for i in fr]) for c, fr in cb._stack_rows],
                "events": [s[e] for e in cb.events],
                **{n: getattr(cb, n) for n in ("stack_ids", "cpus", "pids", "tids", "counts",
                                                "weights", "periods", "pid_known")}}

    for path in sorted((FIXTURES / "profiles").glob("*.txt")):
        text = path.read_text(errors="replace")
        blocks = [text[i : i + 4096] for i in range(0, len(text), 4096)]
        by_batch = pcols.ColumnsBuilder()
        for b in ps.parse_batches(blocks):
            by_batch.add_batch(b)
        by_sample = pcols.ColumnsBuilder().extend(ps.parse_blocks(blocks))
        assert values(by_batch) == values(by_sample), path.name
        assert np.array_equal(np.asarray(by_batch.times), np.asarray(by_sample.times),
                              equal_nan=True), path.name
