"""The ring's column chunks give the answers its text chunks gave.

A ring is replayed in the old format (`perf script` text chunks, as `record` wrote them before
columns) and in the new one (the same chunks migrated to columns), and every flame (json,
folded, top table, html data, pprof, speedscope), heatmap and sample stream is compared over
windows that cut across chunks, per CPU, per pid and comm, with idle and against a baseline.
The chunks are real captures from tests/fixtures/profiles (see its README): the ring's own
`-F` fields, the default fields with periods and two events, side-band lines, and a header
with the tid alone (no pid). Every case is asked by samples and by period (`flame --weight`),
per thread (`--with-tid`), and per perf event (`--event NAME`, or the first one seen).
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from corescope.analysis.flame import Profile, diff_folded
from corescope.analysis.flame_report import FlameReport, top_table
from corescope.analysis.subsecond import Heatmap
from corescope.evidence import profile_query
from corescope.evidence.ring_profile import EventPick, ring_profile
from corescope.render import pprof
from corescope.render.speedscope import Speedscope
from corescope.runner import Runner
from corescope.store import profile_columns as pcols
from corescope.store import profiles as ring
from corescope.store.db import Store
from support import FIXTURES, run_cli

PROFILES = FIXTURES / "profiles"
# (fixture, wall time its first sample maps to): one after the other on the wall clock
SOURCES = (("burner_idle.txt", 1_800_000_000.0), ("two_events_default.txt", 1_800_000_010.0),
           ("task_events.txt", 1_800_000_020.0), ("variant_period.txt", 1_800_000_030.0),
           ("fields_tid_time.txt", 1_800_000_040.0))
_TIME = re.compile(r" (\d+\.\d+): ")


def _records(text: str) -> list[tuple[float | None, str]]:
    out = []
    for rec in text.split("\n\n"):
        if rec.strip():
            m = _TIME.search(rec.split("\n", 1)[0])
            out.append((float(m.group(1)) if m else None, rec + "\n\n"))
    return out


def build_old_ring(d: Path, parts: int = 3) -> Store:
    """Each fixture as `parts` consecutive recorder chunks (chunk-*.txt.zst), each owning
    [boundary, next boundary) of perf time, mapped onto its own wall stretch."""
    store = Store.open(d)
    for name, wall0 in SOURCES:
        recs = _records((PROFILES / name).read_text())
        times = sorted(t for t, _ in recs if t is not None and t > 0)
        lo, hi = times[0], times[-1] + 1e-3
        step = (hi - lo) / parts
        bounds = [lo + i * step for i in range(parts)] + [hi]
        for i in range(parts):
            a, b = bounds[i], bounds[i + 1]
            # a chunk's text may hold a little on either side of what it owns, as perf's
            # hand-over overlap leaves it: the query keeps only [a, b)
            body = [r for t, r in recs if t is None or (a - step / 4 <= t < b + step / 4)]
            ring.add_text_chunk(store, "".join(body), clockid="CLOCK_MONOTONIC",
                                perf_start=a, perf_end=b, clock_offset=wall0 - lo,
                                samples=len(body), hz=49, prefix="chunk")
    return store


def windows(store: Store) -> list[tuple[float, float]]:
    chunks = ring.all_chunks(store)
    out = [(chunks[0].wall_start, chunks[-1].wall_end)]
    for c in chunks:
        out.append((c.wall_start, c.wall_end))
        mid = (c.wall_start + c.wall_end) / 2
        out.append((mid, mid + (c.wall_end - c.wall_start)))  # across a boundary
    return out


def answers(store: Store, lo: float, hi: float, cpu: int | None, pid: int | None,
            comm: str | None, include_idle: bool, migrate: bool, weight: str = "samples",
            event: str | None = None) -> dict[str, object]:
    runner = Runner()
    diags: list = []
    pick = EventPick(event)
    prof = ring_profile(store, runner, lo, hi, cpu, diags, pid=pid, comm=comm,
                        include_idle=include_idle, migrate=migrate, weight=weight,
                        by_thread=True, pick=pick)
    bpick = EventPick(pick.chosen)
    base = ring_profile(store, runner, lo - (hi - lo) / 2, lo, cpu, pid=pid, comm=comm,
                        include_idle=include_idle, migrate=migrate, weight=weight, pick=bpick)
    heat = Heatmap(start=lo, end=hi, row_ms=20)
    hpick = EventPick(event) if event is not None else None
    ring_profile(store, runner, lo, hi, cpu, pid=pid, comm=comm, heat=heat,
                 migrate=migrate, pick=hpick)
    spick = EventPick(event)
    stream = [(s, t) for s, t in profile_query.ring_samples(store, runner, lo, hi, cpu,
                                                             migrate=migrate)
              if (pid is None or pid in (s.pid, s.tid)) and (comm is None or s.comm == comm)
              and spick.keep(s)]
    by_sample = Profile(include_idle=include_idle, weight=weight, by_thread=True).extend(
        s for s, _ in stream)
    scope = Speedscope(include_idle)
    pp = pprof.Samples(include_idle)
    for _ in scope.tap(iter(stream)):
        pp.add(_[0], None if include_idle else by_sample_idle(_[0]))
    report = FlameReport(lo, hi, "wall", cpu, prof, base, lo - (hi - lo) / 2, lo, "test",
                         chunks=3, limit=50)
    return {
        "json": json.dumps(report.to_json(), sort_keys=True),
        "top": top_table(report),
        "folded": sorted(prof.folded().items()),
        "folded_pid": sorted(prof.folded(True).items()),
        "folded_tid": sorted(prof.folded(with_tid=True).items()),
        "weights": (prof.total_weight, prof.idle_weight, base.total_weight),
        "pick": (pick.chosen, list(pick.present.items()), bpick.chosen,
                 list(bpick.present.items()),
                 None if hpick is None else list(hpick.present.items())),
        "diff": sorted(diff_folded(prof, base).items()),
        "events": list(prof.events.items()),
        "times": (prof.first_time, prof.last_time, prof.samples, prof.idle_samples),
        "stacks": list(prof.stacks.items()),
        "heat": heat.to_json(),
        "samples": [(s.comm, s.pid, s.tid, s.cpu, s.time, s.event, s.count, s.period,
                     s.pid_known, tuple(f.key for f in s.frames), t) for s, t in stream],
        "same_as_by_sample": (list(by_sample.stacks.items()), list(by_sample.threads.items()),
                              by_sample.total_weight, by_sample.samples) == (
            list(prof.stacks.items()), list(prof.threads.items()), prof.total_weight,
            prof.samples),
        "speedscope": json.dumps(scope.to_json("w"), sort_keys=True),
        # gzip's header holds the time it was made
        "pprof": gzip.decompress(pprof.to_pprof(pp, 49, time_nanos=0, duration_nanos=1)),
        "notes": sorted(str(d) for d in diags),
    }


def by_sample_idle(s: object) -> bool:
    from corescope.analysis.flame import is_idle

    return is_idle(s)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def rings(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, Store]:
    d = tmp_path_factory.mktemp("rings")
    old = build_old_ring(d / "old")
    old.close()
    shutil.copytree(d / "old", d / "new")
    new = Store.open(d / "new")
    assert profile_query.migrate_all(new, Runner()) == len(SOURCES) * 3
    return Store.open(d / "old"), new


def test_migration_replaces_every_text_chunk(rings: tuple[Store, Store]) -> None:
    old, new = rings
    formats = {c.format for c in ring.all_chunks(new)}
    assert formats == {"columns"} and {c.format for c in ring.all_chunks(old)} == {"text"}
    files = sorted(p.name for p in (Path(new.directory) / ring.PROFILE_DIR).iterdir())
    assert all(n.startswith("chunk-") and n.endswith(pcols.SUFFIX) for n in files)
    assert len(files) == len(SOURCES) * 3
    # the old and the new rows describe the same chunks
    strip = [(c.id, c.wall_start, c.wall_end, c.samples) for c in ring.all_chunks(old)]
    assert strip == [(c.id, c.wall_start, c.wall_end, c.samples) for c in ring.all_chunks(new)]


CASES = [
    dict(cpu=None, pid=None, comm=None, include_idle=False),
    dict(cpu=0, pid=None, comm=None, include_idle=False),
    dict(cpu=1, pid=None, comm=None, include_idle=True),
    dict(cpu=None, pid=None, comm="python3", include_idle=False),
    dict(cpu=None, pid=6831, comm=None, include_idle=False),
    dict(cpu=None, pid=None, comm="swapper", include_idle=True),
    dict(cpu=None, pid=0, comm=None, include_idle=True),
    dict(cpu=None, pid=None, comm=None, include_idle=False, weight="period"),
    dict(cpu=0, pid=None, comm=None, include_idle=True, weight="period"),
    dict(cpu=None, pid=None, comm=None, include_idle=False, event="page-faults",
         weight="period"),
    dict(cpu=None, pid=None, comm=None, include_idle=True, event="cpu-clock"),
    dict(cpu=None, pid=24821, comm=None, include_idle=True, weight="period"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in
                                                               c.items() if v))
def test_every_answer_is_unchanged(rings: tuple[Store, Store], case: dict) -> None:
    old, new = rings
    seen = 0
    for lo, hi in windows(old):
        a = answers(old, lo, hi, **case, migrate=False)
        b = answers(new, lo, hi, **case, migrate=True)
        for key in a:
            if key != "notes":
                assert a[key] == b[key], (key, lo, hi, case)
        # the text's parser notes are kept whole with the chunk: a window that stopped
        # reading early saw fewer of them
        assert set(a["notes"]) <= set(b["notes"])
        assert a["same_as_by_sample"]
        seen += len(a["samples"])
    assert seen > 0


def test_cli_migrates_on_first_read_and_answers_the_same(tmp_path: Path) -> None:
    old = build_old_ring(tmp_path / "s")
    chunks = ring.all_chunks(old)
    lo, hi = chunks[0].wall_start, chunks[2].wall_end
    runner = Runner()
    want = ring_profile(old, runner, lo, hi, 1, migrate=False)
    old.close()
    args = ("--store", str(tmp_path / "s"), "flame", "--since", f"{lo}", "--until", f"{hi}",
            "--cpu", "1", "--format", "folded")
    first = run_cli(*args, check=True).stdout
    store = Store.open(tmp_path / "s")
    # the chunks the window read are columns now, the others still text
    assert [c.format for c in ring.all_chunks(store)][:3] == ["columns"] * 3
    assert ring.all_chunks(store)[3].format == "text"
    store.close()
    again = run_cli(*args, check=True).stdout
    folded = "".join(f"{k} {v}\n" for k, v in sorted(want.folded().items()))
    assert first == again == folded and folded


def test_columns_smaller_than_text_and_exact_times(tmp_path: Path) -> None:
    store = build_old_ring(tmp_path / "s", parts=1)
    text_bytes = sum(c.bytes for c in ring.all_chunks(store))
    profile_query.migrate_all(store, Runner())
    col_bytes = sum(c.bytes for c in ring.all_chunks(store))
    assert col_bytes < text_bytes
    for c in ring.all_chunks(store):
        cols = pcols.read(Path(store.directory) / c.path)
        t = cols.col("time")
        assert cols._index["time"]["enc"] in ("us-delta", "ns-delta")
        assert t.tolist() == sorted(t.tolist()) or not cols.ordered


def test_damaged_column_chunk_is_a_note(tmp_path: Path) -> None:
    store = build_old_ring(tmp_path / "s", parts=1)
    profile_query.migrate_all(store, Runner())
    c = ring.all_chunks(store)[0]
    p = Path(store.directory) / c.path
    p.write_bytes(p.read_bytes()[:200])
    diags: list = []
    prof = ring_profile(store, Runner(), c.wall_start, c.wall_end, None, diags)
    assert prof.samples == 0 and any("truncated" in str(d) or "damaged" in str(d)
                                     for d in diags)


def test_eviction_after_a_migration_removes_the_new_file(tmp_path: Path) -> None:
    # the recorder lists its chunks, a query migrates one, then the recorder drops it: the
    # column file goes, not only the text file that is already gone
    store = build_old_ring(tmp_path / "s", parts=1)
    listed = ring.all_chunks(store)
    profile_query.migrate_all(store, Runner())
    ring._delete(store, listed)
    assert ring.all_chunks(store) == []
    assert list((Path(store.directory) / ring.PROFILE_DIR).iterdir()) == []


def test_sweep_spares_a_column_file_a_query_is_writing(tmp_path: Path) -> None:
    import os

    store = build_old_ring(tmp_path / "s", parts=1)
    d = Path(store.directory) / ring.PROFILE_DIR
    young = d / f"chunk-x{pcols.SUFFIX}"  # written, not yet named by the index
    young.write_bytes(b"x")
    # an import streaming its chunk (`analyze --store` on this directory) is young too
    streaming = d / "import-1.txt.zst"
    streaming.write_bytes(b"z")
    raw = d / "chunk-y.data"  # a killed recorder's leftover, from long ago
    raw.write_bytes(b"y")
    long_ago = raw.stat().st_mtime - ring.ORPHAN_AGE_S - 1
    os.utime(raw, (long_ago, long_ago))
    assert ring.sweep_orphans(store) == 1 and young.exists() and streaming.exists()
    assert not raw.exists()
    for p in (young, streaming):
        os.utime(p, (long_ago, long_ago))
    assert ring.sweep_orphans(store) == 2 and not young.exists() and not streaming.exists()


def test_first_seen_same_groups_packed_or_row_wise() -> None:
    import numpy as np

    from corescope.evidence.ring_profile import _first_seen

    rng = np.random.default_rng(7)
    small = rng.integers(0, 5, size=(500, 3))
    # spans too wide to pack into one integer: numpy's row-wise unique
    wide = small * np.array([1, 1 << 40, 1 << 40])
    for keys in (small, wide):
        first, gid = _first_seen(keys)
        want: dict[tuple[int, ...], int] = {}
        for i, row in enumerate(map(tuple, keys.tolist())):
            want.setdefault(row, i)
        assert first.tolist() == list(want.values())
        assert [tuple(keys[first[g]].tolist()) for g in gid] == list(map(tuple, keys.tolist()))
