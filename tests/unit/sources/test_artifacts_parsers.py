"""Each artifact parser on real captures (tests/fixtures/artifacts) and on the edge cases its
format has: clocks, dates, rollover, rounding, truncation."""

from __future__ import annotations

import calendar
import itertools
import json
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corescope.analysis.usage import usage_of
from corescope.sources.artifacts import (
    census_loop,
    interrupts_loop,
    kernel_log,
    procstat_loop,
    softirqs_loop,
    sysstat,
    units,
)
from corescope.sources.artifacts.dates import parse_clock, parse_date_line, parse_day
from corescope.sources.procstat import delta, parse_proc_stat
from support import FIXTURES

ART = FIXTURES / "artifacts"
BTIME = 1796052546  # the capture VM's boot (its /proc/stat btime)



def utc_epoch(y: int, mo: int, d: int, h: int, mi: int, s: int) -> float:
    return float(calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)))


def parse(mod, name: str, kind: str):  # type: ignore[no-untyped-def]
    return mod.parse((ART / name).read_bytes(), kind, name)


# --- dates -----------------------------------------------------------------------------------

def test_date_lines(utc) -> None:  # type: ignore[no-untyped-def]
    t = utc_epoch(2026, 11, 30, 15, 34, 54)
    for line in ("Mon Nov 30 15:34:54 UTC 2026", "Mon Nov 30 03:34:54 PM UTC 2026",
                 "Mo 30. Nov 15:34:54 UTC 2026", "Mon, 30 Nov 2026 15:34:54 +0000",
                 "2026-11-30T15:34:54+00:00", "2026-11-30 15:34:54+00:00",
                 "2026-11-30T16:34:54+01:00", "Mon Nov 30 10:34:54 EST 2026", str(int(t)),
                 "2026-11-30T15:34:54,000000000+00:00", "Mon Nov 30 15:34:54 2026"):
        assert parse_date_line(line) == pytest.approx(t), line
    for line in ("memory\t4\t50\t1", "11", "cpu  1 2 3", "", "Mon Nov 99 15:34:54 UTC 2026",
                 "12345", "CPU0 CPU1", "Linux 6.18 (vm) 11/30/2026"):
        assert parse_date_line(line) is None, line


def test_local_time_follows_tz(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert parse_date_line("2026-11-30 10:34:54") == utc_epoch(2026, 11, 30, 15, 34, 54)
    finally:
        monkeypatch.undo()
        time.tzset()


def test_clock_and_day() -> None:
    assert parse_clock("03:33:49 PM") == (15, 33, 49)
    assert parse_clock("12:00:01 AM") == (0, 0, 1)
    assert parse_clock("12:00:01 PM") == (12, 0, 1)
    assert parse_clock("15:33:49") == (15, 33, 49)
    assert parse_clock("13:00:00 PM") is None
    assert parse_day("11/30/26") == (2026, 11, 30)
    assert parse_day("11/30/2026") == (2026, 11, 30)
    assert parse_day("30.11.2026") == (2026, 11, 30)
    assert parse_day("2026-11-30") == (2026, 11, 30)
    assert parse_day("30/11/2026") == (2026, 11, 30)  # day first when it cannot be a month
    assert parse_day("02/30/2026") is None


# --- sysstat ---------------------------------------------------------------------------------

def _printed(path, fmt: str) -> dict[float, dict[int, dict[str, float]]]:  # type: ignore[no-untyped-def]
    """What mpstat printed per (time, cpu), read independently of the parser."""
    out: dict[float, dict[int, dict[str, float]]] = {}
    if fmt == "json":
        doc = json.loads(path.read_bytes())
        host = doc["sysstat"]["hosts"][0]
        for i, e in enumerate(host["statistics"]):
            out[i] = {int(r["cpu"]): r for r in e["cpu-load"] if r["cpu"] != "all"}
    return out


@pytest.mark.parametrize("name", ["mpstat12.json", "mpstat12_en.json"])
def test_mpstat_json_ticks_match_the_printed_percentages(name: str, utc) -> None:  # type: ignore[no-untyped-def]
    p = parse(sysstat, name, "mpstat_json")
    printed = _printed(ART / name, "json")
    assert p.diagnostics == []
    assert len(p.samples) == len(printed)
    for i, s in enumerate(p.samples):
        assert s.interval_s == 1.0
        assert sorted(s.deltas) == [0, 1]
        for cpu, d in s.deltas.items():
            assert sum(d[:8]) == 100  # one second at USER_HZ
            u = usage_of(cpu, d)
            for mode in ("usr", "sys", "idle", "iowait", "soft", "nice"):
                assert abs(u.pct[mode] - float(printed[i][cpu][mode])) <= 1.0, (cpu, mode)


def test_mpstat_json_times(utc) -> None:  # type: ignore[no-untyped-def]
    p24 = parse(sysstat, "mpstat12.json", "mpstat_json")  # date 11/30/26, 15:33:44
    assert p24.samples[0].t == utc_epoch(2026, 11, 30, 15, 33, 44)
    p12 = parse(sysstat, "mpstat12_en.json", "mpstat_json")  # 11/30/2026, 03:33:56 PM
    assert p12.samples[0].t == utc_epoch(2026, 11, 30, 15, 33, 56)


@pytest.mark.parametrize("name,first", [
    ("mpstat_12h.txt", (15, 33, 50)), ("mpstat_24h.txt", (15, 33, 47)),
    ("mpstat_iso.txt", (15, 33, 53)), ("mpstat_de.txt", (15, 34, 0))])
def test_mpstat_text(name: str, first: tuple[int, int, int], utc) -> None:  # type: ignore[no-untyped-def]
    p = parse(sysstat, name, "mpstat_text")
    assert p.diagnostics == []
    assert p.samples[0].t == utc_epoch(2026, 11, 30, *first)
    assert all(s.interval_s == 1.0 for s in p.samples)  # from the header line's time
    assert all(sorted(s.deltas) == [0, 1] for s in p.samples)
    assert len(p.samples) == (1 if name == "mpstat_de.txt" else 3)  # "Average" not a sample
    # the German capture: cpu1 at 99,01 % usr, decimal commas
    if name == "mpstat_de.txt":
        assert usage_of(1, p.samples[0].deltas[1]).pct["usr"] == 99.0


def test_text_and_json_of_one_run_agree(utc) -> None:  # type: ignore[no-untyped-def]
    """Same percentages in both layouts give the same ticks."""
    js = parse(sysstat, "mpstat12.json", "mpstat_json")
    lines = ["Linux 6.18.44-fc-v669 (vm) \t11/30/26 \t_x86_64_\t(2 CPU)", ""]
    doc = json.loads((ART / "mpstat12.json").read_bytes())
    prev = "15:33:43"
    cols = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "gnice", "idle")
    for e in doc["sysstat"]["hosts"][0]["statistics"]:
        lines.append(f"{prev}     CPU " + " ".join(f"%{c}" for c in cols))
        for r in e["cpu-load"]:
            lines.append(f"{e['timestamp']}     {r['cpu']:>3} "
                         + " ".join(f"{r[c]:7.2f}" for c in cols))
        lines.append("")
        prev = e["timestamp"]
    txt = sysstat.parse("\n".join(lines).encode(), "mpstat_text", "t")
    assert [s.t for s in txt.samples] == [s.t for s in js.samples]
    assert [dict(s.deltas) for s in txt.samples] == [dict(s.deltas) for s in js.samples]


def test_sysstat11_decimal_comma_and_midnight(utc) -> None:  # type: ignore[no-untyped-def]
    p = parse(sysstat, "mpstat11_de_midnight.json", "mpstat_json")
    assert [s.t for s in p.samples] == [
        utc_epoch(2026, 11, 29, 23, 59, 58), utc_epoch(2026, 11, 29, 23, 59, 59),
        utc_epoch(2026, 11, 30, 0, 0, 0), utc_epoch(2026, 11, 30, 0, 0, 1)]
    assert any("decimal comma" in n for n in p.notes)
    assert [usage_of(1, s.deltas[1]).pct["sys"] for s in p.samples] == [99.0, 100.0, 99.0, 0.0]


def test_text_midnight_rollover(utc) -> None:  # type: ignore[no-untyped-def]
    head = "Linux 5.10.0 (n) \t12/31/2026 \t_x86_64_\t(1 CPU)\n\n"
    hdr = ("{}  CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice"
           "   %idle\n")
    row = ("{}    0   10.00    0.00   90.00    0.00    0.00    0.00    0.00    0.00    0.00"
           "    0.00\n")
    text = head
    for a, b in (("11:59:58 PM", "11:59:59 PM"), ("11:59:59 PM", "12:00:00 AM"),
                 ("12:00:00 AM", "12:00:01 AM")):
        text += hdr.format(a) + row.format(b) + "\n"
    p = sysstat.parse(text.encode(), "mpstat_text", "t")
    assert [s.t for s in p.samples] == [utc_epoch(2026, 12, 31, 23, 59, 59),
                                        utc_epoch(2027, 1, 1, 0, 0, 0),
                                        utc_epoch(2027, 1, 1, 0, 0, 1)]
    assert all(s.interval_s == 1.0 for s in p.samples)


def test_sadf_is_utc_with_its_own_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # sadf states UTC: the local zone must not matter
    time.tzset()
    try:
        a = parse(sysstat, "sadf.json", "sadf_json")
        b = parse(sysstat, "sadf_u.json", "sadf_json")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert [s.t for s in a.samples] == [utc_epoch(2026, 11, 30, 15, 34, s) for s in (1, 2, 3)]
    assert [s.t for s in b.samples] == [s.t for s in a.samples]
    assert usage_of(1, a.samples[0].deltas[1]).pct["usr"] == 100.0
    # `-u` without ALL: "user"/"system" names, no irq/soft columns
    assert usage_of(0, b.samples[0].deltas[0]).pct["sys"] == 1.0


def test_truncated_mpstat_json_keeps_whole_entries(utc) -> None:  # type: ignore[no-untyped-def]
    data = (ART / "mpstat12.json").read_bytes()
    cut = data.index(b'"timestamp": "15:33:46"') + 200  # inside the last entry's CPU list
    p = sysstat.parse(data[:cut], "mpstat_json", "t")
    assert len(p.samples) == 2  # the third entry is cut: left out, not read as CPUs offline
    assert all(sorted(s.deltas) == [0, 1] for s in p.samples)
    assert any("cut short" in d.message for d in p.diagnostics)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 100), min_size=10, max_size=10),
       st.floats(0.05, 3600))
def test_ticks_add_up_exactly(values: list[float], itv: float) -> None:
    pct = dict(zip(("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "gnice",
                    "idle"), values, strict=True))
    d = sysstat.ticks_from_pct(pct, itv)
    if sum(values) <= 0:
        return
    assert d is not None
    assert sum(d[:8]) == max(1, round(itv * 100))
    assert min(d) >= 0 and d[8] <= d[0] and d[9] <= d[1]  # guest inside user, gnice in nice


# --- /proc/stat loops ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["procstat_loop_date.txt", "procstat_loop_epoch.txt",
                                  "procstat_loop_iso.txt"])
def test_procstat_loop_uses_the_recorders_arithmetic(name: str, utc) -> None:  # type: ignore[no-untyped-def]
    p = parse(procstat_loop, name, "proc_stat")
    assert p.diagnostics == []
    assert [b.epoch for b in p.boot_times] == [BTIME]
    blocks = (ART / name).read_text().split("cpu  ")[1:]
    snaps = [parse_proc_stat("cpu  " + b.split("\n", 1)[0] + "\n" + b.split("\n", 1)[1])
             for b in blocks]
    assert len(p.samples) == len(snaps) - 1
    for s, (a, b) in zip(p.samples, itertools.pairwise(snaps), strict=True):
        ref = delta(a, b, s.t, s.interval_s)
        assert {c: tuple(ref.deltas[c]) for c in ref.deltas} == dict(s.deltas)
        assert 0.9 < s.interval_s < 1.3  # sleep 1 plus the loop's own time, from the ticks


def test_single_proc_stat_gives_only_a_boot_time() -> None:
    p = procstat_loop.parse((FIXTURES / "procstat" / "vm-2cpu-6.18.stat").read_bytes(),
                            "proc_stat", "t")
    assert p.samples == [] and len(p.boot_times) == 1


# --- census loops ----------------------------------------------------------------------------

def test_census_loop(utc) -> None:  # type: ignore[no-untyped-def]
    p = parse(census_loop, "census_loop.txt", "census_loop")
    assert p.diagnostics == []
    assert [(c.kernel_count, c.live, c.dying) for c in p.censuses] == [
        (50, 11, 39), (77, 13, 64), (102, 13, 89), (127, 13, 114)]
    assert p.censuses[0].t == utc_epoch(2026, 11, 30, 15, 34, 54)
    assert all(c.hierarchy == "v1" for c in p.censuses)


def test_single_proc_cgroups_is_an_undated_snapshot() -> None:
    text = (ART / "census_loop.txt").read_text().split("\n", 1)[1].split("\n11\n")[0]
    assert census_loop.sniff(text) == "proc_cgroups"
    p = census_loop.parse(text.encode(), "proc_cgroups", "t")
    assert p.undated and len(p.censuses) == 1
    assert (p.censuses[0].kernel_count, p.censuses[0].live) == (50, None)


def test_cgroup_stat_loop_is_a_v2_census(utc) -> None:  # type: ignore[no-untyped-def]
    # real: `date; cat /sys/fs/cgroup/unified/cgroup.stat` here, with lab cgroups made and
    # removed between rounds (this node's v2 hierarchy has no memory controller: the
    # any-controller counts are used)
    p = parse(census_loop, "cgroup_stat_loop.txt", "census_loop")
    assert p.diagnostics == []
    # the last round: the lab cgroups were just removed, one still dying
    assert [(c.live, c.dying) for c in p.censuses] == [(1, 0), (3, 0), (4, 0), (5, 0), (1, 1)]
    assert all(c.hierarchy == "v2" and "nr_dying_descendants" in c.source for c in p.censuses)
    assert p.censuses[0].t == utc_epoch(2026, 11, 30, 20, 32, 16)


def test_cgroup_stat_with_memory_counters_uses_them(utc) -> None:  # type: ignore[no-untyped-def]
    # 6.12+ adds nr_subsys_<ctrl> / nr_dying_subsys_<ctrl> (Documentation/admin-guide/cgroup-v2)
    text = ("Mon Nov 30 10:00:00 UTC 2026\nnr_descendants 70\nnr_subsys_cpu 50\n"
            "nr_subsys_memory 60\nnr_dying_descendants 900\nnr_dying_subsys_cpu 3\n"
            "nr_dying_subsys_memory 880\n")
    assert census_loop.sniff(text) == "census_loop"
    p = census_loop.parse(text.encode(), "census_loop", "t")
    c = p.censuses[0]
    assert (c.live, c.dying, c.kernel_count) == (60, 880, 940)
    assert "nr_dying_subsys_memory" in c.source


def test_cgroup_stat_block_with_an_unreadable_count_gives_no_census(utc) -> None:  # type: ignore[no-untyped-def]
    """A dying count past what a store holds (all digits, so a counter line) leaves its block
    without a census, never 0 dying in its place; the next block is read."""
    text = ("Mon Nov 30 10:00:00 UTC 2026\nnr_descendants 70\nnr_subsys_memory 60\n"
            "nr_dying_descendants 900\nnr_dying_subsys_memory 1" + "0" * 30 + "\n"
            "Mon Nov 30 10:00:10 UTC 2026\nnr_descendants 70\nnr_subsys_memory 60\n"
            "nr_dying_descendants 900\nnr_dying_subsys_memory 880\n")
    p = census_loop.parse(text.encode(), "census_loop", "t")
    assert [(c.live, c.dying) for c in p.censuses] == [(60, 880)]
    assert any("nr_dying_subsys_memory" in d.message and "no census" in d.message
               for d in p.diagnostics), p.diagnostics


def test_single_cgroup_stat_and_garbage_in_a_block() -> None:
    assert census_loop.sniff("nr_descendants 5\nnr_dying_descendants 2\n") == "cgroup_stat"
    p = census_loop.parse(b"nr_descendants 5\nnr_dying_descendants 2\n", "cgroup_stat", "t")
    assert p.undated and (p.censuses[0].live, p.censuses[0].dying) == (5 + 1, 2)
    bad = ("Mon Nov 30 10:00:00 UTC 2026\nnr_descendants 5\nnr_dying_descendants 2\n"
           "\x00\xff garbage\nMon Nov 30 10:00:10 UTC 2026\nnr_descendants x\n")
    p = census_loop.parse(bad.encode("utf-8", "replace"), "census_loop", "t")
    assert len(p.censuses) == 1 and p.diagnostics


# --- /proc/interrupts ------------------------------------------------------------------------

def test_interrupts_loop(utc) -> None:  # type: ignore[no-untyped-def]
    p = parse(interrupts_loop, "interrupts_loop.txt", "proc_interrupts")
    assert len(p.irq_maps) == 3
    assert [q.basis for q in p.irq_maps[0][1]][:1] == ["total"]
    assert {q.basis for _, m in p.irq_maps[1:] for q in m} <= {"delta", "total"}
    names = {q.name for _, m in p.irq_maps for q in m}
    assert "virtio2-output.0" in names


def test_ena_queue_map_from_a_dated_pair() -> None:
    ev = FIXTURES / "events"
    text = ("Mon Nov 30 15:00:00 UTC 2026\n" + (ev / "proc_interrupts_ena_32q_96cpu.txt")
            .read_text() + "Mon Nov 30 15:00:05 UTC 2026\n" +
            (ev / "proc_interrupts_ena_32q_96cpu_t5.txt").read_text())
    p = interrupts_loop.parse(text.encode(), "proc_interrupts", "t")
    q5 = [q for q in p.irq_maps[1][1] if q.iface == "eth0" and q.queue == 5]
    assert q5 and q5[0].cpus == (39,) and q5[0].basis == "delta"


# --- /proc/softirqs ----------------------------------------------------------------------------

def test_softirqs_loop_gives_net_rx_per_cpu_per_interval(utc) -> None:  # type: ignore[no-untyped-def]
    """Four real reads 1 s apart: three intervals, each CPU's NET_RX increase between two
    reads (checked against the file's own counters), NET_TX too."""
    text = (ART / "softirqs_loop.txt").read_text()
    p = parse(softirqs_loop, "softirqs_loop.txt", "softirqs_loop")
    rows = p.extra
    assert len(rows) == 3 and p.extra_records == 3 and p.extra_cpus == (0, 1)
    counts = [[int(x) for x in m.group(1).split()]
              for m in re.finditer(r"NET_RX:((?:\s+\d+)+)", text)]
    for k, r in enumerate(rows):
        assert r.interval_s == 1.0
        assert r.net_rx == {c: counts[k + 1][c] - counts[k][c] for c in (0, 1)}
        assert set(r.net_tx) == {0, 1}
    assert rows[0].t == p.extra_span[0] + 1.0 and rows[-1].t == p.extra_span[1]
    assert not p.diagnostics


def test_softirqs_loop_needs_two_dated_reads_and_survives_a_wrap() -> None:
    block = "".join((ART / "softirqs_loop.txt").read_text().splitlines(True)[1:12])
    one = softirqs_loop.parse(("Mon Nov 30 15:00:00 UTC 2026\n" + block).encode(),
                              "softirqs_loop", "t")
    assert one.extra == [] and any("no two dated" in d.message for d in one.diagnostics)
    undated = softirqs_loop.parse((block + block).encode(), "softirqs_loop", "t")
    assert undated.extra == [] and undated.diagnostics
    # a 32-bit counter that wrapped between two reads still gives the increase
    near = re.sub(r"NET_RX:\s+\d+", "NET_RX: 4294967000", block, count=1)
    after = re.sub(r"NET_RX:\s+\d+", "NET_RX:        704", block, count=1)
    p = softirqs_loop.parse(("Mon Nov 30 15:00:00 UTC 2026\n" + near
                             + "Mon Nov 30 15:00:05 UTC 2026\n" + after).encode(),
                            "softirqs_loop", "t")
    assert p.extra[0].net_rx[0] == 296 + 704 and p.extra[0].interval_s == 5.0


# --- kernel logs and the journal -------------------------------------------------------------

@pytest.mark.parametrize("name", ["dmesg.txt", "dmesg_r.txt", "dmesg_x.txt", "dmesg_T.txt",
                                  "dmesg_iso.txt"])
def test_dmesg_formats(name: str) -> None:
    p = parse(kernel_log, name, "kernel_log")
    assert len(p.kernel) == 45
    assert sum("TX q 5 is paused" in r.message for r in p.kernel) == 1
    stamped = [r for r in p.kernel if r.usec is not None or r.wall is not None]
    assert len(stamped) == 45


def test_journal_boot_time_and_kernel_entries() -> None:
    data = (FIXTURES / "events" / "journal_k.json").read_bytes()
    p = units.parse(data, "journal_json", "t")
    first = json.loads(data.split(b"\n", 1)[0])
    want = (int(first["__REALTIME_TIMESTAMP"]) - int(first["__MONOTONIC_TIMESTAMP"])) / 1e6
    assert p.boot_times and abs(p.boot_times[0].epoch - want) < 1.0
    assert p.kernel and all(r.wall is not None for r in p.kernel)


def test_journal_restart_entries() -> None:
    p = units.parse((FIXTURES / "zombies" / "tools" / "journal_restarts.json").read_bytes(),
                    "journal_json", "t")
    assert p.restarts and all(r.kind == "systemd-unit" and r.t > 0 for r in p.restarts)


@pytest.mark.parametrize("name,kind,what", [
    ("systemctl_show.txt", "systemctl_show", "ecs.service"),
    ("crictl_ps.json", "crictl_json", "ecs-agent"),
    ("docker_ps.txt", "docker_ps", "ecs-agent"),
    ("docker_ps.jsonl", "docker_ps", "ecs-agent"),
    ("docker_inspect.json", "docker_inspect", "ecs-agent")])
def test_unit_snapshots_are_undated(name: str, kind: str, what: str) -> None:
    p = units.parse((FIXTURES / "zombies" / "tools" / name).read_bytes(), kind, "t")
    assert p.undated and p.restarts
    assert any(what in r.name for r in p.restarts)
    assert all(r.t == 0.0 for r in p.restarts)


def test_systemctl_dump_without_blank_lines() -> None:
    text = b"Id=a.service\nNRestarts=3\nSubState=running\nId=b.service\nNRestarts=0\n"
    assert units.sniff(text.decode()) == "systemctl_show"
    p = units.parse(text, "systemctl_show", "t")
    assert [(r.name, r.restarts) for r in p.restarts] == [("a.service", 3), ("b.service", 0)]


# --- boot-time files -------------------------------------------------------------------------

def test_uptime_since_and_uptime_pair(utc) -> None:  # type: ignore[no-untyped-def]
    from corescope.sources.artifacts import anchors
    from corescope.sources.artifacts.content import sniff

    assert sniff(b"2026-10-31 18:38:30\n") == "uptime_since"
    p = anchors.parse(b"2026-10-31 18:38:30\n", "uptime_since", "t")
    assert p.boot_times[0].epoch == utc_epoch(2026, 10, 31, 18, 38, 30)
    pair = b"Mon Nov 30 15:34:54 UTC 2026\n344.77 537.22\n"
    assert sniff(pair) == "uptime_pair"
    p = anchors.parse(pair, "uptime_pair", "t")
    assert p.boot_times[0].epoch == pytest.approx(utc_epoch(2026, 11, 30, 15, 34, 54) - 344.77)


def test_schedstat_is_not_proc_stat() -> None:
    from corescope.sources.artifacts.content import sniff

    text = (b"version 15\ntimestamp 4363997296\ncpu0 0 0 60735840 20245280 30367920 15183960 "
            b"101226400000000 7513138182681 30367920\ndomain0 00000003 202452 198483\n"
            b"cpu1 0 0 1 2 3 4 5 6 7\n")
    assert sniff(text) != "proc_stat"
    from corescope.sources.artifacts import procstat_loop as ps

    assert ps.sniff(text.decode()) is None  # also on its own, whatever module runs first


def test_mpstat_json_gives_a_matrix(utc) -> None:  # type: ignore[no-untyped-def]
    from corescope.model.matrix import CoreMatrix

    p = parse(sysstat, "mpstat12.json", "mpstat_json")
    assert isinstance(p.samples, CoreMatrix)
    assert p.cpus() == (0, 1)
    # the fast path (sysstat 12's exact layout) and the careful one agree
    data = (ART / "mpstat12.json").read_bytes().replace(b'"usr"', b'"usr" ')
    slow = sysstat.parse(data, "mpstat_json", "t")
    assert [dict(s.deltas) for s in slow.samples] == [dict(s.deltas) for s in p.samples]


def test_kern_log_anchors_itself(utc) -> None:  # type: ignore[no-untyped-def]
    """syslog's kern.log: `MON DD HH:MM:SS host kernel: [since boot] msg` (no year)."""
    lines = []
    for r in parse(kernel_log, "dmesg.txt", "kernel_log").kernel[-4:]:
        wall = BTIME + r.usec / 1e6
        stamp = time.strftime("%b %e %H:%M:%S", time.gmtime(int(wall)))
        lines.append(f"{stamp} vm kernel: [{r.usec // 10**6:5d}.{r.usec % 10**6:06d}] "
                     f"{r.message}")
    p = kernel_log.parse("\n".join(lines).encode(), "kernel_log", "kern.log")
    assert len(p.kernel) == 4 and all(r.usec is not None for r in p.kernel)
    assert p.boot_times and abs(p.boot_times[0].epoch - BTIME) <= 1.0
    assert "2026" in p.boot_times[0].how


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=70) | st.from_regex(
    r"(Mon|Tue) (Nov|Feb|Dez) [0-9]{1,3} [0-9]{1,3}:[0-9]{2}:[0-9]{2}( [AP]M)? "
    r"(UTC|EST|XYZ|\+9999)? [0-9]{1,6}", fullmatch=True))
def test_date_readers_never_raise(text: str) -> None:
    t = parse_date_line(text)
    assert t is None or 946684800 <= t <= 4102444800
    parse_clock(text)
    parse_day(text)


def test_all_cpu_only_says_to_use_P_ALL(utc) -> None:  # type: ignore[no-untyped-def]
    lines = [ln for ln in (ART / "mpstat_24h.txt").read_text().splitlines()
             if not ln[9:].lstrip().startswith(("0 ", "1 "))]
    p = sysstat.parse("\n".join(lines).encode(), "mpstat_text", "t")
    assert not p.samples and "-P ALL" in p.diagnostics[0].message
    doc = json.loads((ART / "mpstat12.json").read_bytes())
    for e in doc["sysstat"]["hosts"][0]["statistics"]:
        e["cpu-load"] = e["cpu-load"][:1]
    p = sysstat.parse(json.dumps(doc).encode(), "mpstat_json", "t")
    assert not p.samples and "-P ALL" in p.diagnostics[-1].message
