"""crash_loop: a unit or container restarting over and over, reported on its own even when it
leaks nothing (it is what leaked the memcgs in the incident)."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Declared, Hypothesis
from corescope.investigate.hypotheses.common import fact
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "crash_loop"
DECLARED = Declared(
    primary=False, rank=1,
    advice="read why {culprit} exits (journalctl -u, crictl logs)")
RESTARTS_PER_HOUR = 6.0  # a restart every 10 minutes or faster
CHURN_PER_HOUR = 60.0  # child cgroups removed under one parent per hour
SURE_PER_HOUR = 60.0
LOOPING = {"auto-restart", "restarting", "CONTAINER_EXITED"}
SOURCES = ("systemd", "crictl", "docker", "restarts", "memcg_census")


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    z = inv.zombies
    if z is None:
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {}, "restart counts or cgroup churn")
    loops = []
    for s in z.suspects:
        e = s.evidence
        rate = e.get("restarts_per_hour") if s.kind != "cgroup-parent" \
            else e.get("removed_per_hour")
        limit = CHURN_PER_HOUR if s.kind == "cgroup-parent" else RESTARTS_PER_HOUR
        if isinstance(rate, int | float) and (rate >= limit or e.get("state") in LOOPING):
            loops.append((s, float(rate)))
    measured = inv.restarts.records or z.churn or any(
        st.ok for st in inv.statuses if st.name in ("systemd", "crictl", "docker"))
    if not loops:
        if not measured:
            return Hypothesis(NAME, NOT_MEASURED, 0.0, {},
                              "restart counts (systemd, crictl, docker) or cgroup churn")
        return Hypothesis(NAME, RULED_OUT, 0.0,
                          {"restarting_sources": fact(0, "units/containers", "restarts")},
                          f"a unit restarting >= {RESTARTS_PER_HOUR:g}/h, or a cgroup parent "
                          f"churning >= {CHURN_PER_HOUR:g}/h", "nothing is crash-looping")
    units = [(s, r) for s, r in loops if s.kind != "cgroup-parent"]
    s, rate = max(units or loops, key=lambda x: x[1])
    basis = str(s.evidence.get("rate_basis", "churn"))
    ev = {"restarting": fact(s.name, s.kind, "restarts and churn"),
          "looping_sources": fact(len(loops), "units/containers/parents", "restarts")}
    # one snapshot of a unit in auto-restart gives its count, not its rate: "0/h" would
    # read as "not restarting"
    known = basis != "none"
    if known:
        ev["rate_per_hour"] = fact(rate, "restarts/h" if s.kind != "cgroup-parent"
                                   else "cgroups removed/h", basis)
    total = s.evidence.get("restarts")
    if isinstance(total, int):
        ev["restarts_so_far"] = fact(total, "restarts", "restart counter")
    how = f"restarting {rate:.0f}/h" if known else \
        f"{s.evidence.get('state', 'looping')}" + (f", {total} restarts so far" if
                                                   isinstance(total, int) else "") + \
        " (rate unknown: one snapshot)"
    # certain from a restart a minute on (the threshold's tenfold); a looping state with no
    # rate is half sure
    return Hypothesis(NAME, SUPPORTED, round(0.5 + 0.5 * min(1.0, rate / SURE_PER_HOUR), 4), ev,
                      "the restarts stopping", f"{s.name} {how}", culprit=s.name)
