"""Choosing an investigation's window from --since/--until/--last and what the record covers."""

from __future__ import annotations

from corescope.errors import InvalidInput
from corescope.evidence.base import Coverage
from corescope.investigate.model import Window
from corescope.timeparse import iso

# A window may reach this far past the evidence unchanged (the default hour on a recording
# just started, a margin around an incident); beyond it the window is clipped to what the
# evidence covers, so per-second arrays and per-minute flames grow with the data, never with
# the request (`--since 0 --until 2100` on a ten-minute store).
SLACK_S = 3600.0


# A window whose end is within this of now is about the node as it is: the live node joins the
# store's evidence (doctor, diagnose, zombies); one that ended earlier is history.
NOW_SLACK_S = 60.0

# How far back a window reaches when neither --since nor --last says (the one default every
# command without its own uses: --help shows it from here)
DEFAULT_LAST_S = 3600.0


def reaches_now(until: float | None, now: float) -> bool:
    """Whether a window ending at `until` (None: now) is about the node as it is now."""
    return until is None or until >= now - NOW_SLACK_S


class WindowError(InvalidInput, ValueError):
    """A window that cannot be: the message says why."""


def resolve_window(now: float, *, since: float | None = None, until: float | None = None,
                   last: float | None = None, default_last: float = DEFAULT_LAST_S,
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
    return clip_to_coverage(Window(since, until), coverage)


def clip_to_coverage(window: Window, coverage: Coverage | None) -> Window:
    """`window`, with each edge that lies more than SLACK_S beyond what `coverage` reaches
    moved to the coverage's edge; a window that covers nothing recorded keeps its start and
    no length. Without coverage (nothing recorded) the window is kept."""
    lo = coverage.start if coverage is not None else None
    hi = coverage.end if coverage is not None else None
    if lo is None or hi is None:
        return window
    start, end = window.start, window.end
    if start < lo - SLACK_S:
        start = lo
    if end > hi + SLACK_S:
        end = hi
    if (start, end) == (window.start, window.end):
        return window
    if end < start:  # the window lies wholly beyond the record: nothing of it is covered
        end = start = min(max(window.start, lo), window.end)
    return Window(start, end, (window.start, window.end))


def clipped_note(window: Window, coverage: Coverage | None) -> str | None:
    """What a clipped window says to the user (None when the window was not clipped)."""
    if window.asked is None or coverage is None or coverage.start is None \
            or coverage.end is None:
        return None
    a, b = window.asked
    if window.start == window.end:
        return (f"nothing recorded in the window {iso(a)} – {iso(b)}: the record covers "
                f"{iso(coverage.start)} – {iso(coverage.end)}")
    return (f"the window {iso(a)} – {iso(b)} reaches far past the record "
            f"({iso(coverage.start)} – {iso(coverage.end)}): clipped to "
            f"{iso(window.start)} – {iso(window.end)}")
