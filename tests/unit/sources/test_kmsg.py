"""sources/kmsg*: /dev/kmsg records, saved logs, the reader over a fake descriptor, the clock."""

from __future__ import annotations

import errno

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.sources.kmsg_clock import ClockAnchor, SkewBound, anchor_clock, wall_times
from corescope.sources.kmsg_reader import KmsgReader
from corescope.sources.kmsg_records import parse_kmsg_dump, parse_kmsg_record, unescape
from corescope.sources.kmsg_saved import parse_journal_json, parse_saved_log
from corescope.sources.kmsg_text import parse_dmesg
from support import FIXTURES

FIX = FIXTURES / "events"


def test_record_with_continuation_lines() -> None:
    data = (b"6,207,135748,-;pci 0000:00:00.0: [8086:0d57] type 00 class 0x060000\n"
            b" SUBSYSTEM=pci\n DEVICE=+pci:0000:00:00.0\n")
    rec, diags = parse_kmsg_record(data)
    assert rec is not None and not diags
    assert (rec.level, rec.facility, rec.seq, rec.usec, rec.flags) == (6, 0, 207, 135748, "-")
    assert rec.message == "pci 0000:00:00.0: [8086:0d57] type 00 class 0x060000"
    assert rec.dict_ == {"SUBSYSTEM": "pci", "DEVICE": "+pci:0000:00:00.0"}


def test_user_facility_and_extra_header_fields() -> None:
    # a line written by a root process gets facility user (1): prio 8 + level
    rec, _ = parse_kmsg_record(b"12,353,729220677,-,caller=T1234;hello\n")
    assert rec is not None and (rec.facility, rec.level, rec.flags) == (1, 4, "-")
    assert rec.message == "hello"


def test_unescape_multiline_and_backslash() -> None:
    assert unescape(b"line one\\x0aline two") == "line one\nline two"
    assert unescape(b"tab\\x09x back\\x5cslash") == "tab\tx back\\slash"
    rec, _ = parse_kmsg_record(b"4,10,5,c;INFO: task a:1 blocked\\x0a      Not tainted\n")
    assert rec is not None and rec.message.splitlines()[1].strip() == "Not tainted"


@pytest.mark.parametrize("bad", [b"", b"garbage", b"a,b,c;msg", b"1,2;msg", b"-1,2,3,-;x",
                                 b"\xff\xfe;\xff", b"6,1,2,-;ok\nnot-a-continuation"])
def test_bad_records_give_diagnostics(bad: bytes) -> None:
    rec, diags = parse_kmsg_record(bad)
    assert rec is None or diags or bad.startswith(b"6,1,2")


def test_real_capture_parses_completely() -> None:
    data = (FIX / "kmsg_capture_virtio_vm.bin").read_bytes()
    records, diags = parse_kmsg_dump(data)
    assert not diags
    headers = sum(1 for line in data.split(b"\n") if line and not line.startswith(b" "))
    assert len(records) == headers > 300
    seqs = [r.seq for r in records]
    assert seqs == sorted(seqs)
    with_dict = [r for r in records if r.dict_]
    assert with_dict and all("SUBSYSTEM" in r.dict_ for r in with_dict)
    assert any("\t" in r.message for r in records)  # \x09 unescaped
    assert any("corescope-lab" in r.message for r in records)


def test_dmesg_variants() -> None:
    text = (
        "[    2.514332] ena 0000:00:05.0: Elastic Network Adapter (ENA) v2.8.0g\n"
        "<3>[20111.002311] ena 0000:00:05.0 eth0: Trigger reset is on\n"
        "kern  :err   : [20112.5] x: y\n"
        "[Sun Dec  3 19:01:51 2023] late\n"
        "2023-12-03T19:01:51,123456+00:00 iso line\n"
        "Dec  3 19:01:51 ip-10-0-1-2 kernel: [  812.100000] from kern.log\n"
        "   continuation of kern.log line\n"
    )
    recs, diags = parse_dmesg(text)
    assert not diags
    assert [r.usec for r in recs[:3]] == [2_514_332, 20_111_002_311, 20_112_500_000]
    assert recs[1].level == 3 and recs[2].level == 3
    assert recs[3].wall is not None and recs[3].usec is None
    assert recs[4].wall == pytest.approx(1701630111.123456)
    assert recs[5].usec == 812_100_000
    assert recs[5].message == "from kern.log\ncontinuation of kern.log line"


def test_dmesg_fixture_multiline_record() -> None:
    recs, diags = parse_dmesg((FIX / "dmesg_incidents.txt").read_text())
    assert not diags
    hung = [r for r in recs if r.message.startswith("INFO: task kworker")]
    assert len(hung) == 1 and hung[0].message.endswith("#1")


def test_journal_json() -> None:
    recs, diags = parse_journal_json((FIX / "journal_k.json").read_text())
    assert not diags and len(recs) == 5
    first = recs[0]
    assert first.usec == 20111002311 and first.wall == pytest.approx(1701630111.0024)
    assert first.level == 3 and first.dict_["DEVICE"] == "+pci:0000:00:05.0"
    assert recs[4].message.startswith("usb 1-1: bad descriptor")
    assert "\ufffd" in recs[4].message


def test_journal_pretty_and_broken() -> None:
    text = '[\n{"MESSAGE": "a", "__REALTIME_TIMESTAMP": "1000000"},\n{"MESSAGE": 5}\n]\n{oops\n'
    recs, diags = parse_journal_json(text)
    assert [r.message for r in recs] == ["a"] and recs[0].wall == 1.0
    assert len(diags) == 2


def test_saved_log_autodetect() -> None:
    assert parse_saved_log((FIX / "journal_k.json").read_bytes())[0][0].source == "journal"
    assert parse_saved_log((FIX / "kmsg_capture_virtio_vm.bin").read_bytes())[0][0].source == "kmsg"
    assert parse_saved_log((FIX / "dmesg_incidents.txt").read_bytes())[0][0].source == "dmesg"


class FakeKmsg:
    """A descriptor that answers read(n) like /dev/kmsg: one record per call, EPIPE where the
    kernel overwrote unread records, EAGAIN when nothing is pending."""

    def __init__(self, script: list[bytes | int]) -> None:
        self.script = list(script)
        self.sizes: list[int] = []

    def read(self, n: int) -> bytes:
        self.sizes.append(n)
        if not self.script:
            raise BlockingIOError(errno.EAGAIN, "EAGAIN")
        item = self.script.pop(0)
        if isinstance(item, int):
            raise OSError(item, "fake")
        return item


def rec(seq: int, msg: str = "x") -> bytes:
    return f"6,{seq},{seq * 1000},-;{msg}\n".encode()


def test_reader_counts_lost_records_after_epipe() -> None:
    fake = FakeKmsg([rec(10), rec(11), errno.EPIPE, rec(42), rec(43)])
    reader = KmsgReader(fake.read)
    got = reader.read_available()
    assert [r.seq for r in got] == [10, 11, 42, 43]
    assert reader.epipe_count == 1
    assert reader.lost_records == 30  # 12..41
    assert min(fake.sizes) >= 8192  # the kernel refuses shorter buffers (EINVAL)


def test_reader_counts_gaps_across_batches_and_keeps_going() -> None:
    fake = FakeKmsg([rec(1), rec(2)])
    reader = KmsgReader(fake.read)
    assert len(reader.read_available()) == 2
    assert reader.read_available() == []  # EAGAIN: nothing pending
    fake.script += [errno.EPIPE, errno.EPIPE, rec(7), b"junk", rec(8), rec(10)]
    got = reader.read_available()
    assert [r.seq for r in got] == [7, 8, 10]
    assert reader.lost_records == 4 + 1  # 3..6 and 9
    assert reader.epipe_count == 2
    assert reader.diagnostics  # the junk record


def test_reader_sequence_going_back_is_diagnosed_not_counted() -> None:
    reader = KmsgReader(FakeKmsg([rec(5), rec(3)]).read)
    reader.read_available()
    assert reader.lost_records == 0 and "went back" in reader.diagnostics[0].message


def test_reader_eof_and_other_errors() -> None:
    reader = KmsgReader(FakeKmsg([rec(1), b""]).read)
    assert len(reader.read_available()) == 1 and reader.eof
    reader = KmsgReader(FakeKmsg([errno.EIO]).read)
    assert reader.read_available() == [] and "read failed" in reader.diagnostics[0].message


def test_reader_over_a_real_pipe_descriptor() -> None:
    import os

    r, w = os.pipe()
    try:
        os.write(w, rec(1, "hello"))
        os.close(w)
        w = -1
        reader = KmsgReader(lambda n: os.read(r, n))
        got = reader.read_available()
        assert [x.message for x in got] == ["hello"] and reader.eof
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


def test_anchor_math_and_wall_times() -> None:
    a = ClockAnchor(offset_s=1_700_000_000.0, error_s=0.0, method="monotonic", taken_wall=0)
    assert a.wall_of(2_500_000) == 1_700_000_002.5
    recs, _ = parse_dmesg("[    2.500000] a\n[Sun Dec  3 19:01:51 2023] b\n")
    walls = wall_times(recs, a)
    assert walls[0] == 1_700_000_002.5 and walls[1] == recs[1].wall


def test_anchor_clock_is_consistent_with_monotonic() -> None:
    import time

    a = anchor_clock()
    now_mono = time.clock_gettime(time.CLOCK_MONOTONIC)
    assert abs(a.wall_of(int(now_mono * 1e6)) - time.time()) < 0.5
    assert a.error_s >= 0
    skewed = anchor_clock(skew_s=0.25)
    assert skewed.offset_s == pytest.approx(a.offset_s - 0.25, abs=0.05)


def test_skew_bound_keeps_the_tightest_bound_of_its_window() -> None:
    b = SkewBound(window_s=600)
    assert b.value is None
    # kmsg runs 18 ms behind CLOCK_MONOTONIC; records are read 0.2 ms, 40 ms and 3 ms late
    skew = -0.018
    for stamped, late in ((100.0, 0.0002), (101.0, 0.040), (102.0, 0.003)):
        b.observe(round((stamped + skew) * 1e6), stamped + late)
    assert b.value == pytest.approx(skew - 0.0002, abs=2e-6)
    # never above the true skew, whatever the read latency
    b.observe(round((103.0 + skew) * 1e6), 103.5)
    assert b.value <= skew
    # a quiet log keeps its estimate; past the window the old bound gives way
    b.observe(round((800.0 + skew) * 1e6), 800.0 + 0.005)
    assert b.value == pytest.approx(skew - 0.005, abs=2e-6)
    # the skew drifts (NTP slews CLOCK_MONOTONIC): a newer, higher bound takes over at once
    b.observe(round((801.0 - 0.010) * 1e6), 801.0 + 0.0001)
    assert b.value == pytest.approx(-0.0101, abs=2e-6)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=600))
def test_property_record_parser_never_raises(data: bytes) -> None:
    parse_kmsg_record(data)
    parse_kmsg_dump(data)
    parse_saved_log(data)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=600))
def test_property_text_parsers_never_raise(text: str) -> None:
    parse_dmesg(text)
    parse_journal_json(text)


# Journal values as json.dumps writes them: huge and non-finite numbers included, since
# int(inf) raises OverflowError and 10**400 is a valid JSON integer.
_JSON_NUMBER = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
    st.sampled_from([10**400, -(10**400), 2**63, 2**64, 1e308, -1e308]),
)
_JSON_VALUE = st.one_of(st.none(), st.booleans(), st.text(max_size=20), _JSON_NUMBER,
                        st.lists(_JSON_NUMBER, max_size=8))
_JOURNAL_KEYS = st.sampled_from(["MESSAGE", "__REALTIME_TIMESTAMP",
                                 "_SOURCE_MONOTONIC_TIMESTAMP", "PRIORITY", "SYSLOG_FACILITY",
                                 "_BOOT_ID", "_KERNEL_DEVICE", "_TRANSPORT"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(_JOURNAL_KEYS, _JSON_VALUE, max_size=8), max_size=5))
def test_property_journal_parser_survives_huge_numbers(entries: list[dict]) -> None:
    import json

    text = "\n".join(json.dumps(e) for e in entries)  # inf/nan as Infinity/NaN, as Python reads
    recs, _ = parse_journal_json(text)
    anchor = anchor_clock()
    for r in recs:  # downstream arithmetic (events --file) must not overflow either
        if r.usec is not None:
            anchor.wall_of(r.usec)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.binary(max_size=80), st.sampled_from([errno.EPIPE, errno.EIO])),
                max_size=30))
def test_property_reader_never_raises(script: list[bytes | int]) -> None:
    reader = KmsgReader(FakeKmsg(script).read)
    reader.read_available()
    assert reader.lost_records >= 0
