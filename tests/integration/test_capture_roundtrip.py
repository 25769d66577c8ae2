"""capture → analyze gives the same investigation as the store it was captured from.

The store is built through the store's own writers with a scripted incident: 8 CPUs at 1 s,
cpu3 pinned in system time for 6 s, a NIC stall on queue 2 (served by cpu3) a second after,
memcg censuses growing, churn under one parent, a restarting unit, stat-read costs and
an interrupt map."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import zstandard

from corescope.model.cgroups import (
    ChurnCount,
    Location,
    MemcgCensus,
    RestartRecord,
    StatReadCost,
)
from corescope.model.cores import CoreSample
from corescope.model.events import KernelEvent, QueueIrq
from corescope.store import census as cs
from corescope.store import events as es
from corescope.store.db import Store
from corescope.store.profiles import add_text_chunk
from corescope.store.series_writer import SeriesWriter
from support import run_cli, run_cli_json

T0 = 1_796_000_000.25
HOT, QUEUE = 3, 2


def _row(user: int, system: int, soft: int = 0) -> tuple[int, ...]:
    return (user, 0, system, 100 - user - system - soft, 0, 0, soft, 0, 0, 0)


def build_store(path: Path) -> None:
    with Store.open(path) as store:
        w = SeriesWriter(store)
        for k in range(1, 301):
            t = T0 + k
            deltas = {c: _row(20 + (k * 7 + c) % 30, 3) for c in range(8)}
            if 200 <= k < 206:
                deltas[HOT] = _row(1, 98)
            w.append(CoreSample(t=t, interval_s=1.0, deltas=deltas))
        w.flush()
        stall = KernelEvent(time=T0 + 206.5, kind="nic_tx_stall", driver="ena",
                            device="0000:00:05.0", fields={"iface": "eth0", "queue": QUEUE},
                            raw=f"ena 0000:00:05.0 eth0: TX q {QUEUE} is paused for too long "
                            "(threshold 5000000). Time since last napi 6120000 usec. napi "
                            "scheduled: 1", mono_usec=9_000_000, seq=41, level=3)
        reset = KernelEvent(time=T0 + 206.6, kind="nic_reset", driver="ena",
                            device="0000:00:05.0", fields={"iface": "eth0"},
                            raw="ena 0000:00:05.0 eth0: Trigger reset is on",
                            mono_usec=9_100_000, seq=42, level=3)
        other = KernelEvent(time=T0 + 50, kind="other", raw="random line </script> \x1b[2J",
                            mono_usec=1_000, seq=7, level=6)
        es.insert_events(store, [other, stall, reset], boot_id="b")
        es.insert_irq_map(store, T0 + 10, [
            QueueIrq("eth0", q, 40 + q, f"eth0-Tx-Rx-{q}", "txrx", (q + 1,), "affinity")
            for q in range(4)])
        for k in range(0, 30):
            t = T0 + 10 * k
            c = MemcgCensus(t=t, layout="v1", hierarchy="v1", kernel_count=5000 + 40 * k,
                            live=40, dying=4960 + 40 * k, source="synthetic", boot_id="b",
                            uptime_s=86400.0 + 10 * k, churn_interval_s=10.0)
            cs.write_census(store, c, [ChurnCount(t, "/kubepods/agent", 40, 40, 1, 10.0,
                                                  "inotify")],
                            [Location("/kubepods/agent", 4000, 4000)] if k == 29 else [])
            cs.write_restarts(store, [RestartRecord(t, "systemd-unit", "ecs.service", 100 + k,
                                                    "auto-restart", "/kubepods/agent")])
        cs.write_stat_costs(store, [StatReadCost(T0 + 5, "memory.stat", 0.5, 0.7, 5, 4900),
                                    StatReadCost(T0 + 290, "memory.stat", 2.5, 3.0, 5, 6100)])
        # the ring: 49 Hz on cpu3 for the 90 s around the burn, in perf script's own text on
        # perf's clock (CLOCK_MONOTONIC), offset from the wall clock as a recording's are
        text, n = _perf_script(T0 + 140, T0 + 230)
        add_text_chunk(store, text, clockid="CLOCK_MONOTONIC", perf_start=T0 + 140 - OFFSET,
                       perf_end=T0 + 230 - OFFSET, clock_offset=OFFSET, samples=n, hz=49)


OFFSET = 1_795_000_000.0
WALK = ["mem_cgroup_nr_lru_pages", "memcg_numa_stat_show", "seq_read_iter", "vfs_read",
        "ksys_read", "do_syscall_64", "entry_SYSCALL_64_after_hwframe"]


def _perf_script(lo: float, hi: float) -> tuple[str, int]:
    """`perf script -F comm,pid,tid,cpu,time,event,ip,sym,dso` records: kubelet walking the
    memcg tree on cpu3 during the burn, a trainer in user space, and idle otherwise."""
    out, n, t = [], 0, lo
    while t < hi:
        in_burn = T0 + 200 <= t < T0 + 206
        if in_burn:
            head, frames = "kubelet 2112/2130", [(f, "[kernel.kallsyms]", True) for f in WALK]
        elif n % 3:
            head, frames = "python3 9001/9001", [("train_step", "/opt/train/bin/python3",
                                                  False)]
        else:
            head, frames = "swapper 0/0", [("default_idle", "[kernel.kallsyms]", True),
                                           ("do_idle", "[kernel.kallsyms]", True)]
        out.append(f"{head} [003] {t - OFFSET:.6f}: 1 cpu-clock:")
        for sym, dso, kernel in frames:
            out.append(f"\t{'ffffffff81234567' if kernel else '55d0c0ffee00'} {sym}+0x1f ({dso})")
        out.append("")
        n += 1
        t += 1 / 49
    return "\n".join(out) + "\n", n


def _comparable(inv: dict[str, Any]) -> dict[str, Any]:
    """The investigation's answers, without where the store lives."""
    return {k: inv[k] for k in ("cores", "events", "report", "zombies", "findings", "profiles",
                                "verdict", "window")}


def test_capture_then_analyze_is_the_same_investigation(tmp_path: Path) -> None:
    store = tmp_path / "live"
    build_store(store)
    since, until = f"{T0 + 120:.3f}", f"{T0 + 290:.3f}"
    bundle = tmp_path / "incident.tar.zst"
    run_cli("capture", "--store", str(store), "--since", since, "--until", until,
            "-o", str(bundle), check=True)
    assert oct(bundle.stat().st_mode & 0o777) == "0o600"

    # the same window straight from the live store, as `analyze --json` shapes it
    direct = run_cli_json("analyze", "--store", str(tmp_path / "direct"), str(bundle),
                          "--json")
    inv = direct["investigation"]
    assert inv["window"] == {"start": round(T0 + 120, 3), "end": round(T0 + 290, 3)}
    files = {f["path"].rsplit("/", 1)[-1]: f for f in direct["import"]["files"]}
    assert files["cores.mpstat.json"]["status"] == "skipped"
    assert "copy of cores.ndjson" in files["cores.mpstat.json"]["reason"]
    assert files["events.dmesg-iso.txt"]["status"] == "skipped"
    assert files["cores.ndjson"]["records"] > 0

    cores = run_cli_json("cores", "--store", str(store), "--since", since, "--until", until,
                         "--json")
    report = run_cli_json("report", "--store", str(store), "--since", since, "--until", until,
                          "--json")
    events = run_cli_json("events", "--store", str(store), "--since", since, "--until", until,
                          "--json")
    zombies = run_cli_json("zombies", "--store", str(store), "--since", since, "--until",
                           until, "--json")
    assert inv["cores"] == cores
    assert inv["report"] == report
    assert inv["events"] == events
    for key in ("memory", "growth", "locations", "suspects", "stat_read_ms", "churn"):
        assert inv["zombies"][key] == zombies[key], key

    # the stacks before the incident and the diagnosis read from them, alike
    doc = run_cli_json("doctor", "--store", str(store), "--since", since, "--until", until,
                       "--json")
    assert inv["diagnosis"] == report["diagnosis"] == doc["diagnosis"]
    assert inv["profiles"] and inv["profiles"][0]["cpu"] == HOT
    assert inv["profiles"][0]["busy_samples"] > 0
    v = inv["diagnosis"]["verdict"]
    assert v["walker"] == {"comm": "kubelet", "function": "mem_cgroup_nr_lru_pages"}, v
    assert (v["root_cause"], v["hot_cpu"], v["culprit"]) == ("zombie_memcg_leak", HOT,
                                                            "ecs.service"), v

    # the incident as the story needs it: preceded on cpu3, which serves queue 2
    [incident] = inv["report"]["incidents"]
    [pre] = incident["preceding_episodes"]
    assert pre["cpu"] == HOT and pre["serves_queue"] is True
    assert incident["event"]["id"] == report["incidents"][0]["event"]["id"]

    # analysing the kept store again (every command on it) gives the same again
    again = run_cli_json("report", "--store", str(tmp_path / "direct"), "--since", since,
                         "--until", until, "--json")
    assert again == report


def test_bundle_files_are_plain_and_documented(tmp_path: Path) -> None:
    store = tmp_path / "live"
    build_store(store)
    bundle = tmp_path / "b.tar.zst"
    run_cli("capture", "--store", str(store), "--since", f"{T0 + 100}", "--until",
            f"{T0 + 300}", "-o", str(bundle), check=True)
    raw = zstandard.ZstdDecompressor().stream_reader(bundle.open("rb"))
    with tarfile.open(fileobj=raw, mode="r|") as tar:
        files = {m.name.split("/", 1)[1]: tar.extractfile(m).read()  # type: ignore[union-attr]
                 for m in tar if m.isfile()}
    man = json.loads(files["manifest.json"])
    assert man["format"] == "corescope-capture" and man["version"] == 1
    assert {f["path"] for f in man["files"]} == set(files) - {"manifest.json"}
    mp = json.loads(files["cores.mpstat.json"])
    host = mp["sysstat"]["hosts"][0]
    assert host["number-of-cpus"] == 8
    first = host["statistics"][0]["cpu-load"]
    assert first[0]["cpu"] == "all" and [c["cpu"] for c in first[1:]] == [str(c) for c in
                                                                          range(8)]
    dmesg = files["events.dmesg-iso.txt"].decode()
    assert "TX q 2 is paused for too long" in dmesg and dmesg.startswith("20")
    loop = files["census-loop.txt"].decode().splitlines()
    assert loop[1].startswith("#subsys_name") and loop[2].startswith("memory\t")


def test_analyze_refuses_to_mix_into_a_live_recording(tmp_path: Path) -> None:
    store = tmp_path / "live"
    build_store(store)
    bundle = tmp_path / "b.tar"
    run_cli("capture", "--store", str(store), "--last", "60s", "-o", str(bundle), check=True)
    proc = run_cli("analyze", "--store", str(store), str(bundle))
    assert proc.returncode == 2 and "live recording" in proc.stderr
