"""zombie_memcg_leak: dying memcgs pile up, a process walks them on one core in kernel mode,
that core saturates, and the NIC queue it serves stalls. The count needs the census and the
walker needs the perf ring; either one can carry the claim, at a lower score, when the other
is missing (the stacks show a memcg walk on the saturated core, or the count is past the
threshold and a system-time episode preceded the incidents)."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Declared, Hypothesis
from corescope.investigate.hypotheses.common import (
    Walker,
    candidate_cpus,
    fact,
    find_walker,
    is_sys_episode,
    leak_source_facts,
    preceded_on,
    real_incidents,
    starvable,
)
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "zombie_memcg_leak"
DECLARED = Declared(
    primary=True, rank=0, explains=("preceded_by_system_time_core",), correlated=True, leak=True,
    advice="stop the leak at its source ({culprit}: why does it restart?); the dying memcgs go as "
           "their pages are reclaimed; meanwhile keep the NIC queue IRQs off cpu{cpu} or slow the "
           "walker's stats reads")
# a walker whose memcg samples are at least this share of the hot core's kernel time
MIN_WALK_SHARE = 0.2
# below this many dying memcgs a walk over them costs nothing worth a reset
MIN_DYING = 1000
# the dying count's part of the score when no census was saved (unknown, not zero)
UNCOUNTED = 0.5


def _walker_on(inv: Investigation, cpu: int) -> tuple[Walker | None, bool]:
    profiles = [p for p in inv.profiles + inv.episode_profiles if p.cpu == cpu]
    return find_walker(profiles, cpu), any(p.profile.busy_samples for p in profiles)


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    z = inv.zombies
    census = z.census if z is not None else None
    dying = census.dying if census is not None else None
    counted = dying is not None
    if z is None:
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {},
                          "a memcg census (record's census sensor, or a saved census loop)")
    ev = {}
    if census is not None and dying is not None:
        ev = {"dying": fact(dying, "memcgs", "memcg census"),
              "live": fact(census.live, "memcgs", "memcg census"),
              "threshold": fact(z.growth.threshold, "memcgs", z.growth.threshold_rule)}
        if z.growth.per_hour is not None:
            ev["growth"] = fact(z.growth.per_hour, "memcgs/hour", f"census ({z.growth.method})")
    else:
        st = inv.status("memcg_census")
        ev["memcg_census"] = fact(st.detail if st is not None else
                                  "no memcg census in the evidence", "", "sensors")
    incidents = real_incidents(inv)
    sys_eps = [e for e in inv.episodes if is_sys_episode(e)]
    ev["incidents"] = fact(len(incidents), "events", "kernel log")
    crossed = counted and z.growth.crossed
    if dying is not None and dying < MIN_DYING and not crossed:
        ev["preceded_by_system_time_core"] = fact(0, "events", "correlation")
        return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                          f"{MIN_DYING}+ dying memcgs (now {dying})",
                          "too few dying memcgs for their walk to cost anything")
    # the cores saturated in system time before the incidents: a busy neighbour can precede
    # a stall too, so the one whose stacks walk the memcgs is the one accused
    cands = candidate_cpus(inv, is_sys_episode)
    if not cands and not sys_eps:
        ev["preceded_by_system_time_core"] = fact(0, "events", "correlation")
        if not counted:
            return Hypothesis(NAME, NOT_MEASURED, 0.0, ev,
                              "a memcg census (record's census sensor, or a saved census "
                              "loop)", "no memcg census and no core saturated in system time")
        return Hypothesis(NAME, RULED_OUT, 0.1, ev,
                          "a core saturated in system time, before a NIC stall or reset",
                          "dying memcgs, but no core saturated in system time: no harm yet")
    order = cands or [max(sys_eps, key=lambda e: e.duration_s).cpu]
    looked = [(cpu, *_walker_on(inv, cpu)) for cpu in order]
    cpu, walker, stacks_seen = next(
        (x for x in looked if x[1] is not None and x[1].share >= MIN_WALK_SHARE), looked[0])
    hot = [(v, e) for v, e in preceded_on(inv, cpu) if is_sys_episode(e) and starvable(v)]
    ev["preceded_by_system_time_core"] = fact(len(hot), "events", "correlation")
    if walker is not None:
        ev["walker_comm"] = fact(walker.comm, "", f"perf ring, cpu{cpu}, kernel-mode samples")
        ev["walker_function"] = fact(walker.function, "", "perf ring")
        ev["walker_share_of_kernel_samples"] = fact(walker.share, "ratio", "perf ring")
        if walker.top_comm and walker.top_comm != walker.comm:
            ev["busiest_process_on_core"] = fact(walker.top_comm, "", "perf ring")
    for f, v in (z.stat_read or {}).items():
        ev[f"stat_read_{f}"] = fact(v.get("median"), "ms", "root memory stat read")
    source, facts = leak_source_facts(inv)
    ev |= facts
    walked = walker is not None and walker.share >= MIN_WALK_SHARE
    if stacks_seen and not walked:
        share = 0.0 if walker is None else walker.share
        return Hypothesis(NAME, RULED_OUT, 0.15, ev,
                          f"kernel-mode stacks on cpu{cpu} in memcg walk functions "
                          f"(now {share:.0%} of them)",
                          f"cpu{cpu}'s kernel time before the incidents was not a memcg walk")
    if not stacks_seen and not crossed:
        return Hypothesis(NAME, NOT_MEASURED, 0.2, ev,
                          "stacks of the hot core (the perf ring) or a dying count past "
                          "the threshold",
                          "no stacks of the hot core and "
                          + ("the count is under the threshold" if counted else
                             "no memcg census"))
    dying_part = min(1.0, dying / max(1, z.growth.threshold)) if dying is not None \
        else UNCOUNTED
    walk_part = walker.share if walker is not None else 0.3
    harmed = [v for v in incidents if starvable(v)]
    harm_part = len(hot) / len(harmed) if harmed else 0.5 if not incidents else 0.0
    score = round(0.35 * dying_part + 0.35 * min(1.0, walk_part / 0.6) + 0.3 * harm_part, 4)
    count = f"{dying} dying memcgs" if dying is not None else \
        "dying memcgs not counted (no census)"
    return Hypothesis(
        NAME, SUPPORTED, score, ev,
        f"stacks on cpu{cpu} outside memcg functions before the incidents, or the dying "
        "count falling (the leak stopped) while the resets go on"
        + ("" if counted else "; a census showing few dying memcgs"),
        f"{count}; cpu{cpu} saturated in system time"
        + (f" walking them ({walker.comm} in {walker.function})" if walker else ""),
        culprit=source, hot_cpu=cpu,
        walker=(walker.comm, walker.function) if walker else None)
