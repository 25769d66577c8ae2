"""Durations (`90`, `90s`, `2m`, `1h30m`, `1d`, `500ms`) and instants (epoch, ISO 8601, `now`,
`90s ago`), parsed the same way by every command."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from corescope.errors import InvalidInput

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)
# compound: 1h30m, 2m30s, 1d12h (each unit once, largest first)
_COMPOUND = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?"
                       r"(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?\s*$", re.IGNORECASE)
# a bare number this large is an epoch time, not a duration (1973-03-03 onwards)
EPOCH_MIN = 1e8
_AGO = re.compile(r"^\s*(.+?)\s+ago\s*$", re.IGNORECASE)


class TimeParseError(InvalidInput, ValueError):
    """A duration or instant that cannot be read; the message says what was expected."""


def parse_duration(text: str | float | int) -> float:
    """Seconds in `text`; a bare number is seconds."""
    if isinstance(text, int | float):
        if text < 0:
            raise TimeParseError(f"duration must not be negative: {text}")
        return float(text)
    m = _DURATION.match(text)
    if m:
        unit = (m.group(2) or "s").lower()
        return float(m.group(1)) * _UNITS[unit]
    c = _COMPOUND.match(text)
    if c and any(c.groups()):
        return sum(float(v) * mult for v, mult in zip(
            c.groups(), (86400.0, 3600.0, 60.0, 1.0, 0.001), strict=True) if v)
    raise TimeParseError(
        f"not a duration: {text!r} (expected e.g. 90, 90s, 2m, 1h30m, 1d or 500ms)"
    )


def parse_instant(text: str, now: float | None = None) -> float:
    """UTC epoch seconds for epoch seconds, ISO 8601, `now`, or `<duration> ago`."""
    now = time.time() if now is None else now
    t = text.strip()
    if t.lower() == "now":
        return now
    m = _AGO.match(t)
    if m:
        return now - parse_duration(m.group(1))
    try:
        return float(t)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError as exc:
        raise TimeParseError(
            f"not a time: {text!r} (expected epoch seconds, ISO 8601, 'now' or '90s ago')"
        ) from exc
    # without an offset it is local time, as journalctl --since reads it
    return dt.timestamp()


def parse_since(text: str, now: float | None = None) -> float:
    """A window edge: an instant (epoch, ISO 8601, `now`, `90s ago`) or, as the older
    `--since 1h` form, a plain duration meaning that long ago. A bare number is a duration
    unless it is large enough to be an epoch time (>= 1e8, 1973)."""
    now = time.time() if now is None else now
    t = text.strip()
    try:
        value = float(t)
    except ValueError:
        value = None
    if value is not None:
        if value >= EPOCH_MIN:
            return value
        return now - parse_duration(t)
    try:
        return now - parse_duration(t)
    except TimeParseError:
        pass
    try:
        return parse_instant(t, now)
    except TimeParseError as exc:
        raise TimeParseError(
            f"not a time: {text!r} (expected epoch seconds, ISO 8601, 'now', '90s ago' or a "
            "duration such as 1h meaning that long ago)") from exc


def format_duration(seconds: float) -> str:
    """Short human form that parse_duration reads back: 500ms, 45s, 2m30s, 1h30m, 2d4h."""
    if 0 < seconds < 1:
        return f"{round(seconds * 1000)}ms"
    s = round(seconds)
    if s < 120:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m" + (f"{s % 60}s" if s % 60 else "")
    if s < 2 * 86400:
        return f"{s // 3600}h" + (f"{(s % 3600) // 60}m" if s % 3600 >= 60 else "")
    return f"{s // 86400}d" + (f"{(s % 86400) // 3600}h" if s % 86400 >= 3600 else "")


def iso(ts: float) -> str:
    """UTC ISO 8601 with second precision, for terminal output. A time no calendar holds
    (garbage in a saved log) is shown as the number rather than raising."""
    try:
        return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return f"@{ts!r}"
