"""A public corpus of incident hours: deterministic scenario directories in the formats real
tools write (mpstat JSON, dmesg, perf script chunks, the census loop log, /proc snapshots,
systemctl show, crictl ps, pressure and /proc/softirqs loops), each with its ground truth in
`expected.json`.

Standard library only, so tests generate what they need at test time and nothing large is
committed. `generate(kind, out_dir, cpus=96, seed=1)` writes one hour; the same arguments
always give the same bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from corescope.lab.scenarios import census, dmesg, perf, pressure, softirqs, system
from corescope.lab.scenarios.load import Load, Totals
from corescope.lab.scenarios.mpstat import MpstatWriter
from corescope.lab.scenarios.plan import KINDS, ROOT_CAUSE, Plan, make_plan
from corescope.lab.scenarios.stacks import WALKER_FAMILY, WALKER_FUNCTION, WALKER_FUNCTION_V2

__all__ = ["KINDS", "ROOT_CAUSE", "expected", "generate", "make_plan"]

# what each story must never be diagnosed as (the look-alikes' false accusations)
MUST_NOT: dict[str, tuple[str, ...]] = {
    "zombie_chain": ("healthy", "irq_softirq_saturation", "hardware_fault"),
    "softirq_storm": ("zombie_memcg_leak", "zombie_leak_no_harm", "healthy"),
    "healthy_bursty": tuple(c for c in ROOT_CAUSE.values() if c != "healthy"),
    "zombie_no_harm": ("zombie_memcg_leak", "healthy"),
    "hardware_fault": ("zombie_memcg_leak", "irq_softirq_saturation", "healthy"),
    "cpu_contention": ("zombie_memcg_leak", "irq_softirq_saturation", "healthy"),
    "memory_pressure": ("zombie_memcg_leak", "healthy"),
    "hypervisor_steal": ("zombie_memcg_leak", "irq_softirq_saturation", "healthy"),
    "crash_loop": ("zombie_memcg_leak", "zombie_leak_no_harm", "healthy"),
}


def generate(kind: str, out_dir: str | Path, cpus: int = 96, seed: int = 1,
             **overrides: Any) -> dict[str, Any]:
    """Write one scenario into `out_dir` (created; must be empty or absent). Returns the
    expected.json content."""
    plan = make_plan(kind, cpus=cpus, seed=seed, **overrides)
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    if any(d.iterdir()):
        raise FileExistsError(f"{d} is not empty")
    mp = MpstatWriter(plan, d)
    mix = perf.PerfMix(plan)
    totals = Totals(plan)
    totals.snapshot_at(pressure.schedstat_seconds(plan))
    Load(plan).run([mp, mix, totals])
    files = [mp.close()]
    files += perf.PerfWriter(plan, mix).write(d)
    files.append(dmesg.write(plan, d))
    files += census.write(plan, d)
    files += system.write(plan, d, totals)
    files += pressure.write(plan, d, totals)
    files += softirqs.write(plan, d)
    exp = expected(plan)
    exp["files"] = sorted(str(f.relative_to(d)) for f in files)
    (d / "expected.json").write_text(json.dumps(exp, indent=1, sort_keys=True) + "\n")
    return exp


def expected(p: Plan) -> dict[str, Any]:
    """The ground truth a diagnosis of this directory must reach."""
    story = dmesg.story_lines(p)
    kinds = Counter(k for _t, _m, k in story if k != "other")
    walker = ({"comm": p.walker[:15],  # the kernel's comm is 15 characters at most
               "function": WALKER_FUNCTION_V2 if p.census_format == "v2" else WALKER_FUNCTION}
              if p.kind == "zombie_chain" else None)
    if "perf" in p.omit:
        walker = None  # nobody can name it without stacks
    aliases: list[str] = []
    culprit = p.culprit if "restarts" not in p.omit else None  # no restart evidence saved
    if root_cause(p) == "cpu_contention":
        culprit = None  # the waiting has no one culprit
    if culprit:
        aliases.append(culprit)
        if p.culprit_kind == "systemd-unit":
            aliases.append(f"/system.slice/{p.culprit}")
        else:
            ns, pod, uid, _sandbox = census.pod_of(p, culprit)
            aliases += [f"{ns}/{pod}/{culprit}", dmesg.container_id(p), f"pod{uid}"]
    incidents = [t for t, _m, k in story if k in ("nic_tx_stall", "nic_keepalive_timeout",
                                                  "oom_kill")]
    return {
        "schema": 1,
        "kind": p.kind,
        "seed": p.seed,
        "root_cause": root_cause(p),
        "culprit": culprit,
        "culprit_kind": p.culprit_kind,
        "culprit_aliases": aliases,
        "hot_cpu": p.hot_cpu,
        "walker": walker,
        "walker_family": sorted(WALKER_FAMILY) if walker else [],
        "must_not": must_not(p),
        "cpus": p.cpus,
        "window": {"start": p.start, "end": p.end},
        "boot_time": p.boot_time,
        "hostname": p.hostname,
        # cluster_pods: the node the listing calls this one, and pods never to be blamed
        "node": p.node_name or None,
        "not_culprits": ["payments-api"] if p.other_nodes else [],
        "kernel": p.kernel,
        "nic": {"driver": p.nic_driver, "iface": p.iface, "device": p.bus,
                "queue": p.hot_queue,
                "queue_cpus": sorted(p.queue_cpu[p.hot_queue]) if p.hot_queue is not None
                else None},
        "episodes": [{"cpu": e.cpu, "start": e.start, "end": e.end, "mode": e.mode,
                      "kernel": e.mode in ("sys", "softirq"),
                      "reset_follows": e.duration >= 5.0 and not e.who
                      and p.kind in ("zombie_chain", "softirq_storm", "hypervisor_steal")}
                     for e in p.episodes],
        "events": dict(sorted(kinds.items())),
        "incident_times": [round(t, 6) for t in sorted(incidents)],
        "dying": {"start": census.dying_at(p, p.start), "end": census.dying_at(p, p.end),
                  "per_hour": round(p.dying_per_hour, 1), "live": p.live_memcgs},
        "restarts": {"name": p.culprit, "kind": p.culprit_kind,
                     "count": census.restarts_so_far(p)} if p.restarts_per_hour else None,
        "formats": {"dmesg": p.dmesg_format, "perf_clock": p.perf_clock,
                    "perf_compress": p.perf_compress, "mpstat_compress": p.mpstat_compress,
                    "mpstat_date": p.mpstat_date, "psi": pressure.has_psi(p),
                    "perf_cpus": list(p.perf_cpus), "perf_hz": 49, "chunk_s": 120,
                    "timezone": "UTC"},
        "noise": p.noise,
        "knobs": {"walker": p.walker, "census_format": p.census_format,
                  "omit": sorted(p.omit), "also": sorted(p.also), "edge": p.edge},
    }


def root_cause(p: Plan) -> str:
    """The story's root cause, unless a second story outranks a harmless first one, or the
    evidence that would name it was not saved."""
    rc = _seen_cause(p)
    # a quiet hour whose kernel log has no times (quiet or not cannot be said), or every core
    # busy with no word on whether tasks waited (load and contention look the same)
    if rc == "healthy" and ("dmesg_time" in p.omit or p.contended):
        return "undetermined"
    return rc


def _seen_cause(p: Plan) -> str:
    # contention shows only in the pressure loops (run-queue wait, CPU PSI); a crash loop
    # only in restart counts; a leak only in the census
    seen_contention = p.contended and "pressure" not in p.omit
    seen_restarts = "restarts" not in p.omit
    if p.kind == "hardware_fault" and "dmesg_time" in p.omit:
        # the errors were only in a log with no times: what is left is the second stories
        # (contention, a loop, a flat leak), else nothing to name it by
        rc = _seen_cause(replace(p, kind="healthy_bursty"))
        return "undetermined" if rc == "healthy" else rc
    if p.root_cause in ("healthy", "crash_loop", "zombie_leak_no_harm") and seen_contention \
            and "contention" in p.also:
        return "cpu_contention"  # tasks waiting for CPUs is worse than a harmless loop
    if p.root_cause in ("healthy", "crash_loop", "cpu_contention") and "flat_leak" in p.also \
            and not seen_contention and "census" not in p.omit:
        return "zombie_leak_no_harm"  # past the threshold: worth a warning
    if p.root_cause in ("healthy", "cpu_contention", "crash_loop") and not seen_contention:
        looping = seen_restarts and (p.root_cause == "crash_loop" or "small_leak" in p.also)
        return "crash_loop" if looping else "healthy"
    if p.kind == "zombie_no_harm" and "census" in p.omit:
        return "crash_loop" if seen_restarts else "healthy"
    # nothing left to name it by: the errors were only in a log with no times, or neither
    # the stacks nor the count of a leak were saved (the saturated core is still named)
    if p.kind == "zombie_chain" and {"perf", "census"} <= p.omit:
        return "undetermined"
    if p.kind == "memory_pressure" and {"pressure", "dmesg_time"} <= p.omit:
        return "undetermined"  # OOM kills in a log without times, and no PSI or vmstat
    return p.root_cause


def must_not(p: Plan) -> list[str]:
    out = [c for c in MUST_NOT[p.kind] if c != root_cause(p)]
    if p.also & {"flat_leak", "small_leak"} and p.kind != "zombie_chain":
        out.append("zombie_memcg_leak")  # dying memcgs, but nobody walks them on a hot core
    if "contention" in p.also and p.kind != "cpu_contention":
        out.append("healthy")
    if "benign_reset" in p.also:
        out.append("hardware_fault")  # one self-healed reset after a host pause
    return sorted(set(out))


def plan_for(kind: str, cpus: int = 96, seed: int = 1, **overrides: Any) -> Plan:
    return make_plan(kind, cpus=cpus, seed=seed, **overrides)
