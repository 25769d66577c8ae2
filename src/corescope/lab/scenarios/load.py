"""Per-core CPU time, second by second, as the kernel counts it: USER_HZ ticks per mode.

One pass over the hour produces every CPU's ticks for every second; writers observe the
pass (mpstat renders each second, the perf writer keeps its CPUs' mode mix, the /proc/stat
and schedstat writers keep running totals). Nothing for all CPUs is held in memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from corescope.lab.scenarios.plan import Episode, Plan, rng_for

# tick order, as mpstat prints the modes (guest and gnice stay 0: no VMs on these nodes)
MODES = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "idle")
Ticks = tuple[int, int, int, int, int, int, int, int]
Observer = Callable[[int, Sequence[Ticks]], None]

# what a saturated second looks like, by episode mode (percent: usr sys iowait irq soft steal)
_EPISODE = {
    "sys": (0.6, 98.4, 0.0, 0.3, 0.5, 0.0),  # kubelet's memcg walk: all system time
    "softirq": (1.0, 27.0, 0.0, 4.0, 67.0, 0.0),  # NAPI inline (soft) and in ksoftirqd (sys)
    "usr": (99.0, 0.8, 0.0, 0.0, 0.2, 0.0),  # a busy user process: load, not a fault
    "steal": (14.0, 3.0, 0.0, 0.0, 0.5, 82.0),  # the hypervisor ran someone else
}


class Load:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        r = rng_for(plan.kind, plan.seed, "base")
        p = plan
        n = p.cpus
        irq_cpus = {c for cpus in p.queue_cpu.values() for c in cpus}
        self.usr = [0.0] * n
        self.sys = [0.0] * n
        self.iow = [0.0] * n
        self.irq = [0.0] * n
        self.soft = [0.0] * n
        for c in range(n):
            train = c in p.train_cpus
            if p.contended:
                u, s, i = r.uniform(86, 95), r.uniform(3, 8), 0.0
            elif p.kind == "memory_pressure":
                u = r.uniform(30, 55) if train else r.uniform(3, 12)
                s, i = r.uniform(8, 22), r.uniform(0.5, 6)
            elif p.kind == "healthy_bursty":
                u = r.uniform(8, 35) if train else r.uniform(1, 8)
                s, i = r.uniform(1, 4), r.uniform(0, 0.3)
            else:
                u = r.uniform(50, 80) if train else r.uniform(1, 10)
                s, i = r.uniform(1.5, 5), r.uniform(0, 0.3)
            self.usr[c], self.sys[c], self.iow[c] = u, s, i
            self.soft[c] = r.uniform(0.3, 1.5) if c in irq_cpus else r.uniform(0, 0.3)
            self.irq[c] = r.uniform(0.05, 0.3) if c in irq_cpus else 0.0
        # episodes indexed by the seconds they touch: second index → [(episode)]
        self.by_second: dict[int, list[Episode]] = {}
        for e in p.episodes:
            for i in range(int(e.start - p.start), math.ceil(e.end - p.start) + 1):
                self.by_second.setdefault(i, []).append(e)

    def run(self, observers: Sequence[Observer]) -> None:
        """Second i (1-based) covers (start+i-1, start+i]: what mpstat prints at start+i."""
        p = self.plan
        r = rng_for(p.kind, p.seed, "load")
        rand, gauss = r.random, r.gauss
        n = p.cpus
        sd = 1.0 + 10.0 * p.noise  # percentage points of second-to-second jitter
        usr, sys_, iow, irq, soft = self.usr, self.sys, self.iow, self.irq, self.soft
        for i in range(1, p.duration_s + 1):
            # training steps: a data-loading dip every ~47 s, slow drift over minutes
            t = i + p.seed
            phase = (0.55 if t % 47 < 4 else 1.0) * (0.9 + 0.1 * math.sin(t / 300.0))
            eps = self.by_second.get(i - 1)
            row: list[Ticks] = []
            for c in range(n):
                x = rand()
                total = 99 if x < 0.12 else 101 if x > 0.88 else 100
                u = usr[c] * phase + gauss(0.0, sd)
                s = sys_[c] + (rand() - 0.5) * sd * 0.4
                io, iq, so, st = iow[c], irq[c], soft[c], 0.0
                if eps is not None:
                    f = 0.0
                    prof = None
                    for e in eps:
                        if e.cpu == c:
                            ov = min(e.end, p.start + i) - max(e.start, p.start + i - 1)
                            if ov > f:
                                f, prof = ov, _EPISODE[e.mode]
                    if prof is not None and f > 0:
                        f *= 0.94 + 0.06 * rand()  # saturated, but never flat to the tick
                        g = 1.0 - f
                        u = u * g + prof[0] * f
                        s = s * g + prof[1] * f
                        io = io * g + prof[2] * f
                        iq = iq * g + prof[3] * f
                        so = so * g + prof[4] * f
                        st = prof[5] * f
                row.append(_ticks(total, u, s, io, iq, so, st, rand))
            for obs in observers:
                obs(i, row)


def _ticks(total: int, u: float, s: float, io: float, iq: float, so: float, st: float,
           rand: Callable[[], float]) -> Ticks:
    """Percentages → whole ticks summing to `total` (random rounding, as real counters are)."""
    k = total / 100.0
    vals = []
    left = total
    for v in (st, u, s, io, iq, so):  # steal first: a stolen second leaves less to split
        x = v * k if v > 0 else 0.0
        t = int(x)
        if x > t and rand() < x - t:
            t += 1
        if t > left:
            t = left
        left -= t
        vals.append(t)
    return (vals[1], 0, vals[2], vals[3], vals[4], vals[5], vals[0], left)


class Totals:
    """Running totals per CPU since boot (for /proc/stat and /proc/schedstat snapshots)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        r = rng_for(plan.kind, plan.seed, "totals")
        up = plan.start - plan.boot_time
        # what the CPUs did before the hour: a typical mix for the uptime so far
        self.ticks = [[int(up * USER_HZ_F * f) for f in _prior(r)] for _ in range(plan.cpus)]
        self.snapshots: dict[int, list[list[int]]] = {}
        self.every: set[int] = set()

    def snapshot_at(self, seconds: Sequence[int]) -> None:
        self.every.update(seconds)

    def __call__(self, i: int, row: Sequence[Ticks]) -> None:
        for acc, t in zip(self.ticks, row, strict=True):
            for k in range(8):
                acc[k] += t[k]
        if i in self.every:
            self.snapshots[i] = [list(a) for a in self.ticks]


USER_HZ_F = 100.0


def _prior(r: object) -> tuple[float, ...]:
    rnd = r.random  # type: ignore[attr-defined]
    u = 0.3 + 0.3 * rnd()
    s = 0.03 + 0.03 * rnd()
    return (u, 0.001, s, 0.002, 0.0005, 0.004, 0.0, 1.0 - u - s - 0.0075)
