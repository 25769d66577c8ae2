"""healthy: saturation in user mode with no kernel events is load, not a fault. A node is
healthy when no core saturated in kernel time, no incident happened and the dying memcgs
are under the threshold."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Declared, Hypothesis
from corescope.investigate.hypotheses.common import fact, real_incidents
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "healthy"
DECLARED = Declared(
    primary=False, rank=2,
    advice="")
# the whole machine this busy (median second, every CPU's non-idle time): saturated, and
# whether that is load or contention takes run-queue wait or CPU PSI to tell
MACHINE_BUSY_PCT = 75.0


def machine_busy_pct(inv: Investigation) -> float | None:
    """The median second's machine-wide busy share (mpstat's `all` row, 100 − idle −
    iowait), or None without per-core samples."""
    if not inv.samples:
        return None
    import numpy as np

    from corescope.analysis.episodes import as_matrix
    from corescope.analysis.usage import mode_pct

    m = as_matrix(inv.samples)
    itv, busy = mode_pct(m.machine_ticks(), "busy")
    busy = busy[itv > 0]
    return float(np.median(busy)) if busy.size else None


def contention_measured(inv: Investigation) -> bool:
    p = inv.pressure
    return p is not None and (p.cpu_some_avg10_max is not None
                              or p.runq_wait_share_max is not None)


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    incidents = real_incidents(inv)
    z = inv.zombies
    crossed = bool(z and z.census and z.growth.crossed)
    hw = [e for e in inv.events if e.kind in ("hw_error", "oom_kill") and not e.lab]
    ev = {"kernel_time_episodes": fact(len(inv.episodes), "episodes", "per-core record"),
          "incidents": fact(len(incidents), "events", "kernel log"),
          "zombie_threshold_crossed": fact(crossed, "", "memcg census")}
    if inv.samples:
        from corescope.analysis.episodes import find_episodes

        loaded = find_episodes(inv.samples, inv.params.threshold_pct,
                               inv.params.min_duration_s, "user")
        ev["user_time_episodes"] = fact(len(loaded), "episodes", "per-core record (load)")
    if incidents or crossed or hw:
        return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                          "no incident and zombies under the threshold",
                          "something is wrong")
    st = inv.status("events")
    if st is not None and not st.ok:
        # no kernel log: a quiet node and an unread one look the same
        return Hypothesis(NAME, NOT_MEASURED, 0.0, ev, "the kernel log of the window",
                          "no kernel-time episode, but the kernel log was not read")
    busy = machine_busy_pct(inv)
    if busy is not None:
        ev["machine_busy_pct_median"] = fact(round(busy, 1), "%", "per-core record (every CPU)")
    if busy is not None and busy >= MACHINE_BUSY_PCT and not contention_measured(inv):
        # every core busy: load a node is sized for, or tasks queueing for CPUs (latency,
        # timeouts). The per-core record cannot tell them apart
        return Hypothesis(NAME, NOT_MEASURED, 0.3, ev,
                          "run-queue wait per CPU or CPU PSI (were tasks waiting for the "
                          "busy CPUs?)",
                          f"every CPU busy (machine median {busy:.0f}%): load or CPU "
                          "contention, and whether tasks waited was not measured")
    if inv.episodes:
        # a core pegged in kernel time that broke nothing and walks no leak (a backup's
        # reads, a burst of page faults): load worth watching, not a fault
        cpus = sorted({e.cpu for e in inv.episodes})
        return Hypothesis(NAME, SUPPORTED, 0.6, ev,
                          "an incident after one of those saturations",
                          f"cpu{', cpu'.join(map(str, cpus[:4]))} saturated in kernel time "
                          f"{len(inv.episodes)} times with no incident: load to watch, "
                          "not a fault")
    return Hypothesis(NAME, SUPPORTED, 1.0, ev,
                      "a core saturating in kernel time, or a NIC/kernel incident",
                      "busy in user space at most: load, not a fault")
