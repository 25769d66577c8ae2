"""`corescope cores`: per-core heatmap and hot-core episodes from the store."""

from __future__ import annotations

import click

from corescope.analysis.episodes import (
    DEFAULT_MIN_DURATION,
    DEFAULT_MODE,
    DEFAULT_THRESHOLD,
    EPISODE_MODES,
)
from corescope.investigate.build import Options
from corescope.investigate.model import EpisodeParams
from corescope.render import term
from corescope.render.json_contract import cores_json
from corescope.views import coremap
from corescope.views.clitypes import (
    DURATION,
    EXIT_FINDINGS,
    EXIT_OK,
    CliContext,
    FiniteFloatRange,
    emit_json,
    json_option,
)
from corescope.views.investigation_cli import store_investigation
from corescope.views.windows import window_options

WINDOW_S = 600.0  # the recent record: --last's default


def episode_options(f):  # type: ignore[no-untyped-def]
    """--threshold/--min-duration/--mode, shared by every command that finds episodes."""
    f = click.option("--mode", type=click.Choice(EPISODE_MODES), default=DEFAULT_MODE,
                     show_default=True,
                     help="Which time counts: kernel = sys+irq+soft; busy; user; or one mode.")(f)
    f = click.option("--min-duration", type=DURATION, default=DEFAULT_MIN_DURATION,
                     show_default=True, help="Shortest episode.")(f)
    f = click.option("--threshold", type=FiniteFloatRange(0, 100), default=DEFAULT_THRESHOLD,
                     show_default=True, help="Episode threshold, % of one core.")(f)
    return f


@click.command()
@window_options(WINDOW_S)
@json_option()
@episode_options
@click.pass_obj
def cores(obj: CliContext, since: float | None, until: float | None, last: float | None,
          as_json: bool, threshold: float, min_duration: float, mode: str) -> None:
    """Per-core heatmap of the recorded window, and the hot-core episodes in it.

    Exit 0 when no core was saturated, 1 with hot-core episodes, 2 on a usage error."""
    opts = Options(params=EpisodeParams(mode, threshold, min_duration))
    inv = store_investigation(obj, since, until, last, WINDOW_S, options=opts, parts=())
    if as_json:
        emit_json(cores_json(inv))
    else:
        color = term.use_color()
        click.echo(coremap.render(inv.samples, inv.episodes, mode, coremap.terminal_width(),
                                  color))
    raise SystemExit(EXIT_FINDINGS if inv.episodes else EXIT_OK)


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(cores)
