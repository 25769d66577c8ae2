"""Real-world variants of the accepted artifact formats (tests/fixtures/artifacts, README
there says how each was made): each variant reads as its plain form does, and every parser
stays total on garbage made from them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corescope.analysis.usage import usage_of
from corescope.sources.artifacts import kernel_log, sysstat, units
from corescope.sources.artifacts.content import module_for, sniff
from corescope.sources.kmsg_saved import parse_saved_log
from corescope.sources.kmsg_text import journal_monotonic as kernel_log_monotonic
from corescope.sources.units import parse_journal_restarts
from support import FIXTURES

ART = FIXTURES / "artifacts"



def _bytes(name: str) -> bytes:
    return (ART / name).read_bytes()


def _parse(name: str):  # type: ignore[no-untyped-def]
    data = _bytes(name)
    kind = sniff(data)
    assert kind is not None, name
    mod = module_for(kind)
    assert mod is not None
    return mod.parse(data, kind, name)


def _samples(p) -> list[tuple[float, float, dict[int, tuple[int, ...]]]]:  # type: ignore[no-untyped-def]
    return [(s.t, s.interval_s, {c: tuple(d) for c, d in s.deltas.items()}) for s in p.samples]


# --- mpstat text with other tables ------------------------------------------------------------

def _cpu_tables_only(text: str) -> str:
    """`mpstat -A` text cut down to what `mpstat -P ALL` prints: the CPU %idle tables."""
    out, keep = [], True
    for block in text.split("\n\n"):
        head = block.splitlines()[0] if block.strip() else ""
        keep = block.startswith("Linux ") or (" CPU " in head and "%idle" in head)
        if keep:
            out.append(block)
    return "\n\n".join(out)


def test_mpstat_A_reads_only_the_cpu_tables(utc) -> None:  # type: ignore[no-untyped-def]
    """`mpstat -A` prints NODE, intr/s and per-interrupt tables in the CPU table's layout:
    their rows (NODE 0, the softirq table's 10 columns) must not pass for CPU rows (the
    softirq table is read on its own: tests/unit/sources/test_mpstat_softirqs.py)."""
    text = _bytes("mpstat_A.txt").decode()
    assert "NODE" in text and "intr/s" in text and "NET_RX/s" in text
    a = _parse("mpstat_A.txt")
    assert a.kind == "mpstat_text"
    assert not a.diagnostics
    plain = sysstat.parse(_cpu_tables_only(text).encode(), "mpstat_text", "plain")
    assert len(a.samples) == 2
    assert _samples(a) == _samples(plain)
    # the printed values: 19:13:07 CPU 0 at 92.08 %usr, 4.95 %sys over 1 s
    u = usage_of(0, a.samples[0].deltas[0])
    assert u.pct["usr"] == pytest.approx(92.08, abs=0.6)
    assert u.pct["sys"] == pytest.approx(4.95, abs=0.6)


def test_mpstat_since_boot_report_is_not_an_interval(utc) -> None:  # type: ignore[no-untyped-def]
    p = _parse("mpstat_since_boot.txt")
    assert p.records == 0
    (d,) = p.diagnostics
    assert "since boot" in d.message and "not a per-core sample" in d.message
    # what it says is still told: the busiest CPU first, as printed (100 - %idle - %iowait)
    assert "cpu1 66.2% busy (15.7% sys), cpu0 50.9% busy (6.5% sys)" in d.message


@pytest.mark.parametrize("name,busy", [
    # `mpstat -P ALL -o JSON` (no interval): the averages since boot
    ("mpstat_since_boot.json", "cpu1 38.7% busy (8.2% sys), cpu0 29.4% busy (3.6% sys)"),
    # `mpstat -P ALL -o JSON 1 1`: one second, printed the same way (no interval in JSON)
    ("mpstat_one_report.json", "cpu0 100.0% busy"),
])
def test_mpstat_json_with_one_entry_is_no_per_second_sample(utc, name: str, busy: str  # type: ignore[no-untyped-def]
                                                             ) -> None:
    """mpstat's JSON states no interval: a lone entry was read as a 1 s sample, which turned
    the averages since boot (or a 10 s report) into a second that never happened. It is
    skipped like the text form's since-boot report, with what it says."""
    p = _parse(name)
    assert p.kind == "mpstat_json" and p.records == 0 and len(p.samples) == 0
    (d,) = p.diagnostics
    assert "since boot" in d.message and "not a per-core sample" in d.message
    assert busy in d.message
    # two entries are read as before, the interval from their step
    two = json.loads(_bytes(name))
    stats = two["sysstat"]["hosts"][0]["statistics"]
    ts = stats[0]["timestamp"]
    later = dict(stats[0], timestamp=f"{ts[:-2]}{int(ts[-2:]) + 1:02d}")
    stats.append(later)
    q = sysstat.parse(json.dumps(two).encode(), "mpstat_json", name)
    assert q.records == 2 and not q.diagnostics
    assert [s.interval_s for s in q.samples] == [1.0, 1.0]


def test_mpstat_offline_cpu_is_absent_not_idle(utc) -> None:  # type: ignore[no-untyped-def]
    p = _parse("mpstat_offline.txt")
    assert len(p.samples) == 3
    assert [sorted(s.deltas) for s in p.samples] == [[0, 1], [0], [0, 1]]
    assert not p.diagnostics
    assert any("offline" in n for n in p.notes)


def test_sadf_local_time_with_a_utc_header_equals_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """`sadf -t` prints the node's local time ("utc": 0); a node in UTC says so in its
    header, so the times do not depend on the zone corescope runs in."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        local = _parse("sadf_t.json")
        utc_ = _parse("sadf.json")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert b'"utc": 0' in _bytes("sadf_t.json")
    assert len(local.samples) == 3
    assert _samples(local) == _samples(utc_)


# --- dmesg variants ---------------------------------------------------------------------------

def _events(name: str):  # type: ignore[no-untyped-def]
    recs, diags = parse_saved_log(_bytes(name), name)
    return recs, diags


@pytest.mark.parametrize("name", ["dmesg_d.txt", "dmesg_color.txt"])
def test_dmesg_boot_relative_variants(name: str) -> None:
    ref, _ = _events("dmesg_ref.txt")
    got, diags = _events(name)
    assert not diags
    assert kernel_log.sniff(_bytes(name).decode()) == "kernel_log"
    assert [(r.message, r.usec) for r in got] == [(r.message, r.usec) for r in ref]
    assert len(got) == 18


@pytest.mark.parametrize("name", ["dmesg_xT.txt", "dmesg_x_iso.txt"])
def test_dmesg_decoded_levels_with_wall_clocks(utc, name: str) -> None:  # type: ignore[no-untyped-def]
    """`dmesg -x -T` and `dmesg -x --time-format iso`: the facility/level prefix before a
    wall-clock stamp."""
    ref, _ = _events("dmesg_ref_iso.txt")
    got, diags = _events(name)
    assert not diags
    assert kernel_log.sniff(_bytes(name).decode()) == "kernel_log"
    assert [r.message for r in got] == [r.message for r in ref]
    # -T prints whole seconds
    tol = 1.0 if "xT" in name else 1e-6
    for g, r in zip(got, ref, strict=True):
        assert g.wall == pytest.approx(r.wall, abs=tol)
    # the decoded level and facility: the lab's lines are user.err, drop_caches kern.info
    seen = {(r.facility, r.level) for r in got}
    assert (1, 3) in seen and (1, 6) in seen and (0, 6) in seen


# --- syslog files and journalctl's short formats ----------------------------------------------

def test_kern_log_rfc3339_gives_the_boot_time(utc) -> None:  # type: ignore[no-untyped-def]
    """rsyslog's default file format (RFC 3339 stamps) beside the kernel's own stamp."""
    ref, _ = _events("dmesg_ref_iso.txt")
    for name in ("kern_log_rfc3339.txt", "kern_log_trad.txt"):
        p = _parse(name)
        assert p.kind == "kernel_log"
        assert [r.message for r in p.kernel] == [r.message for r in ref]
        assert len(p.boot_times) == 1, name
        boot = p.boot_times[0].epoch
        # the reference's wall clock is the boot-relative stamp plus the boot time
        for g, r in zip(p.kernel, ref, strict=True):
            assert g.usec is not None
            assert g.usec / 1e6 + boot == pytest.approx(r.wall, abs=1.0)


def test_syslog_file_keeps_only_kernel_lines(utc) -> None:  # type: ignore[no-untyped-def]
    p = _parse("syslog_mixed.txt")
    assert p.kind == "kernel_log"
    ref, _ = _events("dmesg_ref_iso.txt")
    assert [r.message for r in p.kernel] == [r.message for r in ref]
    assert all(r.wall is not None for r in p.kernel)
    assert any("other programs" in d.message for d in p.diagnostics)


def _journal_json_records() -> list:
    recs, _ = parse_saved_log((FIXTURES / "events" / "journal_k.json").read_bytes())
    return recs


@pytest.mark.parametrize("fmt,tol", [
    ("short_iso", 1.0), ("short_iso_precise", 1e-6), ("short_full", 1.0), ("short_unix", 1e-6),
])
def test_journalctl_short_formats_with_dates(utc, fmt: str, tol: float) -> None:  # type: ignore[no-untyped-def]
    """`journalctl -k -o short-*` as journalctl 252 printed them from the journal of
    journal_k.json. The fifth entry has no hostname and no identifier (`unknown:`): in a
    kernel log that is a kernel entry, read with its message as it is."""
    name = f"journal_k_{fmt}.txt"
    p = _parse(name)
    assert p.kind == "kernel_log"
    ref = _journal_json_records()
    timed = [r for r in p.kernel if r.wall is not None]
    assert len(timed) == 5 and not p.diagnostics
    assert [r.message for r in timed] == [r.message for r in ref]
    for g, r in zip(timed, ref, strict=True):
        # short-iso-precise and short-unix print microseconds (journal_k.json holds them)
        assert g.wall == pytest.approx(r.wall, abs=tol)


@pytest.mark.parametrize("fmt,tol", [("short", 1.0), ("short_precise", 1e-6)])
def test_journalctl_short_without_a_year(utc, fmt: str, tol: float) -> None:  # type: ignore[no-untyped-def]
    """syslog's stamp has no year: the latest year that does not put it in the future."""
    p = _parse(f"journal_k_{fmt}.txt")
    ref = _journal_json_records()
    assert [r.message for r in p.kernel] == [r.message for r in ref]
    now = time.time()
    for g, r in zip(p.kernel, ref, strict=True):
        # the year is chosen by the stamp's minute (seconds aside): up to a minute past the rule
        assert g.wall is not None and now - 366 * 86400 < g.wall <= now + 2 * 86400 + 60
        # the same month, day and time of day (to the printed precision)
        assert time.gmtime(g.wall)[1:6] == time.gmtime(r.wall)[1:6]
        assert g.wall % 1 == pytest.approx(r.wall % 1 if tol < 1 else 0.0, abs=1e-6)


def test_journalctl_short_monotonic(utc) -> None:  # type: ignore[no-untyped-def]
    p = _parse("journal_k_short_monotonic.txt")
    ref = _journal_json_records()
    assert len(p.kernel) == 5
    assert [(r.message, r.usec) for r in p.kernel] == [(r.message, r.usec) for r in ref]


SHORT_FORMS = ["short", "short_precise", "short_iso", "short_iso_precise", "short_full",
               "short_monotonic", "short_delta", "short_unix"]
MONO_FORMS = ("short_monotonic", "short_delta")  # the kernel's clock, not journald's
# journal_anon_k.export: the shapes systemd's output_short prints for a kernel entry
ANON = [
    "ena 0000:00:05.0 eth0: TX q 5 is paused for too long (threshold 5000000). Time since "
    "last napi 6104000 usec. napi scheduled: 1",  # `node-7 kernel:`
    "ena 0000:00:05.0 eth0: Trigger reset is on",  # `kernel:` (no _HOSTNAME)
    "ACPI: \\_SB_.PCI0: Device reset completed",  # `kernel: ACPI: ...`: no host `kernel:`
    "watchdog: BUG: soft lockup - CPU#39 stuck for 23s! [kubelet:2817]",  # `node-7 unknown:`
    "usb 1-1: device descriptor read/64, error -71",  # `node-7 unknown[412]:` (SYSLOG_PID)
    "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0",  # `unknown:`
]
ANON_MONO = [20111002311, 20111903001, 20112430022, 20400000000, 20450000000, 20500000000]


@pytest.mark.parametrize("fmt", SHORT_FORMS)
def test_journalctl_kernel_entries_without_hostname_or_identifier(utc, fmt: str) -> None:  # type: ignore[no-untyped-def]
    """Every kernel entry of `journalctl -k -o short*` is read, whatever journalctl printed
    for its host and identifier (`kernel:`, `node-7 unknown[412]:`, `unknown:`), with its
    message as it is (a message starting `ACPI: ` is no `kernel:` host's)."""
    p = _parse(f"journal_k_anon_{fmt}.txt")
    assert p.kind == "kernel_log" and not p.diagnostics
    assert [r.message for r in p.kernel] == ANON
    if fmt in MONO_FORMS:
        assert [r.usec for r in p.kernel] == ANON_MONO
    else:
        precise = fmt in ("short_precise", "short_iso_precise", "short_unix")
        for r, mono in zip(p.kernel, ANON_MONO, strict=True):
            want = 1796052546.158 + mono / 1e6  # the export's realtime
            got = r.wall if fmt not in ("short", "short_precise") else r.wall % 86400
            assert got == pytest.approx(want if fmt not in ("short", "short_precise")
                                        else want % 86400, abs=1e-6 if precise else 1.0)


@pytest.mark.parametrize("fmt", SHORT_FORMS)
def test_journalctl_whole_journal_reads_only_the_kernel(utc, fmt: str) -> None:  # type: ignore[no-untyped-def]
    """`journalctl -o short*` without -k: other programs' lines (`node-7 systemd[1]:`, a
    `kubelet[2817]:` known by its _COMM) are skipped in every form, and the `unknown:` ones,
    which could be anyone's there, are skipped with the reason."""
    p = _parse(f"journal_all_anon_{fmt}.txt")
    assert [r.message for r in p.kernel] == ANON[:3]
    notes = [d.message for d in p.diagnostics]
    assert any(n.startswith("3 lines without an identifier") for n in notes)
    assert any(n.startswith("2 syslog lines of other programs") for n in notes)


def test_dmesg_is_not_taken_for_journal_monotonic() -> None:
    """dmesg's own `[  123.456789] msg` lines keep their text: `ACPI: ...` or `usb 1-1: ...`
    after the stamp is the message, not an identifier."""
    for name in ("dmesg.txt", "dmesg_ref.txt"):
        data = _bytes(name)
        p = _parse(name)
        assert not kernel_log_monotonic(data)
        assert len(p.kernel) == data.decode().count("\n[")  + data.decode().startswith("[")


@pytest.mark.parametrize("name", ["journal_k_pretty.json", "journal_k_sse.json"])
def test_journal_json_forms_give_the_boot_time(name: str) -> None:
    ref = units.parse((FIXTURES / "events" / "journal_k.json").read_bytes(), "journal_json",
                      "ref")
    p = _parse(name)
    assert p.kind == "journal_json"
    assert [(r.message, r.usec, r.wall) for r in p.kernel] == \
        [(r.message, r.usec, r.wall) for r in ref.kernel]
    assert [b.epoch for b in p.boot_times] == pytest.approx([b.epoch for b in ref.boot_times])
    assert p.boot_times


def test_journal_restarts_pretty() -> None:
    plain = (FIXTURES / "zombies" / "tools" / "journal_restarts.json").read_text()
    a, _ = parse_journal_restarts(plain)
    b, diags = parse_journal_restarts(_bytes("journal_restarts_pretty.json"))
    assert not diags
    assert [(e.unit, e.n_restarts, e.t) for e in b] == [(e.unit, e.n_restarts, e.t) for e in a]
    assert len(b) >= 3


# --- garbage made from the variants -----------------------------------------------------------

VARIANTS = sorted(p.name for p in ART.iterdir()
                  if p.is_file() and p.name not in ("README.md", "sar_sa.bin"))


def _total(data: bytes) -> None:
    """Whatever kind the content is taken for, its parser answers (never raises)."""
    kind = sniff(data)
    if kind is None:
        return
    mod = module_for(kind)
    assert mod is not None
    p = mod.parse(data, kind, "fuzz")
    p.span()
    p.cpus()
    assert p.records >= 0
    parse_saved_log(data, "fuzz")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(VARIANTS), cut=st.floats(0, 1), at=st.integers(0, 10**9),
       junk=st.binary(max_size=64))
def test_variants_truncated_and_corrupted(name: str, cut: float, at: int, junk: bytes) -> None:
    data = _bytes(name)
    _total(data[: int(len(data) * cut)])
    i = at % max(1, len(data))
    _total(data[:i] + junk + data[i + 1:])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.sampled_from(VARIANTS), b=st.sampled_from(VARIANTS), cut=st.floats(0, 1))
def test_variants_glued_together(a: str, b: str, cut: float) -> None:
    """Two artifacts in one file (a loop's output appended to another's)."""
    x, y = _bytes(a), _bytes(b)
    _total(x[: int(len(x) * cut)] + y)


_LINE_PARTS = st.sampled_from([
    "Nov 30 18:32:24 ", "2026-11-30T18:32:24.276352+00:00 ", "Sun 2026-11-30 18:32:24 UTC ",
    "1796058254.154347 ", "[10998.275940] ", "[10998.275940 <    0.000011>] ", "vm ", "kernel: ",
    "systemd[1]: ", "user  :err   : ", "<3>", "\x1b[32m", "\x1b[0m", "-- Boot 4f3e --",
    "[Mon Nov 30 18:32:24 2026] ", "data: ", "{", "}", "\"MESSAGE\":", ":", " ", "\t", "9" * 30,
    "Feb 30 25:61:61 ", "2026-13-45T99:99:99+99:99 ", "Xyz 2026-11-30 18:32:24 ??? ",
])


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.lists(_LINE_PARTS, max_size=8).map("".join), max_size=12),
       tail=st.text(max_size=40))
def test_kernel_log_lines_from_stamp_pieces(lines: list[str], tail: str) -> None:
    """Lines built from the stamp forms' pieces, valid or not: a record or a diagnostic."""
    data = ("\n".join(line + tail for line in lines)).encode("utf-8", "replace")
    recs, _ = parse_saved_log(data, "fuzz")
    for r in recs:
        assert r.wall is None or r.wall == r.wall  # not NaN
    _total(data)
    kernel_log.parse(data, "kernel_log", "fuzz")


def test_fixture_readme_names_every_variant() -> None:
    readme = (ART / "README.md").read_text()
    missing = [n for n in VARIANTS if f"`{n}`" not in readme and n not in readme]
    assert not missing, missing


def test_variant_files_are_small() -> None:
    assert all((ART / n).stat().st_size < 64 * 1024 for n in VARIANTS)
    assert Path(ART / "README.md").exists()
    json.loads(_bytes("sadf_t.json"))


# --- sadf -d (CSV) ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,ref", [
    ("sadf_d.csv", "sadf.json"), ("sadf_dh.csv", "sadf_u.json"),
    ("sadf_dU.csv", "sadf_u.json"), ("sadf_d_t.csv", "sadf_u.json"),
])
def test_sadf_csv_equals_sadf_json(utc, name: str, ref: str) -> None:  # type: ignore[no-untyped-def]
    """`sadf -d` (and -dh, -U, -t) of the same sar file as the JSON: the same samples."""
    p = _parse(name)
    assert p.kind == "sadf_csv"
    assert not p.diagnostics
    assert len(p.samples) == 3
    assert _samples(p) == _samples(_parse(ref))


def test_sadf_csv_of_every_activity_reads_the_cpu_table(utc) -> None:  # type: ignore[no-untyped-def]
    text = _bytes("sadf_d_A.csv").decode()
    cpu_only = []
    keep = False
    for line in text.splitlines():
        if line.startswith("#"):
            keep = line.startswith("# hostname;interval;timestamp;CPU;%usr")
        if keep:
            cpu_only.append(line)
    assert len(cpu_only) < len(text.splitlines()) / 3
    p = _parse("sadf_d_A.csv")
    assert p.kind == "sadf_csv" and not p.diagnostics
    ref = sysstat.parse("\n".join(cpu_only).encode(), "sadf_csv", "ref")
    assert len(p.samples) == 3
    assert _samples(p) == _samples(ref)


def test_sadf_csv_all_cpu_only_says_what_is_missing() -> None:
    text = "\n".join(ln for ln in _bytes("sadf_d.csv").decode().splitlines()
                     if ln.startswith("#") or ";-1;" in ln)
    p = sysstat.parse(text.encode(), "sadf_csv", "t")
    assert p.records == 0
    assert any("-P ALL" in d.message for d in p.diagnostics)


def test_mpstat_topology_columns(utc) -> None:  # type: ignore[no-untyped-def]
    """`mpstat -T`: CORE, SOCK and NODE columns after CPU (empty on the `all` row)."""
    lines = []
    for line in _bytes("mpstat_T.txt").decode().splitlines():
        toks = line.split()
        if "CORE" in toks:
            toks = [t for t in toks if t not in ("CORE", "SOCK", "NODE")]
        elif len(toks) == 15:
            toks = toks[:2] + toks[5:]
        lines.append(" ".join(toks) if toks and not line.startswith("Linux") else line)
    plain = sysstat.parse("\n".join(lines).encode(), "mpstat_text", "plain")
    p = _parse("mpstat_T.txt")
    assert p.kind == "mpstat_text" and not p.diagnostics
    assert len(p.samples) == 2
    assert _samples(p) == _samples(plain)
    j = _parse("mpstat_T.json")
    assert j.kind == "mpstat_json" and not j.diagnostics and len(j.samples) == 2


def test_dmesg_delta_stamps_are_named_not_imported() -> None:
    """Deltas alone cannot be placed: the file is recognised and the reason says why and how
    to save it instead."""
    p = _parse("dmesg_delta.txt")
    assert p.kind == "kernel_log"
    assert p.records == 0
    assert "--time-format iso" in p.diagnostics[0].message


def test_dmesg_reltime_is_imported_from_its_minute_lines_saying_the_precision() -> None:
    """`dmesg --time-format reltime` (= -H/-e without a pager): the lines after a minute line
    are placed from it plus the deltas; the lines before the first one have no time; a note
    says the times are exact to the minute only."""
    p = _parse("dmesg_reltime.txt")
    assert p.kind == "kernel_log"
    timed = [r for r in p.kernel if r.wall is not None]
    assert timed and len(timed) < len(p.kernel)
    first = timed[0]
    assert "TX q 5 is paused" in first.message
    lt = time.localtime(first.wall)
    assert (lt.tm_mon, lt.tm_mday, lt.tm_hour, lt.tm_min, lt.tm_sec) == (11, 30, 18, 34, 0)
    assert abs(timed[1].wall - first.wall - 0.001732) < 1e-6
    assert any("60 s" in n for n in p.notes)


def test_perf_reltime_is_named_not_imported() -> None:
    data = (FIXTURES / "profiles" / "variant_reltime.txt").read_bytes()
    assert sniff(data) == "perf_script"
    p = module_for("perf_script").parse(data, "perf_script", "t")  # type: ignore[union-attr]
    assert p.records == 0
    assert "--reltime" in p.diagnostics[0].message
