"""The frame cache's shortcut for plain frame lines (`_PLAIN_FRAME`: the address and `+0x`
offset read off, the frames looked up by symbol, dso and address half) must read every line
exactly as the careful frame-line reading does: the shortcut is only ever a cache."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.sources import perf_script as ps

# the pieces perf prints, and the awkward ones a hand-edited or odd file holds
ADDRS = ["ffffffff8103ce3b", "7f2839656240", "f3cf1", "0", "FFFFFFFF81000130", "ffff",
         "fffffffff8103ce3", "xyz", ""]
SYMS = ["native_safe_halt", "[unknown]", "std::vector<int>::push_back(int const&)",
        "a->b->c", "net/http.(*Client).Do", "(anonymous namespace)::f", "x+0x12", "+0x12",
        "foo bar", "foo ", " foo", "sym'quoted\"", "a+0x1+0x2", "", "RegExp:[&<>]",
        "f (inlined)", "g+0x1f (inlined)"]
OFFSETS = ["", "+0x71", "+0xAB", "+0x", "+12", "+0x1+0x2"]
DSOS = ["([kernel.kallsyms])", "(/usr/lib/x86_64-linux-gnu/libc.so.6)", "([unknown])",
        "(/memfd:sealed-91173221a7ea (deleted))", "(/opt/My App (x86)/lib.so)", "()",
        "([ena])", "(/lib/modules/6.1/kernel/net/ena.ko)", "(inlined)", "", "(unclosed",
        "([vdso])", "(/tmp/perf-12.map)"]
INDENTS = ["\t", "\t    ", " ", "", "\t\t"]
# a few characters of every kind the patterns treat specially
PIECE = st.text(alphabet="ab(); +0x1f-><>'\"\t\u00a0é:[]/.", max_size=12)


def same(line: str) -> None:
    cache = ps._FrameCache()
    got = cache.line(line)
    want = ps._frame_line(line.strip())
    assert [f.key for f in got] == [f.key for f in want], line
    # and from a cache that has met other lines of the same frame first
    assert [f.key for f in cache.line(line)] == [f.key for f in want], line


@settings(max_examples=400, deadline=None)
@given(indent=st.sampled_from(INDENTS), addr=st.sampled_from(ADDRS),
       sym=st.sampled_from(SYMS) | PIECE, off=st.sampled_from(OFFSETS),
       gap=st.sampled_from([" ", "  ", "\t"]), dso=st.sampled_from(DSOS) | PIECE)
def test_plain_lines_read_as_the_careful_reading(indent: str, addr: str, sym: str, off: str,
                                                  gap: str, dso: str) -> None:
    same(f"{indent}{addr} {sym}{off}{gap}{dso}")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_line_reads_as_the_careful_reading(line: str) -> None:
    same(line)


def test_lines_differing_in_address_and_offset_share_frames() -> None:
    """The point of the shortcut: one parse for many addresses of one function."""
    cache = ps._FrameCache()
    a = cache.line("\tffffffff816ea03d fdget+0x3d ([kernel.kallsyms])")
    b = cache.line("\tffffffff816ea011 fdget+0x11 ([kernel.kallsyms])")
    c = cache.line("\t7f00000000 fdget+0x11 ([kernel.kallsyms])")
    assert a == b and a[0] is b[0] and a[0].kernel
    assert len(cache.plain) == 2 and c[0].key == a[0].key  # the dso says kernel for both


def test_bodies_resolve_as_lines() -> None:
    cache = ps._FrameCache()
    body = ("\tffffffff816ea03d fdget+0x3d ([kernel.kallsyms])\n"
            "\t           f63d3 __libc_pread+0x13 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
            "\t                 srcline.c:12\n"
            "\t    7f283965ea00 a->b (/bin/x)")
    want = [f.key for ln in body.split("\n") for f in ps._frame_line(ln.strip())]
    assert [f.key for f in cache.body(body)] == want
    assert [[f.key for f in s] for s in cache.bodies_of([body, "", body])] == \
        [want, [], want]
