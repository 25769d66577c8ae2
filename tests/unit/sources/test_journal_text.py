"""`journalctl -o export` and `-o verbose` (real journalctl 252 output, tests/fixtures/artifacts
README): each entry reads as the dict `-o json` gives, so the kernel lines, the restart entries
and the boot time come out of them as out of JSON; damaged input gives diagnostics."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corescope.sources.artifacts import units
from corescope.sources.artifacts.content import module_for, sniff
from corescope.sources.journal_text import text_entries, text_form
from corescope.sources.kmsg_saved import journal_objects, parse_saved_log
from corescope.sources.units import parse_journal_restarts
from support import FIXTURES

ART = FIXTURES / "artifacts"
FORMS = ("export", "verbose")
RCU = "rcu: INFO: rcu_sched self-detected stall on CPU\n\t39-....: (20999 ticks this GP)"


def _hand_export(name: str) -> list[dict[str, str]]:
    """The entries written into the journal (the text fields of a hand-written export)."""
    out = []
    for para in (ART / name).read_text().strip().split("\n\n"):
        out.append(dict(line.split("=", 1) for line in para.splitlines()))
    return out


def _same_as_written(records: list) -> None:  # type: ignore[type-arg]
    """The kernel records are journal_anon_k.export's: message, kernel clock, journald's."""
    want = _hand_export("journal_anon_k.export")
    assert [r.message for r in records] == [e["MESSAGE"] for e in want]
    assert [r.usec for r in records] == [
        int(e["_SOURCE_MONOTONIC_TIMESTAMP"]) if "_SOURCE_MONOTONIC_TIMESTAMP" in e else None
        for e in want]
    assert [r.wall for r in records] == [int(e["__REALTIME_TIMESTAMP"]) / 1e6 for e in want]


@pytest.mark.parametrize("form", FORMS)
def test_every_field_written_is_read_back(form: str) -> None:
    data = (ART / f"journal_all_anon_{form}.txt").read_bytes()
    assert text_form(data) == form
    diags: list = []
    got = list(journal_objects(data, diags))
    want = _hand_export("journal_anon_all.export")
    assert not diags
    assert len(got) == len(want) == 8
    for g, w in zip(got, want, strict=True):
        assert {k: g.get(k) for k in w} == w
        assert g["__CURSOR"].startswith("s=")


@pytest.mark.parametrize("form", FORMS)
def test_kernel_entries_and_boot_time(form: str) -> None:
    data = (ART / f"journal_all_anon_{form}.txt").read_bytes()
    assert sniff(data) == f"journal_{form}"
    mod = module_for(f"journal_{form}")
    assert mod is units
    p = mod.parse(data, f"journal_{form}", "t")
    assert not p.diagnostics
    # _TRANSPORT=kernel entries only: the systemd and kubelet entries are not the kernel's
    _same_as_written(p.kernel)
    assert len(p.boot_times) == 1 and "boot 4f3e9a1c" in p.boot_times[0].how
    assert p.boot_times[0].epoch == pytest.approx(1796072657.160311 - 20111.002311)


@pytest.mark.parametrize("form", FORMS)
def test_events_file_reads_them(form: str) -> None:
    recs, diags = parse_saved_log((ART / f"journal_k_anon_{form}.txt").read_bytes())
    assert not diags
    _same_as_written(recs)
    # the whole journal: only the kernel's entries, the others counted
    recs, diags = parse_saved_log((ART / f"journal_all_anon_{form}.txt").read_bytes())
    _same_as_written(recs)
    assert [d.message for d in diags] == [
        "2 journal entries of other programs than the kernel skipped"]


@pytest.mark.parametrize("form", FORMS)
def test_restart_entries_read_as_from_json(form: str) -> None:
    want, wd = parse_journal_restarts((ART / "journal_restarts_pretty.json").read_text())
    got, gd = parse_journal_restarts((ART / f"journal_restarts_{form}.txt").read_text())
    assert got == want and len(got) == 7
    assert not gd and not wd


def test_export_binary_fields() -> None:
    """A message with a newline, or with bytes that are not UTF-8, is a binary field in the
    export: both are read whole."""
    entries = list(text_entries((ART / "journal_binary_export.txt").read_bytes(), "export"))
    assert [e["MESSAGE"] for e in entries] == [
        RCU, b"bad \x1b[2J bytes \xff\xfe here".decode("utf-8", "replace")]
    assert entries[1]["_SOURCE_MONOTONIC_TIMESTAMP"] == "20112002311"


def test_verbose_continuation_lines_and_blobs() -> None:
    entries = list(text_entries((ART / "journal_binary_verbose.txt").read_bytes(), "verbose"))
    assert entries[0]["MESSAGE"] == RCU
    assert entries[1]["MESSAGE"] == "[22B blob data]"  # verbose does not print the bytes
    assert entries[1]["_SOURCE_MONOTONIC_TIMESTAMP"] == "20112002311"


def test_a_bad_binary_length_skips_its_entry_only() -> None:
    good = (ART / "journal_k_anon_export.txt").read_bytes()
    first, rest = good.split(b"\n\n", 1)
    bad = (b"__CURSOR=s=1;i=1;b=2;m=3;t=4;x=5\n_TRANSPORT=kernel\nMESSAGE\n"
           + struct.pack("<Q", 1 << 40) + b"xyz\n\n")
    diags: list = []
    got = list(text_entries(first + b"\n\n" + bad + rest, "export", diags))
    assert len(got) == 6  # the damaged entry is gone, the rest are read
    assert any("bad length" in d.message for d in diags)
    # cut inside the length: the entry is dropped, with the reason
    diags = []
    got = list(text_entries(first + b"\n\n" + bad[:60], "export", diags))
    assert len(got) == 1 and diags


def test_stray_lines_are_diagnosed() -> None:
    data = (ART / "journal_k_anon_verbose.txt").read_bytes()
    diags: list = []
    got = list(text_entries(b"garbage before\n" + data + b"not a field\n", "verbose", diags))
    assert len(got) == 6
    assert {d.message for d in diags} == {"line before the first entry's header",
                                         "not a journal verbose field"}


def test_plain_text_is_not_taken_for_them() -> None:
    for text in (b"MESSAGE is a word\n", b"[  1.000000] MESSAGE=x\n", b"",
                 (ART / "journal_k_anon_short_unix.txt").read_bytes()):
        assert text_form(text) is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form=st.sampled_from(FORMS), cut=st.integers(0, 3200), junk=st.binary(max_size=40))
def test_total_on_damaged_input(form: str, cut: int, junk: bytes) -> None:
    data = (ART / f"journal_binary_{form}.txt").read_bytes()
    damaged = data[:cut] + junk + data[cut:]
    if text_form(damaged) is None:
        return
    p = units.parse(damaged, f"journal_{form}", "t")
    assert all(isinstance(r.message, str) for r in p.kernel)
