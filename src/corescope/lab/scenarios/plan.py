"""A scenario's parameters, resolved once from (kind, cpus, seed, overrides).

Everything a writer needs is decided here, deterministically: the same arguments give the
same plan on any machine and Python version (random.Random with an integer seed, stable
string seeds via crc32, never hash()). Writers only render the plan.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field

# scenario kind → the diagnosis's root cause (issue 9's vocabulary)
ROOT_CAUSE: dict[str, str] = {
    "zombie_chain": "zombie_memcg_leak",
    "softirq_storm": "irq_softirq_saturation",
    "healthy_bursty": "healthy",
    "zombie_no_harm": "zombie_leak_no_harm",
    "hardware_fault": "hardware_fault",
    "cpu_contention": "cpu_contention",
    "memory_pressure": "memory_pressure",
    "hypervisor_steal": "hypervisor_steal",
    "crash_loop": "crash_loop",
}
KINDS: tuple[str, ...] = tuple(ROOT_CAUSE)
# the stories in which the NIC says nothing (so its driver may vary)
NO_NIC_EVENTS = frozenset({"healthy_bursty", "zombie_no_harm", "cpu_contention",
                           "memory_pressure", "crash_loop"})

# evidence a user may not have saved: the perf chunks, the census loop, the interrupts
# snapshot, the pressure loops, systemctl/crictl, and the kernel log's timestamps (`dmesg -t`)
OMITTABLE = frozenset({"perf", "census", "interrupts", "pressure", "restarts", "dmesg_time",
                       "softirqs"})
# second stories: noisy neighbour cores in system time, a small leak under the threshold, a
# large dying count that no longer grows, a coincidental hot core (not serving the NIC),
# CPU contention (run-queue wait and CPU PSI)
# CPU contention (run-queue wait and CPU PSI); a container crash loop that began minutes
# ago (few attempts, the newest running: only their spacing says it loops); a cluster-wide
# `kubectl get pods -A -o json` with a busier crash-looping pod on another node; OOM kills
# as older kernels print them (`Task in CGROUP killed`), under the systemd or cgroupfs
# driver, with a soft lockup before a NIC TX timeout; one host pause (every CPU stolen for
# a second) and one self-healed NIC reset after it
ALSO = frozenset({"neighbours", "small_leak", "flat_leak", "hot_core", "contention",
                  "recent_loop", "cluster_pods", "oom_legacy", "benign_reset"})
WALKERS = ("kubelet", "cadvisor", "node_exporter", "systemd", "metrics-agent")

# 2026-11-02T00:00:00Z: hours are placed after it, some across midnight
BASE_EPOCH = 1793577600
USER_HZ = 100
PERF_HZ = 49
CHUNK_S = 120

UNITS = ("ecs.service", "amazon-ecs-agent.service", "datadog-agent.service",
         "fluent-bit.service", "gpu-health-agent.service", "node-problem-reporter.service")
CONTAINERS = ("ecs-agent", "log-shipper", "metrics-sidecar", "dcgm-exporter",
              "istio-proxy", "config-reloader")
TRAINERS = ("pt_main_thread", "ray::RayTrainWo", "python3")
KERNELS_V1 = ("5.4.0-1103-aws", "5.4.0-1045-aws", "5.10.199-190.747.amzn2.x86_64",
              "4.14.336-253.554.amzn2.x86_64")


@dataclass(frozen=True)
class Episode:
    """A stretch of seconds where one core is saturated in one mode."""

    cpu: int
    start: float  # epoch seconds
    end: float
    mode: str  # "sys" (memcg walk), "softirq" (NET_RX storm), "usr" (healthy burst)
    who: str = ""  # "neighbour": another process's kernel work, not the story's

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class Plan:
    kind: str
    cpus: int
    seed: int
    duration_s: int
    start: int  # epoch of the first mpstat row minus one interval
    boot_time: int  # epoch; every boot-relative clock (dmesg, perf) is t - boot_time
    hostname: str
    kernel: str
    noise: float  # 0..1: jitter in loads, noise lines in the kernel log
    # NIC
    nic_driver: str
    iface: str
    bus: str
    queues: int
    queue_cpu: dict[int, tuple[int, ...]]  # queue → CPUs that take its IRQ
    hot_queue: int | None
    # the story
    hot_cpu: int | None
    perf_cpus: tuple[int, ...]
    train_cpus: frozenset[int]
    trainer: str
    trainer_pid: int
    kubelet_pid: int
    culprit: str | None
    culprit_kind: str | None  # "systemd-unit" | "container"
    unit: str
    container: str
    episodes: list[Episode] = field(default_factory=list)
    # how things are written
    dmesg_format: str = "plain"  # "plain" (boot-relative) | "iso"
    dmesg_lines: int = 2000
    perf_clock: str = "boot"  # "boot" (perf's default) | "realtime" (-k CLOCK_REALTIME)
    perf_compress: str = "none"  # "none" | "gz"
    mpstat_compress: str = "none"
    mpstat_date: str = "c"  # "c" (11/30/26, the C locale's %x) | "iso" (S_TIME_FORMAT=ISO)
    uptime_file: bool = False  # also write `uptime -s`
    dying_start: int = 0
    dying_per_hour: float = 0.0
    live_memcgs: int = 240
    restarts_per_hour: float = 0.0
    # knobs for harder stories (defaults: the stories as first written, byte for byte)
    walker: str = "kubelet"  # the process whose stats read walks the memcgs
    census_format: str = "v1"  # "v1" | "v2" (the census loop on a cgroup v2 node)
    omit: frozenset[str] = frozenset()  # evidence not saved: see OMITTABLE
    also: frozenset[str] = frozenset()  # a second story layered on the first: see ALSO
    edge: str | None = None  # "start" | "end": an incident at the window's very edge
    # recent_loop: the attempts the runtime lists and the seconds between them
    loop_attempts: int = 0
    loop_spacing_s: float = 0.0
    # cluster_pods: this node's name in the pod listing, and the other nodes'
    node_name: str = ""
    other_nodes: tuple[str, ...] = ()
    # oom_legacy: the cgroup driver of the OOM paths, the soft-locked CPU and its time
    cgroup_driver: str = "cgroupfs"
    lockup_at: float | None = None
    # benign_reset: the second every CPU was stolen (its start), the reset after it
    pause_at: float | None = None

    @property
    def end(self) -> int:
        return self.start + self.duration_s

    @property
    def root_cause(self) -> str:
        return ROOT_CAUSE[self.kind]

    @property
    def contended(self) -> bool:
        """Every core busy and tasks waiting for them (the story, or a second story)."""
        return self.kind == "cpu_contention" or "contention" in self.also

    @property
    def looping(self) -> bool:
        """A unit or container restarts over and over (the culprit's or a small leak's)."""
        return self.kind in ("zombie_chain", "zombie_no_harm", "crash_loop") \
            or "small_leak" in self.also


def rng_for(kind: str, seed: int, salt: str = "") -> random.Random:
    return random.Random(seed * 1_000_003 + zlib.crc32(f"{kind}/{salt}".encode()))


def uuid_from(r: random.Random) -> str:
    """A version-4-shaped UUID drawn from `r` (pod uids)."""
    return (f"{r.getrandbits(32):08x}-{r.getrandbits(16):04x}-4{r.getrandbits(12):03x}-"
            f"8{r.getrandbits(12):03x}-{r.getrandbits(48):012x}")


def make_plan(kind: str, cpus: int = 96, seed: int = 1, duration_s: int = 3600,
              hot_cpu: int | None = None, unit: str | None = None,
              container: str | None = None, noise: float | None = None,
              dmesg_lines: int | None = None, perf_cpus: tuple[int, ...] | None = None,
              dmesg_format: str | None = None, perf_clock: str | None = None,
              perf_compress: str | None = None, mpstat_compress: str | None = None,
              start: int | None = None, walker: str | None = None,
              census_format: str | None = None, omit: tuple[str, ...] | None = None,
              also: tuple[str, ...] | None = None, edge: str | None = None) -> Plan:
    if kind not in ROOT_CAUSE:
        raise ValueError(f"unknown scenario kind {kind!r} (known: {', '.join(KINDS)})")
    if not 2 <= cpus <= 1024:
        raise ValueError("cpus must be between 2 and 1024")
    if not 60 <= duration_s <= 6 * 3600:
        raise ValueError("duration must be between 60 s and 6 h")
    if omit and not set(omit) <= OMITTABLE:
        raise ValueError(f"cannot omit {sorted(set(omit) - OMITTABLE)} (can omit: "
                         f"{', '.join(sorted(OMITTABLE))})")
    if also and not set(also) <= ALSO:
        raise ValueError(f"unknown second story {sorted(set(also) - ALSO)} (known: "
                         f"{', '.join(sorted(ALSO))})")
    if walker is not None and not walker.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"walker {walker!r}: a process name (letters, digits, - and _)")
    if census_format not in (None, "v1", "v2"):
        raise ValueError("census format must be v1 or v2")
    if edge not in (None, "start", "end"):
        raise ValueError("edge must be start or end")
    r = rng_for(kind, seed)
    if start is None:
        day = r.randrange(0, 20)
        # one seed in four straddles midnight, so readers must handle the date rollover
        tod = 86400 - r.randrange(600, 1800) if r.random() < 0.25 else r.randrange(3600, 72000)
        start = BASE_EPOCH + day * 86400 + tod
    uptime = r.randrange(2 * 86400, 9 * 86400)
    hostname = f"ip-10-{r.randrange(0, 4)}-{r.randrange(1, 255)}-{r.randrange(1, 255)}"
    # an incident core in the upper part, like CPU 39 of 96; never cpu 0
    if hot_cpu is None:
        hot_cpu = r.randrange(max(1, cpus // 4), cpus)
    elif not 0 <= hot_cpu < cpus:
        raise ValueError(f"hot cpu {hot_cpu} is not one of the {cpus} CPUs")
    queues = min(32, max(2, cpus // 2 if cpus < 16 else 32 if cpus >= 64 else cpus // 2))
    hot_queue = r.randrange(0, queues)
    queue_cpu: dict[int, tuple[int, ...]] = {q: (q % cpus,) for q in range(queues)}
    # irqbalance moved the incident queue's IRQ onto the hot core
    queue_cpu[hot_queue] = (hot_cpu,)
    train_cpus = frozenset(c for c in range(cpus) if c % 8 not in (0, 7)) | {hot_cpu}
    # the second profiled CPU: a training core other than the hot one (on 2 CPUs, any other)
    other = next((c for c in sorted(train_cpus, key=lambda c: (c * 7919 + seed) % cpus)
                  if c != hot_cpu), (hot_cpu + 1) % cpus)
    unit = unit or r.choice(UNITS)
    container = container or r.choice(CONTAINERS)
    noise_v = round(r.uniform(0.15, 0.7), 2) if noise is None else noise
    if not 0 <= noise_v <= 1:
        raise ValueError("noise must be between 0 and 1")
    plan = Plan(
        kind=kind, cpus=cpus, seed=seed, duration_s=duration_s, start=start,
        boot_time=start - uptime, hostname=hostname,
        # the pressure stories need PSI (4.20+); the others may run an older kernel
        kernel=r.choice(KERNELS_V1[:3] if kind in ("cpu_contention", "memory_pressure")
                        else KERNELS_V1),
        noise=noise_v, nic_driver="ena", iface="eth0", bus="0000:00:05.0", queues=queues,
        queue_cpu=queue_cpu, hot_queue=hot_queue, hot_cpu=hot_cpu,
        perf_cpus=tuple(sorted(perf_cpus or (hot_cpu, other))), train_cpus=train_cpus,
        trainer=r.choice(TRAINERS), trainer_pid=r.randrange(20000, 90000),
        kubelet_pid=r.randrange(1800, 4000), culprit=None, culprit_kind=None,
        unit=unit, container=container,
        dmesg_format=dmesg_format or r.choice(("plain", "iso")),
        dmesg_lines=dmesg_lines if dmesg_lines is not None else r.randrange(800, 3000),
        perf_clock=perf_clock or r.choice(("boot", "realtime")),
        perf_compress=perf_compress or r.choice(("none", "gz")),
        mpstat_compress=mpstat_compress or r.choice(("none", "gz")),
        mpstat_date=r.choice(("c", "iso")), uptime_file=r.random() < 0.5,
    )
    plan.walker = walker or "kubelet"
    plan.census_format = census_format or "v1"
    plan.omit = frozenset(omit or ())
    plan.also = frozenset(also or ())
    plan.edge = edge
    _story(plan, r)
    # the knobs draw from their own generators, so the stories without them keep their bytes
    _edge(plan, rng_for(kind, seed, "edge"))
    _also(plan, rng_for(kind, seed, "also"))
    if kind in NO_NIC_EVENTS and r.random() < 0.5 and "benign_reset" not in plan.also:
        # a Mellanox NIC instead: its queue IRQs are `mlx5_compN@pci:BDF`
        plan.nic_driver, plan.bus = "mlx5_core", "0000:08:00.0"
    return plan


def _spread(r: random.Random, start: int, duration: int, n: int, gap: int,
            lengths: tuple[float, float]) -> list[tuple[float, float]]:
    """n (start, end) stretches inside [start+60, start+duration-30], at least `gap` apart."""
    out: list[tuple[float, float]] = []
    tries = 0
    while len(out) < n and tries < 10_000:
        tries += 1
        length = r.uniform(*lengths)
        s = start + r.uniform(60, duration - 30 - length)
        if all(abs(s - a) >= gap and abs(s - b) >= gap for a, b in out):
            out.append((round(s, 3), round(s + length, 3)))
    return sorted(out)


def _story(p: Plan, r: random.Random) -> None:
    """Kind-specific ground truth: who is guilty, the episodes, the zombie counts."""
    d = p.duration_s
    scale = d / 3600
    p.live_memcgs = r.randrange(180, 320)
    if p.kind == "zombie_chain":
        p.culprit_kind = "systemd-unit" if r.random() < 0.6 else "container"
        p.culprit = p.unit if p.culprit_kind == "systemd-unit" else p.container
        p.restarts_per_hour = 360.0  # RestartSec=10s, as in the incident
        p.dying_per_hour = r.uniform(300, 700)
        p.dying_start = r.randrange(40_000, 75_000)
        n = max(2, round(r.randrange(6, 10) * scale))
        stretches = _spread(r, p.start, d, n, 180, (5.2, 8.5))
        # one or two short saturations that stay under ENA's 5 s: no reset follows them
        stretches += _spread(r, p.start, d, max(1, round(2 * scale)), 400, (1.5, 3.0))
        p.episodes = sorted((Episode(p.hot_cpu, a, b, "sys") for a, b in stretches
                             if p.hot_cpu is not None), key=lambda e: e.start)
    elif p.kind == "softirq_storm":
        # irqbalance off: most of the NIC's queue IRQs land on the hot core
        assert p.hot_cpu is not None
        for q in range(p.queues):
            if q % 4 != 3:
                p.queue_cpu[q] = (p.hot_cpu,)
        n = max(2, round(r.randrange(5, 9) * scale))
        p.episodes = [Episode(p.hot_cpu, a, b, "softirq")
                      for a, b in _spread(r, p.start, d, n, 200, (5.5, 12.0))]
        _quiet_zombies(p, r)
    elif p.kind == "healthy_bursty":
        n = max(4, round(r.randrange(30, 60) * scale))
        cpus = sorted(p.train_cpus)
        bursts = _spread(r, p.start, d, n, 20, (3.0, 25.0))
        p.episodes = [Episode(r.choice(cpus) if i % 3 else p.perf_cpus[-1], a, b, "usr")
                      for i, (a, b) in enumerate(bursts)]
        _quiet_zombies(p, r)
    elif p.kind == "zombie_no_harm":
        p.culprit_kind = "systemd-unit" if r.random() < 0.6 else "container"
        p.culprit = p.unit if p.culprit_kind == "systemd-unit" else p.container
        p.restarts_per_hour = 360.0
        p.dying_per_hour = r.uniform(700, 1400)
        p.dying_start = r.randrange(2_000, 6_000)
    elif p.kind in ("hardware_fault", "cpu_contention"):
        _quiet_zombies(p, r)
    elif p.kind == "memory_pressure":
        _quiet_zombies(p, r)
        p.culprit_kind = "container"
        p.culprit = p.container
    elif p.kind == "hypervisor_steal":
        # the hot core's vCPU is not run by the host: NAPI on it starves without any work
        n = max(2, round(r.randrange(4, 7) * scale))
        p.episodes = [Episode(p.hot_cpu, a, b, "steal")
                      for a, b in _spread(r, p.start, d, n, 240, (5.5, 10.0))
                      if p.hot_cpu is not None]
        _quiet_zombies(p, r)
    elif p.kind == "crash_loop":
        # restarts every 10 s, but this kernel frees the memcgs: nothing piles up
        p.culprit_kind = "systemd-unit" if r.random() < 0.6 else "container"
        p.culprit = p.unit if p.culprit_kind == "systemd-unit" else p.container
        _quiet_zombies(p, r)
        p.restarts_per_hour = 360.0
    if p.kind not in ("zombie_chain", "softirq_storm", "hypervisor_steal"):
        # no saturated core and no starved queue in the other stories
        p.hot_cpu = None
        p.hot_queue = None


def _quiet_zombies(p: Plan, r: random.Random) -> None:
    p.dying_start = r.randrange(40, 400)
    p.dying_per_hour = 0.0


def _edge(p: Plan, r: random.Random) -> None:
    """Move one of the story's reset-causing episodes to the window's first or last seconds."""
    long_eps = [e for e in p.episodes if e.duration >= 5.0 and e.mode != "usr"]
    if p.edge is None or not long_eps:
        return
    e = long_eps[0] if p.edge == "start" else long_eps[-1]
    length = e.duration
    a = p.start + r.uniform(0.5, 2.0) if p.edge == "start" \
        else p.end - length - r.uniform(2.5, 3.0)  # its stall line lands in the last second
    p.episodes = sorted([x for x in p.episodes if x is not e]
                        + [Episode(e.cpu, round(a, 3), round(a + length, 3), e.mode, e.who)],
                        key=lambda x: x.start)


def _also(p: Plan, r: random.Random) -> None:
    _also_joined(p, rng_for(p.kind, p.seed, "also-joined"))
    if "small_leak" in p.also and p.kind not in ("zombie_chain", "zombie_no_harm"):
        # a crash loop leaking slowly, far under the threshold
        if p.culprit is None:
            p.culprit_kind = "systemd-unit"
        p.restarts_per_hour = p.restarts_per_hour or 360.0
        p.dying_start, p.dying_per_hour = r.randrange(150, 400), r.uniform(40, 120)
    if "flat_leak" in p.also:
        # many dying memcgs from an old leak that stopped: past the threshold, not growing
        p.dying_start, p.dying_per_hour = r.randrange(30_000, 60_000), 0.0
    others = [c for c in range(p.cpus) if c != p.hot_cpu
              and all(c not in cpus for q, cpus in p.queue_cpu.items() if q == p.hot_queue)]
    if "neighbours" in p.also and others:
        # other cores' kernel work (a backup's page-cache copy): bursts at random, and one
        # ending right before each reset-causing episode does, so the nearest episode before
        # the stall is not the guilty core's
        n = r.choice(others)
        eps = [Episode(n, a, b, "sys", "neighbour")
               for a, b in _spread(r, p.start, p.duration_s, max(2, p.duration_s // 600), 120,
                                   (3.0, 6.0))]
        eps += [Episode(n, e.end - 2.5, e.end + 0.3, "sys", "neighbour") for e in p.episodes
                if e.duration >= 5.0 and e.cpu == p.hot_cpu and e.mode != "usr"]
        p.episodes = sorted(p.episodes + eps, key=lambda x: x.start)
        p.perf_cpus = tuple(sorted(set(p.perf_cpus) | {n}))
    if "hot_core" in p.also and others:
        # a core saturated in system time by chance, before the device's own failures
        c = others[len(others) // 2]
        from corescope.lab.scenarios.dmesg import story_lines
        times = sorted(t for t, _m, k in story_lines(p) if k == "nic_keepalive_timeout")
        p.episodes = sorted(p.episodes + [Episode(c, t - r.uniform(9, 14), t - r.uniform(1, 3),
                                                  "sys", "neighbour") for t in times],
                            key=lambda x: x.start)
        p.perf_cpus = tuple(sorted(set(p.perf_cpus) | {c}))


def _also_joined(p: Plan, r: random.Random) -> None:
    """The second stories whose answer must be joined across sources (issue 19's classes);
    they draw from their own generator, so the older knobs keep their bytes."""
    if "recent_loop" in p.also and p.kind in ("crash_loop", "zombie_no_harm", "zombie_chain"):
        p.culprit_kind, p.culprit = "container", p.container
        p.loop_attempts = r.randrange(3, 9)
        p.loop_spacing_s = round(r.uniform(10.0, 40.0), 3)
    if "cluster_pods" in p.also:
        suffix = r.choice((".ec2.internal", ".us-west-2.compute.internal",
                           ".eu-central-1.compute.internal"))
        p.node_name = p.hostname + suffix
        p.other_nodes = tuple(
            f"ip-10-{r.randrange(0, 4)}-{r.randrange(1, 255)}-{r.randrange(1, 255)}{suffix}"
            for _ in range(r.randrange(2, 5)))
    if "oom_legacy" in p.also and p.kind == "memory_pressure":
        # the old OOM report (4.14): no `oom-kill:` summary line, PSI not there yet
        p.kernel = "4.14.336-253.554.amzn2.x86_64"
        p.cgroup_driver = r.choice(("cgroupfs", "systemd"))
        p.hot_cpu = r.randrange(1, p.cpus)
        p.lockup_at = round(p.start + r.uniform(300, p.duration_s - 200), 3)
    if "benign_reset" in p.also and p.kind in NO_NIC_EVENTS:
        p.pause_at = float(p.start + r.randrange(120, p.duration_s - 120))
        # the host did not run any vCPU for most of one second
        p.episodes = sorted(p.episodes + [Episode(c, p.pause_at, p.pause_at + 1.0, "steal",
                                                  "host") for c in range(p.cpus)],
                            key=lambda x: x.start)
