"""hardware_fault: machine-check, EDAC and APEI errors, and NIC keep-alive or device errors
and resets with no starved core before them."""

from __future__ import annotations

from collections import Counter

from corescope.investigate.diagnosis import NOT_MEASURED, RULED_OUT, SUPPORTED, Declared, Hypothesis
from corescope.investigate.hypotheses.common import (
    NIC_KINDS,
    after_steal,
    benign_incidents,
    cores_seen_before,
    fact,
    real_incidents,
    starvable,
    steal_episodes,
    uncovered_before,
)
from corescope.investigate.model import Investigation
from corescope.model.cgroups import Thresholds
from corescope.model.events import KernelEvent

NAME = "hardware_fault"
DECLARED = Declared(
    primary=True, rank=2, explains=("nic_incidents_without_starved_core", "hardware_errors"),
    advice="drain the node and have the hardware checked ({culprit}); `ethtool -S` and the EDAC "
           "counters say which part")
# NIC faults with no starved core before them must repeat to be the device's: one reset
# that healed itself is what a host pause or a switch flap leaves too
MIN_REPEATS = 2


def evaluate(inv: Investigation, thr: Thresholds) -> Hypothesis:
    st = inv.status("events")
    if st is not None and not st.ok:
        return Hypothesis(NAME, NOT_MEASURED, 0.0, {"events": fact(st.detail, "", "sensors")},
                          "the kernel log")
    hw = [e for e in inv.events if e.kind == "hw_error" and not e.lab]
    nic = [v for v in real_incidents(inv) if v.incident.event.kind in NIC_KINDS]
    unseen = [v for v in nic if starvable(v) and not cores_seen_before(inv, v)]
    # a stall after the host took the serving vCPU away is the hypervisor's, not the device's
    stolen = {id(v) for v in after_steal(inv, steal_episodes(inv))}
    # a keep-alive timeout is the device's own watchdog: no starved core causes one, so a
    # core that happened to be busy before it does not excuse the device
    unstarved = [v for v in nic if id(v) not in stolen
                 and (not starvable(v) or (not v.incident.preceding
                                           and cores_seen_before(inv, v)))]
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
    benign = benign_incidents(inv)
    if benign:
        ev["benign_nic_events"] = fact(len(benign), "events", "kernel log (one self-healed "
                                       "NIC event, no hardware error, no repeat)")
    if not hw and not unstarved and unseen:
        return Hypothesis(NAME, NOT_MEASURED, 0.2, ev,
                          "per-core samples " + uncovered_before(inv, unseen)
                          + " (was a core starved?)")
    if not hw and not unstarved:
        return Hypothesis(NAME, RULED_OUT, 0.0, ev,
                          "hardware error lines, or NIC faults that repeat with no starved "
                          "core before them",
                          "no hardware errors, and every NIC incident followed a starved core"
                          if nic else "no hardware errors; one self-healed NIC event (benign)"
                          if benign else "no hardware errors and no NIC incidents")
    if not hw and len(unstarved) < MIN_REPEATS:
        return Hypothesis(NAME, RULED_OUT, 0.1, ev,
                          "hardware error lines, or the NIC fault repeating with no starved "
                          "core before it",
                          "no hardware errors and one NIC incident without a starved core: "
                          "no repeat, not a fault")
    starved = max(0, len(nic) - len(unstarved) - len(stolen))
    score = min(1.0, (0.6 if hw else 0.0) + 0.4 * len(unstarved) / max(1, len(nic))
                + (0.1 if keepalive else 0.0))
    if starved >= len(unstarved) and not hw:
        return Hypothesis(NAME, RULED_OUT, round(score / 2, 4), ev,
                          "more NIC incidents without a starved core before them",
                          "most NIC incidents followed a starved core")
    culprit = _hardware(hw, [v.incident.event for v in unstarved])
    return Hypothesis(NAME, SUPPORTED, round(score, 4), ev,
                      "a saturated core before the NIC incidents, or the errors stopping on "
                      "the same hardware",
                      f"{len(hw)} hardware errors, {len(unstarved)} NIC incidents with no "
                      "starved core before them", culprit=culprit)


def _hardware(hw: list[KernelEvent], nic: list[KernelEvent]) -> str | None:
    """The parts the errors name: the NIC that failed on its own (driver, device, interface:
    the symptom's hardware comes first), then the part most error lines name (the memory
    controller EDAC names, the CPU a machine check names)."""
    nics: Counter[str] = Counter()
    for e in nic:
        name = " ".join(x for x in (e.driver, e.device, e.iface) if x)
        if name:
            nics[name] += 1
    parts: Counter[str] = Counter()
    for e in hw:
        f = e.fields
        if f.get("mc") is not None:
            parts[f"memory controller MC{f['mc']}"] += 1
        elif f.get("cpu") is not None:
            parts[f"CPU {f['cpu']} (machine check)"] += 1
        elif f.get("source") == "apei":
            parts["firmware-reported (APEI)"] += 1
    named = sorted(nics, key=lambda k: (-nics[k], k))[:1] \
        + sorted(parts, key=lambda k: (-parts[k], k))[:1]
    return "; ".join(named) or None
