"""`perf script -F` lists that leave header fields out: each layout, captured with real perf
from one perf.data (fixtures README: `fields_*.txt`), reads the same samples and stacks as
the default fields of that recording, with the fields it prints and nothing made up."""

from __future__ import annotations

import pytest

from corescope.sources import folded, perf_layout, perf_script
from corescope.sources.artifacts import perf_detect, perf_profiles
from corescope.sources.perf_import import NO_TIME
from corescope.sources.perf_script import (
    NO_COMM,
    NO_PID,
    Summary,
    parse,
    parse_blocks,
    parse_text,
    summarize_blocks,
)
from support import FIXTURES, run_cli, run_cli_json

FIX = FIXTURES / "profiles"
DEFAULT = (FIX / "fields_default.txt").read_text()
REF, REF_DIAGS = parse_text(DEFAULT)

# fixture: (the -F list, the fields perf_layout settles on)
LAYOUTS = {
    "fields_comm_tid.txt": ("comm,tid,ip,sym", "comm, tid"),
    "fields_none.txt": ("ip,sym", "none"),
    "fields_tid_time.txt": ("tid,time,ip,sym,symoff,dso", "tid, time"),
    "fields_tid_time_ns.txt": ("tid,time,ip,sym --ns", "tid, time"),
    "fields_comm_time.txt": ("comm,time,ip,sym", "comm, time"),
    "fields_comm_period.txt": ("comm,period,ip,sym", "comm, period"),
    "fields_tid_period_event.txt": ("tid,period,event,ip,sym", "tid, period, event"),
    "fields_cpu_time.txt": ("cpu,time,ip,sym,dso", "cpu, time"),
    "fields_event.txt": ("event,ip,sym", "event"),
    "fields_pid_tid_cpu.txt": ("pid,tid,cpu,ip,sym,dso", "pid/tid, cpu"),
    "fields_minus_comm_time.txt": ("-comm,-time", "tid, cpu, period, event"),
    "fields_comm.txt": ("comm,ip,sym", "comm"),
}


def stacks(samples: list) -> list[tuple]:
    """What every layout keeps of a stack: symbols and which frames are the kernel's (the
    dso is printed only when -F asks for it)."""
    return [tuple((f.symbol, f.kernel) for f in s.frames) for s in samples]


def test_the_default_fields_are_the_reference():
    assert REF_DIAGS == [] and len(REF) == 52
    assert all(s.frames for s in REF)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_each_layout_reads_the_default_formats_samples(name: str):
    text = (FIX / name).read_text()
    lay = perf_script.layout_of_text(text)
    assert lay.describe() == LAYOUTS[name][1]
    got, diags = parse_text(text)
    assert diags == []
    assert len(got) == len(REF)
    assert stacks(got) == stacks(REF)
    for s, ref in zip(got, REF, strict=True):
        # each field as the default format reads it when -F printed it, else unknown
        assert s.comm == (ref.comm if lay.comm else NO_COMM)
        assert s.tid == (ref.tid if lay.ids else NO_PID)
        assert s.cpu == (ref.cpu if lay.cpu else None)
        assert s.event == (ref.event if lay.event else "")
        if lay.time:
            assert s.time == pytest.approx(ref.time, abs=1e-6)  # --ns prints 3 more digits
        else:
            assert s.time is None


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_blocks_and_summary_read_each_layout_as_lines_do(name: str):
    text = (FIX / name).read_text()
    want, _ = parse_text(text)
    for size in (1, 97, 4096, 1 << 20):
        blocks = [text[i : i + size] for i in range(0, len(text), size)]
        diags: list = []
        assert list(parse_blocks(blocks, diags)) == want, size
        assert diags == []
        summed = Summary()
        for s in want:
            summed.add(s)
        assert summarize_blocks(blocks) == summed


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_each_layout_is_recognised_as_perf_script(name: str):
    text = (FIX / name).read_text()
    for head in (text, *(text[:n] for n in range(300, 4200, 97))):  # a file's first read
        assert folded.sniff(head) == "perf script", len(head)
        assert perf_detect.sniff(head) == "perf_script", len(head)


def test_headers_that_read_two_ways_follow_the_files_layout():
    """`python 3 ` alone is comm `python 3` or comm `python`, tid 3; the other headers of
    the file settle it, and every header is then read that one way."""
    frame = "\t           140b8 f (/x)\n\n"
    comm_tid = "".join(f"{c} {t} \n{frame}" for c, t in
                       [("python 3", 12), ("swapper", 0), ("Web Content", 4321)])
    got, diags = parse_text(comm_tid)
    assert diags == []
    assert [(s.comm, s.tid) for s in got] == [("python 3", 12), ("swapper", 0),
                                              ("Web Content", 4321)]
    comm_only = "".join(f"{c} \n{frame}" for c in ["python 3", "swapper", "Web Content"])
    got, _ = parse_text(comm_only)
    assert [(s.comm, s.tid) for s in got] == [("python 3", NO_PID), ("swapper", NO_PID),
                                              ("Web Content", NO_PID)]
    # perf right-aligns the tid: `    0 51665.475970: ` is tid 0 at 51665.475970
    tid_time = "    0 51665.475970: \n" + frame + "24821 51665.476000: \n" + frame
    got, diags = parse_text(tid_time)
    assert diags == []
    assert [(s.comm, s.tid, s.time) for s in got] == [
        (NO_COMM, 0, 51665.475970), (NO_COMM, 24821, 51665.476)]


def test_a_lone_number_is_a_tid_or_a_period_by_its_width():
    """perf prints a tid in 5 columns (`%5d`), a period in 10 (`%10`)."""
    frame = "\t           140b8 f (/x)\n\n"
    periods = "python   20408163 \n" + frame + "bash   20408163 \n" + frame
    got, _ = parse_text(periods)
    assert [(s.comm, s.tid) for s in got] == [("python", NO_PID), ("bash", NO_PID)]
    tids = "python 22875 \n" + frame + "swapper     0 \n" + frame
    got, _ = parse_text(tids)
    assert [(s.comm, s.tid) for s in got] == [("python", 22875), ("swapper", 0)]
    assert perf_script.layout_of_text("  20408163 \n" + frame).describe() == "period"
    assert perf_script.layout_of_text("    0 \n" + frame).describe() == "tid"


def test_the_layout_is_settled_once_so_odd_headers_are_noted():
    """A header of another layout in the middle of a file is not read some other way: it is
    noted, and the records around it are read."""
    text = (FIX / "fields_tid_time.txt").read_text()
    recs = text.split("\n\n")
    odd = "swapper     0 [000] 51759.6: cpu-clock: \n\tffffffff821f4dab x ([kernel.kallsyms])"
    mixed = "\n\n".join([*recs[:5], odd, *recs[5:]])
    got, diags = parse_text(mixed)
    assert len(got) == 52
    assert [d.message[:16] for d in diags] == ["unreadable line:"]
    assert list(parse_blocks([mixed[i : i + 500] for i in range(0, len(mixed), 500)])) == got


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_truncated_and_garbled_layouts_are_noted_never_raised(name: str):
    text = (FIX / name).read_text()
    junk = "\x00\xff garbage\n\t\tnot a frame\n    \n[zz] 1.x: \n\tq\n"
    for cut in (0, 1, 17, len(text) // 3, len(text) // 2, len(text) - 2):
        for bad in (text[:cut], text[:cut] + junk + text[cut:], junk + text[cut:]):
            diags: list = []
            lines = list(parse(bad.splitlines(keepends=True), diags))
            assert all(d.line is None or d.line > 0 for d in diags)
            blocks = [bad[i : i + 256] for i in range(0, len(bad), 256)]
            assert list(parse_blocks(blocks, [])) == list(parse_blocks([bad], []))
            summarize_blocks(blocks, [])
            assert len(lines) <= len(REF) + 2


def test_cut_short_layout_says_so():
    text = (FIX / "fields_tid_time.txt").read_text()
    cut = text[: text.index("\n\n", len(text) // 2) - 20]
    got, diags = parse_text(cut)
    assert got and "ended inside a record" in diags[-1].message


def test_untimed_text_is_not_imported_by_analyze_and_says_why():
    p = perf_profiles.parse((FIX / "fields_comm_tid.txt").read_bytes(), "perf_script", "f")
    assert p.extra is None
    assert [d.message for d in p.diagnostics] == [NO_TIME]
    assert "`time` in -F" in NO_TIME and "flame --perf-script" in NO_TIME


def test_timed_layout_is_imported_and_says_what_is_missing():
    p = perf_profiles.parse((FIX / "fields_tid_time.txt").read_bytes(), "perf_script", "f")
    assert p.extra is not None and p.extra_records == 52
    assert perf_profiles.NO_CPU in p.notes
    assert any("left out comm, event" in n for n in p.notes)
    p = perf_profiles.parse((FIX / "fields_cpu_time.txt").read_bytes(), "perf_script", "f")
    assert set(p.extra_cpus) == {0, 1}
    assert perf_profiles.NO_CPU not in p.notes


def test_every_layout_has_its_own_pattern_in_perfs_order():
    assert len(perf_layout.LAYOUTS) == 96
    full = perf_layout.LAYOUTS[0]
    m = full.header.match("Web Content 4321/4322 [003] 123.456789:     250000 cpu-clock:ppp: ")
    assert m is not None and m.groups() == ("Web Content", "4321", "4322", "003",
                                            "123.456789", "250000", "cpu-clock:ppp")
    assert perf_layout.EMPTY.header.match("") and not perf_layout.EMPTY.header.match("x")


def flame_json(*paths: str, extra: tuple[str, ...] = ()) -> dict:
    return run_cli_json("flame", "--perf-script", *paths, "--format", "json", *extra)


def test_flame_reads_every_layout_as_the_default_format():
    """Same samples and functions as the default fields' profile; the processes where comm
    was printed, `[unknown]` where -F left it out; untimed text is read whole."""
    # by samples: the default fields print a period, the others do not
    ref = flame_json(str(FIX / "fields_default.txt"), extra=("--weight", "samples"))
    ref_funcs = {(f["name"], f["self_samples"]) for f in ref["top_functions"]}
    for name in ("fields_comm_tid.txt", "fields_none.txt", "fields_tid_time.txt",
                 "fields_cpu_time.txt"):
        j = flame_json(str(FIX / name), extra=("--weight", "samples"))
        assert j["samples"] == ref["samples"] == 52, name
        assert {(f["name"], f["self_samples"]) for f in j["top_functions"]} == ref_funcs
        if name == "fields_comm_tid.txt":
            assert j["top_processes"] == ref["top_processes"]
            assert j["window"]["start"] is None  # no times: read whole
        else:
            assert [p["comm"] for p in j["top_processes"]] == [NO_COMM]


def test_flame_on_untimed_text_refuses_a_window_and_cpu_leaves_out_unknown_cpus():
    p = run_cli("flame", "--perf-script", str(FIX / "fields_comm_tid.txt"), "--before", "1s")
    assert p.returncode == 2 and "perf script -F without `time`" in p.stderr
    # cpu printed, no time: --cpu selects
    j = flame_json(str(FIX / "fields_pid_tid_cpu.txt"), extra=("--cpu", "1"))
    assert j["samples"] == sum(1 for s in REF if s.cpu == 1) > 0
