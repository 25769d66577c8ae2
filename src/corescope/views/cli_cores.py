"""`corescope cores`: per-core heatmap and hot-core episodes from the store."""

from __future__ import annotations

import sys
import time

import click

from corescope.analysis.episodes import (
    DEFAULT_MIN_DURATION,
    DEFAULT_MODE,
    DEFAULT_THRESHOLD,
    EPISODE_MODES,
    find_episodes,
)
from corescope.store.series import read_samples, time_span
from corescope.views import coremap, term
from corescope.views.clitypes import DURATION, CliContext, emit_json, open_store_or_fail


def episode_options(f):  # type: ignore[no-untyped-def]
    """--threshold/--min-duration/--mode, shared by every command that finds episodes."""
    f = click.option("--mode", type=click.Choice(EPISODE_MODES), default=DEFAULT_MODE,
                     show_default=True,
                     help="Which time counts: kernel = sys+irq+soft; busy; user; or one mode.")(f)
    f = click.option("--min-duration", type=DURATION, default=DEFAULT_MIN_DURATION,
                     show_default=True, help="Shortest episode.")(f)
    f = click.option("--threshold", type=click.FloatRange(0, 100), default=DEFAULT_THRESHOLD,
                     show_default=True, help="Episode threshold, % of one core.")(f)
    return f


@click.command()
@click.option("--last", type=DURATION, default="10m", show_default=True,
              help="How far back to look.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@episode_options
@click.pass_obj
def cores(obj: CliContext, last: float, as_json: bool, threshold: float, min_duration: float,
          mode: str) -> None:
    """Per-core heatmap of the recent record, and the hot-core episodes in it."""
    store = open_store_or_fail(obj)
    # a stopped or replayed record is read back from its own end, not from now
    end = time.time()
    span = time_span(store)
    if span and span[1] < end - last:
        end = span[1]
    samples = read_samples(store, end - last, end)
    episodes = find_episodes(samples, threshold, min_duration, mode)
    cpus = sorted({c for s in samples for c in s.deltas})
    if as_json:
        emit_json({
            "cpus": cpus,
            "interval_s": round(_median([s.interval_s for s in samples]), 3) if samples else None,
            "start": round(samples[0].t - samples[0].interval_s, 3) if samples else None,
            "end": round(samples[-1].t, 3) if samples else None,
            "samples": len(samples),
            "mode": mode,
            "threshold_pct": threshold,
            "episodes": [e.to_json() for e in episodes],
        })
        return
    color = term.use_color(sys.stdout)
    click.echo(coremap.render(samples, episodes, mode, coremap.terminal_width(), color))


def _median(values: list[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(cores)
