"""The block fast path must give exactly the samples of the line parser, however the text is
cut into blocks, on every captured fixture and on fixtures mixed with garbage."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.sources.perf_script import parse, parse_blocks
from support import FIXTURES

FIX = FIXTURES / "profiles"
NAMES = ["burner_idle.txt", "garbage.txt", "inlined.txt", "truncated.txt",
         "two_events_default.txt"]


def by_lines(text: str) -> list:
    return list(parse(text.splitlines(keepends=True), []))


def cut(text: str, points: list[int]) -> list[str]:
    points = sorted({p % (len(text) + 1) for p in points})
    edges = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(edges)]


@pytest.mark.parametrize("name", NAMES)
def test_blocks_match_lines_on_fixtures(name: str):
    text = (FIX / name).read_text(errors="replace")
    want = by_lines(text)
    for size in (1, 7, 64, 4096, 1 << 20):
        blocks = [text[i : i + size] for i in range(0, len(text), size)]
        diags: list = []
        assert list(parse_blocks(blocks, diags)) == want, (name, size)
        if name == "garbage.txt":
            assert diags  # garbage is still reported


_TEXTS = {n: (FIX / n).read_text(errors="replace") for n in NAMES}
_JUNK = st.text(alphabet=st.sampled_from("ab\t \n#:[]0123f/."), max_size=40)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(NAMES).map(_TEXTS.get), _JUNK), min_size=1,
                max_size=6),
       st.lists(st.integers(0, 10**6), max_size=8))
def test_blocks_match_lines_on_mixtures(parts: list[str], points: list[int]):
    text = "\n".join(parts)
    assert list(parse_blocks(cut(text, points), [])) == by_lines(text)


def _notes(diags: list) -> list[tuple[int | None, str]]:
    return [(d.line, d.message) for d in diags]


@pytest.mark.parametrize("name", NAMES)
def test_block_notes_name_the_same_lines_as_the_line_parser(name: str):
    """Issue 12: `flame --perf-script` notes gave line numbers counted from the record, not
    the file."""
    text = (FIX / name).read_text(errors="replace")
    want: list = []
    list(parse(text.splitlines(keepends=True), want))
    for size in (1, 7, 64, 4096, 1 << 20):
        got: list = []
        list(parse_blocks([text[i : i + size] for i in range(0, len(text), size)], got))
        assert _notes(got) == _notes(want), (name, size)


def test_block_note_line_points_at_the_bad_line():
    good = (FIX / "burner_idle.txt").read_text()
    text = good + "this is not a perf script line\n\n" + good
    bad_line = good.count("\n") + 1
    diags: list = []
    list(parse_blocks([text], diags))
    assert [(d.line, d.message[:15]) for d in diags] == [(bad_line, "unreadable line")]
    assert text.splitlines()[bad_line - 1] == "this is not a perf script line"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(NAMES).map(_TEXTS.get), _JUNK), min_size=1,
                max_size=6),
       st.lists(st.integers(0, 10**6), max_size=8))
def test_block_notes_match_lines_on_mixtures(parts: list[str], points: list[int]):
    text = "\n".join(parts)
    want: list = []
    list(parse(text.splitlines(keepends=True), want))
    got: list = []
    list(parse_blocks(cut(text, points), got))
    assert _notes(got) == _notes(want)


@pytest.mark.parametrize("name", [*NAMES, "spin_realtime_ring.txt", "spin_boot_default.txt"])
@pytest.mark.parametrize("cpu", [0, 1, 7])
def test_cpu_hint_skips_only_other_cpus(name: str, cpu: int):
    text = (FIX / name).read_text(errors="replace")
    want = [s for s in by_lines(text) if s.cpu == cpu]
    got = [s for s in parse_blocks([text], [], cpu=cpu) if s.cpu == cpu]
    assert got == want


def test_whitespace_alone_is_no_record() -> None:
    # hypothesis found it: a record of a lone tab (the frame-only `-F ip,sym` layout) became a
    # sample with no frames in the block parser; the line parser reads the line as blank
    for text in ("\t\n\n\t", "\t\n\n\t\n\n \t", " \n\n\t\n"):
        assert list(parse_blocks(cut(text, []), [])) == by_lines(text) == []
