"""Reading the times that saved artifacts print: `date` lines of shell loops (default format
in C and en_US locales, `+%s`, ISO 8601, RFC 3339, RFC 2822) and the clock/date columns of
sysstat tools.

A time printed without a zone (or with an abbreviation that names no single offset) is read
in the local time zone of the machine running corescope, as `journalctl` and `dmesg -T` do:
run with `TZ=<the node's zone>` when the artifacts came from a node in another zone.
"""

from __future__ import annotations

import calendar
import re
import time
from datetime import datetime

# Abbreviations `date` prints that name one offset (ambiguous ones such as IST or BST are
# read as local time).
ZONES: dict[str, int] = {
    "UTC": 0, "GMT": 0, "Z": 0, "UT": 0,
    "EST": -5 * 3600, "EDT": -4 * 3600, "CST": -6 * 3600, "CDT": -5 * 3600,
    "MST": -7 * 3600, "MDT": -6 * 3600, "PST": -8 * 3600, "PDT": -7 * 3600,
    "CET": 3600, "CEST": 7200, "EET": 7200, "EEST": 3 * 3600, "WET": 0, "WEST": 3600,
    "JST": 9 * 3600, "KST": 9 * 3600, "AEST": 10 * 3600, "AEDT": 11 * 3600,
    "HKT": 8 * 3600, "SGT": 8 * 3600,
}

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
# German and a few other locales' month abbreviations that differ from English
MONTHS.update({"mär": 3, "mai": 5, "okt": 10, "dez": 12, "mrz": 3})

# plausible epoch range for anything an incident saved: 2000-01-01 .. 2100-01-01
EPOCH_MIN, EPOCH_MAX = 946684800.0, 4102444800.0

_EPOCH = re.compile(r"^@?(\d{9,10})(?:[.,](\d{1,9}))?$")
_ISO = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d{1,9}))?)?"
    r"\s*(Z|[+-]\d\d:?\d\d|[+-]\d\d)?$")
# `date`: "Mon Nov 30 15:34:54 UTC 2026", "Mon Nov 30 03:34:54 PM UTC 2026",
# "Mo 30. Nov 15:36:22 UTC 2026", "Mon, 30 Nov 2026 15:36:22 +0000", "Mon 30 Nov 2026 ..."
_TOKENS = re.compile(r"[A-Za-zÄÖÜäöü]+\.?|\d{1,2}:\d\d(?::\d\d)?(?:[.,]\d+)?|[+-]\d{4}|\d+\.?")


def local_epoch(y: int, mo: int, d: int, h: int, mi: int, s: float) -> float | None:
    """Local wall time → epoch (the TZ of this process), None when no calendar holds it."""
    try:
        whole = int(s)
        t = time.mktime((y, mo, d, h, mi, whole, 0, 0, -1))
    except (OverflowError, ValueError):
        return None
    return t + (s - whole)


def zoned_epoch(y: int, mo: int, d: int, h: int, mi: int, s: float, zone: str | None
                ) -> float | None:
    """Wall time with an optional zone (abbreviation or ±hhmm) → epoch seconds."""
    if zone:
        z = zone.upper()
        off: int | None = ZONES.get(z)
        m = re.match(r"^([+-])(\d\d):?(\d\d)$", zone)
        if m:
            off = (1 if m.group(1) == "+" else -1) * (int(m.group(2)) * 3600 +
                                                       int(m.group(3)) * 60)
        if off is not None:
            try:
                whole = int(s)
                base = calendar.timegm((y, mo, d, h, mi, whole, 0, 0, 0))
            except (OverflowError, ValueError):
                return None
            return base + (s - whole) - off
    return local_epoch(y, mo, d, h, mi, s)


def parse_date_line(line: str) -> float | None:
    """Epoch seconds of one line printed by `date` (any of the forms above), else None."""
    text = line.strip()
    if not text or len(text) > 64:
        return None
    m = _EPOCH.match(text)
    if m:
        t = float(m.group(1) + "." + (m.group(2) or "0"))
        return t if EPOCH_MIN <= t <= EPOCH_MAX else None
    m = _ISO.match(text)
    if m:
        y, mo, d, h, mi = (int(m.group(i)) for i in range(1, 6))
        s = float((m.group(6) or "0") + "." + (m.group(7) or "0"))
        zone = m.group(8)
        if zone and len(zone) == 3:  # "+05"
            zone += "00"
        at = zoned_epoch(y, mo, d, h, mi, s, zone)
        return at if at is not None and EPOCH_MIN <= at <= EPOCH_MAX else None
    return _parse_words(text)


def _parse_words(text: str) -> float | None:
    toks = _TOKENS.findall(text)
    month = day = year = None
    clock: str | None = None
    ampm: str | None = None
    zone: str | None = None
    for tok in toks:
        low = tok.rstrip(".").lower()
        if ":" in tok:
            clock = tok
        elif low in ("am", "pm"):
            ampm = low
        elif tok[0] in "+-":
            zone = tok
        elif low[:3] in MONTHS and month is None and len(low) >= 3 and not tok[0].isdigit():
            month = MONTHS[low[:3]]
        elif tok.rstrip(".").isdigit():
            n = int(tok.rstrip("."))
            if n >= 1900:
                year = n
            elif day is None and 1 <= n <= 31:
                day = n
            else:
                return None
        elif tok.isupper() and 1 <= len(tok) <= 5:
            zone = tok
        # weekday names and other words are ignored
    if None in (month, day, year) or clock is None:
        return None
    parts = re.split(r"[:.,]", clock)
    try:
        h, mi = int(parts[0]), int(parts[1])
        s = float(parts[2]) if len(parts) > 2 else 0.0
        if len(parts) > 3:
            s += float("0." + parts[3])
    except (ValueError, IndexError):
        return None
    if ampm:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if ampm == "pm" else 0)
    if not (0 <= h < 24 and 0 <= mi < 60 and 0 <= s < 61):
        return None
    assert month is not None and day is not None and year is not None
    t = zoned_epoch(year, month, day, h, mi, s, zone)
    return t if t is not None and EPOCH_MIN <= t <= EPOCH_MAX else None


def parse_clock(text: str) -> tuple[int, int, int] | None:
    """`15:33:44`, `03:33:44 PM` (12 h), `15:33:44` → (h, m, s); None otherwise."""
    m = re.match(r"^\s*(\d{1,2}):(\d\d):(\d\d)(?:\s*([AaPp][Mm]))?\s*$", text)
    if not m:
        return None
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if m.group(4):
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if m.group(4).lower() == "pm" else 0)
    if h > 23 or mi > 59 or s > 60:
        return None
    return h, mi, s


def parse_day(text: str) -> tuple[int, int, int] | None:
    """A date as sysstat prints it in its header or JSON: `2026-11-30`, `11/30/2026`,
    `11/30/26` (C and en_US %x: month first), `30.11.2026` (de_DE), `30/11/2026` when the
    first number cannot be a month. (year, month, day) or None."""
    s = text.strip()
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)$", s)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    else:
        m = re.match(r"^(\d{1,2})([/.-])(\d{1,2})\2(\d{2}|\d{4})$", s)
        if not m:
            return None
        a, sep, b, y = int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4))
        if y < 100:
            y += 2000 if y < 70 else 1900
        if sep == "." or a > 12:  # day first (de_DE, en_GB when unambiguous)
            d, mo = a, b
        else:
            mo, d = a, b
    if not 1970 <= y < 2100:  # year 0026 (a digit lost) would place samples before 1970
        return None
    try:
        datetime(y, mo, d)
    except ValueError:
        return None
    return y, mo, d
