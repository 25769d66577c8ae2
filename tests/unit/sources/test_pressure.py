"""Pressure: PSI, schedstat and vmstat parsers (fixtures, and total on any input), the store's
round trip and rates, the sensor on a --root tree, and the saved-loop artifact kinds."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis import pressure as ap
from corescope.ingest import import_paths
from corescope.lab.scenarios import generate
from corescope.model.pressure import RunQueue, SchedstatSample
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors.base import RecordOptions, SensorEnv
from corescope.sensors.pressure import PressureSensor
from corescope.sources import pressure as src
from corescope.sources.artifacts.content import sniff
from corescope.store import pressure as sp
from corescope.store.db import Store
from support import FIXTURES

FX = FIXTURES / "pressure"


def test_psi_fixtures() -> None:
    s, d = src.parse_psi((FX / "psi_cpu_6.18.txt").read_text(), 5.0, "cpu")
    assert d == [] and s is not None
    assert s.some is not None and s.full is not None and s.t == 5.0
    assert s.some.total_us > 0 and 0 <= s.some.avg10 <= 100
    old, d = src.parse_psi((FX / "psi_cpu_5.4.txt").read_text(), 0.0, "cpu")
    assert d == [] and old is not None and old.full is None
    assert old.some is not None and old.some.avg10 == 12.5 and old.some.total_us == 184467213
    mem, _ = src.parse_psi((FX / "psi_memory_6.18.txt").read_text(), 0.0, "memory")
    assert mem is not None and mem.resource == "memory"


def test_schedstat_fixtures_v15_and_v17() -> None:
    for v in (15, 17):
        s, d = src.parse_schedstat((FX / f"schedstat_v{v}_4cpu.txt").read_text())
        assert d == [], d
        assert s is not None and s.version == v
        assert [q.cpu for q in s.cpus] == [0, 1, 2, 3]
        assert all(q.run_ns > q.wait_ns > 0 and q.timeslices > 0 for q in s.cpus)


def test_vmstat_fixture_keeps_reclaim_counters() -> None:
    v, d = src.parse_vmstat((FX / "vmstat_6.18.txt").read_text())
    assert d == [] and v is not None
    for key in ("pgscan_kswapd", "pgscan_direct", "pgsteal_direct", "allocstall_normal",
                "compact_stall", "oom_kill"):
        assert key in v.counters
    assert "nr_free_pages" not in v.counters


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=600) | st.binary(max_size=600).map(lambda b: b.decode("latin-1")))
def test_parsers_are_total(text: str) -> None:
    for fn in (src.parse_schedstat, src.parse_vmstat):
        rec, diags = fn(text)
        assert rec is not None or diags
    rec, diags = src.parse_psi(text)
    assert rec is not None or diags


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([
    "some avg10=1.00 avg60=2.00 avg300=3.00 total=12", "full avg10=nan avg60=0 avg300=0 total=1",
    "cpu0 0 0 1 2 3 4 5 6 7", "cpu1 1 2", "version 15", "domain0 3 1 2", "pgscan_direct 9",
    "pgscan_direct -1", "some avg10=1e400 avg60=0 avg300=0 total=1", "\x00", ""]), max_size=12))
def test_parsers_on_mixed_fragments(lines: list[str]) -> None:
    text = "\n".join(lines)
    for fn in (src.parse_schedstat, src.parse_vmstat, src.parse_psi):
        fn(text)


def test_store_round_trip_and_rates(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s")
    s1, _ = src.parse_schedstat((FX / "schedstat_v15_4cpu.txt").read_text(), 100.0)
    assert s1 is not None
    s2 = SchedstatSample(110.0, 15, tuple(RunQueue(q.cpu, q.run_ns + 10**10, q.wait_ns + 5 *
                                                    10**9, q.timeslices + 9) for q in s1.cpus))
    psi, _ = src.parse_psi((FX / "psi_cpu_6.18.txt").read_text(), 100.0, "cpu")
    vm, _ = src.parse_vmstat((FX / "vmstat_6.18.txt").read_text(), 100.0)
    assert psi is not None and vm is not None
    sp.write(store, [psi], [s1, s2], [vm])
    store.conn.execute("INSERT INTO runqueue VALUES (105.0, 15, x'00ff')")  # a damaged row
    got = sp.read_schedstat(store, 0, 1e9)
    assert [s.t for s in got] == [100.0, 110.0] and got[0].cpus == s1.cpus
    rates = ap.wait_rates(got)
    assert set(rates) == {0, 1, 2, 3}
    assert all(abs(r[0].per_s - 0.5) < 1e-9 for r in rates.values())
    assert sp.read_psi(store, 0, 1e9) == [psi]
    assert sp.read_vmstat(store, 0, 1e9)[0].counters == vm.counters
    # a reboot (counter went backwards) gives no rate for that step
    assert [r.per_s for r in ap.rates([(0, 10), (1, 20), (2, 5), (3, 7)])] == [10.0, 2.0]
    sp.retain(store, 105.0)
    assert [s.t for s in sp.read_schedstat(store, 0, 1e9)] == [110.0]
    store.close()


def _env(root: Path, store_dir: Path) -> SensorEnv:
    return SensorEnv(Root.of(root), Runner(), store_dir, RecordOptions())


def test_sensor_on_a_root_tree_and_what_it_cannot_see(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "proc" / "pressure").mkdir(parents=True)
    for r in ("cpu", "memory", "io"):
        (root / "proc" / "pressure" / r).write_bytes((FX / f"psi_{r}_6.18.txt").read_bytes())
    (root / "proc" / "schedstat").write_bytes((FX / "schedstat_v17_4cpu.txt").read_bytes())
    store = Store.open(tmp_path / "s")
    sensor = PressureSensor(_env(root, tmp_path / "s"))
    status = sensor.open(store)
    assert status.ok and "PSI cpu/memory/io" in status.detail
    assert "/proc/vmstat" in status.detail and "not measured" in status.detail
    for i in range(6):
        sensor.tick(1000.0 + 5 * i, float(i))
    sensor.close()
    assert len(sp.read_psi(store, 0, 1e9)) == 18
    assert len(sp.read_schedstat(store, 0, 1e9)) == 1  # every 6th tick
    assert sp.read_vmstat(store, 0, 1e9) == []
    # nothing to read at all: off, saying what is not measured and how to turn PSI on
    empty = tmp_path / "empty"
    (empty / "proc").mkdir(parents=True)
    off = PressureSensor(_env(empty, tmp_path / "s")).open(store)
    assert not off.ok and "psi=1" in off.detail and "CONFIG_SCHEDSTATS" in off.detail
    store.close()


def test_live_files_read_with_pread() -> None:
    files = src.PressureFiles(Root.of("/"))
    files.open()
    try:
        if "/proc/vmstat" in files.fds:
            text = files.read("/proc/vmstat")
            assert text is not None and src.parse_vmstat(text)[0] is not None
        for path, why in files.missing.items():
            assert not os.path.exists(path) or why
    finally:
        files.close()


def test_saved_loops_are_detected_and_imported(tmp_path: Path) -> None:
    d = tmp_path / "scen"
    exp = generate("cpu_contention", d, cpus=8, seed=2, duration_s=600)
    assert sniff((d / "schedstat.log").read_bytes()) == "schedstat_loop"
    assert sniff((d / "pressure.log").read_bytes()) == "psi_loop"
    assert sniff((d / "vmstat.log").read_bytes()) == "vmstat_loop"
    assert sniff((FX / "schedstat_v15_4cpu.txt").read_bytes()) == "schedstat_loop"
    assert sniff((FX / "vmstat_6.18.txt").read_bytes()) == "vmstat_loop"
    store = Store.open(tmp_path / "store")
    rep = import_paths([d], store)
    kinds = {Path(f.path).name: (f.kind, f.status) for f in rep.files}
    assert kinds["schedstat.log"] == ("schedstat_loop", "imported")
    assert kinds["pressure.log"] == ("psi_loop", "imported")
    assert kinds["vmstat.log"] == ("vmstat_loop", "imported")
    w0, w1 = exp["window"]["start"], exp["window"]["end"]
    psi = [s for s in sp.read_psi(store, w0 - 1, w1 + 1) if s.resource == "cpu"]
    assert len(psi) == 61
    # contention: CPU "some" stalls most of the time, every CPU's tasks wait to run
    cpu_some = ap.rates([(s.t, s.some.total_us) for s in psi if s.some])
    assert sum(r.per_s for r in cpu_some) / len(cpu_some) / 1e6 > 0.3
    waits = ap.wait_rates(sp.read_schedstat(store, w0, w1 + 1))
    assert set(waits) == set(range(8)) and min(r.per_s for v in waits.values() for r in v) > 0.3
    store.close()


def test_a_bare_psi_file_names_no_resource(tmp_path: Path) -> None:
    f = tmp_path / "psi.txt"
    f.write_bytes((FX / "psi_cpu_6.18.txt").read_bytes())
    store = Store.open(tmp_path / "store")
    rep = import_paths([f], store)
    (fr,) = rep.files
    assert fr.kind == "psi_loop" and fr.records == 0
    assert any("name no resource" in d for d in fr.diagnostics)
    store.close()


def _by_loop(text: str) -> str:
    """The same lines, each indented: the line-by-line parse (which strips them) takes it."""
    return "".join(" " + line for line in text.splitlines(keepends=True))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(
    st.sampled_from(["pgscan_kswapd", "pgsteal_direct", "allocstall_normal", "oom_kill",
                     "compact_stall", "workingset_refault_anon", "nr_free_pages", "pgmajfault",
                     "x", "_", "__a", "pgscan", "oom_kill2"]),
    st.integers(0, 2**70)), min_size=1, max_size=30), st.booleans())
def test_vmstat_fast_path_equals_the_line_loop(pairs: list[tuple[str, int]], end: bool) -> None:
    text = "\n".join(f"{k} {v}" for k, v in pairs) + ("\n" if end else "")
    (fast, fd), (loop, ld) = src.parse_vmstat(text, 5.0), src.parse_vmstat(_by_loop(text), 5.0)
    # the same record; the same lines named as not `key value` (quoted as they stood)
    assert fast == loop and [d.line for d in fd] == [d.line for d in ld]


def test_vmstat_fixture_fast_path_equals_the_line_loop() -> None:
    text = (FX / "vmstat_6.18.txt").read_text()
    fast = src.parse_vmstat(text, 5.0)
    assert fast == src.parse_vmstat(_by_loop(text), 5.0) and fast[0] is not None
    assert fast[0].counters["pgmajfault"] >= 0 and not fast[1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 100), st.integers(0, 99)), min_size=3, max_size=3),
       st.integers(0, 2**64), st.booleans())
def test_psi_fast_path_equals_the_token_loop(avgs: list[tuple[int, int]], total: int,
                                             full: bool) -> None:
    a = " ".join(f"avg{w}={i}.{f:02d}" for w, (i, f) in zip((10, 60, 300), avgs, strict=True))
    text = f"some {a} total={total}\n" + (f"full {a} total={total // 2}\n" if full else "")
    fast = src.parse_psi(text, 3.0, "io")
    assert fast[0] is not None and (fast[0].full is not None) == full
    assert fast == src.parse_psi(_by_loop(text), 3.0, "io")


def test_psi_fixtures_fast_path_equals_the_token_loop() -> None:
    for name in ("psi_cpu_6.18.txt", "psi_memory_6.18.txt", "psi_io_6.18.txt",
                 "psi_cpu_5.4.txt"):
        text = (FX / name).read_text()
        assert src.parse_psi(text, 1.0) == src.parse_psi(_by_loop(text), 1.0), name
