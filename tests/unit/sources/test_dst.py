"""mpstat prints the node's local time of day with the date only in its header, so across the
autumn DST change the same hour is printed twice. Read in the file's zone (TZ), the second
pass is standard time and every sample keeps its true place; a day after a midnight rollover
takes its own date's offset.

mpstat_dst_fold.{txt,json} are real captures across a real DST change: `mpstat -P ALL 1 24`
and `mpstat -P ALL -o JSON 1 24` run with TZ set to a POSIX rule whose summer time ended 12 s
into the run (tests/fixtures/artifacts/README.md). The other cases rewrite the captured
report's times to the dates and zones of real changes (Berlin, New York, Sydney)."""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Iterator

import pytest

from corescope.sources.artifacts import sysstat
from support import FIXTURES

ART = FIXTURES / "artifacts"
CAPTURE_TZ = "XST0XDT-1,J1/0,J335/20:06:57"  # the rule the captures ran under


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    def use(tz: str) -> None:
        monkeypatch.setenv("TZ", tz)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


def _utc(y: int, mo: int, d: int, h: int, mi: int, s: int) -> float:
    return float(calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)))


@pytest.mark.parametrize("name,kind", [("mpstat_dst_fold.txt", "mpstat_text"),
                                       ("mpstat_dst_fold.json", "mpstat_json")])
def test_captured_mpstat_across_the_change_keeps_every_second(zone, name: str,  # type: ignore[no-untyped-def]
                                                              kind: str) -> None:
    zone(CAPTURE_TZ)
    p = sysstat.parse((ART / name).read_bytes(), kind, name)
    # 20:06:46 summer time (UTC+1) to 19:07:09 standard time (UTC): 24 seconds, in order
    assert [s.t for s in p.samples] == [_utc(2026, 12, 1, 19, 6, 46) + i for i in range(24)]
    assert any("DST change" in d.message for d in p.diagnostics)


_CAPTURE = (ART / "mpstat_dst_fold.txt").read_text()
_HEAD = _CAPTURE.splitlines()[0]
_TIME = re.compile(r"^\d\d:\d\d:\d\d", re.MULTILINE)


def _mpstat_text(date: str, clocks: list[str]) -> bytes:
    """The captured reports with the header date and the times rewritten: report n's table
    header is stamped clocks[n], its rows clocks[n + 1] (as mpstat stamps them)."""
    reports = _CAPTURE.split("\n\n")[1:]
    reports = [r for r in reports if not r.startswith("Average")]
    out = [re.sub(r"\d\d/\d\d/\d\d", date, _HEAD), ""]
    for i, clock in enumerate(clocks[1:]):
        body = reports[i % len(reports)].strip("\n").splitlines()
        out.append(_TIME.sub(clocks[i], body[0]))
        out += [_TIME.sub(clock, row) for row in body[1:]]
        out.append("")
    return "\n".join(out).encode()


def _seconds(start: str, n: int, back_at: int | None = None) -> list[str]:
    h, m, s = (int(x) for x in start.split(":"))
    out = []
    t = h * 3600 + m * 60 + s
    for i in range(n):
        if i == back_at:
            t -= 3600
        out.append(f"{t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}")
        t += 1
    return out


@pytest.mark.parametrize("tz,date,start,utc_start", [
    ("Europe/Berlin", "10/25/26", "02:59:50", (2026, 10, 25, 0, 59, 50)),
    ("America/New_York", "11/01/26", "01:59:50", (2026, 11, 1, 5, 59, 50)),
    ("Australia/Sydney", "04/05/26", "02:59:50", (2026, 4, 4, 15, 59, 50)),
])
def test_the_repeated_hour_is_read_as_standard_time(zone, tz: str, date: str,  # type: ignore[no-untyped-def]
                                                    start: str, utc_start: tuple) -> None:
    zone(tz)
    p = sysstat.parse(_mpstat_text(date, _seconds(start, 31, back_at=10)), "mpstat_text", "t")
    assert [s.t for s in p.samples] == [_utc(*utc_start) + i for i in range(1, 31)]
    assert all(s.interval_s == 1.0 for s in p.samples[1:])


def test_a_day_after_midnight_takes_its_own_offset(zone) -> None:  # type: ignore[no-untyped-def]
    zone("Europe/Berlin")
    # from Saturday 24 October (summer time) over two midnights to Monday (standard time)
    clocks = ["23:59:57", "23:59:58", "23:59:59", "00:00:00", "12:00:00", "23:59:59",
              "00:00:01"]
    p = sysstat.parse(_mpstat_text("10/24/26", clocks), "mpstat_text", "t")
    assert [s.t for s in p.samples] == [
        _utc(2026, 10, 24, 21, 59, 58), _utc(2026, 10, 24, 21, 59, 59),
        _utc(2026, 10, 24, 22, 0, 0), _utc(2026, 10, 25, 11, 0, 0),
        _utc(2026, 10, 25, 22, 59, 59), _utc(2026, 10, 25, 23, 0, 1)]


def test_a_step_back_that_is_no_dst_change_is_still_said(zone) -> None:  # type: ignore[no-untyped-def]
    zone("Europe/Berlin")
    p = sysstat.parse(_mpstat_text("07/01/26", _seconds("12:00:00", 20, back_at=10)),
                      "mpstat_text", "t")
    assert any("went back" in d.message and "same day" in d.message for d in p.diagnostics)
