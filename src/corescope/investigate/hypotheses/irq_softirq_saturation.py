"""irq_softirq_saturation: a core saturated in irq + softirq time (a NET_RX storm), with the
NIC queue IRQs concentrated on it. What separates it from starvation: the NIC's own stall
line says NAPI ran recently (a short time since the last napi), and the stacks are
ksoftirqd / net_rx_action / NAPI poll, not a process in system time."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Hypothesis
from corescope.investigate.hypotheses.common import (
    NET_RX,
    fact,
    preceded,
    real_incidents,
    soft_share,
)
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "irq_softirq_saturation"


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    if not inv.samples:
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {}, "per-core samples of the window")
    soft_eps = [e for e in inv.context_episodes if soft_share(e) >= 0.5]
    if not soft_eps:
        return Hypothesis(NAME, RULED_OUT, 0.0,
                          {"softirq_episodes": fact(0, "episodes", "per-core record")},
                          "a core saturated mostly in irq + softirq time",
                          "no core saturated in irq/softirq time")
    hot = [(v, e) for v, e in preceded(inv) if soft_share(e) >= 0.5]
    cpu = hot[0][1].cpu if hot else max(soft_eps, key=lambda e: e.duration_s).cpu
    ev = {"softirq_episodes": fact(len(soft_eps), "episodes", "per-core record"),
          "hot_cpu_soft_share": fact(max(soft_share(e) for e in soft_eps if e.cpu == cpu),
                                     "ratio of kernel time", "per-core record")}
    incidents = real_incidents(inv)
    ev["incidents_after_softirq_core"] = fact(len(hot), "events", "correlation")
    queues = [q for v in inv.incidents for q in v.interrupt_map]
    if queues:
        names = {q.name for q in queues}
        on_cpu = {q.name for q in queues if cpu in q.cpus}
        ev["queue_irqs_on_hot_cpu"] = fact(len(on_cpu), f"of {len(names)} queue IRQs",
                                           "interrupt map")
    concentration = len({q.name for q in queues if cpu in q.cpus}) / max(
        1, len({q.name for q in queues})) if queues else 0.0
    net = total = 0
    for p in inv.profiles:
        if p.cpu != cpu:
            continue
        for (comm, _pid, frames), n in p.profile.stacks.items():
            total += n
            if comm.startswith("ksoftirqd") or any(NET_RX.search(f.symbol) for f in frames):
                net += n
    if total:
        ev["net_rx_stack_share"] = fact(net / total, "ratio", f"perf ring, cpu{cpu}")
    napi_recent = 0
    for v in incidents:
        f = v.incident.event.fields
        since, limit = f.get("usecs_since_napi"), f.get("threshold_usec")
        if isinstance(since, int) and isinstance(limit, int) and since < limit:
            napi_recent += 1
    if napi_recent:
        ev["stall_lines_with_recent_napi"] = fact(napi_recent, "events", "NIC stall line")
    net_share = net / total if total else 0.0
    score = round(min(1.0, 0.4 + 0.2 * (len(hot) > 0) + 0.2 * concentration
                      + 0.2 * net_share + 0.1 * (napi_recent > 0)), 4)
    return Hypothesis(
        NAME, SUPPORTED, score, ev,
        f"cpu{cpu}'s kernel time in system mode (a process), or its stacks outside NET_RX",
        f"cpu{cpu} saturated in irq/softirq time"
        + (f" before {len(hot)} NIC incidents" if hot else ""),
        culprit=next((q.iface for v in inv.incidents for q in v.interrupt_map
                      if cpu in q.cpus and q.iface), None),
        hot_cpu=cpu)
