"""`corescope events` and `corescope report`."""

from __future__ import annotations

from pathlib import Path

import click

from corescope.analysis.correlate import DEFAULT_WINDOW_S
from corescope.investigate import Window, investigate
from corescope.investigate.build import Options
from corescope.investigate.window import DEFAULT_LAST_S
from corescope.model.events import KINDS
from corescope.render.json_contract import events_json, report_json, visible_events
from corescope.timeparse import format_duration
from corescope.views.clitypes import (
    EXIT_FINDINGS,
    EXIT_OK,
    POSITIVE_DURATION,
    CliContext,
    emit_json,
    fail,
    json_option,
)
from corescope.views.windows import window_options, window_or_fail


@click.command()
@window_options(DEFAULT_LAST_S, "How far back to look (the store: "
                f"{format_duration(DEFAULT_LAST_S)}; --file: everything).")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS),
              help="Only these kinds (repeatable).")
@click.option("--all", "show_all", is_flag=True,
              help="Include unclassified lines (kind 'other'), which are kept, never dropped.")
@click.option("--file", "file_", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Read a saved `dmesg` log or `journalctl -k -o json` export instead of "
                   "the store.")
@json_option()
@click.pass_obj
def events(obj: CliContext, since: float | None, until: float | None, last: float | None,
           kinds: tuple[str, ...], show_all: bool, file_: Path | None, as_json: bool) -> None:
    """Kernel events: NIC stalls and resets, lockups, RCU stalls, hung tasks, OOM kills,
    hardware errors, link changes.

    Exit 0 when no incident line is shown, 1 when one is, 2 on a usage error."""
    extra: dict = {}
    if file_ is not None:
        from corescope.evidence.open import log_evidence

        log = log_evidence(file_)
        ev, diags, clock = log.evidence, [str(d) for d in log.diagnostics[:50]], log.clock
        cov = ev.coverage()
        if since is None and until is None and last is None:  # the whole file
            window = Window(cov.events.start, cov.events.end) if cov.events \
                else Window(0.0, 0.0)
        else:
            window = window_or_fail(cov, since, until, last)
        inv = investigate(ev, window, Options(event_budget=None), parts=())
        extra = {"source": str(file_), "clock": clock, "diagnostics": diags}
    else:
        from corescope.views.investigation_cli import store_investigation

        inv = store_investigation(obj, since, until, last, DEFAULT_LAST_S, parts=(),
                                  options=Options(event_budget=None), hint="or use --file")
    shown = visible_events(inv, kinds, show_all)
    if as_json:
        emit_json({**events_json(inv, kinds, show_all), **extra})
    else:
        from corescope.render.text import print_events

        print_events(shown, inv.lost_records, bool(show_all or kinds))
    raise SystemExit(EXIT_FINDINGS if any(e.is_incident for e in shown) else EXIT_OK)


@click.command()
@click.option("--event", "event_id", type=int, default=None, help="One event, by its id.")
@window_options(DEFAULT_LAST_S, "All incidents in this much time.")
@click.option("--window", type=POSITIVE_DURATION, default=f"{DEFAULT_WINDOW_S:g}s",
              show_default=True,
              help="How far before each event to look for hot-core episodes.")
@json_option()
@click.option("--html", "as_html", is_flag=True,
              help="Write the incident page: one self-contained offline HTML file (-o).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The file --html writes.")
@click.pass_obj
def report(obj: CliContext, event_id: int | None, since: float | None, until: float | None,
           last: float | None, window: float, as_json: bool, as_html: bool,
           output: Path | None) -> None:
    """The incident timeline: each event, the hot-core episodes before it, the NIC interrupt
    map, and the same seconds at 1 s, 30 s and 60 s resolution.

    Exit 0 when no incident is found, 1 when there are incidents."""
    # the store and the per-core analysis (numpy) load here, not for `events --file`
    from corescope.views.investigation_cli import store_evidence_or_fail, store_investigation

    opts = Options(correlation_window_s=window)
    if event_id is not None:
        stored = store_evidence_or_fail(obj)
        ev = stored.event(event_id)
        stored.close()
        if ev is None:
            fail(f"no event with id {event_id} in {obj.store_dir}")
        opts = Options(correlation_window_s=window, focus_event=ev)
        since, until, last = ev.time - window, ev.time + 1, None
    if as_html:
        if output is None or as_json:
            fail("--html writes a file: give -o FILE (and no --json)")
        from corescope.views.report_pages import store_html_report

        inv = store_html_report(obj, since, until, last, opts, output)
        raise SystemExit(EXIT_FINDINGS if inv.incidents else EXIT_OK)
    if output is not None:
        fail("-o goes with --html")
    inv = store_investigation(obj, since, until, last, DEFAULT_LAST_S, options=opts)
    if as_json:
        emit_json(report_json(inv))
    else:
        from corescope.render.text import print_timeline

        print_timeline(inv)
    raise SystemExit(EXIT_FINDINGS if inv.incidents else EXIT_OK)


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(events)
    cli.add_command(report)
