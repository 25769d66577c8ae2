"""A folder of `perf script` chunks: what the incident's engineers kept (2-minute chunks of
`perf record -e cpu-clock -F 49 -a -g`), printed with the ring's
`-F comm,pid,tid,cpu,time,event,ip,sym,dso`, for the CPUs that matter.

Each sample follows its CPU's tick mix for that second (the same numbers mpstat printed):
idle ticks give idle stacks, system ticks the kernel work of the story, and so on. The
clock is perf's default (boot-relative, like dmesg) or `-k CLOCK_REALTIME` (epoch).
"""

from __future__ import annotations

import bisect
import zlib
from collections.abc import Sequence
from pathlib import Path

from corescope.lab.scenarios import stacks as S
from corescope.lab.scenarios.load import Ticks
from corescope.lab.scenarios.out import TextOut
from corescope.lab.scenarios.plan import CHUNK_S, PERF_HZ, Plan, rng_for

_VARIANTS = 4  # leaf addresses vary a little between samples, as real IPs do


def _addr(sym: str, dso: str) -> int:
    h = zlib.crc32(f"{dso}:{sym}".encode())
    if dso == "[unknown]":  # JIT code: user addresses in an anonymous mapping
        return 0x7f0000000000 + (h % 0x0400_0000 & ~0xF)
    if dso.startswith("["):
        base = 0xffffffffc0000000 if dso != S.K else 0xffffffff81000000
        return base + (h % 0x0100_0000 & ~0xF)
    return 0x400000 + (h % 0x0400_0000 & ~0xF)


def _body(stack: S.Stack, variant: int) -> str:
    lines = []
    for k, (sym, dso) in enumerate(stack):
        a = _addr(sym, dso) + (variant * 0x13 + 0x5 if k == 0 else 0x2a)
        lines.append(f"\t{a:16x} {sym} ({dso})\n")
    return "".join(lines)


class _Pick:
    """Weighted choice among stacks, each pre-rendered in a few leaf variants."""

    def __init__(self, weighted: list[tuple[float, S.Stack]]) -> None:
        acc = 0.0
        self.cum: list[float] = []
        self.bodies: list[list[str]] = []
        for w, st in weighted:
            acc += w
            self.cum.append(acc)
            self.bodies.append([_body(st, v) for v in range(_VARIANTS)])
        self.total = acc

    def __call__(self, x: float, y: float) -> str:
        i = min(bisect.bisect_right(self.cum, x * self.total), len(self.cum) - 1)
        return self.bodies[i][int(y * _VARIANTS)]


class PerfMix:
    """Observer: keeps the tick mix of the profiled CPUs, second by second."""

    def __init__(self, plan: Plan) -> None:
        self.cpus = plan.perf_cpus
        self.mix: dict[int, list[Ticks]] = {c: [] for c in self.cpus}

    def __call__(self, i: int, row: Sequence[Ticks]) -> None:
        for c in self.cpus:
            self.mix[c].append(row[c])


class PerfWriter:
    def __init__(self, plan: Plan, mix: PerfMix) -> None:
        p = plan
        self.plan = p
        self.mix = mix
        self.idle = _Pick([(1.0, S.IDLE)])
        self.walker = _Pick(S.walker_stacks(p.walker, p.census_format == "v2"))
        self.neighbour = _Pick(S.NEIGHBOUR)
        self.kubelet = _Pick(S.KUBELET_USER)
        self.tuser = _Pick(S.trainer_user())
        self.tkern = _Pick(S.trainer_kernel())
        self.soft = _Pick(S.SOFTIRQ)
        self.ksoftirqd = _Pick(S.KSOFTIRQD)
        self.hardirq = _Pick(S.HARDIRQ)
        self.reclaim = _Pick(S.RECLAIM)
        self.java = _Pick(S.JAVA_USER)
        self.sched = _Pick(S.SCHED)
        self.ep_cpu_secs: dict[int, set[int]] = {}
        self.neighbour_secs: set[tuple[int, int]] = set()
        for e in p.episodes:
            for i in range(int(e.start - p.start), int(e.end - p.start) + 1):
                if e.who == "neighbour":
                    self.neighbour_secs.add((e.cpu, i))
                else:
                    self.ep_cpu_secs.setdefault(e.cpu, set()).add(i)

    def _stack(self, cpu: int, sec: int, x: float, y: float, z: float
               ) -> tuple[str, int, int, str]:
        """(comm, pid, tid, body) for one sample on `cpu` in second index `sec` (0-based)."""
        p = self.plan
        t = self.mix.mix[cpu][min(sec, len(self.mix.mix[cpu]) - 1)]
        total = t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7]
        v = x * total
        # a stolen tick: the vCPU was preempted holding whatever ran, so it samples as that
        usr, sys_, irq, soft = t[0] + t[1] + t[6], t[2], t[4], t[5]
        in_ep = sec in self.ep_cpu_secs.get(cpu, ())
        train = cpu in p.train_cpus
        tpid = p.trainer_pid + (cpu % 7)
        if v < usr:
            if p.kind == "healthy_bursty" and in_ep:
                return "java", 31337, 31337 + cpu, self.java(y, z)
            if p.contended and y < 0.45:
                return "java", 31337, 31337 + cpu, self.java(y / 0.45, z)
            if train:
                return p.trainer, p.trainer_pid, tpid, self.tuser(y, z)
            if y < 0.5:
                return "kubelet", p.kubelet_pid, p.kubelet_pid + 7, self.kubelet(y * 2, z)
            return "java", 31337, 31337 + cpu, self.java(y, z)
        v -= usr
        if v < sys_:
            if (cpu, sec) in self.neighbour_secs:
                return "restic", 40404, 40404 + cpu, self.neighbour(y, z)
            if in_ep and p.kind == "zombie_chain":
                return p.walker[:15], p.kubelet_pid, p.kubelet_pid + 11, self.walker(y, z)
            if in_ep and p.kind == "softirq_storm":
                kpid = 10 + cpu * 6
                return f"ksoftirqd/{cpu}", kpid, kpid, self.ksoftirqd(y, z)
            if p.kind == "memory_pressure" and y < 0.7:
                return ("java", 31337, 31337 + cpu, self.reclaim(y / 0.7, z))
            if p.contended and y < 0.5:
                return "java", 31337, 31337 + cpu, self.sched(y * 2, z)
            if y < 0.08:
                return "kubelet", p.kubelet_pid, p.kubelet_pid + 7, self.kubelet(0.99, z)
            return p.trainer, p.trainer_pid, tpid, self.tkern(y, z)
        v -= sys_
        on_top = (p.trainer, p.trainer_pid, tpid) if train and y < 0.6 else ("swapper", 0, 0)
        if v < irq:
            return (*on_top, self.hardirq(y, z) + (_IDLE_TAIL if on_top[1] == 0 else ""))
        v -= irq
        if v < soft:
            return (*on_top, self.soft(y, z) + (_IDLE_TAIL if on_top[1] == 0 else ""))
        return "swapper", 0, 0, self.idle(y, z)

    def write(self, directory: Path) -> list[Path]:
        p = self.plan
        if "perf" in p.omit:
            return []
        d = directory / "perf"
        d.mkdir(exist_ok=True)
        r = rng_for(p.kind, p.seed, "perf")
        rand = r.random
        period = 1.0 / PERF_HZ
        phases = {c: rand() * period for c in p.perf_cpus}
        paths = []
        n_chunks = -(-p.duration_s // CHUNK_S)
        for k in range(n_chunks):
            c0, c1 = p.start + k * CHUNK_S, min(p.end, p.start + (k + 1) * CHUNK_S)
            events: list[tuple[float, int]] = []
            for c in p.perf_cpus:
                j0 = int((c0 - p.start - phases[c]) / period)
                j = max(0, j0)
                while True:
                    t = p.start + phases[c] + j * period
                    if t >= c1:
                        break
                    if t >= c0:
                        events.append((t, c))
                    j += 1
            events.sort()
            name = f"perf-{k:02d}.txt"
            out = TextOut(d / name, p.perf_compress, c1)
            for t, c in events:
                # a few microseconds of timer jitter
                tt = t + (rand() - 0.5) * 4e-5
                comm, pid, tid, body = self._stack(c, int(t - p.start), rand(), rand(), rand())
                us = round((tt - (p.boot_time if p.perf_clock == "boot" else 0)) * 1e6)
                out.write(f"{comm} {pid:5d}/{tid:<5d} [{c:03d}] {us // 1_000_000:5d}."
                          f"{us % 1_000_000:06d}: cpu-clock: \n{body}\n")
            paths.append(out.close())
        return paths


_IDLE_TAIL = _body(S.IDLE, 0)
