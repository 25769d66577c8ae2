"""`sadf -d` of a `sar -o` file: `# hostname;interval;timestamp;CPU;%usr;...;%idle` then
`host;1;2026-11-30 15:34:01 UTC;-1;50.25;...` (CPU -1 is all). -h puts one timestamp's CPUs
on one line (the header ends `[...]`); -t prints local time without a zone; -U epoch seconds.
sadf -d -- -A holds every activity, each after its own header: only the CPU table is read."""

from __future__ import annotations

import re

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.dates import EPOCH_MAX, zoned_epoch
from corescope.sources.artifacts.sysstat_samples import ALIAS, MODE_AT, PctSamples, cpu_id, num

_GROUP_ID = re.compile(r"^-?\d{1,6}$")  # a CPU group's first column: -1 (all) or the CPU
CSV_CPU_HEADER = re.compile(r"^# hostname;interval;timestamp;CPU;.*%idle", re.MULTILINE)
_CSV_TS = re.compile(r"^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?: (\S+))?$")


# sadf -T / -t name the zone by its standard-time abbreviation (tzname[0]) in summer too:
# sysstat's own tests print New York's 09:20 EDT as `09:20:19 EST` and Paris's 15:20 CEST as
# `15:20:19 CET`. Such a name is read with its zone's rules, not as a fixed offset (an hour off
# half the year). Names several zones share with other offsets (MST: Phoenix keeps it all year)
# stay fixed offsets.
_SADF_STD_ZONES = {"EST": "America/New_York", "CST": "America/Chicago",
                   "PST": "America/Los_Angeles", "CET": "Europe/Paris", "EET": "Europe/Helsinki",
                   "WET": "Europe/Lisbon", "AEST": "Australia/Sydney"}


def _std_zone_epoch(y: int, mo: int, d: int, h: int, mi: int, sec: int, zone: str
                    ) -> float | None:
    import datetime
    import zoneinfo

    try:
        tz = zoneinfo.ZoneInfo(_SADF_STD_ZONES[zone])
        return datetime.datetime(y, mo, d, h, mi, sec, tzinfo=tz).timestamp()
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def sadf_time(tok: str) -> float | None:
    if tok.isdigit() and 9 <= len(tok) <= 11:
        return float(tok) if float(tok) <= EPOCH_MAX else None  # sadf -U
    m = _CSV_TS.match(tok)
    if m is None:
        return None
    y, mo, d, h, mi, sec = (int(x) for x in m.groups()[:6])
    if not 1970 <= y < 2100:  # year 0026 (a digit lost) would place samples before 1970
        return None
    if m.group(7) in _SADF_STD_ZONES:
        t = _std_zone_epoch(y, mo, d, h, mi, sec, m.group(7))
        if t is not None:
            return t
    return zoned_epoch(y, mo, d, h, mi, sec, m.group(7))


def parse_sadf_csv(data: bytes, acc: PctSamples, p: Parsed) -> None:
    cols: list[int] | None = None  # MODES index of each value column (-1: not ours)
    bad = 0
    cur: tuple[float, float] | None = None
    ids: list[int] = []
    rows: list[list[float]] = []

    def flush() -> None:
        nonlocal ids, rows
        if cur is not None and ids:
            acc.add(cur[0], cur[1], ids, rows, p)
        ids, rows = [], []

    for line in data.decode("utf-8", errors="replace").splitlines():
        if line.startswith("#"):
            names = line.lstrip("# ").split(";")
            if names[3:4] == ["CPU"] and any(n.startswith("%idle") for n in names):
                # the CPU group's columns end at the one marked `[...]` (repeated per CPU
                # with -P); another activity's columns may follow (`-- -Iu ALL`: INTR;...)
                group = names[4:]
                end = next((k for k, n in enumerate(group) if n.endswith("[...]")), None)
                if end is None:
                    end = next((k for k, n in enumerate(group) if not n.startswith("%")),
                               len(group)) - 1
                names = [n.removesuffix("[...]") for n in group[:end + 1]]
                cols = [MODE_AT.get(ALIAS.get(n, ""), -1) for n in names]
            else:
                cols = None  # another activity's table
            continue
        f = line.split(";")
        if len(f) >= 4 and f[3].startswith(("LINUX-RESTART", "COM ")):
            continue  # sadf's restart and comment records (-dh prints them as rows)
        if cols is None or len(f) < 4 + len(cols) or not _GROUP_ID.match(f[3]):
            if cols is not None and line.strip():
                bad += 1
            continue
        t = sadf_time(f[2])
        try:
            itv = float(f[1])
        except ValueError:
            itv = float("nan")
        if t is None or not 0 < itv <= 86400:
            bad += 1
            continue
        if cur != (t, itv):
            flush()
            cur = (t, itv)
        width = 1 + len(cols)
        for g in range(3, len(f) - width + 1, width):
            if not _GROUP_ID.match(f[g]):
                break  # the next activity's columns (`sum;...` of -I)
            cpu = cpu_id(f[g])
            if cpu is None:
                continue  # -1: all CPUs
            vals = [0.0] * 10
            for c, tok in zip(cols, f[g + 1:g + width], strict=True):
                if c >= 0:
                    vals[c] = num(tok)
            ids.append(cpu)
            rows.append(vals)
    flush()
    if bad:
        p.diag(f"{bad} unreadable sadf -d lines skipped")
