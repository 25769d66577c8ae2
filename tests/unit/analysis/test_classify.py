"""analysis/classify: every kind and format variant of INCIDENT.md, lab marker, totality."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis.classify import classify, classify_record
from corescope.model.events import KINDS, KmsgRecord
from corescope.sources.kmsg_records import parse_kmsg_dump
from corescope.sources.kmsg_saved import parse_journal_json
from corescope.sources.kmsg_text import parse_dmesg
from support import FIXTURES

FIX = FIXTURES / "events"


def _fixture_pairs() -> list[tuple[str, dict]]:
    recs, _ = parse_dmesg((FIX / "dmesg_incidents.txt").read_text())
    expected = json.loads((FIX / "dmesg_incidents.expected.json").read_text())
    assert len(recs) == len(expected)
    return [(r.message, e) for r, e in zip(recs, expected, strict=True)]


@pytest.mark.parametrize(("message", "expected"), _fixture_pairs(),
                         ids=lambda v: v[:50] if isinstance(v, str) else "")
def test_fixture_line(message: str, expected: dict) -> None:
    c = classify(message)
    assert c.kind == expected["kind"]
    assert c.driver == expected["driver"]
    assert c.device == expected["device"]
    assert c.fields == expected["fields"]
    assert c.lab == expected["lab"]


def test_fixture_covers_every_kind() -> None:
    kinds = {e["kind"] for _, e in _fixture_pairs()}
    assert kinds == set(KINDS)


def test_the_incident_line() -> None:
    c = classify("ena 0000:00:05.0 eth0: TX q 5 is paused for too long (threshold 5000000)...")
    assert (c.kind, c.driver, c.device) == ("nic_tx_stall", "ena", "0000:00:05.0")
    assert c.fields["queue"] == 5 and c.fields["threshold_usec"] == 5_000_000
    assert c.fields["iface"] == "eth0"


def test_napi_cpu_when_present() -> None:
    c = classify("ena 0000:00:05.0 eth0: TX q 5 is paused for too long (threshold 5000000). "
                 "Time since last napi 6104000 usec. napi scheduled: 1. napi cpu: 39")
    assert c.fields["napi_cpu"] == 39 and c.fields["napi_scheduled"] == 1


def test_netdev_watchdog_formats_agree_on_queue_and_iface() -> None:
    old = classify("NETDEV WATCHDOG: eth0 (ena): transmit queue 5 timed out")
    mid = classify("NETDEV WATCHDOG: eth0 (ena): transmit queue 5 timed out 5376 ms")
    new = classify("ena 0000:00:05.0 eth0: NETDEV WATCHDOG: CPU: 39: transmit queue 5 timed "
                   "out 5376 ms")
    for c in (old, mid, new):
        assert c.kind == "nic_tx_timeout" and c.fields["queue"] == 5
        assert c.fields["iface"] == "eth0" and c.driver == "ena"
    assert "timeout_ms" not in old.fields and mid.fields["timeout_ms"] == 5376
    assert new.fields["cpu"] == 39


def test_lab_marker_changes_nothing_but_the_flag() -> None:
    line = "ena 0000:00:05.0 eth0: Trigger reset is on"
    real, lab = classify(line), classify(line + " [corescope-lab]")
    assert not real.lab and lab.lab
    assert (real.kind, real.driver, real.device, real.fields) == \
        (lab.kind, lab.driver, lab.device, lab.fields)


def test_device_from_kmsg_dictionary_when_the_text_has_none() -> None:
    c = classify("Detected something odd", {"SUBSYSTEM": "pci", "DEVICE": "+pci:0000:00:03.0"})
    assert c.device == "0000:00:03.0"


def test_real_capture_is_all_kept() -> None:
    recs, _ = parse_kmsg_dump((FIX / "kmsg_capture_virtio_vm.bin").read_bytes())
    events = [classify_record(r, 0.0) for r in recs]
    assert len(events) == len(recs)
    assert all(e.raw == r.message for e, r in zip(events, recs, strict=True))
    # a healthy boot log has no incidents, except the lab lines written on purpose
    incidents = [e for e in events if e.is_incident]
    assert incidents and all(e.lab for e in incidents)


def test_journal_entries_classify_with_device() -> None:
    recs, _ = parse_journal_json((FIX / "journal_k.json").read_text())
    kinds = [classify_record(r, r.wall or 0).kind for r in recs]
    assert kinds == ["nic_tx_stall", "nic_reset", "nic_reset", "soft_lockup", "other"]


def test_stats_dump_after_reset_is_not_an_event() -> None:
    for line in ("ena 0000:00:07.0 eth1: tx_timeout: 0", "ena 0000:00:07.0 eth1: wd_expired: 1"):
        assert classify(line).kind == "other"


def test_huge_numbers_do_not_raise() -> None:
    c = classify("TX q " + "9" * 5000 + " is paused for too long (threshold 1)")
    assert c.kind == "nic_tx_stall" and "queue" not in c.fields


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=400))
def test_property_no_line_crashes_the_classifier(line: str) -> None:
    c = classify(line)
    assert c.kind in KINDS


_fragments = st.sampled_from([
    "ena 0000:00:05.0 eth0: ", "TX q ", "5", " is paused for too long (threshold ", ")",
    "NETDEV WATCHDOG: ", "CPU: ", "transmit queue ", " timed out ", " ms",
    "BUG: soft lockup - CPU#",
    " stuck for ", "s! [", ":", "]", "INFO: task ", " blocked for more than ",
    " seconds.",
    "Out of memory: Killed process ", " (", "EDAC MC0: ", " CE ", "mce: [Hardware Error]: ",
    "Link is ", "Up", "Down", "rcu: INFO: rcu_preempt self-detected stall on CPU", "{ ", "}",
    "corescope-lab", "\x00", "\n", "\ufffd", "9" * 50,
])


@settings(max_examples=1000, deadline=None)
@given(st.lists(_fragments, max_size=25).map("".join))
def test_property_near_miss_lines_never_crash(line: str) -> None:
    c = classify(line, {"DEVICE": line[:20]})
    assert c.kind in KINDS
    ev = classify_record(KmsgRecord(message=line, usec=1, seq=1), 1.0)
    assert ev.raw == line
