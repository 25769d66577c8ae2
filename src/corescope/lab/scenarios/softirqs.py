"""`date; cat /proc/softirqs` every 5 s (record's --netdev-interval), as a loop on the node
saves it: the kernel's layout (`%12s:` then ` %10u` per CPU under a `CPU%-8d` header), every
softirq row, counters since boot.

NET_RX follows the NIC: a CPU taking queue IRQs runs NET_RX about once per interrupt (the
queue rates of /proc/interrupts), the others a little (RPS, loopback). In a softirq storm the
hot core's NET_RX rises by tens of thousands per second during its episodes: NAPI never
finishes its budget, so net_rx_action runs again and again. No other story touches NET_RX:
a core saturated by a memcg walk or by steal shows its usual rate.
"""

from __future__ import annotations

from pathlib import Path

from corescope.lab.scenarios.census import date_line
from corescope.lab.scenarios.out import write_text
from corescope.lab.scenarios.plan import Plan, rng_for

EVERY_S = 5
NAMES = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED",
         "HRTIMER", "RCU")
# per-CPU rates (/s) of the rows that carry no story, as (low, high) draws
_BASE = {"HI": (0, 0.01), "TIMER": (50, 400), "NET_TX": (1, 30), "BLOCK": (5, 80),
         "IRQ_POLL": (0, 0), "TASKLET": (0.1, 5), "SCHED": (20, 300), "HRTIMER": (0, 2),
         "RCU": (30, 300)}


def net_rx_rates(p: Plan) -> list[float]:
    """Each CPU's usual NET_RX per second: its share of the queue IRQ rates, else a trickle."""
    r = rng_for(p.kind, p.seed, "net_rx")
    rates = [r.uniform(2, 40) for _ in range(p.cpus)]
    for q in range(p.queues):
        q_rate = r.uniform(300, 2500)
        for c in p.queue_cpu[q]:
            rates[c] += q_rate / len(p.queue_cpu[q])
    return rates


def _storm_seconds(p: Plan, cpu: int, a: float, b: float) -> float:
    """Seconds of [a, b) inside a softirq-storm episode on `cpu`."""
    return sum(max(0.0, min(b, e.end) - max(a, e.start)) for e in p.episodes
               if e.cpu == cpu and e.mode == "softirq")


def softirqs_log(p: Plan) -> str:
    r = rng_for(p.kind, p.seed, "softirqs")
    up0 = p.start - p.boot_time
    n = p.cpus
    rates = {name: [r.uniform(*_BASE[name]) for _ in range(n)] for name in _BASE}
    rates["NET_RX"] = net_rx_rates(p)
    storm = r.uniform(30_000, 60_000) if p.kind == "softirq_storm" else 0.0
    acc = {name: [up0 * v * r.uniform(0.8, 1.2) for v in rates[name]] for name in NAMES}
    head = " " * 20 + "".join(f"CPU{c:<8d}" for c in range(n)) + "\n"
    out = []
    for s in range(0, p.duration_s + 1, EVERY_S):
        t = p.start + s
        if s:
            for name in NAMES:
                row = acc[name]
                for c in range(n):
                    row[c] += rates[name][c] * EVERY_S * (0.85 + 0.3 * r.random())
            if storm and p.hot_cpu is not None:
                acc["NET_RX"][p.hot_cpu] += storm * _storm_seconds(p, p.hot_cpu,
                                                                   t - EVERY_S, t)
        out.append(date_line(t + 0.03) + "\n" + head)
        # the kernel's counters are unsigned int: they wrap
        out += [f"{name:>12s}:" + "".join(f" {int(v) % 2**32:10d}" for v in acc[name]) + "\n"
                for name in NAMES]
    return "".join(out)


def write(p: Plan, directory: Path) -> list[Path]:
    if "softirqs" in p.omit:
        return []
    return [write_text(directory / "softirqs.log", softirqs_log(p), mtime=p.end)]
