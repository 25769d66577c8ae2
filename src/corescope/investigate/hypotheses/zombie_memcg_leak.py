"""zombie_memcg_leak: dying memcgs pile up, a process walks them on one core in kernel mode,
that core saturates, and the NIC queue it serves stalls. Needs the census; the walker needs
the perf ring (without stacks the leak can still be supported, with a lower score, when the
count is past the threshold and a system-time episode preceded the incidents)."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Hypothesis
from corescope.investigate.hypotheses.common import (
    fact,
    find_walker,
    is_sys_episode,
    preceded,
    real_incidents,
)
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "zombie_memcg_leak"
# a walker whose memcg samples are at least this share of the hot core's kernel time
MIN_WALK_SHARE = 0.2
# below this many dying memcgs a walk over them costs nothing worth a reset
MIN_DYING = 1000


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    z = inv.zombies
    census = z.census if z is not None else None
    if census is None or census.dying is None:
        st = inv.status("memcg_census")
        why = st.detail if st is not None else "no memcg census in the evidence"
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {"memcg_census": fact(why, "", "sensors")},
                          "a memcg census (record's census sensor, or a saved census loop)")
    assert z is not None
    ev = {"dying": fact(census.dying, "memcgs", "memcg census"),
          "live": fact(census.live, "memcgs", "memcg census"),
          "threshold": fact(z.growth.threshold, "memcgs", z.growth.threshold_rule)}
    if z.growth.per_hour is not None:
        ev["growth"] = fact(z.growth.per_hour, "memcgs/hour", f"census ({z.growth.method})")
    incidents = real_incidents(inv)
    hot = [(v, e) for v, e in preceded(inv) if is_sys_episode(e)]
    sys_eps = [e for e in inv.episodes if is_sys_episode(e)]
    ev["incidents"] = fact(len(incidents), "events", "kernel log")
    ev["preceded_by_system_time_core"] = fact(len(hot), "events", "correlation")
    if census.dying < MIN_DYING and not z.growth.crossed:
        return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                          f"{MIN_DYING}+ dying memcgs (now {census.dying})",
                          "too few dying memcgs for their walk to cost anything")
    if not hot and not sys_eps:
        return Hypothesis(NAME, RULED_OUT, 0.1, ev,
                          "a core saturated in system time, before a NIC stall or reset",
                          "dying memcgs, but no core saturated in system time: no harm yet")
    cpu = hot[0][1].cpu if hot else sys_eps[0].cpu
    profiles = [p for p in inv.profiles if p.cpu == cpu]
    walker = find_walker(profiles, cpu)
    stacks_seen = any(p.profile.busy_samples for p in profiles)
    if walker is not None:
        ev["walker_comm"] = fact(walker.comm, "", f"perf ring, cpu{cpu}, kernel-mode samples")
        ev["walker_function"] = fact(walker.function, "", "perf ring")
        ev["walker_share_of_kernel_samples"] = fact(walker.share, "ratio", "perf ring")
        if walker.top_comm and walker.top_comm != walker.comm:
            ev["busiest_process_on_core"] = fact(walker.top_comm, "", "perf ring")
    for f, v in (z.stat_read or {}).items():
        ev[f"stat_read_{f}"] = fact(v.get("median"), "ms", "root memory stat read")
    top = z.suspects[0] if z.suspects and z.suspects[0].score > 0 else None
    if top is not None:
        ev["leaking_source"] = fact(top.name, top.kind, "churn and restarts")
    if stacks_seen and (walker is None or walker.share < MIN_WALK_SHARE):
        share = 0.0 if walker is None else walker.share
        return Hypothesis(NAME, RULED_OUT, 0.15, ev,
                          f"kernel-mode stacks on cpu{cpu} in memcg walk functions "
                          f"(now {share:.0%} of them)",
                          f"cpu{cpu}'s kernel time before the incidents was not a memcg walk")
    if not stacks_seen and not z.growth.crossed:
        return Hypothesis(NAME, NOT_MEASURED, 0.2, ev,
                          "stacks of the hot core (the perf ring) or a dying count past "
                          "the threshold",
                          "no stacks of the hot core and the count is under the threshold")
    dying_part = min(1.0, census.dying / max(1, z.growth.threshold))
    walk_part = walker.share if walker is not None else 0.3
    harm_part = len(hot) / len(incidents) if incidents else 0.5
    score = round(0.35 * dying_part + 0.35 * min(1.0, walk_part / 0.6) + 0.3 * harm_part, 4)
    return Hypothesis(
        NAME, SUPPORTED, score, ev,
        f"stacks on cpu{cpu} outside memcg functions before the incidents, or the dying "
        "count falling (the leak stopped) while the resets go on",
        f"{census.dying} dying memcgs; cpu{cpu} saturated in system time"
        + (f" walking them ({walker.comm} in {walker.function})" if walker else ""),
        culprit=top.name if top is not None else None, hot_cpu=cpu,
        walker=(walker.comm, walker.function) if walker else None)
