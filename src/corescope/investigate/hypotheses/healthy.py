"""healthy: saturation in user mode with no kernel events is load, not a fault. A node is
healthy when no core saturated in kernel time, no incident happened and the dying memcgs
are under the threshold."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Hypothesis
from corescope.investigate.hypotheses.common import fact, real_incidents
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "healthy"


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

        busy = find_episodes(inv.samples, inv.params.threshold_pct, inv.params.min_duration_s,
                             "user")
        ev["user_time_episodes"] = fact(len(busy), "episodes", "per-core record (load)")
    if incidents or crossed or hw:
        return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                          "no incident and zombies under the threshold",
                          "something is wrong")
    st = inv.status("events")
    if st is not None and not st.ok:
        # no kernel log: a quiet node and an unread one look the same
        return Hypothesis(NAME, NOT_MEASURED, 0.0, ev, "the kernel log of the window",
                          "no kernel-time episode, but the kernel log was not read")
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
