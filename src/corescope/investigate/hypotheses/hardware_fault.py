"""hardware_fault: machine-check, EDAC and APEI errors, and NIC keep-alive or device errors
and resets with no starved core before them."""

from __future__ import annotations

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Hypothesis
from corescope.investigate.hypotheses.common import (
    after_steal,
    cores_seen_before,
    fact,
    real_incidents,
    steal_episodes,
)
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds

NAME = "hardware_fault"
NIC_KINDS = frozenset({"nic_tx_stall", "nic_reset", "nic_keepalive_timeout", "nic_tx_timeout"})


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    st = inv.status("events")
    if st is not None and not st.ok:
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {"events": fact(st.detail, "", "sensors")},
                          "the kernel log")
    hw = [e for e in inv.events if e.kind == "hw_error" and not e.lab]
    nic = [v for v in real_incidents(inv) if v.incident.event.kind in NIC_KINDS]
    unseen = [v for v in nic if not cores_seen_before(inv, v)]
    # a stall after the host took the serving vCPU away is the hypervisor's, not the device's
    stolen = {id(v) for v in after_steal(inv, steal_episodes(inv))}
    unstarved = [v for v in nic if not v.incident.preceding and cores_seen_before(inv, v)
                 and id(v) not in stolen]
    keepalive = [v for v in nic if v.incident.event.kind == "nic_keepalive_timeout"
                 or any(r.kind == "nic_keepalive_timeout" for r in v.incident.related)]
    ev = {"hardware_errors": fact(len(hw), "events", "kernel log (MCE/EDAC/APEI)"),
          "nic_incidents": fact(len(nic), "events", "kernel log"),
          "nic_incidents_without_starved_core": fact(len(unstarved), "events", "correlation")}
    if unseen:
        ev["nic_incidents_without_core_record"] = fact(len(unseen), "events", "coverage")
    if stolen:
        ev["nic_incidents_after_steal"] = fact(len(stolen), "events", "correlation")
    if keepalive:
        ev["keepalive_timeouts"] = fact(len(keepalive), "events", "kernel log")
    if not hw and not unstarved and unseen:
        return Hypothesis(NAME, NOT_MEASURED, 0.2, ev,
                          "per-core samples around the NIC incidents (was a core starved?)")
    if not hw and not unstarved:
        return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                          "hardware error lines, or a NIC reset with no starved core before it",
                          "no hardware errors, and every NIC incident followed a starved core"
                          if nic else "no hardware errors and no NIC incidents")
    starved = max(0, len(nic) - len(unstarved) - len(stolen))
    score = min(1.0, (0.6 if hw else 0.0) + 0.4 * len(unstarved) / max(1, len(nic))
                + (0.1 if keepalive else 0.0))
    if starved >= len(unstarved) and not hw:
        return Hypothesis(NAME, RULED_OUT, round(score / 2, 4), ev,
                          "more NIC incidents without a starved core before them",
                          "most NIC incidents followed a starved core")
    dev = (hw[0] if hw else unstarved[0].incident.event)
    culprit = " ".join(x for x in (dev.driver, dev.device, dev.iface) if x) or None
    return Hypothesis(NAME, SUPPORTED, round(score, 4), ev,
                      "a saturated core before the NIC incidents, or the errors stopping on "
                      "the same hardware",
                      f"{len(hw)} hardware errors, {len(unstarved)} NIC incidents with no "
                      "starved core before them", culprit=culprit)
