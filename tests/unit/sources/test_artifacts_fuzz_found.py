"""Inputs the artifact fuzz campaign (tests/tools/fuzz_artifacts.py) found to break a parser,
minimized: each must give a diagnostic, never a traceback or an invented value."""

from __future__ import annotations

import json

import pytest

from corescope.evidence.base import Coverage, Span
from corescope.investigate.window import resolve_window
from corescope.model.common import Diagnostic
from corescope.sources.artifacts import sysstat
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.content import module_for
from corescope.sources.artifacts.dates import parse_day
from corescope.sources.folded import parse_blocks
from corescope.sources.kubectl import duration_s
from corescope.sources.units import display_cells, table_columns
from support import FIXTURES


def _parse(kind: str, text: str) -> Parsed:
    mod = module_for(kind)
    assert mod is not None
    p = mod.parse(text.encode(), kind, "f.txt")
    assert p.kind == kind
    return p


CORE = ('{"t":1796000100.25,"interval_s":1.0,"cpus":[0],'
        '"ticks":[[30,0,3,67,0,0,0,0,0,0]]}')


@pytest.mark.parametrize(("kind", "record"), [
    ("cores", CORE.replace('"cpus":[0]', '"cpus":[-1]')),
    ("cores", CORE.replace('"interval_s":1.0', '"interval_s":-1')),
    ("cores", CORE.replace('"t":1796000100.25', '"t":-1')),
    ("cores", CORE.replace("[30,", "[Infinity,")),  # int(inf): OverflowError
    ("cores", CORE.replace("[30,", "[30.5,")),
    ("events", '{"time":-7,"kind":"other","raw":"x"}'),
    ("events", '{"time":1796000100,"kind":"other","raw":"x","level":-7}'),
    ("events", '{"time":1796000100,"kind":"other","raw":"x","mono_usec":-1}'),
    ("irq_maps", '{"t":1796000100,"map":[1]}'),  # AttributeError on int.get
    ("irq_maps", '{"t":1796000100,"map":[{"irq":Infinity,"name":"q","direction":"tx",'
                 '"cpus":[1]}]}'),
    ("censuses", '{"t":1796000100,"layout":"v1","hierarchy":"v1","kernel_count":-1,'
                 '"live":1,"dying":1,"source":"s"}'),
    ("restarts", '{"t":1796000100,"kind":"systemd-unit","name":"a","restarts":-5}'),
    ("losses", '{"t":1796000100,"lost":-3}'),
])
def test_native_records_out_of_range_are_diagnosed(kind: str, record: str) -> None:
    p = _parse("corescope_native", f'{{"corescope":"{kind}","version":1}}\n{record}\n')
    assert p.records == 0 and p.extra_span is None and not len(p.samples)
    assert [(d.line, d.message.startswith(f"bad {kind} record")) for d in p.diagnostics] == [
        (2, True)]


def test_deeply_nested_json_is_diagnosed_not_a_recursion_error() -> None:
    deep = "[" * 100_000
    p = _parse("corescope_manifest", '{"format": "corescope-capture", "files": ' + deep)
    assert [d.message.startswith("unreadable manifest") for d in p.diagnostics] == [True]
    p = _parse("corescope_native", '{"corescope":"events","version":1}\n' + deep)
    assert [d.line for d in p.diagnostics] == [2]


def test_mpstat_json_percentage_too_large_for_a_float() -> None:
    text = (FIXTURES / "artifacts" / "mpstat_one_report.json").read_text()
    # 400 digits: a JSON int no float holds; the spacing change takes the careful path
    text = text.replace('"usr": 55.56', '"usr": ' + "9" * 400).replace('"cpu": "1", ',
                                                                     '"cpu":"1", ')
    p = _parse("mpstat_json", text)
    assert "1 CPU rows with unreadable percentages skipped" in [d.message
                                                                for d in p.diagnostics]


def test_mpstat_json_cpu_id_no_kernel_has() -> None:
    text = (FIXTURES / "artifacts" / "mpstat12.json").read_text()
    for bad in ("99999999999999999999999999", "70000"):
        p = _parse("mpstat_json", text.replace('"cpu": "1"', f'"cpu": "{bad}"', 1))
        assert min(p.cpus()) >= 0 and max(p.cpus()) < 65536
        assert f"unreadable cpu id {bad[:20]!r}" in [d.message for d in p.diagnostics]


@pytest.mark.parametrize("kind", ["journal_json", "journal_export"])
@pytest.mark.parametrize(("field", "value"), [
    ("__REALTIME_TIMESTAMP", "-7"), ("__REALTIME_TIMESTAMP", "1" + "0" * 30),
    ("_SOURCE_MONOTONIC_TIMESTAMP", "-1"), ("PRIORITY", "4294967296"), ("PRIORITY", "-7")])
def test_journal_values_no_journal_writes_are_missing(kind: str, field: str,
                                                      value: str) -> None:
    entry = {"MESSAGE": "eth0: link down", "_TRANSPORT": "kernel", field: value}
    text = (json.dumps(entry) if kind == "journal_json"
            else "__CURSOR=s=1\n" + "".join(f"{k}={v}\n" for k, v in entry.items()))
    p = _parse(kind, text)
    [r] = p.kernel
    assert r.wall is None and r.usec is None and r.level is None
    assert p.span() is None


@pytest.mark.parametrize("realtime", [10**30, 10**400])
def test_journal_boot_time_from_a_clock_out_of_range(realtime: int) -> None:
    # realtime - monotonic: 10**400 overflowed the float division, 10**30 gave year 10**16
    entry = json.dumps({"MESSAGE": "x", "__REALTIME_TIMESTAMP": str(realtime),
                        "__MONOTONIC_TIMESTAMP": "5", "_BOOT_ID": "b", "_TRANSPORT": "kernel"})
    assert _parse("journal_json", entry).boot_times == []


@pytest.mark.parametrize("realtime", [10**30, 10**400])
def test_journal_restart_with_a_clock_out_of_range(realtime: int) -> None:
    entry = {"MESSAGE": "a.service: Scheduled restart job, restart counter is at 3.",
             "MESSAGE_ID": "5eb03494b6584870a536b337290809b3", "UNIT": "a.service",
             "__REALTIME_TIMESTAMP": str(realtime), "_TRANSPORT": "kernel"}
    p = _parse("journal_json", json.dumps(entry))
    assert p.restarts == [] and p.span() is None
    assert any("restart entry of a.service has no readable time" in d.message
               for d in p.diagnostics)


@pytest.mark.parametrize("btime", ["1" + "0" * 30, "9" * 400])
def test_proc_stat_btime_out_of_range(btime: str) -> None:
    text = (FIXTURES / "artifacts" / "procstat_loop_date.txt").read_text()
    p = _parse("proc_stat", text.replace("btime 1796052546", f"btime {btime}", 1))
    assert [b.epoch for b in p.boot_times] == [1796052546.0]
    assert [d.line for d in p.diagnostics if d.message.startswith(f"btime {btime[:24]} ")
            ] == [1]


def test_sadf_interval_too_large_for_a_float() -> None:
    text = (FIXTURES / "artifacts" / "sadf.json").read_text()
    p = _parse("sadf_json", text.replace('"interval": 1}', '"interval": ' + "9" * 400 + "}", 1))
    assert any(d.message.startswith("unreadable interval '999") for d in p.diagnostics)
    assert len(p.samples)


def test_mpstat_json_repeated_timestamps_decode_the_entry_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A line of one timestamp repeated 5,000 times (the fuzzer's) decoded the whole entry
    once per copy: 15 s for 150 KB. Counted in decodes, not seconds."""
    text = (FIXTURES / "artifacts" / "mpstat12.json").read_text()
    entries = text.count('"timestamp"')
    ts = '"timestamp": "15:33:44",'
    bad = text.replace(ts, ts * 2000, 1)
    calls = 0
    real = sysstat._DEC.raw_decode

    def counting(s: str, idx: int = 0) -> tuple[object, int]:
        nonlocal calls
        calls += 1
        return real(s, idx)

    monkeypatch.setattr(sysstat._DEC, "raw_decode", counting)
    good = _parse("mpstat_json", text.replace('"cpu": "1"', '"cpu":"1"'))  # the careful path
    calls_good, calls = calls, 0
    p = _parse("mpstat_json", bad.replace('"cpu": "1"', '"cpu":"1"'))
    assert calls <= calls_good <= entries + 1
    assert len(p.samples) == len(good.samples)


def test_default_window_on_an_unanchored_record_starts_at_the_epoch() -> None:
    """perf's boot-relative stamps with no boot time are stored from 1970: `report`'s default
    hour counted back from their end started at -3235 s (a time before 1970 in the JSON)."""
    cov = Coverage(profiles=Span(361.87, 364.65))
    w = resolve_window(1_796_000_000.0, coverage=cov)
    assert (w.start, w.end) == (0.0, 364.65)
    assert resolve_window(1_796_000_000.0, last=60, coverage=cov).start == 304.65


def test_docker_table_cells_by_display_width_under_a_repeated_header() -> None:
    """The fuzzer's hang: a header repeated into thousands of columns over a long row with a
    wide character; each column's start was found by a scan of the whole row."""
    header = "CONTAINER ID   NAMES   STATUS"
    row = "abc            名前    Up 2 hours"
    starts = [s for _, s in table_columns(header)]
    assert display_cells(row, starts) == ["abc", "名前", "Up 2 hours"]
    assert display_cells(row, [*starts, 200]) == ["abc", "名前", "Up 2 hours", ""]
    wide = "名" * 3000
    cells = display_cells(wide, list(range(0, 8000, 4)))
    assert "".join(cells) == wide and cells[0] == "名名" and cells[-1] == ""


@pytest.mark.parametrize("age", ["9" * 400 + "d", "99999999999y"])
def test_kubectl_age_past_any_clock(age: str) -> None:
    assert duration_s(age) is None
    assert duration_s("5d22h") == (5 * 24 + 22) * 3600.0


@pytest.mark.parametrize("count", ["9" * 400, "\u00b2", "1" + "0" * 15])
def test_folded_count_no_store_holds(count: str) -> None:
    """`flame --perf-script` of such a line: SQLite's OverflowError (a huge count) or int()'s
    ValueError ("²" passes isdigit) escaped as a traceback."""
    diags: list[Diagnostic] = []
    good = list(parse_blocks(["spin;main 3\n"], diags))
    assert [s.count for s in good] == [3] and diags == []
    assert list(parse_blocks([f"spin;main {count}\n"], diags)) == [] and len(diags) == 1


@pytest.mark.parametrize("uptime", ["9" * 400, "1" + "0" * 26, "900000000"])
def test_uptime_pair_reaching_back_before_2000(uptime: str) -> None:
    text = (FIXTURES / "artifacts" / "uptime_pair.txt").read_text()
    good = _parse("uptime_pair", text)
    assert [b.epoch for b in good.boot_times] == [1796120938.0 - 2127.51]
    p = _parse("uptime_pair", text.replace("2127.51", uptime))
    assert p.boot_times == []
    assert [d.message.endswith("reaches back before 2000: pair skipped")
            for d in p.diagnostics] == [True]


def test_proc_stat_total_too_large_for_an_interval() -> None:
    text = (FIXTURES / "artifacts" / "procstat_loop_date.txt").read_text()
    p = _parse("proc_stat", text.replace("cpu  8406 ", "cpu  " + "9" * 400 + " ", 1))
    assert all(0 < s.interval_s < 10 for s in p.samples)


def test_sysstat_date_of_year_26() -> None:
    """A digit lost from the year: `0026-11-30` placed the samples in year 26 (epoch -6e10)."""
    assert parse_day("0026-11-30") is None and parse_day("11/30/3026") is None
    assert parse_day("2026-11-30") == (2026, 11, 30) and parse_day("11/30/99") == (1999, 11, 30)
    text = (FIXTURES / "artifacts" / "sadf.json").read_text()
    p = _parse("sadf_json", text.replace('"date": "2026-11-30"', '"date": "0026-11-30"', 1))
    span = p.span()
    assert span is not None and span[0] > 1.7e9


@pytest.mark.parametrize("stamp", ["0026-11-30 15:34:01 UTC", "99999999999"])
def test_sadf_csv_row_time_outside_1970_2100(stamp: str) -> None:
    text = (FIXTURES / "artifacts" / "sadf_d.csv").read_text()
    p = _parse("sadf_csv", text.replace("2026-11-30 15:34:01 UTC", stamp))
    span = p.span()
    assert span is None or 1.7e9 < span[0] <= span[1] < 4102444800
    assert span is None or 1.7e9 < span[0] <= span[1] < 4102444800


@pytest.mark.parametrize("dying", ["1e308", "5720.5", str(10**30)])
def test_native_census_count_not_a_whole_number_the_store_holds(dying: str) -> None:
    """A float count went into the store and came out of `zombies --json` as Infinity."""
    rec = ('{"t":1796000190.25,"layout":"v1","hierarchy":"v1","kernel_count":5760,"live":40,'
           f'"dying":{dying},"source":"s"}}')
    p = _parse("corescope_native", '{"corescope":"censuses","version":1}\n' + rec + "\n")
    assert p.records == 0 and [d.line for d in p.diagnostics] == [2]
    assert _parse("corescope_native", '{"corescope":"censuses","version":1}\n'
                  + rec.replace(dying, "5720") + "\n").records == 1


@pytest.mark.parametrize(("name", "stamp"), [
    ("dmesg_T.txt", "[Mon Nov 30 15:29:06 0026]"),
    ("dmesg_iso.txt", "0026-11-30T15:29:06,438032+00:00")])
def test_kernel_log_stamp_of_year_26(name: str, stamp: str) -> None:
    text = (FIXTURES / "artifacts" / name).read_text().split("\n")
    text[0] = stamp + " " + text[0].split(" ", 5 if name == "dmesg_T.txt" else 1)[-1]
    p = _parse("kernel_log", "\n".join(text))
    assert all(r.wall is None or r.wall > 1.7e9 for r in p.kernel)
    assert [d.line for d in p.diagnostics if d.message.startswith("unreadable")] == [1]


@pytest.mark.parametrize(("start", "end"), [("9" * 400, "1796000215.25"), ("-5", "1796000215.25"),
                                            ("1796000215.25", "1796000190.25"), ("1e308", "1e308")])
def test_manifest_window_that_is_no_time_span(start: str, end: str) -> None:
    text = (FIXTURES / "artifacts" / "native" / "manifest.json").read_text()
    text = text.replace('"start": 1796000190.25', f'"start": {start}').replace(
        '"end": 1796000215.25', f'"end": {end}')
    p = _parse("corescope_manifest", text)
    assert p.extra.window is None
    assert [d.message.startswith("unreadable manifest") for d in p.diagnostics] == [True]


def test_native_sample_whose_interval_began_before_1970() -> None:
    p = _parse("corescope_native", '{"corescope":"cores","version":1}\n'
               + CORE.replace('"t":1796000100.25', '"t":-0.0') + "\n")
    assert p.records == 0 and p.span() is None and [d.line for d in p.diagnostics] == [2]


def test_mpstat_json_softirq_name_not_a_string() -> None:
    text = (FIXTURES / "artifacts" / "mpstat12.json").read_text()
    soft = ('"soft-interrupts": [{"cpu": "0", "intr": [{"name": ["NET_RX"], "value": 5}, '
            '{"name": "NET_RX", "value": 7}]}], ')
    p = _parse("mpstat_json", text.replace('"cpu-load": [', soft + '"cpu-load": [', 1))
    assert len(p.samples)
