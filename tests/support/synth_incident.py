"""A deterministic zombie-chain hour on an N-CPU node, as parsed records, for the page tests
and the report bench: per-core samples (USER_HZ ticks), the ENA stall → reset lines before
which one core sat at ~99% system time, that core's perf stacks (kubelet walking memcgs in
the kernel, a training job in user space the rest of the time), a second profiled CPU,
a growing zombie census, and the NIC queue → CPU interrupt map.

The kernel lines are the ENA driver's own format strings (ena_netdev.c, as `lab nicreset`
writes them) classified by corescope's classifier; the stack frames are the memcg stat
path of the incident (memory_stat_show → mem_cgroup_nr_lru_pages → mem_cgroup_iter) under
kubelet's Go read path. Names can be swapped for hostile ones (`hostile=True`)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from corescope.analysis.classify import classify
from corescope.model.cgroups import MemcgCensus
from corescope.model.common import SensorStatus
from corescope.model.cores import CoreSample
from corescope.model.events import KernelEvent, QueueIrq
from corescope.model.profiles import Frame, StackSample

T0 = 1_795_000_000.0  # 2026-11-18T09:46:40Z, a whole second
HOSTILE = ("<img src=x onerror=alert(1)>", "</script><script>alert(1)</script>",
           "<!--<script>", "\x1b[31m\x1b]0;pwned\x07red")


def _k(name: str) -> Frame:
    return Frame(name, "[kernel.kallsyms]", True)


def _u(name: str, dso: str) -> Frame:
    return Frame(name, dso, False)


@dataclass
class Scenario:
    cpus: int
    hot_cpu: int
    start: float
    end: float
    walker_comm: str
    walker_function: str
    samples: list[CoreSample] = field(default_factory=list)
    events: list[KernelEvent] = field(default_factory=list)
    stacks: list[tuple[StackSample, float]] = field(default_factory=list)
    censuses: list[MemcgCensus] = field(default_factory=list)
    irq_map: list[QueueIrq] = field(default_factory=list)
    statuses: list[SensorStatus] = field(default_factory=list)
    episodes: list[tuple[float, float]] = field(default_factory=list)


def zombie_chain_hour(cpus: int = 96, hot_cpu: int = 37, seconds: int = 3600,
                      resets_at: tuple[int, ...] = (720, 1620, 2460, 3180),
                      hz: int = 49, seed: int = 7, hostile: bool = False,
                      noise_lines: int = 0) -> Scenario:
    rnd = random.Random(seed)
    walker = HOSTILE[0] if hostile else "kubelet"
    walk_fn = HOSTILE[2] if hostile else "mem_cgroup_iter"
    sc = Scenario(cpus, hot_cpu, T0, T0 + seconds, walker, walk_fn)
    # hot-core episodes: 6-9 s at ~99% sys, ending 1-2 s before each stall line
    for at in resets_at:
        length = rnd.randint(6, 9)
        end = at - rnd.randint(1, 2)
        sc.episodes.append((T0 + end - length, T0 + end))
    # two short spikes with no reset after them (noise a base rate must see)
    for at in (300, 2000):
        sc.episodes.append((T0 + at, T0 + at + 3))

    def hot(t: float) -> bool:
        return any(a <= t < b for a, b in sc.episodes)

    base_user = [rnd.uniform(5, 35) for _ in range(cpus)]
    for i in range(1, seconds + 1):
        t = T0 + i
        deltas: dict[int, tuple[int, ...]] = {}
        for c in range(cpus):
            if c == hot_cpu and hot(t - 0.5):
                sys_ = rnd.randint(97, 100)
                d = (100 - sys_, 0, sys_, 0, 0, 0, 0, 0, 0, 0)
            else:
                usr = max(0, min(95, int(base_user[c] + rnd.gauss(0, 6))))
                sys_ = rnd.randint(1, 5)
                soft = rnd.randint(0, 2)
                idle = max(0, 100 - usr - sys_ - soft)
                d = (usr, 0, sys_, idle, 0, 0, soft, 0, 0, 0)
            deltas[c] = d
        sc.samples.append(CoreSample(t, 1.0, deltas))

    # kernel lines: the ENA stall, its follow-ups and the reset, at each incident
    seq = 1000
    iface, dev, queue = "eth0", "0000:00:05.0", 5
    for n, at in enumerate(resets_at):
        lines = [
            (3, f"ena {dev} {iface}: TX q {queue} is paused for too long (threshold "
                "5000000). Time since last napi 6120000 usec. napi scheduled: 1"),
            (3, f"ena {dev} {iface}: napi handler hasn't been called for a long time but "
                "is scheduled"),
            (3, f"ena {dev} {iface}: Trigger reset is on"),
            (6, f"ena {dev} {iface}: Device reset completed successfully, Driver info: "
                "Elastic Network Adapter (ENA) v2.13.0g"),
        ]
        for j, (level, msg) in enumerate(lines):
            c = classify(msg)
            sc.events.append(KernelEvent(
                time=T0 + at + 0.2 * j, kind=c.kind, raw=msg, driver=c.driver,
                device=c.device, fields=c.fields, lab=c.lab, seq=seq, level=level,
                source="kmsg", id=len(sc.events) + 1))
            seq += 1
        if hostile and n == 0:
            msg = f"audit: comm=\"{HOSTILE[1]}\" {HOSTILE[3]} {HOSTILE[0]}"
            c = classify(msg)
            sc.events.append(KernelEvent(time=T0 + at + 1, kind=c.kind, raw=msg,
                                         driver=c.driver, device=c.device, fields=c.fields,
                                         seq=seq, level=6, source="kmsg",
                                         id=len(sc.events) + 1))
            seq += 1
    # unclassified kernel chatter (a busy node's dmesg), stored as `other`
    for i in range(noise_lines):
        msg = (f"IPv4: martian source 10.{i % 250}.0.{i % 200} from 10.0.{i % 99}.1, on dev "
               f"eth{i % 2}" if i % 3 else
               f"audit: type=1400 audit({T0 + i:.3f}:{i}): apparmor=\"DENIED\" "
               f"operation=\"open\" profile=\"cri-containerd.apparmor.d\" pid={1000 + i}")
        c = classify(msg)
        sc.events.append(KernelEvent(time=T0 + (i + 0.5) * seconds / noise_lines, kind=c.kind,
                                     raw=msg, driver=c.driver, device=c.device,
                                     fields=c.fields, seq=seq, level=6, source="kmsg",
                                     id=100_000 + i))
        seq += 1
    sc.events.sort(key=lambda e: e.time)
    sc.irq_map = [QueueIrq(iface, q, 60 + q, f"{iface}-Tx-Rx-{q}", "txrx",
                           (hot_cpu if q == queue else (q * 11) % cpus,), "delta")
                  for q in range(8)]

    # perf stacks on the hot CPU and on CPU 5, `hz` per second
    syscall = (_k("vfs_read"), _k("ksys_read"), _k("do_syscall_64"),
               _k("entry_SYSCALL_64_after_hwframe"))
    kubelet_go = (_u("syscall.Syscall", "/usr/bin/kubelet"),
                  _u("os.(*File).Read", "/usr/bin/kubelet"),
                  _u("github.com/google/cadvisor/container/libcontainer.getCgroupStats",
                     "/usr/bin/kubelet"),
                  _u("runtime.goexit", "/usr/bin/kubelet"))
    walk = (_k(walk_fn), _k("mem_cgroup_nr_lru_pages"), _k("memory_stat_show"),
            _k("seq_read_iter"), *syscall, *kubelet_go)
    walk2 = (_k("css_next_descendant_pre"), _k(walk_fn), _k("mem_cgroup_nr_lru_pages"),
             _k("memory_stat_show"), _k("seq_read_iter"), *syscall, *kubelet_go)
    train_fn = HOSTILE[1] if hostile else "at::native::cpu_kernel_vec"
    train = (_u(train_fn, "/opt/torch/lib/libtorch_cpu.so"),
             _u("at::TensorIteratorBase::for_each", "/opt/torch/lib/libtorch_cpu.so"),
             _u("_PyEval_EvalFrameDefault", "/usr/bin/python3.11"),
             _u("[unknown]", "[unknown]"))
    idle = (_k("pv_native_safe_halt"), _k("default_idle"), _k("default_idle_call"),
            _k("do_idle"), _k("cpu_startup_entry"))
    app = (_u("epoll_wait", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
           _u("ngx_process_events_and_timers", "/usr/sbin/nginx"))
    train_comm = HOSTILE[3] if hostile else "python3"
    step = 1.0 / hz
    n = int(seconds * hz)
    for i in range(n):
        t = T0 + i * step + rnd.uniform(0.0, 0.8 * step)  # perf's timer jitter
        if hot(t):
            s = StackSample(walker, 2211, 2230, hot_cpu, t - T0, "cpu-clock",
                            walk2 if i % 5 == 0 else walk)
        elif i % 4 == 0:
            s = StackSample("swapper", 0, 0, hot_cpu, t - T0, "cpu-clock", idle)
        else:
            s = StackSample(train_comm, 4100, 4100, hot_cpu, t - T0, "cpu-clock", train)
        sc.stacks.append((s, t))
        if i % 3 == 0:
            s5 = StackSample("nginx", 900, 900, 5, t - T0, "cpu-clock", app)
        else:
            s5 = StackSample("swapper", 0, 0, 5, t - T0, "cpu-clock", idle)
        sc.stacks.append((s5, t))

    # a census every 10 s: ~60,000 dying memcgs growing ~8,000 an hour
    for i in range(0, seconds + 1, 10):
        dying = 60_000 + int(8_000 * i / 3600) + rnd.randint(-20, 20)
        sc.censuses.append(MemcgCensus(
            t=T0 + i, layout="v1", hierarchy="v1", kernel_count=dying + 900, live=900,
            dying=dying, source="/proc/cgroups memory num_cgroups - live dirs",
            boot_id="synthetic", uptime_s=600_000.0 + i, churn_interval_s=10.0))
    sc.statuses = [
        SensorStatus("cores", True, f"{cpus} CPUs every 1 s"),
        SensorStatus("kmsg", True, "streamed /dev/kmsg"),
        SensorStatus("profile", True, f"perf ring at {hz} Hz on CPUs {hot_cpu} and 5"),
        SensorStatus("systemd", False, "no systemd as PID 1: unit restarts not measured"),
        SensorStatus("crictl", False, "crictl not found: container restarts not measured"
                     + (f" {HOSTILE[0]}" if hostile else "")),
    ]
    return sc


def evidence_of(sc: Scenario) -> Any:
    """The scenario as in-memory Evidence (what `analyze` would import, already parsed)."""
    from corescope.evidence.memory import MemoryEvidence

    return MemoryEvidence(name="artifacts", samples=sc.samples, kernel_events=sc.events,
                          census_rows=sc.censuses, irq_maps=[(sc.start, sc.irq_map)],
                          stack_rows=sc.stacks, sensor_statuses=sc.statuses)


def page_model_of(sc: Scenario, **kw: Any) -> dict[str, Any]:
    """The report page data of the whole scenario hour, through the real investigation."""
    from corescope.investigate import Window, investigate
    from corescope.views.report_pages import page_model

    ev = evidence_of(sc)
    return page_model(ev, investigate(ev, Window(sc.start, sc.end)), **kw)
