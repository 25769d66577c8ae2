"""Files whose whole content is a boot time: `uptime -s` (`2026-10-31 18:38:30`, local time)
and a `date; cat /proc/uptime` pair (boot = the date − seconds up). They hold no records; the
importer uses them to place boot-relative kernel log and perf stamps."""

from __future__ import annotations

import re

from corescope.sources.artifacts.base import BootTime, Parsed
from corescope.sources.artifacts.dates import EPOCH_MIN, parse_date_line

KINDS = ("uptime_since", "uptime_pair")

_SINCE = re.compile(r"^\s*(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_UPTIME = re.compile(r"^\s*(\d+(?:\.\d+)?) \d+(?:\.\d+)?\s*$")


def sniff(head: str) -> str | None:
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if len(lines) == 1 and _SINCE.match(lines[0]):
        return "uptime_since"
    if 2 <= len(lines) <= 200 and len(lines) % 2 == 0 and all(
            parse_date_line(a) is not None and _UPTIME.match(b)
            for a, b in zip(lines[::2], lines[1::2], strict=True)):
        return "uptime_pair"
    return None


def parse(data: bytes, kind: str, source: str) -> Parsed:
    p = Parsed(kind, source)
    lines = [ln for ln in data.decode("utf-8", errors="replace").splitlines() if ln.strip()]
    if kind == "uptime_since":
        m = _SINCE.match(lines[0]) if lines else None
        t = parse_date_line(m.group(1)) if m else None
        if t is None:
            p.diag("not an `uptime -s` time")
        else:
            p.boot_times.append(BootTime(t, "`uptime -s`", 1.0))
        return p
    boots = []
    for a, b in zip(lines[::2], lines[1::2], strict=False):
        t = parse_date_line(a)
        m = _UPTIME.match(b)
        if t is None or m is None:
            p.diag(f"not a date and /proc/uptime pair: {a[:40]!r}")
            continue
        boot = t - float(m.group(1))
        if not EPOCH_MIN <= boot <= t:  # up since before 2000 (or for 1e26 s): not an uptime
            p.diag(f"uptime {m.group(1)[:24]} s reaches back before 2000: pair skipped")
            continue
        boots.append(boot)
    if boots:
        boots.sort()
        # `date` prints whole seconds: each pair bounds the boot within a second
        p.boot_times.append(BootTime(boots[len(boots) // 2], "date and /proc/uptime", 1.0))
    return p
