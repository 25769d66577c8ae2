"""What several hypotheses read from an Investigation: the incidents a saturated core
preceded, which part of kernel time an episode spent, and who walked the memcg tree."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from corescope.investigate.diagnosis import Fact
from corescope.investigate.model import HotCoreProfile, IncidentView, Investigation
from corescope.model.cores import Episode
from corescope.model.events import names_iface

# Kernel functions of the memcg stat read and tree walk, matched as a family: the v1/v2 stat
# files, the hierarchy iterator, the css walk, rstat flushing, per-memcg LRU counts, and
# reclaim's walk over memcgs. Names move between kernel versions; the family does not.
MEMCG_WALK = re.compile(
    r"mem_cgroup_iter|mem_cgroup_(node_)?nr_lru_pages|memcg1?_(numa_)?stat_(show|format)"
    r"|memory_(numa_)?stat_(show|format)|memcg_page_state|memcg_events|memcg1_shown"
    r"|css_next_(descendant_(pre|post)|child)|css_rightmost_descendant"
    r"|(css|cgroup)_rstat_flush|rstat_flush|mem_cgroup_flush_stats|memcg_flush_stats"
    r"|flush_memcg_stats|mem_cgroup_css_rstat_flush|shrink_node_memcgs|lruvec_page_state"
    r"|mem_cgroup_(usage|read_u64|tree)")
# NAPI / NET_RX softirq work.
NET_RX = re.compile(r"net_rx_action|napi_poll|__napi_poll|napi_complete|_poll$|netif_receive"
                    r"|__netif_receive_skb|gro_receive|napi_gro")

# An episode is in irq/softirq mode when those take most of its kernel time.
SOFT_SHARE = 0.5


def mean_of(e: Episode, mode: str) -> float:
    return float(e.by_mode.get(mode, {}).get("mean", 0.0))


def soft_share(e: Episode) -> float:
    """Share of the episode's kernel time spent in irq + softirq."""
    irq_soft = mean_of(e, "irq") + mean_of(e, "soft")
    total = irq_soft + mean_of(e, "sys")
    return irq_soft / total if total > 0 else 0.0


def is_sys_episode(e: Episode) -> bool:
    return soft_share(e) < SOFT_SHARE


def episode_of(inv: Investigation, cpu: int, start: float) -> Episode | None:
    return next((e for e in inv.context_episodes
                 if e.cpu == cpu and abs(e.start - start) < 1e-6), None)


def preceded(inv: Investigation) -> list[tuple[IncidentView, Episode]]:
    """Incidents whose nearest preceding hot-core episode is known, with that episode."""
    out = []
    for v in inv.incidents:
        near = v.incident.nearest
        if near is None:
            continue
        e = episode_of(inv, near.cpu, near.start)
        if e is not None:
            out.append((v, e))
    return out


def cores_seen_before(inv: Investigation, v: IncidentView) -> bool:
    """Whether the per-core record covers the correlation window before the incident: only
    then does "no starved core before it" mean anything (no record is not a calm core)."""
    if v.incident.preceding:
        return True
    span = inv.record_span
    if span is None:
        return False
    t = v.incident.event.time
    # one sample interval of slack at each end: samples are taken at ticks, not at `t`
    slack = 2.0
    return span[0] - slack <= t - inv.correlation_window_s and t <= span[1] + slack


def uncovered_before(inv: Investigation, views: list[IncidentView], most: int = 3) -> str:
    """`from T to T` for the correlation windows before `views` that the per-core record
    does not cover: what would tell whether a core was starved there."""
    from corescope.timeparse import iso

    w = inv.correlation_window_s
    # incidents in the same second share one window: said once
    spans = list(dict.fromkeys(
        f"from {iso(v.incident.event.time - w)} to {iso(v.incident.event.time)}"
        for v in sorted(views, key=lambda v: v.incident.event.time)))
    more = f" and {len(spans) - most} more" if len(spans) > most else ""
    return ", ".join(spans[:most]) + more


def preceded_on(inv: Investigation, cpu: int) -> list[tuple[IncidentView, Episode]]:
    """Incidents that an episode on `cpu` preceded (nearest or not), with that episode."""
    out = []
    for v in inv.incidents:
        for p in v.incident.preceding:
            e = episode_of(inv, p.cpu, p.start) if p.cpu == cpu else None
            if e is not None:
                out.append((v, e))
                break
    return out


# What a starved core can cause: a queue's NAPI not polled (stall, TX timeout, the reset
# after them), lockups, RCU stalls, hung tasks. Not a device's own watchdog (keep-alive), a
# machine check, an OOM kill or a lost carrier (`NIC Link is Down` first: a cable, a switch
# port, the peer; a reset the driver does after it, e1000e's and ixgbe's, is the link
# loss's): a hot core before those is a coincidence.
NOT_STARVATION = frozenset({"nic_keepalive_timeout", "hw_error", "oom_kill", "link_down"})


def starvable(v: IncidentView) -> bool:
    return v.incident.event.kind not in NOT_STARVATION


def napi_matches(v: IncidentView, e: Episode) -> bool:
    """Whether the stall line's "time since last napi" points back to the episode's start
    (within 1.5 s or 20%): NAPI stopped when that core saturated."""
    since = v.incident.event.fields.get("usecs_since_napi")
    if not isinstance(since, int) or since <= 0:
        return False
    s = since / 1e6
    return abs((v.incident.event.time - s) - e.start) <= max(1.5, 0.2 * s)


def candidate_cpus(inv: Investigation, keep: Callable[[Episode], bool]) -> list[int]:
    """CPUs with an episode (passing `keep`) before some incident a starved core can cause,
    most likely first: those serving the stalled queue, then those whose saturation began
    when the stall line says NAPI last ran, then those before the most incidents, then the
    longest saturated."""
    count: Counter[int] = Counter()
    serves: Counter[int] = Counter()
    napi: Counter[int] = Counter()
    busy: defaultdict[int, float] = defaultdict(float)  # seconds saturated, summed
    for v in real_incidents(inv):
        if not starvable(v):
            continue
        seen = set()
        for p in v.incident.preceding:
            e = episode_of(inv, p.cpu, p.start)
            if e is None or not keep(e) or p.cpu in seen:
                continue
            seen.add(p.cpu)
            count[p.cpu] += 1
            serves[p.cpu] += p.serves_queue is True
            napi[p.cpu] += napi_matches(v, e)
            busy[p.cpu] += e.duration_s
    return sorted(count, key=lambda c: (-serves[c], -napi[c], -count[c], -busy[c], c))


STEAL_PCT = 30.0  # a core losing this much of a second to the hypervisor, for 2 s or more


def steal_episodes(inv: Investigation) -> list[Episode]:
    if not inv.samples:
        return []
    from corescope.analysis.episodes import find_episodes

    return find_episodes(inv.samples, STEAL_PCT, 2.0, "steal")


def serving_cpus(v: IncidentView) -> set[int] | None:
    """The CPUs that serve the incident's NIC queue, from the interrupt map (None: unknown)."""
    e = v.incident.event
    if e.queue is None:
        return None
    cpus = {c for q in v.interrupt_map if q.queue == e.queue
            and (e.iface is None or q.iface is None or names_iface(q.iface, e.iface))
            for c in q.cpus}
    return cpus or None


def after_steal(inv: Investigation, steal: list[Episode]) -> list[IncidentView]:
    """NIC incidents with a steal episode, in the correlation window before them, on a CPU
    serving the stalled queue (any CPU when the map is unknown): NAPI on a vCPU the host
    did not run cannot poll, and nothing on the node is to blame."""
    out = []
    w = inv.correlation_window_s
    for v in real_incidents(inv):
        e = v.incident.event
        if not e.kind.startswith("nic_"):
            continue
        cpus = serving_cpus(v)
        if any(s.start <= e.time and s.end >= e.time - w and (cpus is None or s.cpu in cpus)
               for s in steal):
            out.append(v)
    return out


def real_incidents(inv: Investigation) -> list[IncidentView]:
    """Incidents that count: a lab line without a hot core before it is not one, nor a
    single benign NIC event (see `benign_incidents`)."""
    benign = {id(v) for v in benign_incidents(inv)}
    return [v for v in _counted(inv) if id(v) not in benign]


def _counted(inv: Investigation) -> list[IncidentView]:
    return [v for v in inv.incidents if not (v.incident.event.lab and not v.incident.preceding)]


NIC_KINDS = frozenset({"nic_tx_stall", "nic_reset", "nic_keepalive_timeout", "nic_tx_timeout"})


def healed_by(inv: Investigation, v: IncidentView) -> str | None:
    """How the NIC said it recovered, or None: the driver's own `reset completed` line (ENA's
    `Device reset completed successfully`, mlx5's `health recovery succeeded`), else its
    link coming back up after the burst (Intel, bnxt, tg3, r8169 print no "reset done" line:
    `Reset adapter`, then `NIC Link is Up`; a pulled cable's return says the same). A line of
    the burst saying a reset failed, or the link down again at the window's end, is no
    recovery."""
    lines = [v.incident.event, *v.incident.related]
    stages = {e.fields.get("stage") for e in lines if e.kind == "nic_reset"}
    if "failed" in stages:
        return None
    if "completed" in stages:
        return "one reset that completed"
    head = v.incident.event
    if head.iface is None and head.device is None:
        return None
    state = None
    for e in inv.events:
        if e.kind in ("link_up", "link_down") and e.time >= head.time and (
                (head.iface is not None and e.iface == head.iface)
                or (head.device is not None and e.device == head.device)):
            state = e.kind
    if state != "link_up":
        return None
    return ("the link went down and came back up" if head.kind == "link_down"
            else "its link came back up after it")


def benign_incidents(inv: Investigation) -> list[IncidentView]:
    """A single NIC burst in the window that healed itself, with no other sign: no hardware
    error line, no other incident, no starved core before it (a host pausing the VM for a
    second, a switch flap, a cable pulled and put back). It is shown, not accused: a fault
    repeats or leaves errors."""
    counted = _counted(inv)
    if len(counted) != 1 or any(e.kind == "hw_error" and not e.lab for e in inv.events):
        return []
    v = counted[0]
    # a busy core before it accounts for it only when starving a core can cause it
    if v.incident.event.kind not in NIC_KINDS | {"link_down"} \
            or (v.incident.preceding and starvable(v)) or healed_by(inv, v) is None:
        return []
    t, w = v.incident.event.time, inv.correlation_window_s
    if any(s.start <= t and s.end >= t - w for s in steal_episodes(inv)):
        return []  # the host took a vCPU for seconds before it: hypervisor_steal's
    return [v]


@dataclass(frozen=True)
class Walker:
    comm: str
    function: str
    cpu: int
    walk_samples: int  # its kernel-mode samples in memcg walk functions on that core
    kernel_samples: int  # every kernel-mode sample on that core in the windows
    busy_samples: int
    top_comm: str | None  # the busiest process on the core overall (maybe not the walker)

    @property
    def share(self) -> float:
        """The walker's memcg-walk samples as a share of the core's kernel-mode samples."""
        return self.walk_samples / self.kernel_samples if self.kernel_samples else 0.0


def kernel_mode(frames: tuple) -> bool:
    return bool(frames) and frames[0].kernel


def find_walker(profiles: list[HotCoreProfile], cpu: int | None = None) -> Walker | None:
    """Who spent the hot core's kernel time in memcg walk functions before the incidents:
    the process owning most such samples (not the busiest process overall), and its most
    frequent function of the family. The share counts the saturated seconds' kernel samples
    when the profile has them (a busy core's kernel time in the rest of the window says
    nothing about what starved it), else the whole window's."""
    by_comm: Counter[str] = Counter()
    funcs: dict[str, Counter[str]] = {}
    kernel = busy = 0
    busiest: Counter[str] = Counter()
    chosen = [p for p in profiles if cpu is None or p.cpu == cpu]
    if not chosen:
        return None
    for p in chosen:
        for (comm, _pid, _frames), n in p.profile.stacks.items():
            busy += n
            busiest[comm] += n
        focus = p.during if p.during is not None and p.during.busy_samples else p.profile
        for (comm, _pid, frames), n in focus.stacks.items():
            if not kernel_mode(frames):
                continue
            kernel += n
            # frames are leaf first: the family member nearest the leaf is where the walk
            # spends the time (mem_cgroup_nr_lru_pages under memcg_numa_stat_show)
            walk = next((f.symbol for f in frames if f.kernel and MEMCG_WALK.search(f.symbol)),
                        None)
            if walk is not None:
                by_comm[comm] += n
                funcs.setdefault(comm, Counter())[walk] += n
    if not by_comm:
        return None
    comm, n = by_comm.most_common(1)[0]
    function = funcs[comm].most_common(1)[0][0]
    return Walker(comm, function, chosen[0].cpu, n, kernel, busy,
                  busiest.most_common(1)[0][0] if busiest else None)


def fact(value: object, unit: str, source: str) -> Fact:
    return Fact(value, unit, source)


def leak_source_facts(inv: Investigation) -> tuple[str | None, dict[str, Fact]]:
    """The leaking source a leak verdict names, with its restart (or churn) rate against the
    dying count's growth: the top suspect that explains any of it."""
    z = inv.zombies
    top = z.suspects[0] if z is not None and z.suspects and z.suspects[0].score > 0 else None
    if z is None or top is None:
        return None, {}
    e = top.evidence
    out = {"leaking_source": fact(top.name, top.kind, "churn and restarts")}
    rate = e.get("restarts_per_hour", e.get("removed_per_hour"))
    if isinstance(rate, int | float):
        unit = "restarts/h" if "restarts_per_hour" in e else "cgroups removed/h"
        out["leaking_source_rate"] = fact(rate, unit, str(e.get("rate_basis", "churn")))
    if z.growth.per_hour is not None:
        out["leaking_source_vs_growth"] = fact(
            e.get("explains_pct_of_growth"), "% of the dying count's growth",
            f"{z.growth.per_hour:.0f} dying memcgs/h ({z.growth.method})")
    return top.name, out
