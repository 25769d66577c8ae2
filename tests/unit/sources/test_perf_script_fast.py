"""The header-line fast path of the `perf script` parser (`_clean_rows`, used by
`parse_blocks` and by the import's `summarize_blocks`): it must read plain text exactly as the
record-by-record path does, hand everything unusual to that path, and never raise."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.sources import perf_script as ps
from corescope.sources.perf_script import Summary, parse, parse_blocks, summarize_blocks
from support import FIXTURES

FIX = FIXTURES / "profiles"
CLEAN = ["burner_idle.txt", "two_events_default.txt", "inlined.txt", "spin_boot_ring.txt",
         "spin_boot_default.txt", "spin_realtime_ring.txt", "spin_realtime_default.txt"]
# `perf script -F` lists without some header fields (tests/cli/test_perf_script_fields.py)
FIELDS = ["fields_comm_tid.txt", "fields_tid_time.txt", "fields_comm_time.txt",
          "fields_comm_period.txt", "fields_tid_period_event.txt", "fields_cpu_time.txt",
          "fields_event.txt", "fields_pid_tid_cpu.txt", "fields_minus_comm_time.txt",
          "fields_tid_time_ns.txt", "fields_comm.txt"]
CLEAN += FIELDS
UNTIMED = {"fields_comm_tid.txt", "fields_comm_period.txt", "fields_tid_period_event.txt",
           "fields_event.txt", "fields_pid_tid_cpu.txt", "fields_minus_comm_time.txt",
           "fields_comm.txt", "fields_none.txt"}
ALL = [*CLEAN, "garbage.txt", "truncated.txt", "task_events.txt", "nocpu_fields.txt",
       "nocpu_flat_fields.txt", "fields_none.txt"]
TEXTS = {n: (FIX / n).read_text(errors="replace") for n in ALL}


def by_lines(text: str) -> Summary:
    """The reference: the line parser's samples, summed."""
    got = Summary()
    for s in parse(text.splitlines(keepends=True), []):
        got.add(s)
    return got


def careful(blocks: list[str], monkeypatch: pytest.MonkeyPatch, cpu: int | None = None
            ) -> tuple[list, list]:
    """parse_blocks with the fast path switched off: the record-by-record reference."""
    diags: list = []
    with monkeypatch.context() as m:
        m.setattr(ps, "_clean_rows", lambda text, layout=None: None)
        samples = list(parse_blocks(blocks, diags, cpu=cpu))
    return samples, diags


def summed(samples: list) -> Summary:
    got = Summary()
    for s in samples:
        got.add(s)
    return got


def blocks_of(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def notes(diags: list) -> list[tuple[int | None, str]]:
    return [(d.line, d.message) for d in diags]


def whole_part(text: str) -> str:
    """What parse_blocks hands `_records` for a text read as one block."""
    return text[: text.rfind("\n\n")]


@pytest.mark.parametrize("name", CLEAN)
def test_captured_text_takes_the_fast_path(name: str):
    """Both clocks, with and without period, tid-only and pid/tid, offsets, [unknown] and
    inlined frames: all read from the header lines."""
    rows = ps._clean_rows(whole_part(TEXTS[name]), ps.layout_of_text(TEXTS[name]))
    assert rows is not None
    assert len(rows) == len(list(parse_blocks([TEXTS[name]])))


@pytest.mark.parametrize("name", ALL)
def test_fast_path_gives_the_careful_paths_samples(name: str, monkeypatch: pytest.MonkeyPatch):
    for size in (64, 4096, 1 << 20):
        blocks = blocks_of(TEXTS[name], size)
        want, want_diags = careful(blocks, monkeypatch)
        diags: list = []
        assert list(parse_blocks(blocks, diags)) == want
        assert notes(diags) == notes(want_diags)
        for cpu in (0, 1):  # a hint: the careful path may return other CPUs' records
            assert list(parse_blocks(blocks, [], cpu=cpu)) == careful(
                blocks, monkeypatch, cpu)[0], cpu


@pytest.mark.parametrize("name", ALL)
def test_summary_matches_the_line_parser(name: str):
    text = TEXTS[name]
    want = by_lines(text)
    want_notes: list = []
    list(parse_blocks(blocks_of(text, 4096), want_notes))
    for size in (1, 64, 4096, 1 << 20):
        diags: list = []
        got = summarize_blocks(blocks_of(text, size), diags)
        assert got == want, (name, size)
        assert notes(diags) == notes(want_notes), (name, size)
    assert want.samples > 0


def test_comm_with_spaces_and_both_header_shapes():
    text = ("Web Content  4321/4322  [003]  123.456789:     250000 cpu-clock:ppp: \n"
            "\tffffffff81000000 do_idle+0x1a ([kernel.kallsyms])\n"
            "\t    7f00 [unknown] ([unknown])\n\n"
            "kworker/u8:2 99 [001] 1796052831.100000: cpu-clock: \n"
            "\t    1234 main (/usr/bin/x)\n\n"
            "tail record 7 [000] 1.5: sched:sched_switch: prev_comm=a\n"
            "\tffffffff81000001 __schedule ([kernel.kallsyms])\n\n")
    rows = ps._clean_rows(whole_part(text))
    assert rows is not None and [r[0] for r in rows][:2] == ["Web Content", "kworker/u8:2"]
    fast = list(parse_blocks([text]))
    assert [(s.comm, s.pid, s.tid, s.cpu, s.time, s.event) for s in fast] == [
        ("Web Content", 4321, 4322, 3, 123.456789, "cpu-clock:ppp"),
        ("kworker/u8:2", 99, 99, 1, 1796052831.1, "cpu-clock"),
        ("tail record", 7, 7, 0, 1.5, "sched:sched_switch")]
    assert [f.symbol for f in fast[0].frames] == ["do_idle", "[unknown]"]
    assert fast == list(parse(text.splitlines()))


UNUSUAL = {
    "comment": "# captured on: x\n",
    "crlf": "\r",
    "blank_with_spaces": "\t \n",
    "vertical_tab_line": "\t\x0b\n",
    "frame_after_blank": "\n\tffffffff81000000 x ([kernel.kallsyms])\n",
    "two_blank_lines": "\n\n",
    "garbage_line": "not a header at all\n",
}


@pytest.mark.parametrize("what", sorted(UNUSUAL))
def test_unusual_text_goes_the_careful_way_with_the_same_result(
        what: str, monkeypatch: pytest.MonkeyPatch):
    good = TEXTS["burner_idle.txt"]
    recs = good.split("\n\n")
    # put the oddity inside the text, between and within records
    text = "\n\n".join(recs[:3]) + "\n" + UNUSUAL[what] + "\n\n".join(recs[3:])
    assert ps._clean_rows(whole_part(text)) is None
    blocks = blocks_of(text, 700)
    want, want_diags = careful(blocks, monkeypatch)
    diags: list = []
    assert list(parse_blocks(blocks, diags)) == want
    assert notes(diags) == notes(want_diags)
    sdiags: list = []
    assert summarize_blocks(blocks, sdiags) == summed(want)
    assert notes(sdiags) == notes(want_diags)
    if what != "crlf":  # the line parser splits lines at a lone \r too
        assert want == list(parse(text.splitlines(keepends=True)))


def test_huge_numbers_are_noted_not_raised():
    """int() refuses more than sys.get_int_max_str_digits() digits: the careful path notes
    the record, the fast path must not raise on it."""
    good = TEXTS["burner_idle.txt"]
    huge = "x " + "9" * 5000 + " [001] 1.000001: cpu-clock: \n\tffffffff81000000 f ([k])\n\n"
    text = huge + good
    diags: list = []
    got = summarize_blocks([text], diags)
    assert got == by_lines(good)
    assert [d.message for d in diags] == ["unreadable numbers in record header"]
    assert len(list(parse_blocks([text], []))) == got.samples


def test_times_that_overflow_are_left_out_of_the_span():
    text = ("a 1 [000] " + "9" * 400 + ".5: cpu-clock: \n\tffffffff81000000 f ([k])\n\n"
            "a 1 [000] 2.5: cpu-clock: \n\tffffffff81000000 f ([k])\n\n")
    got = summarize_blocks([text])
    assert (got.samples, got.first, got.last) == (2, 2.5, 2.5)
    assert got == by_lines(text)


@pytest.mark.parametrize("junk", [b"\x00\xff\xfe garbage\n\n\n", b"", b"\n\n\n\n",
                                  b"\t\t\n\n", b"a b: c:\n\n", b"#\n#\n"])
def test_garbage_and_truncated_input_never_raises(junk: bytes):
    good = TEXTS["burner_idle.txt"]
    text = junk.decode("utf-8", "replace")
    for cut_at in (0, 17, len(good) // 2, len(good) - 3):
        mixed = good[:cut_at] + text
        diags: list = []
        got = summarize_blocks(blocks_of(mixed, 100), diags)
        assert got == by_lines(mixed)
        assert list(parse_blocks(blocks_of(mixed, 100), [])) == list(
            parse(mixed.splitlines(keepends=True)))


_CH = "ab \t\u00a0\x0b\x1c/:[]0123.-x"
_WS = st.text(alphabet=st.sampled_from(" \t\u00a0\x0b\x1c\u2003"), min_size=0, max_size=3)
_TOK = st.text(alphabet=st.sampled_from(_CH), max_size=8)
# header-shaped lines: comm, pid[/tid], [cpu], time:, period, event:, rest, with any
# whitespace (or none) between the parts and junk inside them
_HEADERISH = st.tuples(_TOK, _WS, st.sampled_from(["12", "-1", "0/0", "12/13", "x"]), _WS,
                       st.sampled_from(["", "[001] ", "[1]"]), _WS,
                       st.sampled_from(["", "1.5: ", "361.911432:", "1.5"]), _WS,
                       st.sampled_from(["", "250000 ", "7"]), _WS,
                       st.sampled_from(["cpu-clock:", "a:b:", ":", "x"]), _WS, _TOK
                       ).map("".join)
_LINE = st.one_of(st.text(alphabet=st.sampled_from(_CH), max_size=40), _HEADERISH)


@settings(max_examples=600, deadline=None)
@given(_LINE)
def test_header_pattern_for_many_lines_reads_one_line_like_header(line: str):
    """_HEADER_LINES is HEADER with `\\s` kept inside the line: same groups on one line."""
    m = ps.HEADER.match(line)
    rows = ps._HEADER_LINES.findall(line)
    if m is None:
        assert not rows or ps._HEADER_LINES.match(line) is None
    else:
        assert rows[0] == tuple("" if g is None else g for g in m.groups())


# default perf script headers, perf's own widths and odd ones: comms of one word or several
# (spaces, digits, colons, brackets), tid or pid/tid, with and without the period
_SEP = st.text(alphabet=st.sampled_from(" \t\u00a0\u2003"), min_size=1, max_size=3)
_DEFAULTISH = st.tuples(
    st.one_of(st.sampled_from(["swapper", "python3", "kworker/0:1", "C2 CompilerThre", "a:",
                               "12", "x 5", "[k]", "Web Content", "ev:", "java 12 ev:"]),
              _TOK),
    _SEP, st.sampled_from(["0", "24410", "-1", "1/2", "24821/24821", "12 ev: 3", "1 [0]"]),
    _SEP, st.sampled_from(["[000]", "[1]", "[x]", ""]), _SEP,
    st.sampled_from(["3561.219312:", "1.5:", "1.5", "2 ev:"]), _SEP,
    st.sampled_from(["1001001 ", "7 ", "", "12 13 "]),
    st.sampled_from(["cpu-clock:", "sched:sched_switch:", "a:b:", ":", "x", "123:"]),
    _WS, st.sampled_from(["", "", " prev_comm=x", ":"])).map("".join)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_DEFAULTISH, _LINE))
def test_default_header_pattern_reads_what_the_generic_one_reads(line: str):
    """Where _DEFAULT_LINES (the fast path for perf's default headers) reads a line,
    _HEADER_LINES reads the same groups from it."""
    fast = ps._DEFAULT_LINES.findall(line)
    if fast:
        assert fast == ps._HEADER_LINES.findall(line)[:1]


def test_default_header_pattern_reads_perf_default_output():
    """Whole blocks of perf's default headers go the fast way, with the generic rows."""
    heads = ["python3 24410 [000]  3561.219312:    1001001 cpu-clock: ",
             "swapper     0 [001]  3561.219418:    1001001 cpu-clock: ",
             "kworker/u4:1 24501/24501 [001] 3561.220406: sched:sched_switch: ",
             "java 12688 [002] 6544038.708352: cpu-clock:"]
    joined = "\n".join(heads)
    assert ps._DEFAULT_LINES.findall(joined) == ps._HEADER_LINES.findall(joined)
    assert len(ps._DEFAULT_LINES.findall(joined)) == len(heads)
    # comms of several words go the fast way too; one with a number for a word does not
    spaced = ["V8 WorkerThread 25607 [000] 1.5: 1 cycles:", "C2 CompilerThre 7/9 [001] 2.0: x:"]
    assert ps._DEFAULT_LINES.findall("\n".join(spaced)) == \
        ps._HEADER_LINES.findall("\n".join(spaced))
    assert [r[0] for r in ps._DEFAULT_LINES.findall("\n".join(spaced))] == \
        ["V8 WorkerThread", "C2 CompilerThre"]
    assert not ps._DEFAULT_LINES.findall("worker 3 1234 [000] 1.5: 1 cycles:")


_FIELD_LINE = st.tuples(
    st.sampled_from(["", "swapper ", "Web Content 2 ", "  ", "x: "]),
    st.sampled_from(["", "    0 ", "24821/24821 ", "12 ", "1/2 "]),
    st.sampled_from(["", "[000] ", "[1]"]), st.sampled_from(["", "51759.574180: ", "1.5:"]),
    st.sampled_from(["", "  20408163 ", "7 "]), st.sampled_from(["", "cpu-clock: ", "a:b:"]),
    _WS, _TOK).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_LINE, _FIELD_LINE), st.sampled_from(ps.perf_layout.LAYOUTS))
def test_each_layouts_pattern_for_many_lines_reads_one_line_alike(line: str, lay):
    """Every -F layout's many-lines pattern reads a line as its one-line pattern does."""
    m = lay.header.match(line)
    rows = lay.lines.findall(line)
    if m is None:
        assert not rows
    else:
        assert rows == [tuple("" if g is None else g for g in m.groups())]


_JUNK = st.text(alphabet=st.sampled_from("ab\t \n#:[]0123f/.\r\x0b"), max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(ALL).map(TEXTS.get), _JUNK), min_size=1,
                max_size=5),
       st.lists(st.integers(0, 10**6), max_size=6))
def test_fast_path_and_summary_match_the_careful_path_on_mixtures(parts: list[str],
                                                                   points: list[int]):
    text = "\n".join(parts)
    points = sorted({p % (len(text) + 1) for p in points})
    blocks = [text[a:b] for a, b in itertools.pairwise([0, *points, len(text)])]
    with pytest.MonkeyPatch.context() as mp:
        want, want_diags = careful(blocks, mp)
    diags: list = []
    assert list(parse_blocks(blocks, diags)) == want
    assert notes(diags) == notes(want_diags)
    sdiags: list = []
    got = summarize_blocks(blocks, sdiags)
    assert got == summed(want)
    assert notes(sdiags) == notes(want_diags)
    assert got.first is None or math.isfinite(got.first)


@pytest.mark.parametrize("name", [n for n in ALL if n not in UNTIMED])
def test_cpu_and_time_hints_only_leave_out_what_callers_drop(name: str):
    """The hints skip records before their stack is built: what a caller keeps after its
    own filter is the same with and without them."""
    text = TEXTS[name]
    every = list(parse_blocks(blocks_of(text, 4096), []))
    times = sorted(s.time for s in every if s.time is not None)
    assert times
    spans = [(times[0], times[-1] + 1), (times[len(times) // 3], times[2 * len(times) // 3]),
             (times[-1] + 1, times[-1] + 2)]
    for lo, hi in spans:
        for cpu in (None, 0, 1):
            got = list(parse_blocks(blocks_of(text, 4096), [], cpu=cpu, times=(lo, hi)))
            kept = [s for s in got if s.time is not None and lo <= s.time < hi
                    and (cpu is None or s.cpu == cpu)]
            assert kept == [s for s in every if s.time is not None and lo <= s.time < hi
                            and (cpu is None or s.cpu == cpu)], (lo, hi, cpu)
            if name in CLEAN and (cpu is None or all(s.cpu is not None for s in every)):
                # plain text: nothing outside is even built (a sample of no known CPU is
                # kept for every --cpu: the caller's filter drops it)
                assert got == kept
