"""doctor's live read of the kernel ring joins the lines of one report as the saved-log reader
does: a machine check printed over four records (arch/x86/kernel/cpu/mce/core.c __print_mce,
the format of /dev/kmsg records: each line its own record, one stamp) is one hw_error event
carrying its line count, not four."""

from __future__ import annotations

from corescope.evidence.live import LiveEvidence
from corescope.model.events import KmsgRecord
from corescope.rootfs import Root
from corescope.runner import Runner

_MCE = ("mce: [Hardware Error]: Machine check events logged",
        "mce: [Hardware Error]: CPU 2: Machine Check: 0 Bank 8: 8c00004000010091",
        "mce: [Hardware Error]: TSC 0 ADDR 1a7e4e2c0 MISC 90868002800208c",
        "mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1644321461 SOCKET 0 APIC 4 microcode "
        "2006b06")


def _ring() -> list[KmsgRecord]:
    recs = [KmsgRecord("virtio_net virtio0 eth0: renamed from eth0", 5_000_000, 1, 6, 0)]
    recs += [KmsgRecord(m, 900_000_000 + i, 2 + i, 4, 0) for i, m in enumerate(_MCE)]
    recs.append(KmsgRecord("mce: [Hardware Error]: Machine check events logged",
                           990_000_000, 6, 4, 0))
    return recs


def test_one_machine_check_in_the_ring_is_one_event() -> None:
    live = LiveEvidence(Root(), Runner())
    live.take_ring(_ring(), 0.0)
    evs = live.kernel_events
    hw = [e for e in evs if e.kind == "hw_error"]
    # the report of four lines, and a second machine check 90 s later
    assert [e.fields.get("lines") for e in hw] == [4, 1]
    assert hw[0].fields.get("cpu") == 2 and hw[0].fields.get("bank") == 8
    assert [e.fields for e in evs[2:5]] == [{"part_of": "hw_error"}] * 3
    # every record is still one event (the store's sequence numbers stay whole)
    assert [e.seq for e in evs] == [1, 2, 3, 4, 5, 6]
    # the window doctor asks for gives the same joined events
    t0, t1 = evs[0].time - 1, evs[-1].time + 1
    assert [e.kind for e in live.events(t0, t1) if e.is_incident] == ["hw_error", "hw_error"]


def test_held_records_are_left_out_and_the_rest_still_join() -> None:
    live = LiveEvidence(Root(), Runner())
    live.take_ring(_ring(), 0.0)
    everything = live.kernel_events
    t0, t1 = everything[0].time - 1, everything[-1].time + 1
    got = live.events(t0, t1, held={(1, 5_000_000)})
    assert [e.seq for e in got] == [2, 3, 4, 5, 6]
    assert [e.fields.get("lines") for e in got if e.kind == "hw_error"] == [4, 1]
