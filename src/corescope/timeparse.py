"""Durations (`90`, `90s`, `2m`, `12h`, `1d`, `500ms`) and instants (epoch, ISO 8601, `now`,
`90s ago`), parsed the same way by every command."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)
_AGO = re.compile(r"^\s*(.+?)\s+ago\s*$", re.IGNORECASE)


class TimeParseError(ValueError):
    """A duration or instant that cannot be read; the message says what was expected."""


def parse_duration(text: str | float | int) -> float:
    """Seconds in `text`; a bare number is seconds."""
    if isinstance(text, int | float):
        if text < 0:
            raise TimeParseError(f"duration must not be negative: {text}")
        return float(text)
    m = _DURATION.match(text)
    if not m:
        raise TimeParseError(
            f"not a duration: {text!r} (expected e.g. 90, 90s, 2m, 12h, 1d or 500ms)"
        )
    unit = (m.group(2) or "s").lower()
    return float(m.group(1)) * _UNITS[unit]


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
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def format_duration(seconds: float) -> str:
    """Short human form: 45s, 2m, 1h30m."""
    s = round(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m" + (f"{s % 60}s" if s % 60 else "")
    return f"{s // 3600}h" + (f"{(s % 3600) // 60}m" if s % 3600 else "")


def iso(ts: float) -> str:
    """UTC ISO 8601 with second precision, for terminal output. A time no calendar holds
    (garbage in a saved log) is shown as the number rather than raising."""
    try:
        return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, ValueError, OSError):
        return f"@{ts!r}"
