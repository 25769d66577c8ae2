"""Pressure evidence as saved by loops on the node:
`date; grep . /proc/pressure/*` every 10 s (PSI, kernels ≥ 4.20),
`date; cat /proc/schedstat` every 30 s (run-queue wait per CPU, version 15),
`date; cat /proc/vmstat` every 30 s (reclaim, compaction, allocation stalls, OOM kills).

PSI averages follow the kernel's: every 2 s, avg = avg·e^(−2/W) + pct·(1 − e^(−2/W)) for
W = 10, 60, 300 s; `total` is the stall time in microseconds since boot.
"""

from __future__ import annotations

import math
from pathlib import Path

from corescope.lab.scenarios.census import date_line
from corescope.lab.scenarios.load import Totals
from corescope.lab.scenarios.out import write_text
from corescope.lab.scenarios.plan import Plan, rng_for

PSI_EVERY_S = 10
SCHEDSTAT_EVERY_S = 60
VMSTAT_EVERY_S = 30
_DECAY = tuple(math.exp(-2.0 / w) for w in (10, 60, 300))


def has_psi(p: Plan) -> bool:
    return not p.kernel.startswith("4.")


def _oom_times(p: Plan) -> list[float]:
    from corescope.lab.scenarios.dmesg import story_lines
    return sorted(t for t, _m, kind in story_lines(p) if kind == "oom_kill")


def _stall(p: Plan, t: float, r_val: float, ooms: list[float]) -> dict[str, tuple[float, float]]:
    """(some %, full %) per resource at time t."""
    cpu = 0.4 + 3.0 * p.noise * r_val
    if p.contended:
        cpu = 45.0 + 25.0 * math.sin((t - p.start) / 400.0) ** 2 + 10 * r_val
    mem = 0.0 if r_val < 0.9 else 0.3
    full = 0.0
    if p.kind == "memory_pressure":
        near = min((abs(t - o) for o in ooms), default=1e9)
        mem = 12.0 + 20.0 * r_val + (35.0 if near < 40 else 0.0)
        full = mem * 0.45
    io = 0.2 + 1.5 * r_val
    return {"cpu": (min(cpu, 100.0), 0.0), "io": (io, io * 0.6),
            "memory": (min(mem, 100.0), min(full, 100.0))}


def psi_log(p: Plan) -> str:
    r = rng_for(p.kind, p.seed, "psi")
    ooms = _oom_times(p)
    up0 = p.start - p.boot_time
    base = {"cpu": 0.01, "io": 0.005, "memory": 0.0005 if p.kind != "memory_pressure" else 0.01}
    total = {(res, k): int(up0 * 1e6 * base[res] * (1 if k == "some" else 0.5))
             for res in ("cpu", "io", "memory") for k in ("some", "full")}
    total[("cpu", "full")] = 0
    avg = {key: [0.0, 0.0, 0.0] for key in total}
    out = []
    for s in range(0, p.duration_s + 1, 2):
        t = p.start + s
        st = _stall(p, t, r.random(), ooms)
        for res, (some, full) in st.items():
            for kind, pct in (("some", some), ("full", full)):
                key = (res, kind)
                if res == "cpu" and kind == "full":
                    pct = 0.0
                total[key] += int(pct / 100 * 2e6)
                a = avg[key]
                for k in range(3):
                    a[k] = a[k] * _DECAY[k] + pct * (1 - _DECAY[k])
        if s % PSI_EVERY_S == 0:
            out.append(date_line(t + 0.02) + "\n")
            for res in ("cpu", "io", "memory"):
                for kind in ("some", "full"):
                    if res == "cpu" and kind == "full" and p.kernel.startswith("5.4"):
                        continue  # the cpu "full" line arrived in 5.13
                    a = avg[(res, kind)]
                    out.append(f"/proc/pressure/{res}:{kind} avg10={a[0]:.2f} "
                               f"avg60={a[1]:.2f} avg300={a[2]:.2f} "
                               f"total={total[(res, kind)]}\n")
    return "".join(out)


def schedstat_log(p: Plan, totals: Totals) -> str:
    """Version 15: `cpuN yld 0 sched_count sched_goidle ttwu ttwu_local run_ns wait_ns
    timeslices`, then that CPU's domain lines (cpumask and 36 load-balancing counters)."""
    r = rng_for(p.kind, p.seed, "schedstat")
    hz = 250
    mask_words = -(-p.cpus // 32)
    full_mask = ",".join("ffffffff" for _ in range(mask_words))
    wait_factor = [r.uniform(0.02, 0.08) for _ in range(p.cpus)]
    if p.contended:
        wait_factor = [r.uniform(0.6, 1.8) for _ in range(p.cpus)]
    out = []
    for i in sorted(totals.snapshots):
        t = p.start + i
        snap = totals.snapshots[i]
        out.append(date_line(t + 0.03) + "\nversion 15\n"
                   f"timestamp {4294667296 + int((t - p.boot_time) * hz)}\n")
        for c, tk in enumerate(snap):
            busy = tk[0] + tk[1] + tk[2] + tk[4] + tk[5] + tk[6]
            run_ns = busy * 10_000_000
            wait_ns = int(run_ns * wait_factor[c])
            slices = busy * 3 + c
            sched = slices * 2
            out.append(f"cpu{c} 0 0 {sched} {sched // 3} {slices} {slices // 2} "
                       f"{run_ns} {wait_ns} {slices}\n")
            smt = (c // 2) * 2
            smt_mask = _mask(p.cpus, {smt, smt + 1})
            for d, mask in enumerate((smt_mask, _mask(p.cpus, set(range(p.cpus // 2 * (
                    c >= p.cpus // 2), p.cpus // 2 * (1 + (c >= p.cpus // 2))))), full_mask)):
                lb = [(busy // (50 + 30 * d + k)) for k in range(36)]
                out.append(f"domain{d} {mask} " + " ".join(map(str, lb)) + "\n")
    return "".join(out)


def _mask(n: int, cpus: set[int]) -> str:
    words = -(-n // 32)
    v = sum(1 << c for c in cpus if c < n)
    return ",".join(f"{(v >> (32 * w)) & 0xffffffff:08x}" for w in reversed(range(words)))


_VMSTAT_KEYS = (
    "nr_free_pages", "nr_zone_inactive_anon", "nr_zone_active_anon", "nr_zone_inactive_file",
    "nr_zone_active_file", "nr_zone_unevictable", "nr_zone_write_pending", "nr_mlock",
    "nr_page_table_pages", "nr_kernel_stack", "nr_bounce", "nr_zspages", "nr_free_cma",
    "numa_hit", "numa_miss", "numa_foreign", "numa_interleave", "numa_local", "numa_other",
    "nr_inactive_anon", "nr_active_anon", "nr_inactive_file", "nr_active_file",
    "nr_unevictable", "nr_slab_reclaimable", "nr_slab_unreclaimable", "nr_isolated_anon",
    "nr_isolated_file", "workingset_refault", "workingset_activate", "workingset_restore",
    "workingset_nodereclaim", "nr_anon_pages", "nr_mapped", "nr_file_pages", "nr_dirty",
    "nr_writeback", "nr_writeback_temp", "nr_shmem", "nr_shmem_hugepages",
    "nr_shmem_pmdmapped", "nr_file_hugepages", "nr_file_pmdmapped", "nr_anon_transparent_hugepages",
    "nr_unstable", "nr_vmscan_write", "nr_vmscan_immediate_reclaim", "nr_dirtied",
    "nr_written", "nr_kernel_misc_reclaimable", "nr_dirty_threshold",
    "nr_dirty_background_threshold", "pgpgin", "pgpgout", "pswpin", "pswpout",
    "pgalloc_dma", "pgalloc_dma32", "pgalloc_normal", "pgalloc_movable",
    "allocstall_dma", "allocstall_dma32", "allocstall_normal", "allocstall_movable",
    "pgskip_dma", "pgskip_dma32", "pgskip_normal", "pgskip_movable", "pgfree", "pgactivate",
    "pgdeactivate", "pglazyfree", "pgfault", "pgmajfault", "pglazyfreed", "pgrefill",
    "pgsteal_kswapd", "pgsteal_direct", "pgscan_kswapd", "pgscan_direct",
    "pgscan_direct_throttle", "zone_reclaim_failed", "pginodesteal", "slabs_scanned",
    "kswapd_inodesteal", "kswapd_low_wmark_hit_quickly", "kswapd_high_wmark_hit_quickly",
    "pageoutrun", "pgrotated", "drop_pagecache", "drop_slab", "oom_kill",
    "numa_pte_updates", "numa_huge_pte_updates", "numa_hint_faults",
    "numa_hint_faults_local", "numa_pages_migrated", "pgmigrate_success", "pgmigrate_fail",
    "compact_migrate_scanned", "compact_free_scanned", "compact_isolated", "compact_stall",
    "compact_fail", "compact_success", "compact_daemon_wake",
    "compact_daemon_migrate_scanned", "compact_daemon_free_scanned", "htlb_buddy_alloc_success",
    "htlb_buddy_alloc_fail", "unevictable_pgs_culled", "unevictable_pgs_scanned",
    "unevictable_pgs_rescued", "unevictable_pgs_mlocked", "unevictable_pgs_munlocked",
    "unevictable_pgs_cleared", "unevictable_pgs_stranded", "thp_fault_alloc",
    "thp_fault_fallback", "thp_collapse_alloc", "thp_collapse_alloc_failed", "thp_file_alloc",
    "thp_file_mapped", "thp_split_page", "thp_split_page_failed", "thp_deferred_split_page",
    "thp_split_pmd", "thp_zero_page_alloc", "thp_zero_page_alloc_failed", "thp_swpout",
    "thp_swpout_fallback", "balloon_inflate", "balloon_deflate", "balloon_migrate",
    "swap_ra", "swap_ra_hit",
)


def vmstat_log(p: Plan) -> str:
    r = rng_for(p.kind, p.seed, "vmstat")
    up0 = p.start - p.boot_time
    ooms = _oom_times(p)
    pressure = p.kind == "memory_pressure"
    # counters per second: (before the hour, during it)
    rate = {
        "pgscan_kswapd": (20.0, 60000.0 if pressure else 30.0),
        "pgsteal_kswapd": (18.0, 45000.0 if pressure else 25.0),
        "pgscan_direct": (0.0, 90000.0 if pressure else 0.0),
        "pgsteal_direct": (0.0, 52000.0 if pressure else 0.0),
        "allocstall_normal": (0.0, 180.0 if pressure else 0.0),
        "allocstall_movable": (0.0, 40.0 if pressure else 0.0),
        "compact_stall": (0.001, 6.0 if pressure else 0.0),
        "compact_fail": (0.0005, 4.0 if pressure else 0.0),
        "compact_success": (0.0005, 2.0 if pressure else 0.0),
        "pgfault": (40000.0, 40000.0), "pgmajfault": (3.0, 400.0 if pressure else 3.0),
        "pgpgin": (500.0, 9000.0 if pressure else 500.0), "pgpgout": (900.0, 900.0),
        "pgalloc_normal": (60000.0, 60000.0), "pgfree": (61000.0, 61000.0),
        "workingset_refault": (1.0, 3000.0 if pressure else 1.0),
        "slabs_scanned": (5.0, 20000.0 if pressure else 5.0),
    }
    static = {k: r.randrange(0, 5_000_000) for k in _VMSTAT_KEYS if k.startswith("nr_")}
    acc = {k: up0 * before for k, (before, _) in rate.items()}
    out = []
    for s in range(0, p.duration_s + 1, VMSTAT_EVERY_S):
        t = p.start + s
        out.append(date_line(t + 0.04) + "\n")
        for k in _VMSTAT_KEYS:
            if k in rate:
                if s:
                    acc[k] += rate[k][1] * VMSTAT_EVERY_S * (0.8 + 0.4 * r.random())
                v = int(acc[k])
            elif k == "oom_kill":
                v = sum(1 for o in ooms if o <= t)
            elif k in static:
                v = max(0, static[k] + r.randrange(-1000, 1000))
            else:
                v = 0
            out.append(f"{k} {v}\n")
    return "".join(out)


def write(p: Plan, directory: Path, totals: Totals) -> list[Path]:
    if "pressure" in p.omit:
        return []
    out = [write_text(directory / "schedstat.log", schedstat_log(p, totals), mtime=p.end),
           write_text(directory / "vmstat.log", vmstat_log(p), mtime=p.end)]
    if has_psi(p):
        out.append(write_text(directory / "pressure.log", psi_log(p), mtime=p.end))
    return out


def schedstat_seconds(p: Plan) -> list[int]:
    return list(range(SCHEDSTAT_EVERY_S, p.duration_s + 1, SCHEDSTAT_EVERY_S))
