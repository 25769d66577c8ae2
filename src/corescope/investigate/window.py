"""Choosing an investigation's window from --since/--until/--last (or --at/--before/--after)
and what the record covers."""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class Around:
    """A window as a moment and how far it reaches either side (--at/--before/--after, the
    flame commands' form), or what --since/--until/--last say in those terms."""

    at: float | None  # None: now, or the --event's time
    before: float
    after: float
    explicit: bool  # a window was asked for, not only the defaults
    from_end: bool = False  # --last: on a record that ended earlier, count back from its end


def around(now: float, *, since: float | None, until: float | None, last: float | None,
           at: float | None, event: bool, before: float, after: float,
           explicit: bool) -> Around:
    """--since/--until/--last as the (at, before, after) they mean; --at/--before/--after
    (`event`: a stored event gives --at) as they are. `explicit`: --before or --after was
    given (or something else that needs a window, like a baseline)."""
    if last is not None:
        if since is not None:
            raise WindowError("give --since or --last, not both")
        if at is not None or event:
            raise WindowError("--last counts back from --until or now: with --at or --event "
                              "use --before")
        return Around(until, last, 0.0, True, from_end=True)
    if since is None and until is None:
        if before + after <= 0:
            raise WindowError("--before 0 with --after 0 is a window of no time: give one of "
                              "them a length")
        return Around(at, before, after, explicit)
    if at is not None or event:
        raise WindowError("--since/--until give the window themselves: drop --at and --event")
    end = until if until is not None else now
    start = since if since is not None else end - before
    if start > end:
        raise WindowError("the window ends before it starts (--since is after --until)")
    return Around(end, end - start, 0.0, True)
