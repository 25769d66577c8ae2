"""`corescope capture`: a window of the store → one bundle of plain, documented files."""

from __future__ import annotations

from pathlib import Path

import click

from corescope.analysis.correlate import DEFAULT_WINDOW_S
from corescope.capture.export import collect, write_bundle
from corescope.investigate.model import Window
from corescope.investigate.window import DEFAULT_LAST_S
from corescope.render import term
from corescope.timeparse import format_duration, iso
from corescope.views.clitypes import (
    DURATION,
    CliContext,
    fail,
)
from corescope.views.investigation_cli import store_evidence_or_fail
from corescope.views.windows import window_options, window_or_fail


@click.command()
@click.option("--event", "event_id", type=int, default=None,
              help="Capture around this event: --before it and --after it.")
@click.option("--before", type=DURATION, default="2m", show_default=True,
              help="With --event: how much before the event.")
@click.option("--after", type=DURATION, default="30s", show_default=True,
              help="With --event: how much after the event.")
@window_options(DEFAULT_LAST_S, "Without --event: how much to capture.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The bundle: .tar.zst, .tar.gz or .tar (written 0600).")
@click.pass_obj
def capture(obj: CliContext, event_id: int | None, before: float, after: float,
            since: float | None, until: float | None, last: float | None,
            output: Path) -> None:
    """Write a window of the store as one bundle of plain files (mpstat-compatible JSON,
    dmesg ISO, the census loop, perf script text, and exact NDJSON beside them, with a
    manifest), to hand to a colleague or to `corescope analyze` on another machine."""
    if event_id is not None and before + after <= 0:
        fail("--before 0 with --after 0 is a window of no time: give one of them a length")
    ev = store_evidence_or_fail(obj)
    try:
        if event_id is not None:
            e = ev.event(event_id)
            if e is None:
                fail(f"no event with id {event_id} in {obj.store_dir}")
            window = Window(e.time - before, e.time + after)
        else:
            window = window_or_fail(ev.coverage(), since, until, last)
        bundle = collect(ev, window, DEFAULT_WINDOW_S)
        try:
            size = write_bundle(bundle, output)
        except OSError as exc:
            fail(f"cannot write {output}: {exc.strerror or exc}")
    finally:
        ev.close()
    term.echo(f"wrote {output} ({size / 1e6:.1f} MB): {iso(window.start)} – {iso(window.end)} "
              f"({format_duration(window.seconds)}), " + ", ".join(
                  f"{f.name} {f.records}" for f in bundle.files if f.copy_of is None))


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(capture)
