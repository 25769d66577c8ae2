"""Time travel is O(window), not O(ring): the same 1-chunk window queried on a ring of 360
chunks and on a ring of 1 chunk. Goal: ratio <= 1.2. Chunks are copies of one real 3 s
chunk, symbolised as `record` stores it (text), indexed back to back (small synthetic chunks,
as the issue allows); the chunk read becomes columns on its first read, as `flame` does.
Also: the same window read from the chunk kept as raw perf.data, read as it is (how stores
before symbolising read: perf script at query time)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from _profile_common import median_time, record_raw
from corescope.analysis.flame import Profile
from corescope.evidence.profile_query import ring_samples
from corescope.model.profiles import ProfileChunk
from corescope.runner import Runner
from corescope.sources.perf import compress_file, count_samples, symbolise
from corescope.store import profiles as ring
from corescope.store.db import Store

N = 360
RUNS = 31  # a column read of one chunk takes well under a millisecond: many runs


def build(store_dir: Path, raw: Path, n: int, lo: float, hi: float, samples: int,
          fmt: str = "txt") -> Store:
    store = Store.open(store_dir)
    d = ring.profile_dir(store_dir)
    zst = d / f"chunk-0.{fmt}.zst"
    if fmt == "txt":
        symbolise(Runner(), raw, lo, hi, zst)
        size = zst.stat().st_size
    else:
        size = compress_file(raw, zst)
    length = hi - lo
    wall0 = 1_800_000_000.0
    for i in range(n):
        name = f"chunk-{i}.{fmt}.zst"
        if i:
            shutil.copyfile(zst, d / name)
        w = wall0 + i * length
        # every copy holds the same perf times; its offset maps them to its own wall span
        ring.add_chunk(store, ProfileChunk(0, f"profiles/{name}", "CLOCK_MONOTONIC", lo, hi,
                                           w, w + length, w - lo, size, raw.stat().st_size,
                                           samples, 49))
    return store


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        raw = Path(d) / "c.data"
        record_raw(raw, 3.0)
        runner = Runner()
        from corescope.evidence.profile_query import script_blocks
        from corescope.sources.perf_script import parse_blocks
        times = [s.time for s in parse_blocks(script_blocks(runner, raw)) if s.time is not None]
        lo, hi = min(times), max(times) + 1e-6
        n = count_samples(runner, raw, lo, hi) or 0
        big = build(Path(d) / "big", raw, N, lo, hi, n)
        one = build(Path(d) / "one", raw, 1, lo, hi, n)
        length = hi - lo
        # the window: the middle of the last chunk of the big ring / the only chunk of the small
        w_big = 1_800_000_000.0 + (N - 1) * length
        w_one = 1_800_000_000.0

        # the middle half of the chunk: perf record -a spends its first second or more (on a
        # loaded machine) synthesising the running processes before it samples, so the
        # samples may span well under the 3 s asked; a fixed 0.5 s margin each side then left
        # an empty window and the check below failed with 0 == 0
        margin = length / 4

        def q(store: Store, w: float, migrate: bool = True) -> int:
            # migrate: as flame reads (a text chunk becomes columns on its first read)
            prof = Profile()
            for s, _t in ring_samples(store, runner, w + margin, w + length - margin,
                                      migrate=migrate):
                prof.add(s)
            return prof.samples

        got_big, got_one = q(big, w_big), q(one, w_one)
        if not got_big == got_one > 0:
            raise SystemExit(f"self-check: the window holds {got_big} samples on the ring of "
                             f"{N} and {got_one} on the ring of 1 (chunk {length:.2f} s)")
        t_big = median_time(lambda: q(big, w_big), RUNS)
        t_one = median_time(lambda: q(one, w_one), RUNS)
        print(f"chunk: {length:.1f} s, {n} samples; window {length - 2 * margin:.1f} s, "
              f"{got_one} samples")
        print(f"ring of 1 chunk:    {t_one * 1000:7.2f} ms (median of {RUNS})")
        print(f"ring of {N} chunks: {t_big * 1000:7.2f} ms")
        print(f"ratio:              {t_big / t_one:7.2f}  (goal <= 1.2)")
        old = build(Path(d) / "old", raw, 1, lo, hi, n, fmt="perf")
        assert q(old, w_one, False) == got_one
        t_old = median_time(lambda: q(old, w_one, False), 7)
        print(f"same window, raw perf.data chunk (perf script at query time): "
              f"{t_old * 1000:7.1f} ms; the column chunk ÷ perf.data chunk: {t_one / t_old:.4f}")
        big.close()
        one.close()
        old.close()


if __name__ == "__main__":
    main()
