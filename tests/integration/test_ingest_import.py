"""A saved-incident folder, imported into a store, reads like a recording.

The folder is written at test time, in the artifacts' real formats, around an incident that
ended 30 minutes ago: per-core mpstat JSON for 96 CPUs with CPU 39 at 99% system time for
10 s, a plain `dmesg` (boot-relative stamps) with the ENA stall and reset one second later, and
inside a nested tar.zst the /proc/stat snapshot whose btime anchors that dmesg, a dated
/proc/interrupts pair saying CPU 39 serves eth0 queue 5, and a census loop. Around them:
garbage, an empty file, a truncated gzip, a FIFO, symlinks and a glued mixed file. Then the
ordinary commands read the store.
"""

from __future__ import annotations

import gzip
import json
import os
import tarfile
import time
from pathlib import Path

from corescope.ingest import import_paths
from corescope.store.db import Store
from corescope.store.imports import read_imports
from support import FIXTURES, run_cli
from support.bundles import special, tar_zst

NCPU = 96
HOT = 39


def _mpstat_json(t0: float, n: int) -> str:
    first = time.localtime(t0)
    stats = []
    for i in range(n):
        lt = time.localtime(t0 + i + 1)
        rows = [{"cpu": "all", "usr": 1.0, "nice": 0.0, "sys": 2.0, "iowait": 0.0, "irq": 0.0,
                 "soft": 0.0, "steal": 0.0, "guest": 0.0, "gnice": 0.0, "idle": 97.0}]
        for c in range(NCPU):
            hot = c == HOT and 20 <= i < 30
            rows.append({"cpu": str(c), "usr": 1.0 if hot else 2.0, "nice": 0.0,
                         "sys": 99.0 if hot else 1.0, "iowait": 0.0, "irq": 0.0, "soft": 0.0,
                         "steal": 0.0, "guest": 0.0, "gnice": 0.0,
                         "idle": 0.0 if hot else 97.0})
        stats.append({"timestamp": time.strftime("%H:%M:%S", lt), "cpu-load": rows})
    doc = {"sysstat": {"hosts": [{"nodename": "node-7", "sysname": "Linux",
                                  "release": "5.10.0", "machine": "x86_64",
                                  "number-of-cpus": NCPU,
                                  "date": time.strftime("%m/%d/%y", first),
                                  "statistics": stats}]}}
    return json.dumps(doc, indent=1)


def _dmesg(boot: float, stall: float) -> str:
    def stamp(t: float) -> str:
        us = round((t - boot) * 1e6)
        return f"[{us // 1_000_000:5d}.{us % 1_000_000:06d}]"

    return "\n".join([
        f"{stamp(stall - 100)} EXT4-fs (nvme0n1p1): re-mounted. Quota mode: none.",
        f"{stamp(stall)} ena 0000:00:05.0 eth0: TX q 5 is paused for too long (threshold "
        "5000000). Time since last napi 6120000 usec. napi scheduled: 1",
        f"{stamp(stall + 0.002)} ena 0000:00:05.0 eth0: Trigger reset is on",
        f"{stamp(stall + 0.9)} ena 0000:00:05.0 eth0: Device reset completed successfully, "
        "Driver info: Elastic Network Adapter (ENA) v2.13.0g",
    ]) + "\n"


def _date(t: float) -> str:
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(t))


def _census(t0: float) -> str:
    rows = (FIXTURES / "artifacts" / "census_loop.txt").read_text().split("\n")[1:14]
    out = []
    for k in range(6):
        table = "\n".join(r.replace("\t50\t", f"\t{1000 + 500 * k}\t") for r in rows)
        out.append(f"{_date(t0 + 10 * k)}\n{table}\n40\n")
    return "".join(out)


def _tar_zst(members: dict[str, bytes], nested: dict[str, bytes] | None = None) -> bytes:
    """The files, a symlink out of the tree and a device, then (`nested`) a bundle inside."""
    hostile = {"../../etc/evil-link": special(tarfile.SYMTYPE, "/etc/passwd"),
               "dev/sda": special(tarfile.BLKTYPE)}
    inner = {"inner/more.tar.zst": _tar_zst(nested)} if nested else {}
    return tar_zst({**members, **hostile, **inner})


def _scenario(d: Path) -> dict[str, float]:
    t0 = time.time() - 1800  # ended 30 min ago: outside "today's map" and inside every window
    boot = round(t0 - 5000)
    hot_end = t0 + 30
    stall = hot_end + 1.0
    d.mkdir()
    (d / "mpstat.json.gz").write_bytes(gzip.compress(_mpstat_json(t0, 60).encode()))
    (d / "dmesg.txt").write_text(_dmesg(boot, stall))
    stat = (FIXTURES / "procstat" / "vm-2cpu-6.18.stat").read_text()
    stat = "\n".join(f"btime {boot}" if ln.startswith("btime") else ln
                     for ln in stat.splitlines()) + "\n"
    ev = FIXTURES / "events"
    irq = (f"{_date(t0 - 10)}\n" + (ev / "proc_interrupts_ena_32q_96cpu.txt").read_text()
           + f"{_date(t0 - 5)}\n" + (ev / "proc_interrupts_ena_32q_96cpu_t5.txt").read_text())
    (d / "bundle").mkdir()
    (d / "bundle" / "node.tar.zst").write_bytes(_tar_zst(
        {"proc/stat": stat.encode(), "loops/interrupts.log": irq.encode()},
        nested={"census.log": _census(t0).encode(),
                "systemctl-show.txt": (FIXTURES / "zombies" / "tools" /
                                       "systemctl_show.txt").read_bytes()}))
    # what else an incident folder holds
    (d / "garbage.bin").write_bytes(os.urandom(4096))
    (d / "empty.log").write_bytes(b"")
    (d / "notes.txt").write_text("called the on-call at 03:10, rebooted nothing\n")
    (d / "cut.log.gz").write_bytes(gzip.compress(_dmesg(boot, stall).encode())[:25])
    (d / "mixed.txt").write_bytes(os.urandom(300) + b"\n" + _census(t0).encode())
    os.mkfifo(d / "fifo")
    (d / "dmesg-again.txt").symlink_to(d / "dmesg.txt")
    (d / "loop").symlink_to(d, target_is_directory=True)
    return {"t0": t0, "boot": boot, "hot_end": hot_end, "stall": stall}


def test_incident_folder_imports_and_reads_like_a_recording(tmp_path: Path) -> None:
    folder = tmp_path / "incident"
    sc = _scenario(folder)
    store_dir = tmp_path / "store"
    with Store.open(store_dir) as store:
        rep = import_paths([folder], store)
        rows = read_imports(store)
    by = {Path(f.path.split("!")[0]).name + ("!" + f.path.split("!", 1)[1] if "!" in f.path
                                              else ""): f for f in rep.files}
    assert by["mpstat.json.gz"].kind == "mpstat_json"
    assert by["mpstat.json.gz"].status == "imported"
    assert by["mpstat.json.gz"].records == 60 and len(by["mpstat.json.gz"].cpus) == NCPU
    assert by["mpstat.json.gz"].codecs == ("gzip",)
    # the log and a symlink to it: read once (whichever came first), the other is "same content"
    pair = [by["dmesg.txt"], by["dmesg-again.txt"]]
    assert {f.kind for f in pair} == {"kernel_log"}
    assert sorted(f.status for f in pair) == ["imported", "skipped"]
    assert by["node.tar.zst!proc/stat"].kind == "proc_stat"
    assert rep.boot_time == sc["boot"] and rep.boot_time_how == "btime in /proc/stat"
    assert by["node.tar.zst!loops/interrupts.log"].records == 2
    assert by["node.tar.zst!inner/more.tar.zst!census.log"].records == 6
    assert by["node.tar.zst!inner/more.tar.zst!systemctl-show.txt"].kind == "systemctl_show"
    skipped = {k: f.reason for k, f in by.items() if f.status == "skipped"}
    for name in ("garbage.bin", "empty.log", "notes.txt", "cut.log.gz", "fifo",
                 "loop", "node.tar.zst!../../etc/evil-link",
                 "node.tar.zst!dev/sda"):
        assert skipped.get(name), name
    assert "symlink" in skipped["node.tar.zst!../../etc/evil-link"]
    assert "device" in skipped["node.tar.zst!dev/sda"]
    assert "same content" in (skipped.get("dmesg-again.txt") or skipped["dmesg.txt"])
    # random bytes glued before a census loop: what can be read is, the rest is said
    assert by["mixed.txt"].kind == "census_loop" and by["mixed.txt"].records == 6
    assert by["mixed.txt"].status == "partial" and by["mixed.txt"].diagnostics
    assert not (tmp_path / "etc").exists()  # nothing was extracted anywhere
    assert len(rows) == len(rep.files)

    s = str(store_dir)
    proc = run_cli("--store", s, "cores", "--json", "--last", "1h")
    assert proc.returncode in (0, 1), proc.stderr  # 1: the episode is a finding
    cores = json.loads(proc.stdout)
    assert cores["samples"] >= 60 and len(cores["cpus"]) == NCPU
    eps = [e for e in cores["episodes"] if e["cpu"] == HOT]
    assert len(eps) == 1 and abs(eps[0]["end"] - sc["hot_end"]) <= 1.0
    assert eps[0]["duration_s"] >= 9

    proc = run_cli("--store", s, "events", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    evs = json.loads(proc.stdout)["events"]
    stall = [e for e in evs if e["kind"] == "nic_tx_stall"]
    assert len(stall) == 1 and abs(stall[0]["time"] - sc["stall"]) < 1e-3
    assert stall[0]["fields"]["queue"] == 5

    proc = run_cli("--store", s, "report", "--event", str(stall[0]["id"]), "--json")
    assert proc.returncode == 1, proc.stderr
    inc = json.loads(proc.stdout)["incidents"][0]
    pre = [p for p in inc["preceding_episodes"] if p["cpu"] == HOT]
    assert pre and pre[0]["serves_queue"] is True

    # the zombie report reads the imported censuses (store-backed part of its output)
    proc = run_cli("--store", s, "zombies", "--json")
    assert "Traceback" not in proc.stderr
    z = json.loads(proc.stdout)
    assert z["growth"]["points"] >= 6

    # a second import of the same folder adds nothing
    with Store.open(store_dir) as store:
        again = import_paths([folder], store)
    assert all(f.records == 0 for f in again.files)
