"""Pressure arithmetic: rates of the kernel's cumulative counters (PSI totals, run-queue wait,
vmstat reclaim) and the window's worst readings."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from corescope.model.pressure import PressureSummary, PsiSample, SchedstatSample, VmstatSample


def wait_rates(samples: Sequence[SchedstatSample]) -> dict[int, list[Rate]]:
    """Per CPU: run-queue wait as seconds waited per second (ns/ns), between reads."""
    series: dict[int, list[tuple[float, int]]] = {}
    for s in samples:
        for q in s.cpus:
            series.setdefault(q.cpu, []).append((s.t, q.wait_ns))
    return {cpu: [Rate(r.t0, r.t1, r.per_s / 1e9) for r in rates(pts)]
            for cpu, pts in series.items()}


@dataclass(frozen=True)
class Rate:
    """A counter's rate between two rows: per second of wall time."""

    t0: float
    t1: float
    per_s: float


def rates(points: Sequence[tuple[float, int]]) -> list[Rate]:
    """[(t, cumulative)] → rates between consecutive points; a decrease (reboot, counter
    reset) or a non-advancing clock gives no rate for that step."""
    out = []
    for (a, va), (b, vb) in itertools.pairwise(points):
        if b > a and vb >= va:
            out.append(Rate(a, b, (vb - va) / (b - a)))
    return out


def _max(values: list[float]) -> float | None:
    return max(values) if values else None


def summarize(psi: Sequence[PsiSample], sched: Sequence[SchedstatSample],
              vm: Sequence[VmstatSample]) -> PressureSummary | None:
    if not (psi or sched or vm):
        return None

    def psi_max(resource: str, kind: str) -> float | None:
        vals = [getattr(p, kind).avg10 for p in psi
                if p.resource == resource and getattr(p, kind) is not None]
        return _max(vals)

    wait = wait_rates(sched)
    worst_cpu, worst = None, None
    per_cpu = []
    for cpu, rs in wait.items():
        m = _max([r.per_s for r in rs])
        if m is not None:
            per_cpu.append(m)
        if m is not None and (worst is None or m > worst):
            worst_cpu, worst = cpu, m

    def vm_rate(prefixes: tuple[str, ...]) -> float | None:
        pts = [(v.t, sum(n for k, n in v.counters.items() if k.startswith(prefixes)))
               for v in vm if any(k.startswith(prefixes) for k in v.counters)]
        return _max([r.per_s for r in rates(pts)])

    ooms = [(v.t, v.counters["oom_kill"]) for v in vm if "oom_kill" in v.counters]
    oom_kills = (ooms[-1][1] - ooms[0][1]) if len(ooms) >= 2 and ooms[-1][1] >= ooms[0][1] \
        else None
    return PressureSummary(
        cpu_some_avg10_max=psi_max("cpu", "some"),
        memory_some_avg10_max=psi_max("memory", "some"),
        memory_full_avg10_max=psi_max("memory", "full"),
        runq_wait_share_max=worst, runq_wait_cpu=worst_cpu,
        runq_wait_share_median=statistics.median(per_cpu) if per_cpu else None,
        pgscan_per_s_max=vm_rate(("pgscan",)),
        allocstall_per_s_max=vm_rate(("allocstall",)),
        compact_stall_per_s_max=vm_rate(("compact_stall",)),
        oom_kills=oom_kills)
