"""memory_pressure: memory PSI, reclaim scanning and allocation stalls (vmstat), and OOM
kills in the kernel log."""

from __future__ import annotations

import re
from collections import Counter

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Hypothesis
from corescope.investigate.hypotheses.common import fact
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "memory_pressure"
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
    culprit = _oom_culprit(inv)
    if culprit is not None:
        ev["oom_memcg"] = fact(culprit, "", "kernel log (oom-kill line)")
    return Hypothesis(NAME, SUPPORTED, score, ev,
                      "no OOM kills and memory PSI near zero while the symptoms go on",
                      f"{len(ooms)} OOM kills" + (", memory stalls" if psi or stalls else ""),
                      culprit=culprit)


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
