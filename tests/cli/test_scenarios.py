"""The scenario generator: deterministic bytes, formats the real tools write and our parsers
read, ground truth consistent with the files, sane sizes."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from corescope.analysis.classify import classify_record
from corescope.analysis.reports import join_reports
from corescope.lab.scenarios import KINDS, dmesg, generate, make_plan
from corescope.lab.scenarios.stacks import WALKER_FAMILY
from corescope.sources import perf_script
from corescope.sources.interrupts import parse_proc_interrupts, queue_map
from corescope.sources.kmsg_saved import parse_saved_log
from corescope.sources.units import parse_crictl_ps, parse_systemctl_show
from support import run_cli

SHORT = {"cpus": 8, "duration_s": 600}


def _digest(d: Path) -> dict[str, str]:
    return {str(f.relative_to(d)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(d.rglob("*")) if f.is_file()}


def _text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode()


@pytest.fixture(scope="module")
def short_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every kind, 8 CPUs, 10 minutes, seeds that vary the formats."""
    base = tmp_path_factory.mktemp("scen")
    out = {}
    for i, kind in enumerate(KINDS):
        d = base / kind
        generate(kind, d, seed=11 + i, **SHORT)
        out[kind] = d
    return out


def test_same_seed_same_bytes_other_seed_differs(tmp_path: Path) -> None:
    kw = dict(SHORT, perf_compress="gz", mpstat_compress="gz")
    generate("zombie_chain", tmp_path / "a", seed=5, **kw)
    generate("zombie_chain", tmp_path / "b", seed=5, **kw)
    generate("zombie_chain", tmp_path / "c", seed=6, **kw)
    a, b, c = (_digest(tmp_path / x) for x in "abc")
    assert a == b
    assert len(a) > 10
    assert a != c


def test_parameters_vary_between_seeds() -> None:
    plans = [make_plan("zombie_chain", seed=s) for s in range(1, 13)]
    assert len({p.hot_cpu for p in plans}) > 4
    assert len({p.culprit for p in plans}) > 2
    assert {p.dmesg_format for p in plans} == {"plain", "iso"}
    assert {p.perf_clock for p in plans} == {"boot", "realtime"}
    assert len({p.noise for p in plans}) > 6


def test_mpstat_json_has_sysstats_structure(short_dirs: dict[str, Path], tmp_path: Path) -> None:
    d = short_dirs["zombie_chain"]
    path = next(d.glob("mpstat.json*"))
    text = _text(path)
    doc = json.loads(text)
    host = doc["sysstat"]["hosts"][0]
    stats = host["statistics"]
    assert host["number-of-cpus"] == 8 and len(stats) == 600
    for entry in stats:
        rows = entry["cpu-load"]
        assert [r["cpu"] for r in rows] == ["all"] + [str(c) for c in range(8)]
        for r in rows:
            assert abs(sum(v for k, v in r.items() if k != "cpu") - 100) <= 1.0
    mpstat = shutil.which("mpstat")
    if mpstat is None:
        pytest.skip("mpstat (sysstat) not installed: cannot compare with the real tool")
    real = subprocess.run([mpstat, "-P", "ALL", "-o", "JSON", "1", "2"], capture_output=True,
                          text=True, check=True, env={"LC_ALL": "C", "TZ": "UTC"}).stdout
    rdoc = json.loads(real)
    rhost = rdoc["sysstat"]["hosts"][0]
    assert list(host) == list(rhost)
    assert list(stats[0]) == list(rhost["statistics"][0])
    assert list(stats[0]["cpu-load"][0]) == list(rhost["statistics"][0]["cpu-load"][0])

    # the same layout line by line: tabs, punctuation, key order; only values differ
    def shape(s: str) -> list[str]:
        s = re.sub(r'"(nodename|release|date|timestamp|cpu)": "[^"]*"', r'"\1": V', s)
        s = re.sub(r"\d+(\.\d+)?", "N", s)
        return s.splitlines()

    ours, theirs = shape(text), shape(real)
    head = 15  # the header, the first entry, its "all" and cpu0 rows
    assert ours[:head] == theirs[:head]
    assert ours[-8:] == theirs[-8:]


def test_perf_chunks_parse_and_follow_the_story(short_dirs: dict[str, Path]) -> None:
    d = short_dirs["zombie_chain"]
    exp = json.loads((d / "expected.json").read_text())
    chunks = sorted((d / "perf").iterdir())
    assert len(chunks) == 5  # 10 minutes of 2-minute chunks
    diags: list = []
    samples = [s for f in chunks for s in perf_script.parse_text(_text(f))[0]]
    for f in chunks:
        _, dg = perf_script.parse_text(_text(f))
        diags += dg
    assert diags == []
    cpus = exp["formats"]["perf_cpus"]
    assert {s.cpu for s in samples} == set(cpus)
    assert abs(len(samples) - 49 * 600 * len(cpus)) <= 2 * len(cpus)
    # times on the declared clock, inside the window
    offset = exp["boot_time"] if exp["formats"]["perf_clock"] == "boot" else 0
    lo, hi = exp["window"]["start"], exp["window"]["end"]
    assert all(lo - 1 <= s.time + offset <= hi + 1 for s in samples)
    # the walker owns the hot core's kernel samples inside the episodes, in walk functions
    hot = exp["hot_cpu"]
    eps = [(e["start"], e["end"]) for e in exp["episodes"]]
    in_ep = [s for s in samples if s.cpu == hot
             and any(a <= s.time + offset < b for a, b in eps)]
    kern = [s for s in in_ep if s.frames and s.frames[0].kernel]
    walkers = [s for s in kern if s.comm == exp["walker"]["comm"]
               and s.frames[0].symbol in WALKER_FAMILY]
    assert len(walkers) > 0.8 * len(kern)
    leaf = Counter(s.frames[0].symbol for s in walkers).most_common(1)[0][0]
    assert leaf == exp["walker"]["function"]
    # ...while the training job is the busiest process on that core overall
    busy = Counter(s.comm for s in samples if s.cpu == hot and s.comm != "swapper")
    assert busy.most_common(1)[0][0] != exp["walker"]["comm"]


@pytest.mark.parametrize("kind", KINDS)
def test_dmesg_classifies_to_the_intended_kinds(short_dirs: dict[str, Path], kind: str) -> None:
    d = short_dirs[kind]
    exp = json.loads((d / "expected.json").read_text())
    recs, diags = parse_saved_log((d / "dmesg.txt").read_bytes())
    assert diags == []
    plan = make_plan(kind, seed=11 + KINDS.index(kind), **SHORT)
    intended = [k for _t, _m, k in dmesg.all_lines(plan)]
    # a multi-line report (the OOM kill's summary and victim lines) is one event
    got = [e.kind for e in join_reports(
        classify_record(r, r.wall if r.wall is not None else (r.usec or 0) / 1e6) for r in recs)]
    assert got == intended
    story = Counter(k for k in got if k not in ("other", "link_up"))
    assert dict(story) == exp["events"]
    # the stamps anchor to the story's clock (boot-relative ones through /proc/stat btime)
    btime = int(re.search(r"^btime (\d+)$", (d / "proc_stat.txt").read_text(), re.M)[1])
    assert btime == exp["boot_time"]
    times = [r.wall if r.wall is not None else r.usec / 1e6 + btime for r in recs]
    want = [t for t, _m, _k in dmesg.all_lines(plan)]
    assert max(abs(a - b) for a, b in zip(times, want, strict=True)) < 1e-5


def test_story_events_per_kind(short_dirs: dict[str, Path]) -> None:
    ev = {k: json.loads((d / "expected.json").read_text())["events"]
          for k, d in short_dirs.items()}
    assert ev["zombie_chain"]["nic_tx_stall"] >= 1
    assert ev["softirq_storm"]["nic_tx_stall"] >= 1
    assert ev["hardware_fault"]["hw_error"] >= 2 and "nic_tx_stall" not in ev["hardware_fault"]
    assert ev["memory_pressure"]["oom_kill"] >= 2
    assert ev["hypervisor_steal"]["nic_tx_stall"] >= 1
    for quiet in ("healthy_bursty", "zombie_no_harm", "cpu_contention", "crash_loop"):
        assert ev[quiet] == {}


def test_storm_stall_line_says_napi_ran(short_dirs: dict[str, Path]) -> None:
    for kind, short in (("softirq_storm", True), ("zombie_chain", False),
                        ("hypervisor_steal", False)):
        text = (short_dirs[kind] / "dmesg.txt").read_text()
        for m in re.finditer(r"Time since last napi (\d+) usec", text):
            assert (int(m[1]) < 1_000_000) == short


def test_interrupt_map_puts_the_queue_on_the_hot_core(short_dirs: dict[str, Path]) -> None:
    for kind in ("zombie_chain", "softirq_storm", "hypervisor_steal"):
        d = short_dirs[kind]
        exp = json.loads((d / "expected.json").read_text())
        irq = parse_proc_interrupts((d / "proc_interrupts.txt").read_text())
        assert irq.diagnostics == ()
        assert irq.cpus == tuple(range(8))
        qmap = queue_map(irq, None, {}, ifaces={"eth0"})
        assert len(qmap) == make_plan(kind, seed=11 + KINDS.index(kind), **SHORT).queues
        q = [m for m in qmap if m.queue == exp["nic"]["queue"]]
        assert q and exp["hot_cpu"] in q[0].cpus


def test_steal_saturates_the_hot_core_without_kernel_time(short_dirs: dict[str, Path]) -> None:
    d = short_dirs["hypervisor_steal"]
    exp = json.loads((d / "expected.json").read_text())
    doc = json.loads(_text(next(d.glob("mpstat.json*"))))
    hot = exp["hot_cpu"]
    rows = [s["cpu-load"][hot + 1] for s in doc["sysstat"]["hosts"][0]["statistics"]]
    stolen = [r for r in rows if r["steal"] > 60]
    assert stolen and all(r["sys"] + r["soft"] + r["irq"] < 20 for r in stolen)
    assert len({r["steal"] for r in stolen}) > 1


def test_quiet_stories_vary_the_nic() -> None:
    drivers = {make_plan(k, seed=s).nic_driver for k in ("healthy_bursty", "crash_loop")
               for s in range(1, 9)}
    assert drivers == {"ena", "mlx5_core"}
    p = next(q for s in range(1, 30)
             if (q := make_plan("healthy_bursty", cpus=8, seed=s)).nic_driver == "mlx5_core")
    from corescope.lab.scenarios.system import proc_interrupts
    irq = parse_proc_interrupts(proc_interrupts(p))
    qmap = queue_map(irq, None, {"0000:08:00.0": "eth0"})
    assert irq.diagnostics == () and len(qmap) == p.queues
    assert {m.name for m in qmap} == {f"mlx5_comp{q}@pci:0000:08:00.0" for q in range(p.queues)}
    assert all(m.iface == "eth0" for m in qmap)


def test_census_log_counts_the_zombies(short_dirs: dict[str, Path]) -> None:
    for kind in ("zombie_chain", "zombie_no_harm", "healthy_bursty"):
        d = short_dirs[kind]
        exp = json.loads((d / "expected.json").read_text())
        text = (d / "census.log").read_text()
        blocks = re.findall(r"^memory\t\d+\t(\d+)\t1\n(?:.*\n)*?^(\d+)$", text, re.M)
        assert len(blocks) == 61
        dying = [int(k) - int(live) for k, live in blocks]
        assert dying[0] == exp["dying"]["start"] and dying[-1] == exp["dying"]["end"]
        assert dying == sorted(dying)
        if kind == "healthy_bursty":
            assert dying[0] == dying[-1]
        else:
            assert dying[-1] > dying[0]


def test_restart_evidence_names_the_culprit(short_dirs: dict[str, Path]) -> None:
    for kind in ("zombie_chain", "zombie_no_harm", "crash_loop", "healthy_bursty"):
        d = short_dirs[kind]
        exp = json.loads((d / "expected.json").read_text())
        units, ud = parse_systemctl_show((d / "systemctl_show.txt").read_text())
        pods, pd = parse_crictl_ps((d / "crictl_ps.json").read_text())
        assert ud == [] and pd == []
        looping = [r.name for r in units if r.state == "auto-restart"] + \
            [r.name.rsplit("/", 1)[-1] for r in pods if (r.restarts or 0) > 100]
        if kind == "healthy_bursty":
            assert looping == []
        else:
            assert looping == [exp["culprit"]]
            assert any(a in exp["culprit_aliases"] for a in
                       [r.name for r in units + pods if r.name.endswith(exp["culprit"])])


def test_full_hour_96_cpus_sizes(tmp_path: Path) -> None:
    """The benchmark's hour: 3,600 mpstat entries, 30 chunks, a 10,000-line dmesg."""
    d = tmp_path / "hour"
    exp = generate("zombie_chain", d, cpus=96, seed=1, dmesg_lines=10_000,
                   perf_compress="gz", mpstat_compress="gz")
    doc = json.loads(gzip.decompress((d / "mpstat.json.gz").read_bytes()))
    stats = doc["sysstat"]["hosts"][0]["statistics"]
    assert len(stats) == 3600 and len(stats[0]["cpu-load"]) == 97
    assert len(list((d / "perf").iterdir())) == 30
    assert len((d / "dmesg.txt").read_text().splitlines()) == 10_000
    total = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
    assert total < 40_000_000, total  # compressed: nothing near what a test can't afford
    assert len(exp["episodes"]) >= 6


def test_cli_writes_a_scenario_and_refuses_a_full_dir(tmp_path: Path) -> None:
    out = tmp_path / "s"
    p = run_cli("lab", "scenario", "--kind", "healthy_bursty", "--cpus", "4", "--seed", "3",
                "--duration", "2m", "-o", str(out), "--json")
    assert p.returncode == 0, p.stderr
    exp = json.loads(p.stdout)
    assert exp["root_cause"] == "healthy" and (out / "expected.json").exists()
    again = run_cli("lab", "scenario", "--kind", "healthy_bursty", "-o", str(out))
    assert again.returncode == 2 and "not empty" in again.stderr
    bad = run_cli("lab", "scenario", "--kind", "zombie_chain", "--cpus", "4", "--hot-cpu", "9",
                  "-o", str(tmp_path / "x"))
    assert bad.returncode == 2 and "hot cpu 9" in bad.stderr


@pytest.mark.parametrize("kind", ["zombie_chain", "softirq_storm", "hypervisor_steal"])
def test_a_neighbours_bursts_stall_no_queue(kind: str) -> None:
    """Only the story's own saturations (5 s or more, on the hot core) write stall lines: a
    neighbour's kernel bursts, long or short, serve no NIC queue and stall none."""
    from corescope.lab.scenarios import expected

    for seed in range(1, 9):
        p = make_plan(kind, cpus=16, seed=seed, duration_s=1200, also=("neighbours",))
        stalls = [t for t, _m, k in dmesg.story_lines(p) if k == "nic_tx_stall"]
        story = [e for e in p.episodes if not e.who and e.duration >= 5.0]
        assert len(stalls) == len(story), (seed, stalls, p.episodes)
        exp = expected(p)
        assert sum(e["reset_follows"] for e in exp["episodes"]) == len(story)
        assert all(not e["reset_follows"] for e, pe in zip(exp["episodes"], p.episodes,
                                                            strict=True) if pe.who)


def test_what_was_not_saved_is_not_guessed() -> None:
    """The ground truth follows the evidence: contention needs the pressure loops (without
    them every core busy is load or contention, undetermined), a quiet hour needs a log
    with times, and contention outranks a leak's warning only when it was measured."""
    from corescope.lab.scenarios import root_cause

    def rc(kind: str, **kw: object) -> str:
        return root_cause(make_plan(kind, cpus=8, seed=3, duration_s=600, **kw))

    assert rc("cpu_contention") == "cpu_contention"
    assert rc("cpu_contention", omit=("pressure",)) == "undetermined"
    assert rc("healthy_bursty", also=("contention",)) == "cpu_contention"
    assert rc("healthy_bursty", also=("contention",), omit=("pressure",)) == "undetermined"
    assert rc("zombie_no_harm", also=("contention",)) == "cpu_contention"
    assert rc("zombie_no_harm", also=("contention",), omit=("pressure",)) \
        == "zombie_leak_no_harm"
    assert rc("crash_loop", also=("contention",), omit=("pressure",)) == "crash_loop"
    assert rc("healthy_bursty", omit=("dmesg_time",)) == "undetermined"
    assert rc("healthy_bursty", also=("flat_leak",), omit=("dmesg_time",)) \
        == "zombie_leak_no_harm"
    # a loop shows only in restart counts, a leak only in the census
    assert rc("crash_loop", omit=("restarts",)) == "healthy"
    assert rc("healthy_bursty", also=("small_leak",), omit=("restarts",)) == "healthy"
    assert rc("zombie_no_harm", omit=("census",)) == "crash_loop"
    assert rc("zombie_no_harm", omit=("census", "restarts")) == "healthy"
    assert rc("crash_loop", also=("flat_leak",), omit=("census",)) == "crash_loop"
    # hardware errors only in a log without times: the second stories are what shows
    assert rc("hardware_fault", omit=("dmesg_time",)) == "undetermined"
    assert rc("hardware_fault", omit=("dmesg_time",), also=("contention", "small_leak")) \
        == "cpu_contention"
    assert rc("hardware_fault", omit=("dmesg_time",), also=("small_leak",)) == "crash_loop"
    # memory pressure shows in PSI and vmstat, or in the OOM lines of a log with times
    assert rc("memory_pressure", omit=("pressure",)) == "memory_pressure"
    assert rc("memory_pressure", omit=("dmesg_time",)) == "memory_pressure"
    assert rc("memory_pressure", omit=("pressure", "dmesg_time")) == "undetermined"
