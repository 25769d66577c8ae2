"""`corescope doctor`: a one-shot check of this node (or of an analyzed store)."""

from __future__ import annotations

import time

import click

from corescope.investigate import Window, investigate
from corescope.investigate.window import DEFAULT_LAST_S, WindowError, reaches_now
from corescope.render.json_contract import doctor_json
from corescope.render.text import print_doctor
from corescope.sources.identity import cpu_count, hostname_of
from corescope.views.clitypes import (
    DURATION,
    EXIT_FINDINGS,
    EXIT_OK,
    CliContext,
    emit_json,
    fail,
    json_option,
)
from corescope.views.investigation_cli import node_evidence
from corescope.views.windows import SINCE, UNTIL, window_or_fail


@click.command()
@click.option("--seconds", type=DURATION, default="10", show_default=True,
              help="How long to sample every core live.")
@click.option("--since", type=SINCE, default=None,
              help="Oldest stored data to look at: epoch, ISO 8601, '90s ago', or a duration "
              "meaning that long ago. [default: 1h]")
@click.option("--until", type=UNTIL, default=None,
              help="Newest stored data to look at (an analyzed store: its end). [default: now]")
@json_option()
@click.pass_obj
def doctor(obj: CliContext, seconds: float, since: float | None, until: float | None,
           as_json: bool) -> None:
    """Check this node now: sample every core live, read the store, report findings.

    On a store built by `analyze`, or with --until in the past, check that record instead
    (no live sampling: the live node is another machine, or has moved on). Exit 0 when
    healthy, 1 with findings, 2 on a usage or environment error."""
    if seconds < 1:
        fail("--seconds must be at least 1")
    # a window that ended in the past is about the record, not the node as it is now
    now = reaches_now(until, time.time())
    ev, extra = node_evidence(obj, sample_seconds=seconds if now else 0.0, kernel_ring=now,
                              now=now)
    live = getattr(ev, "live", ev)
    sampled = getattr(live, "sampled", None)
    try:
        if sampled is not None:
            end = sampled[1] if until is None else until
            window = Window(since if since is not None else end - DEFAULT_LAST_S, end)
            if window.start > window.end:
                raise WindowError("--since is after the end of the live sample")
        else:  # an analyzed store: its own record, counted back from its end
            window = window_or_fail(ev.coverage(), since, until, None)
    except WindowError as exc:
        fail(str(exc))
    inv = investigate(ev, window)
    ev.close()
    inv.statuses[:0] = extra
    live_span = sampled if sampled is not None else (window.start, window.end)
    host = hostname_of(obj.root)  # a --root tree's own name, never this machine's
    if as_json:
        emit_json(doctor_json(inv, host, live_span))
    else:
        print_doctor(inv, host, cpu_count(obj.root), seconds if sampled is not None else 0.0)
    raise SystemExit(EXIT_FINDINGS if inv.findings else EXIT_OK)


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(doctor)
