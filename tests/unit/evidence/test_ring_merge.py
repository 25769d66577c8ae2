"""doctor's merge of the stored kernel events with the live ring: ring records the store
already holds are left out before they are classified. The events must be exactly those of
classifying the whole ring and dropping what the store holds afterwards (the old path)."""

from __future__ import annotations

from corescope.analysis.classify import classify_record
from corescope.evidence.live import LiveEvidence
from corescope.evidence.merged import MergedEvidence
from corescope.evidence.store import StoreEvidence
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sources.kmsg_clock import anchor_clock
from corescope.sources.kmsg_records import parse_kmsg_dump
from corescope.store import events as store_events
from corescope.store.db import Store
from support import FIXTURES

# a real /dev/kmsg read on a virtio VM (see tests/fixtures/events/README.md)
CAPTURE = FIXTURES / "events" / "kmsg_capture_virtio_vm.bin"
SKEW = 0.25


def test_ring_records_the_store_holds_are_not_classified_and_the_rest_are_the_same(
        tmp_path, monkeypatch):
    records, diags = parse_kmsg_dump(CAPTURE.read_bytes())
    assert not diags and len(records) > 300
    anchor = anchor_clock(skew_s=SKEW)
    # both paths place the records with this one anchor (a new one reads the clocks again)
    monkeypatch.setattr("corescope.sources.kmsg_clock.anchor_clock", lambda skew_s: anchor)
    everything = [classify_record(r, anchor.wall_of(r.usec)) for r in records]
    # a recorder stored the older two thirds of the ring, and one line the ring still holds
    # further on, under the same boot; the rest only the ring holds
    cut = 2 * len(everything) // 3
    held = [*everything[:cut], everything[cut + 10]]
    store = Store.open(tmp_path / "s")
    store_events.insert_events(store, held, boot_id="boot-a")
    live = LiveEvidence(Root(), Runner())
    live.take_ring(records, SKEW)
    merged = MergedEvidence(StoreEvidence(store), live)
    t0, t1 = everything[0].time - 1, everything[-1].time + 1
    stored = store_events.read_events(store, t0, t1)
    seen = {(e.seq, e.mono_usec) for e in stored if e.seq is not None}
    want = sorted(stored + [e for e in everything if (e.seq, e.mono_usec) not in seen],
                  key=lambda e: e.time)
    classified = []
    real = classify_record
    monkeypatch.setattr("corescope.analysis.classify.classify_record",
                        lambda r, w: (classified.append(r.seq), real(r, w))[1])
    got = merged.events(t0, t1)
    assert got == want
    # only the records the store lacks were classified
    assert sorted(classified) == sorted(r.seq for r in records if (r.seq, r.usec) not in seen)
    assert len(classified) == len(records) - len(held)
    # a window that cuts the ring: the same as the old path too
    mid = everything[len(everything) // 2].time
    stored = store_events.read_events(store, mid, t1)
    seen = {(e.seq, e.mono_usec) for e in stored if e.seq is not None}
    assert merged.events(mid, t1) == sorted(
        stored + [e for e in everything if mid <= e.time <= t1
                  and (e.seq, e.mono_usec) not in seen], key=lambda e: e.time)
    # and the live evidence alone still gives every record, classified once
    assert live.kernel_events == everything
    assert live.coverage().events is not None
    assert (live.coverage().events.start, live.coverage().events.end) == \
        (everything[0].time, everything[-1].time)
    merged.close()
