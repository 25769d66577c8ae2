"""The window options every investigating command shares (--since/--until/--last) and
turning them into one Window, or a clear usage error."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import click

from corescope.evidence.base import Coverage
from corescope.investigate.model import Window
from corescope.investigate.window import (
    DEFAULT_LAST_S,
    WindowError,
    clipped_note,
    resolve_window,
)
from corescope.timeparse import format_duration, parse_instant, parse_since
from corescope.views.clitypes import POSITIVE_DURATION, TimeValue, fail

SINCE = TimeValue("time", parse_since, instant=True)
UNTIL = TimeValue("time", parse_instant, instant=True)


def window_options(default_last: float | None = DEFAULT_LAST_S,
                   last_help: str = "How far back to look.") -> Callable[[Any], Any]:
    """--since T, --until T (epoch, ISO 8601 in local time without an offset, `90s ago`;
    --since also takes a plain duration meaning that long ago) and --last D. `default_last`
    is the value the command resolves its window with (None: all of the record), so the
    help shows what the command does."""
    shown = "all" if default_last is None else format_duration(default_last)

    def deco(f: Any) -> Any:
        f = click.option("--last", type=POSITIVE_DURATION, default=None,
                         help=f"{last_help} Counts back from --until or now; on a record that "
                         f"ended earlier, from its end. [default: {shown}]")(f)
        f = click.option("--until", type=UNTIL, default=None,
                         help="Window end: epoch, ISO 8601 (local time without an offset), "
                         "or '90s ago'. [default: now]")(f)
        f = click.option("--since", type=SINCE, default=None,
                         help="Window start: epoch, ISO 8601, '90s ago', or a duration "
                         "meaning that long ago (1h).")(f)
        return f
    return deco


def window_or_fail(coverage: Coverage | None, since: float | None, until: float | None,
                   last: float | None, default_last: float = DEFAULT_LAST_S) -> Window:
    """resolve_window, or exit 2 with its reason. The newest second may still be arriving
    (an event just written), so "now" is a second ahead. A window clipped to the record is
    said on stderr."""
    try:
        window = resolve_window(time.time() + 1.0, since=since, until=until, last=last,
                                default_last=default_last, coverage=coverage)
    except WindowError as exc:
        fail(str(exc))
    note = clipped_note(window, coverage)
    if note is not None:
        click.echo(f"corescope: {note}", err=True)
    return window
