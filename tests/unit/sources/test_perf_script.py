"""The `perf script` parser on text captured on this machine, and on anything at all."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.sources.perf_script import parse, parse_text
from support import FIXTURES

FIX = FIXTURES / "profiles"


def load(name: str):
    return parse_text((FIX / name).read_text())


def test_kernel_user_unknown_and_idle_stacks() -> None:
    samples, diags = load("burner_idle.txt")
    assert diags == []
    assert len(samples) == 274  # grep -c cpu-clock burner_idle.txt
    burner = [s for s in samples if s.comm == "python3"]
    idle = [s for s in samples if s.comm == "swapper"]
    assert len(burner) == 137 and len(idle) == 137
    s = burner[0]
    assert (s.pid, s.tid, s.cpu, s.event) == (6831, 6831, 1, "cpu-clock")
    assert abs(s.time - 361.870649) < 1e-9
    names = [f.symbol for f in s.frames]
    assert names[:2] == ["iov_iter_zero", "read_iter_zero"]  # leaf first
    assert all(f.kernel for f in s.frames[:7])
    libc = s.frames[7]
    assert (libc.symbol, libc.dso, libc.kernel) == (
        "__GI___readv", "/usr/lib/x86_64-linux-gnu/libc.so.6", False)
    unknown = s.frames[-1]
    assert (unknown.symbol, unknown.dso, unknown.kernel) == ("[unknown]", "[unknown]", False)
    assert s.frames[0].label == "iov_iter_zero_[k]"
    assert all(x.cpu == 0 for x in idle)
    assert [f.symbol for f in idle[0].frames][:5] == [
        "pv_native_safe_halt", "default_idle", "default_idle_call", "do_idle",
        "cpu_startup_entry"]


def test_default_fields_two_events_symoff_and_period() -> None:
    samples, diags = load("two_events_default.txt")
    assert diags == []
    events = {s.event for s in samples}
    assert events == {"cpu-clock", "page-faults"}
    assert sum(s.event == "page-faults" for s in samples) == 9
    work = next(s for s in samples if s.comm == "inl" and s.event == "cpu-clock")
    assert work.frames[0].symbol == "work"  # "+0x24" dropped
    assert work.frames[0].dso == "/tmp/pf/inl"
    assert work.tid == 6903 and work.cpu == 1


def test_inlined_frames() -> None:
    samples, diags = load("inlined.txt")
    assert diags == [] and len(samples) == 4
    f = samples[0].frames
    assert [x.symbol for x in f[:3]] == ["mix", "churn", "work"]
    assert f[0].inlined and f[1].inlined and not f[2].inlined
    assert not any(x.kernel for x in f)


def test_truncated_records_are_kept_and_reported() -> None:
    samples, diags = load("truncated.txt")
    assert len(samples) == 6
    assert len(samples[3].frames) == 2  # cut after two frames
    assert len(samples[5].frames) == 3  # the file ends inside this one
    msgs = " ".join(d.message for d in diags)
    assert "truncated" in msgs and "ended inside a record" in msgs


def test_garbage_is_skipped_with_diagnostics() -> None:
    raw = (FIX / "garbage.txt").read_bytes()
    samples, diags = parse_text(raw)
    good = [s for s in samples if s.frames and s.frames[0].symbol in (
        "pv_native_safe_halt", "iov_iter_zero")]
    assert len(samples) == 3 and len(good) == 3
    assert samples[2].frames[0].symbol == "iov_iter_zero"
    assert len(samples[2].frames) == 1  # the unreadable frame lines were dropped
    assert len(diags) >= 3
    assert all(d.line is None or d.line > 0 for d in diags)


def test_streaming_bytes_and_crlf() -> None:
    text = (FIX / "burner_idle.txt").read_text().replace("\n", "\r\n").encode()
    out = list(parse(iter(text.splitlines(keepends=True))))
    assert len(out) == 274


def test_comm_with_spaces_and_tracepoint_event() -> None:
    text = ("Web Content  4242/4243  [003]  100.000001:  1  sched:sched_switch: prev_comm=x\n"
            "\tffffffff81000130 schedule ([kernel.kallsyms])\n\n"
            "kworker/1:1-mm  77/77 [001] 5.5: cpu-clock:ppp: \n"
            "\tffffffffc0a01234 ena_io_poll ([ena])\n\n")
    samples, diags = parse_text(text)
    assert diags == []
    assert samples[0].comm == "Web Content" and samples[0].pid == 4242
    assert samples[0].tid == 4243 and samples[0].event == "sched:sched_switch"
    assert samples[1].comm == "kworker/1:1-mm" and samples[1].event == "cpu-clock:ppp"
    assert samples[1].frames[0].kernel  # a module frame


_LINE = st.one_of(
    st.text(max_size=80),
    st.sampled_from([
        "python3  6831/6831  [001]   361.870649: cpu-clock: ",
        "swapper     0 [000]   322.340652:   20408163 cpu-clock: ",
        "\tffffffff81b6ba40 iov_iter_zero ([kernel.kallsyms])",
        "\t           fddc0 __GI___readv+0x10 (/usr/lib/x86_64-linux-gnu/libc.so.6)",
        "\t               0 [unknown] ([unknown])",
        "\t            11b4 mix (inlined)",
        "  inl.c:3", "", "# comment", "\t", "x 1 [", "a 1/ [9] 1.: e:",
    ]),
    st.text(alphabet=string.printable, max_size=40).map(lambda s: "\t" + s),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, max_size=40))
def test_never_raises_on_any_lines(lines: list[str]) -> None:
    diags: list = []
    for s in parse(lines, diags):
        assert isinstance(s.frames, tuple)
        assert s.comm


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_never_raises_on_bytes(data: bytes) -> None:
    samples, diags = parse_text(data)
    assert isinstance(samples, list) and isinstance(diags, list)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=152570))
def test_any_cut_of_a_real_capture_parses(cut: int) -> None:
    text = (FIX / "burner_idle.txt").read_text()[:cut]
    samples, _ = parse_text(text)
    assert len(samples) <= 274
