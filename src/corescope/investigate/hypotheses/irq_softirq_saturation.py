"""irq_softirq_saturation: a core saturated in irq + softirq time (a NET_RX storm), with the
NIC queue IRQs concentrated on it. What separates it from starvation: the NIC's own stall
line says NAPI ran recently (a short time since the last napi), and the stacks are
ksoftirqd / net_rx_action / NAPI poll, not a process in system time. The per-CPU NET_RX rate
(/proc/softirqs, kept by `record`'s netdev sensor) says whether the soft time is network
receive work: on the saturated core it rises well above that core's own rate before.

An incident counts for a core when an irq/softirq episode on a CPU serving the stalled queue
(any CPU when the queue-to-CPU map is unknown) overlaps the incident's lead-up window: not
only the single nearest episode (a busy neighbour in system time may end closer). A NIC
keep-alive timeout is the device's own watchdog (hardware_fault's evidence), never a storm's
incident: it is counted apart and says nothing for this hypothesis."""

from __future__ import annotations

from corescope.investigate.diagnosis import (
    NOT_MEASURED,
    RULED_OUT,
    SUPPORTED,
    Declared,
    Fact,
    Hypothesis,
)
from corescope.investigate.hypotheses.common import (
    NET_RX,
    SOFT_SHARE,
    episode_of,
    fact,
    real_incidents,
    soft_share,
    starvable,
)
from corescope.investigate.model import IncidentView, Investigation
from corescope.model.cgroups import Thresholds
from corescope.model.cores import Episode
from corescope.model.events import SoftirqSample

NAME = "irq_softirq_saturation"
DECLARED = Declared(
    primary=True, rank=1, explains=("incidents_after_softirq_core",), correlated=True,
    advice="spread the NIC queue IRQs over more cores (irqbalance, /proc/irq/N/smp_affinity, "
           "RPS) so cpu{cpu} is not alone")
# NET_RX on the saturated core is "raised" at this many times its own rate before the episode
# (or, with no rows before it, the other CPUs' median), and at least this many per second
NET_RX_RAISED = 3.0
NET_RX_MIN_PER_S = 50.0
# this share of the core's samples in ksoftirqd / NET_RX / NAPI functions says network work
NET_STACK_SHARE = 0.2
NOT_RECORDED = ("the per-CPU NET_RX rate was not measured (no /proc/softirqs readings for that "
                "time: record's netdev sensor off, or artifacts without a softirqs loop)")


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    if not inv.samples:
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {}, "per-core samples of the window")
    soft_eps = [e for e in inv.context_episodes if soft_share(e) >= SOFT_SHARE]
    if not soft_eps:
        return Hypothesis(NAME, RULED_OUT, 0.0,
                          {"softirq_episodes": fact(0, "episodes", "per-core record")},
                          "a core saturated mostly in irq + softirq time",
                          "no core saturated in irq/softirq time")
    tied = tied_incidents(inv)
    cpu = min(tied, key=lambda c: (-len(tied[c]), -_busy(soft_eps, c), c)) if tied \
        else max(soft_eps, key=lambda e: e.duration_s).cpu
    hot = tied.get(cpu, [])
    ev = {"softirq_episodes": fact(len(soft_eps), "episodes", "per-core record"),
          "hot_cpu_soft_share": fact(max(soft_share(e) for e in soft_eps if e.cpu == cpu),
                                     "ratio of kernel time", "per-core record")}
    ev["incidents_after_softirq_core"] = fact(
        len(hot), "events", "correlation (an episode on a CPU serving the stalled queue, in "
        "the incident's lead-up window)")
    keepalive = [v for v in real_incidents(inv)
                 if v.incident.event.kind == "nic_keepalive_timeout"]
    if keepalive:
        ev["keepalive_timeouts_not_counted"] = fact(
            len(keepalive), "events", "kernel log (the device's own watchdog: hardware_fault)")
    queues = [q for v in inv.incidents for q in v.interrupt_map]
    if queues:
        names = {q.name for q in queues}
        on_cpu = {q.name for q in queues if cpu in q.cpus}
        ev["queue_irqs_on_hot_cpu"] = fact(len(on_cpu), f"of {len(names)} queue IRQs",
                                           "interrupt map")
    concentration = len({q.name for q in queues if cpu in q.cpus}) / max(
        1, len({q.name for q in queues})) if queues else 0.0
    net = total = 0
    # the stacks before its incidents, else (none followed) those of its saturations
    for p in inv.profiles + inv.episode_profiles:
        if p.cpu != cpu:
            continue
        for (comm, _pid, frames), n in p.profile.stacks.items():
            total += n
            if comm.startswith("ksoftirqd") or any(NET_RX.search(f.symbol) for f in frames):
                net += n
    if total:
        ev["net_rx_stack_share"] = fact(net / total, "ratio", f"perf ring, cpu{cpu}")
    napi_recent = 0
    for v in hot:
        f = v.incident.event.fields
        since, limit = f.get("usecs_since_napi"), f.get("threshold_usec")
        if isinstance(since, int) and isinstance(limit, int) and since < limit:
            napi_recent += 1
    if napi_recent:
        ev["stall_lines_with_recent_napi"] = fact(napi_recent, "events", "NIC stall line")
    rx = net_rx_facts(inv.softirqs, cpu, [e for e in soft_eps if e.cpu == cpu], soft_eps)
    ev.update(rx)
    raised = "net_rx_raised" in rx and rx["net_rx_raised"].value is True
    net_share = net / total if total else 0.0
    score = round(min(1.0, 0.4 + 0.2 * (len(hot) > 0) + 0.2 * concentration
                      + 0.2 * net_share + 0.1 * (napi_recent > 0) + 0.1 * raised), 4)
    if rx and not raised and not hot and not (total and net_share >= NET_STACK_SHARE):
        # measured: the soft time is not network receive (block, timers, RCU, another
        # device's hard irqs), its stacks do not say NET_RX, and no NIC incident followed
        return Hypothesis(
            NAME, RULED_OUT, round(min(score, 0.3), 4), ev,
            f"cpu{cpu}'s NET_RX rate raised, NET_RX stacks on it, or a NIC incident after "
            "its saturation",
            f"cpu{cpu} saturated in irq/softirq time, but not by network receive (NET_RX "
            "not raised) and no NIC incident followed")
    if not rx:
        rx_note = f"; {NOT_RECORDED}"
        would = (f"cpu{cpu}'s kernel time in system mode (a process), its stacks outside "
                 f"NET_RX, or (not measured here) its NET_RX rate no higher than before")
    else:
        rx_note = "" if raised else f"; NET_RX on cpu{cpu} not raised: other soft/hard irq work"
        would = (f"cpu{cpu}'s kernel time in system mode (a process), its stacks outside "
                 f"NET_RX, or its NET_RX rate back at its level before the episode")
    return Hypothesis(
        NAME, SUPPORTED, score, ev, would,
        f"cpu{cpu} saturated in irq/softirq time"
        + (f" before {len(hot)} NIC incidents" if hot else "")
        + (f", NET_RX {rx['net_rx_per_s_on_hot_cpu'].value:.0f}/s on it" if raised else "")
        + rx_note,
        culprit=next((q.iface for v in inv.incidents for q in v.interrupt_map
                      if cpu in q.cpus and q.iface), None),
        hot_cpu=cpu)


def tied_incidents(inv: Investigation) -> dict[int, list[IncidentView]]:
    """Per CPU, the incidents a starved queue can cause that an irq/softirq episode on that
    CPU preceded: the episode overlaps the incident's lead-up window (the correlation
    window) and the CPU serves the stalled queue (or the map is unknown)."""
    out: dict[int, list[IncidentView]] = {}
    for v in real_incidents(inv):
        if not starvable(v):
            continue
        cpus = set()
        for p in v.incident.preceding:
            if p.serves_queue is False or p.cpu in cpus:
                continue
            e = episode_of(inv, p.cpu, p.start)
            if e is not None and soft_share(e) >= SOFT_SHARE:
                cpus.add(p.cpu)
                out.setdefault(p.cpu, []).append(v)
    return out


def _busy(eps: list[Episode], cpu: int) -> float:
    return sum(e.duration_s for e in eps if e.cpu == cpu)


def _per_s(r: SoftirqSample, cpu: int) -> float | None:
    n = r.net_rx.get(cpu)
    return n / r.interval_s if n is not None and r.interval_s > 0 else None


def _overlaps(r: SoftirqSample, e: Episode) -> bool:
    return r.t - r.interval_s < e.end and r.t > e.start


def _median(xs: list[float]) -> float | None:
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def net_rx_facts(rows: list[SoftirqSample], cpu: int, eps: list[Episode],
                 all_soft: list[Episode]) -> dict[str, Fact]:
    """NET_RX per second on `cpu`: its highest reading during its soft episodes (a reading
    covers a few seconds: the one most inside an episode says the most), its median reading
    before them (outside any soft episode), and the other CPUs' median in that same reading;
    `net_rx_raised` when the first stands out. Empty: not measured."""
    during = [(x, r) for r in rows if any(_overlaps(r, e) for e in eps)
              for x in [_per_s(r, cpu)] if x is not None]
    if not during:
        return {}
    rate, peak = max(during, key=lambda d: d[0])
    first = min(e.start for e in eps)
    base = _median([x for r in rows if r.t <= first
                    and not any(_overlaps(r, e) for e in all_soft)
                    for x in [_per_s(r, cpu)] if x is not None])
    other = _median([x for c in peak.net_rx if c != cpu
                     for x in [_per_s(peak, c)] if x is not None])
    src = "/proc/softirqs"
    out = {"net_rx_per_s_on_hot_cpu": fact(
        rate, "NET_RX softirqs/s", f"{src}, cpu{cpu}, highest reading in its irq/softirq "
        "episodes")}
    if base is not None:
        out["net_rx_per_s_hot_cpu_before"] = fact(
            base, "NET_RX softirqs/s", f"{src}, cpu{cpu}, median reading before the episodes")
    if other is not None:
        out["net_rx_per_s_other_cpus"] = fact(
            other, "NET_RX softirqs/s", f"{src}, median of the other CPUs, same reading")
    ref = base if base is not None else other
    raised = rate >= NET_RX_MIN_PER_S and (ref is None or rate >= NET_RX_RAISED * ref)
    out["net_rx_raised"] = fact(raised, f"rate >= {NET_RX_RAISED:g}x "
                                + ("its own before" if base is not None else
                                   "the other CPUs" if other is not None else "nothing to "
                                   "compare with"), src)
    return out
