"""memory_pressure: memory PSI, reclaim scanning and allocation stalls (vmstat), and OOM
kills in the kernel log."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Declared, Hypothesis
from corescope.investigate.hypotheses.common import fact, real_incidents
from corescope.investigate.model import Investigation
from corescope.model.cgroups import RestartRecord, Thresholds
from corescope.model.events import KernelEvent

NAME = "memory_pressure"
DECLARED = Declared(
    primary=True, rank=3, explains=("oom_kills",),
    advice="raise the memory limit of, or fix, what hits it ({culprit})")
PSI_SOME = 20.0  # memory PSI some avg10, %
ALLOCSTALL_PER_S = 1.0


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    ooms = [e for e in inv.events if e.kind == "oom_kill" and not e.lab]
    p = inv.pressure
    ev = {"oom_kills": fact(len(ooms), "events", "kernel log")}
    measured_psi = p is not None and p.memory_some_avg10_max is not None
    if p is not None:
        for name, v, unit, src in (
                ("memory_psi_some_avg10_max", p.memory_some_avg10_max, "%",
                 "/proc/pressure/memory"),
                ("memory_psi_full_avg10_max", p.memory_full_avg10_max, "%",
                 "/proc/pressure/memory"),
                ("pgscan_per_s_max", p.pgscan_per_s_max, "pages/s", "/proc/vmstat"),
                ("allocstall_per_s_max", p.allocstall_per_s_max, "stalls/s", "/proc/vmstat"),
                ("compact_stall_per_s_max", p.compact_stall_per_s_max, "stalls/s",
                 "/proc/vmstat")):
            if v is not None:
                ev[name] = fact(v, unit, src)
    st = inv.status("events")
    if not ooms and not measured_psi and st is not None and not st.ok:
        return Hypothesis(NAME, NOT_MEASURED, 0.0, ev,
                          "memory PSI, vmstat reclaim counters or the kernel log")
    psi = measured_psi and (p.memory_some_avg10_max or 0.0) >= PSI_SOME  # type: ignore[union-attr]
    stalls = p is not None and (p.allocstall_per_s_max or 0.0) >= ALLOCSTALL_PER_S
    if not (ooms or psi or stalls):
        note = "" if measured_psi else " (memory PSI and vmstat were not recorded)"
        return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                          f"OOM kills, memory PSI some >= {PSI_SOME:g}% or allocation stalls",
                          "no OOM kills and no memory stall" + note)
    score = round(min(1.0, 0.5 * bool(ooms) + 0.3 * psi + 0.2 * stalls + 0.1), 4)
    victim = oom_victim(inv, ooms)
    culprit = victim.name if victim is not None else _oom_culprit(inv)
    if victim is not None:
        ev["oom_victim_container"] = fact(victim.name, victim.kind, victim.source)
        if victim.process:
            ev["oom_victim_process"] = fact(victim.process, "", "kernel log (Killed process)")
        if victim.cgroup:
            ev["oom_victim_cgroup"] = fact(victim.cgroup, "", "kernel log (oom-kill line)")
    elif culprit is not None:
        ev["oom_memcg"] = fact(culprit, "", "kernel log (oom-kill line)")
    hot = stalled_core(inv)
    if hot is not None:
        ev["stalled_cpu_before_nic_incident"] = fact(hot[0], "cpu", hot[1])
    return Hypothesis(NAME, SUPPORTED, score, ev,
                      "no OOM kills and memory PSI near zero while the symptoms go on",
                      f"{len(ooms)} OOM kills" + (", memory stalls" if psi or stalls else "")
                      + (f"; victim {culprit}" if culprit else "")
                      + (f"; cpu{hot[0]} stalled before a NIC incident" if hot else ""),
                      culprit=culprit, hot_cpu=hot[0] if hot else None)


# the victim's cgroup in the lines the OOM killer prints around its `Killed process` line:
# `oom-kill:...,task_memcg=PATH,task=COMM,pid=PID` (4.19+), `Task in PATH killed as a
# result of limit of PATH` (older kernels)
_TASK_MEMCG = re.compile(r"task_memcg=([^,\s]+)(?:.*?pid=(\d+))?")
_TASK_IN = re.compile(r"Task in (\S+) killed as a result of limit of (\S+)")
_CONTAINER = re.compile(r"(?<![0-9a-f])([0-9a-f]{64})(?![0-9a-f])")
_POD = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_]"
                  r"[0-9a-f]{12})")


@dataclass(frozen=True)
class Victim:
    name: str  # namespace/pod/container when a listing knows it, else what the path says
    kind: str  # "container" | "pod" | "cgroup"
    source: str
    process: str | None
    cgroup: str | None


def victim_cgroup(lines: list[KernelEvent], kill: KernelEvent) -> str | None:
    """The cgroup of the process an `oom_kill` line killed, from the OOM report's other
    lines (the same pid, or the report's `Task in` line just before it)."""
    pid = str(kill.fields.get("pid") or "")
    best: str | None = None
    for e in lines:
        if not kill.time - 2.0 <= e.time <= kill.time + 0.5 or e.lab:
            continue
        m = _TASK_MEMCG.search(e.raw)
        if m and (not m.group(2) or not pid or m.group(2) == pid):
            return m.group(1)
        m2 = _TASK_IN.search(e.raw)
        if m2 and best is None:
            best = m2.group(1)
    return best


def oom_victim(inv: Investigation, ooms: list[KernelEvent]) -> Victim | None:
    """The container and pod the OOM killer's victims belong to (the most often killed),
    matched to the runtime listings by container id or pod UID."""
    if not ooms:
        return None
    near = [e for e in inv.events if e.kind != "oom_kill" and ("memcg" in e.raw
                                                               or "Task in" in e.raw)]
    found: Counter[tuple[str, str | None]] = Counter()
    for k in ooms:
        cg = victim_cgroup(near, k)
        if cg is not None and cg != "/":
            comm = k.fields.get("comm")
            found[(cg, comm if isinstance(comm, str) else None)] += 1
    if not found:
        return None
    (cg, comm), _n = found.most_common(1)[0]
    cid = _CONTAINER.search(cg)
    pod = _POD.search(cg)
    uid = pod.group(1).replace("_", "-") if pod else None
    for r in inv.restarts.records:
        ids = [str(x) for x in r.detail.get("ids") or [] if isinstance(x, str)]
        ids += [str(r.detail["id"])] if isinstance(r.detail.get("id"), str) else []
        if cid and any(len(i) >= 12 and cid.group(1).startswith(i) for i in ids):
            return Victim(r.name, "container", f"kernel log (OOM report) + {_src(r)}", comm, cg)
    if uid is not None:
        pods = [r for r in inv.restarts.records if r.cgroup == f"pod{uid}"]
        if len(pods) == 1 or (pods and cid is None):
            r = pods[0]
            base = r.name.rsplit("/", 1)[0] if r.name.count("/") >= 2 else r.name
            tail = f"/{cid.group(1)[:12]}" if cid else ""
            return Victim(base + tail, "pod", f"kernel log (OOM report) + {_src(r)}", comm, cg)
    if cid is not None:
        return Victim(f"container {cid.group(1)[:12]}" + (f" of pod {uid}" if uid else ""),
                      "container", "kernel log (OOM report)", comm, cg)
    if uid is not None:
        return Victim(f"pod {uid}", "pod", "kernel log (OOM report)", comm, cg)
    return Victim(cg, "cgroup", "kernel log (OOM report)", comm, cg)


def _src(r: RestartRecord) -> str:
    return str(r.detail.get("source") or r.kind) + " listing"


def stalled_core(inv: Investigation) -> tuple[int, str] | None:
    """The CPU that stalled before a NIC incident under memory pressure: the one a soft
    lockup line names (the reclaim path spinning), else a core saturated in kernel time
    before the incident (reclaim-saturated)."""
    nic = [v for v in real_incidents(inv) if v.incident.event.kind.startswith("nic_")]
    if not nic:
        return None
    w = max(inv.correlation_window_s, 120.0)
    for v in sorted(nic, key=lambda v: v.incident.event.time):
        t = v.incident.event.time
        locks = [e for e in inv.events if e.kind == "soft_lockup" and not e.lab
                 and t - w <= e.time <= t and isinstance(e.fields.get("cpu"), int | str)]
        if locks:
            cpu = locks[-1].fields["cpu"]
            if str(cpu).isdigit():
                return int(cpu), "kernel log (soft lockup before a NIC incident)"
    for v in nic:
        near = v.incident.nearest
        if near is not None:
            return near.cpu, "per-core record (kernel-time saturation before a NIC incident)"
    return None


_OOM_MEMCG = re.compile(r"oom_memcg=(\S+?)(?:,|$)")


def _oom_culprit(inv: Investigation) -> str | None:
    """The memory cgroup that hit its limit most often (the kernel's `oom-kill:` line names
    it), as the container or unit that owns it when restart records know that cgroup."""
    paths = Counter(m.group(1) for e in inv.events if not e.lab
                    for m in [_OOM_MEMCG.search(e.raw)] if m and m.group(1) != "/")
    if not paths:
        victims = [e.fields.get("comm") for e in inv.events if e.kind == "oom_kill"]
        return next((v for v in victims if isinstance(v, str)), None)
    path = paths.most_common(1)[0][0]
    leaf = path.rstrip("/").rsplit("/", 1)[-1]
    for r in inv.restarts.records:
        ids = [str(x) for x in r.detail.get("ids") or [] if isinstance(x, str)]
        ids += [str(r.detail["id"])] if isinstance(r.detail.get("id"), str) else []
        if any(len(i) >= 12 and leaf.startswith(i) for i in ids):
            return r.name
    return leaf
