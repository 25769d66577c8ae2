"""`perf script` without a `[cpu]` column or an event name, and with perf's side-band lines
(`--show-task-events`, `--show-mmap-events`, `--show-switch-events`): real output of one
per-command recording (tests/fixtures/profiles/README.md, "No CPU column, side-band lines")."""

from __future__ import annotations

from collections import Counter

import pytest

from corescope.ingest import import_paths
from corescope.sources import perf_script
from corescope.sources.artifacts import perf_detect, perf_profiles
from corescope.store.db import Store
from support import FIXTURES

PROF = FIXTURES / "profiles"
CHAIN = ["nocpu_default.txt", "nocpu_fields.txt", "task_events.txt"]  # one recording, -g
FLAT = ["nocpu_flat.txt", "nocpu_flat_fields.txt", "task_events_flat.txt"]  # without -g
SIDEBAND = ["task_events.txt", "task_events_flat.txt", "task_events_all.txt"]


def _text(name: str) -> str:
    return (PROF / name).read_text()


def _key(s) -> tuple:  # type: ignore[no-untyped-def]
    return (s.comm, s.pid, s.tid, s.cpu, round(s.time, 6))


def _blocks(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _sideband_lines(text: str) -> Counter[str]:
    got: Counter[str] = Counter()
    for line in text.splitlines():
        if "PERF_RECORD_" in line:
            tail = line.split("PERF_RECORD_", 1)[1]
            got["PERF_RECORD_" + tail.split("(")[0].split(":")[0].split(" ")[0]] += 1
    return got


@pytest.mark.parametrize("group", [CHAIN, FLAT], ids=["callchains", "flat"])
def test_without_cpu_or_event_every_sample_is_read_with_the_cpu_unknown(group: list[str]):
    ref, diags = perf_script.parse_text(_text(group[0]))
    assert not diags
    assert len(ref) == (22 if group is CHAIN else 21)
    assert {s.cpu for s in ref} == {None}
    assert {s.event for s in ref} == {"cpu-clock"}
    for name in group:
        got, diags = perf_script.parse_text(_text(name))
        assert [d.message for d in diags if not d.message.endswith(
            perf_script.SIDEBAND_TAIL)] == [], name
        assert [_key(s) for s in got] == [_key(s) for s in ref], name
        # the same functions, whatever the fields (-F ...,sym has no dso)
        assert [[f.symbol for f in s.frames] for s in got] == \
            [[f.symbol for f in s.frames] for s in ref], name
    fields, _ = perf_script.parse_text(_text(group[1]))
    assert {s.event for s in fields} == {""}  # -F without `event`: no name, not a made-up one


@pytest.mark.parametrize("name", SIDEBAND)
def test_side_band_lines_are_skipped_counted_once_and_never_samples(name: str):
    text = _text(name)
    want = _sideband_lines(text)
    assert sum(want.values()) > 20
    by_lines, diags = perf_script.parse_text(text)
    notes = [d.message for d in diags]
    assert notes == [perf_script.sideband_note(want)]
    assert len(by_lines) == text.count("cpu-clock:")
    assert all(s.time and s.time > 1000 for s in by_lines)  # none of the 0.000000 lines
    assert not any(s.event.startswith("PERF_RECORD") for s in by_lines)
    for size in (80, 4096, 1 << 20):
        bdiags: list = []
        got = list(perf_script.parse_blocks(_blocks(text, size), bdiags))
        assert [_key(s) for s in got] == [_key(s) for s in by_lines], size
        assert [s.frames for s in got] == [s.frames for s in by_lines], size
        assert [d.message for d in bdiags] == notes, size
        sdiags: list = []
        summary = perf_script.summarize_blocks(_blocks(text, size), sdiags)
        assert summary.samples == len(by_lines)
        assert summary.first == min(s.time for s in by_lines)
        assert [d.message for d in sdiags] == notes


def test_cpu_wide_side_band_keeps_its_cpus_and_is_not_read_as_reltime():
    """`perf record -a --switch-events`: the threads perf found at start print at 0.000000;
    were they samples, the file would start at 0 and be refused as `--reltime` output."""
    data = (PROF / "task_events_all.txt").read_bytes()
    assert perf_detect.sniff(data.decode()[:65536]) == "perf_script"
    p = perf_profiles.parse(data, "perf_script", "task_events_all.txt")
    assert not p.diagnostics
    assert p.extra_records == 7 and p.extra_cpus == (0, 1)
    assert p.extra.scanned.first > 40000
    assert any(n.endswith(perf_script.SIDEBAND_TAIL) for n in p.notes)
    assert perf_profiles.NO_CPU not in p.notes


@pytest.mark.parametrize("name", CHAIN + FLAT)
def test_analyze_imports_them_and_says_the_cpu_is_unknown(name: str, tmp_path):
    text = _text(name)
    assert perf_detect.sniff(text[:65536]) == "perf_script"
    with Store.open(tmp_path / "st") as store:
        rep = import_paths([PROF / name], store, boot_time=1796052546.158)
    (f,) = rep.files
    assert (f.kind, f.status) == ("perf_script", "imported"), f.reason
    assert f.records == (21 if name in FLAT else 22)
    assert f.cpus == ()
    assert perf_profiles.NO_CPU in (f.reason or "")


def test_no_event_header_does_not_take_a_decimal_address_for_a_period():
    """`-F comm,pid,tid,time,ip,sym` without -g: the frame follows the time; a non-PIE
    binary's address can be all decimal digits."""
    got, diags = perf_script.parse_text("  a.out 12/12 100.5:      400520 main\n")
    assert not diags
    (s,) = got
    assert (s.comm, s.pid, s.time, s.event) == ("a.out", 12, 100.5, "")
    assert [f.symbol for f in s.frames] == ["main"]


def test_only_side_band_lines_is_perf_script_without_samples():
    lines = [ln for ln in _text("task_events.txt").splitlines() if "PERF_RECORD_" in ln]
    data = "\n".join(lines).encode() + b"\n"
    assert perf_detect.sniff(data.decode()) == "perf_script"
    p = perf_profiles.parse(data, "perf_script", "x")
    assert p.extra is None and [d.message for d in p.diagnostics] == ["no samples"]
