"""`perf script` output variants (tests/fixtures/profiles/variant_*.txt, all printed from one
`perf record -g` and one `perf record` without -g): each reads as the default output does,
through the careful parser, the block parser, the import's summary and `analyze`'s sniffer."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corescope.sources import folded, perf_script
from corescope.sources.artifacts import perf_detect, perf_profiles
from support import FIXTURES

PROF = FIXTURES / "profiles"
G_VARIANTS = ["variant_default_g.txt", "variant_ns.txt", "variant_period.txt",
              "variant_symoff.txt", "variant_header.txt", "variant_G.txt"]
FLAT = ["variant_no_callchain.txt", "variant_no_callchain_ring.txt"]


def _text(name: str) -> str:
    return (PROF / name).read_text()


def _key(s) -> tuple:  # type: ignore[no-untyped-def]
    # to the microsecond (`--ns` prints nanoseconds, the default microseconds, truncated)
    return (s.comm, s.pid, s.cpu, int(s.time * 1e6 + 1e-3), s.event)


def _blocks(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def test_callchain_variants_agree_with_the_default() -> None:
    ref, diags = perf_script.parse_text(_text("variant_default_g.txt"))
    assert not diags and len(ref) == 20
    for name in G_VARIANTS:
        got, diags = perf_script.parse_text(_text(name))
        assert not diags, (name, diags[:3])
        assert [_key(s) for s in got] == [_key(s) for s in ref], name
        # the leaf (the sampled function) is the same; -G prints only the leaf
        assert [s.frames[0] for s in got] == [s.frames[0] for s in ref], name
        if name != "variant_G.txt":
            assert [s.frames for s in got] == [s.frames for s in ref], name


def test_no_callchain_one_line_per_sample() -> None:
    """`perf record` without -g: one line per sample, comm padded to 16 columns, the frame
    on the header line, no blank lines between samples."""
    for name in FLAT:
        text = _text(name)
        assert text.startswith(" ") and "\n\n" not in text.strip()
        got, diags = perf_script.parse_text(text)
        assert not diags, (name, diags[:3])
        assert len(got) == text.strip().count("\n") + 1 == 15
        assert all(len(s.frames) == 1 for s in got)
        assert {s.comm for s in got} >= {"python"}
        first = text.split("\n", 1)[0]
        assert got[0].frames[0].symbol in first


def test_variants_through_the_block_parser_and_summary() -> None:
    for name in [*G_VARIANTS, *FLAT]:
        text = _text(name)
        ref, _ = perf_script.parse_text(text)
        for size in (64, 1000, 1 << 20):
            diags: list = []
            got = list(perf_script.parse_blocks(_blocks(text, size), diags))
            assert [_key(s) for s in got] == [_key(s) for s in ref], (name, size)
            assert [s.frames for s in got] == [s.frames for s in ref], (name, size)
            summary = perf_script.summarize_blocks(_blocks(text, size), [])
            assert summary.samples == len(ref), (name, size)
            assert summary.cpus == {s.cpu for s in ref}
        assert not diags, (name, diags[:3])


def test_a_long_file_without_blank_lines_is_read_in_pieces() -> None:
    """Megabytes without a blank line (no callchains) are not held whole: the pieces still
    give every sample, with no notes."""
    text = _text("variant_no_callchain.txt") * 3000  # ~6.8 MB, 45000 samples
    diags: list = []
    summary = perf_script.summarize_blocks(_blocks(text, 1 << 20), diags)
    assert summary.samples == 45000
    assert not diags
    pieces = list(perf_script._whole_records(_blocks(text, 1 << 20)))
    assert len(pieces) > 1
    assert max(len(t) for t, _, _ in pieces) < 6 << 20


def test_sniffers_recognise_every_variant() -> None:
    for name in [*G_VARIANTS, *FLAT]:
        text = _text(name)
        assert perf_detect.sniff(text) == "perf_script", name
        assert folded.sniff(text) == "perf script", name
        p = perf_profiles.parse(text.encode(), "perf_script", name)
        assert p.extra_records in (15, 20), name
        assert not p.diagnostics, name


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from([*G_VARIANTS, *FLAT]), cut=st.floats(0, 1),
       at=st.integers(0, 10**9), junk=st.text(max_size=30), size=st.integers(1, 5000))
def test_variants_cut_and_corrupted(name: str, cut: float, at: int, junk: str,
                                    size: int) -> None:
    """Garbage made of the variants: samples or notes, never an exception."""
    text = _text(name)
    cut_text = text[: int(len(text) * cut)]
    i = at % max(1, len(text))
    spliced = text[:i] + junk + text[i + 1:]
    for t in (cut_text, spliced, spliced + _text(FLAT[at % 2])):
        perf_script.parse_text(t)
        list(perf_script.parse_blocks(_blocks(t, size), []))
        perf_script.summarize_blocks(_blocks(t, size), [])
        perf_detect.sniff(t)
        kind = perf_detect.sniff(t)
        if kind:
            perf_profiles.parse(t.encode(), kind, "fuzz")
