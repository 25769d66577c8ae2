"""`sadf -j` of a `sar -o` file (`-- -P ALL -u` or `-u ALL`): each entry states its date, its
time (UTC, or with `-t` the node's local time) and its interval."""

from __future__ import annotations

import json
from typing import Any

from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.dates import parse_clock, parse_day, zoned_epoch
from corescope.sources.artifacts.sysstat_json import entry_rows, json_entries, json_header
from corescope.sources.artifacts.sysstat_samples import PctSamples


def sadf_local_zone(header_tz: str) -> str | None:
    """The zone `sadf -t` times (the recording node's local time) are read in. Its header names
    that zone only as the standard-time abbreviation (no DST): only a zone without DST is
    taken from it, anything else is read in this machine's zone (set TZ to the node's)."""
    tz = header_tz.strip().upper()
    return tz if tz in ("UTC", "GMT", "UT") else None


def read_sadf_entry(entry: dict[str, Any], local_zone: str | None, acc: PctSamples,
                    p: Parsed) -> None:
    """One sadf statistics entry, `{"timestamp": {date, time, utc, interval}, "cpu-load":
    [{"cpu": id, "usr": ..., ...}]}`, as `sadf -j` prints it and `sadf -x` (sadf_forms)
    is read into: its per-CPU percentages into `acc`."""
    ts = entry.get("timestamp")
    if not isinstance(ts, dict):
        p.diag("entry without a timestamp object")
        return
    day = parse_day(str(ts.get("date", "")))
    hms = parse_clock(str(ts.get("time", "")))
    if day is None or hms is None:
        p.diag(f"unreadable timestamp {json.dumps(ts)[:60]}")
        return
    utc = ts.get("utc", 1) in (1, "1", True)
    t = zoned_epoch(*day, *hms, "UTC" if utc else local_zone)
    try:
        itv = float(ts.get("interval", 0))
    except (TypeError, ValueError, OverflowError):  # an int of 400 digits: no float
        itv = 0.0
    ids, rows = entry_rows(entry, p)
    if t is None or not ids:
        return
    if not 0 < itv <= 86400:
        p.diag(f"unreadable interval {str(ts.get('interval'))[:20]!r}: entry skipped")
        return
    acc.add(t, itv, ids, rows, p)


def parse_sadf_json(text: str, acc: PctSamples, p: Parsed) -> None:
    # `sadf -t` prints the recording node's local time ("utc": 0)
    local_zone = sadf_local_zone(str(json_header(text).get("timezone", "")))
    for entry in json_entries(text, p):
        read_sadf_entry(entry, local_zone, acc, p)
