"""cpu_contention: runnable tasks waiting for a CPU (run-queue wait from /proc/schedstat)
and CPU pressure stall (PSI). Needs the pressure sensors; the per-core record alone cannot
tell contention from one heavy task."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Declared, Hypothesis
from corescope.investigate.hypotheses.common import fact
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "cpu_contention"
DECLARED = Declared(
    primary=True, rank=4,
    advice="find what oversubscribes the CPUs (run-queue wait per CPU, PSI) and cap or move it")
# CPU PSI "some" avg10 at or above this, or run-queue wait per CPU-second above this share
PSI_SOME = 25.0
WAIT_SHARE = 0.25
# a CPU whose wait is this many times the median CPU's is the contended one
STANDS_OUT = 2.0


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    p = inv.pressure
    if p is None or (p.cpu_some_avg10_max is None and p.runq_wait_share_max is None):
        st = inv.status("pressure")
        why = st.detail if st is not None else \
            "run-queue wait (/proc/schedstat) and CPU PSI were not recorded"
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {"pressure": fact(why, "", "sensors")},
                          "run-queue wait per CPU and CPU PSI (record's pressure sensor, or "
                          "saved /proc/schedstat and /proc/pressure/cpu loops)")
    ev = {}
    if p.cpu_some_avg10_max is not None:
        ev["cpu_psi_some_avg10_max"] = fact(p.cpu_some_avg10_max, "%", "/proc/pressure/cpu")
    if p.runq_wait_share_max is not None:
        ev["runq_wait_share_max"] = fact(p.runq_wait_share_max, "s waiting per CPU-second",
                                         "/proc/schedstat")
        if p.runq_wait_cpu is not None:
            ev["runq_wait_cpu"] = fact(p.runq_wait_cpu, "cpu", "/proc/schedstat")
    psi = (p.cpu_some_avg10_max or 0.0) >= PSI_SOME
    wait = (p.runq_wait_share_max or 0.0) >= WAIT_SHARE
    if not (psi or wait):
        return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                          f"CPU PSI some >= {PSI_SOME:g}% or run-queue wait >= "
                          f"{WAIT_SHARE:g} s per CPU-second",
                          "tasks did not wait for CPUs")
    score = round(min(1.0, 0.5 * psi + 0.5 * wait + 0.1), 4)
    # one CPU is named only when it stands out; machine-wide waiting has no hot core
    med = p.runq_wait_share_median
    if med is not None:
        ev["runq_wait_share_median"] = fact(med, "s waiting per CPU-second", "/proc/schedstat")
    one = p.runq_wait_cpu if wait and med is not None and p.runq_wait_share_max is not None \
        and p.runq_wait_share_max >= STANDS_OUT * max(med, 1e-9) else None
    return Hypothesis(NAME, SUPPORTED, score, ev,
                      "PSI and run-queue wait falling while the symptoms go on",
                      "tasks waited for CPUs"
                      + (f", most on cpu{one}" if one is not None else " on every CPU"
                         if wait and med is not None and med >= WAIT_SHARE else ""),
                      hot_cpu=one)
