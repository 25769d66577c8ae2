"""Choosing an investigation's window from --since/--until/--last and what the record covers."""

from __future__ import annotations

from corescope.errors import InvalidInput
from corescope.evidence.base import Coverage
from corescope.investigate.model import Window


class WindowError(InvalidInput, ValueError):
    """A window that cannot be: the message says why."""


def resolve_window(now: float, *, since: float | None = None, until: float | None = None,
                   last: float | None = None, default_last: float = 3600.0,
                   coverage: Coverage | None = None) -> Window:
    """`--since/--until` are absolute. `--last D` counts back from `--until`, or from now;
    on a record that ended before that window would begin (analyzed data, a recorder
    stopped long ago) it counts back from the record's end, so old evidence is not an empty
    window."""
    if since is not None and last is not None:
        raise WindowError("give --since or --last, not both")
    back = last if last is not None else default_last
    if until is None:
        until = now
        end = coverage.end if coverage is not None else None
        if since is None and end is not None and end < now - back:
            until = end
    if since is None:
        # never before 1970: an unanchored record (perf's seconds since boot, stored from
        # the epoch) is younger than the default hour
        since = max(0.0, until - back) if until >= 0 else until - back
    if since > until:
        raise WindowError("the window ends before it starts (--since is after --until)")
    return Window(since, until)
