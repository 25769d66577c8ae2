"""The window and input options `flame` and `heatmap` share, declared once, and what they
mean: the window as investigate.window.around takes it, the input files."""

from __future__ import annotations

import time
from typing import Any

import click
from click.core import ParameterSource

from corescope.investigate.window import Around, around
from corescope.views.clitypes import DURATION, INSTANT, POSITIVE_DURATION, fail
from corescope.views.windows import SINCE, UNTIL


def window_options(f: Any) -> Any:
    opts = [
        click.option("--event", "event", default=None, metavar="ID|NAME",
                     help="ID (a number): a stored kernel event, whose time is --at. NAME: "
                          "the perf event to draw (`cycles`, `cpu-clock`); one event per "
                          "graph, the first one in the input unless named."),
        click.option("--at", "at", type=INSTANT, default=None,
                     help="End of the window: epoch, ISO 8601, 'now', '90s ago' [now]."),
        click.option("--before", type=DURATION, default="120s", show_default=True,
                     help="Window length before --at."),
        click.option("--after", type=DURATION, default="0s", show_default=True,
                     help="Window length after --at."),
        click.option("--since", type=SINCE, default=None,
                     help="Window start, instead of --at/--before: epoch, ISO 8601 (local "
                          "time without an offset), '90s ago', or a duration meaning that "
                          "long ago."),
        click.option("--until", type=UNTIL, default=None,
                     help="Window end, with --since or --last [now]."),
        click.option("--last", type=POSITIVE_DURATION, default=None,
                     help="Window length counted back from --until or now (on a record that "
                          "ended earlier, from its end), instead of --at/--before."),
        click.option("--cpu", type=click.IntRange(min=0), default=None,
                     help="Only this CPU."),
        click.option("--pid", type=click.IntRange(min=0), default=None,
                     help="Only this process (or thread)."),
        click.option("--comm", default=None, help="Only this process name."),
        click.option("--perf-script", "perf_scripts", multiple=True,
                     type=click.Path(exists=True, allow_dash=True),
                     help="Read saved `perf script` output or folded stacks instead of the "
                          "store: files, folders of chunks, or - for stdin (plain, .gz, "
                          ".zst); repeatable, and more paths may follow it."),
        click.option("--boot-time", type=INSTANT, default=None,
                     help="With --perf-script: the boot's wall time, to place perf's "
                          "boot-relative timestamps on the wall clock."),
        click.argument("more_inputs", nargs=-1, metavar="[FILE]...",
                       type=click.Path(exists=True, allow_dash=True)),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def perf_event_name(event: str | None) -> str | None:
    """--event's value when it names a perf event rather than a stored kernel event (an
    id is a number; no perf event name is all digits)."""
    if event is None or event.strip().isdigit():
        return None
    return event.strip()


def window_asked(since: float | None, until: float | None, last: float | None,
                 at: float | None, event: str | None, before: float, after: float,
                 needs_window: bool = False) -> Around:
    """The window options as one Around. `needs_window`: something besides --before and
    --after asks for a window (--diff)."""
    return around(time.time(), since=since, until=until, last=last, at=at,
                  event=event is not None, before=before, after=after,
                  explicit=explicit("before", "after") or needs_window)


def inputs(perf_scripts: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    """--perf-script paths plus any that follow it (`--perf-script chunks/*.txt`)."""
    if more and not perf_scripts:
        fail(f"unexpected argument {more[0]!r} (input files follow --perf-script)")
    return perf_scripts + more


def explicit(*names: str) -> bool:
    """Whether the user gave any of these options (not just their defaults)."""
    ctx = click.get_current_context()
    return any(ctx.get_parameter_source(n) not in (None, ParameterSource.DEFAULT)
               for n in names)
