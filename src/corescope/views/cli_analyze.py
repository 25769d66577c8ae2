"""`corescope analyze PATH...`: saved incident artifacts → a store → the investigation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from corescope.evidence.open import open_store, scratch_store
from corescope.evidence.store import StoreEvidence
from corescope.investigate import Investigation, investigate
from corescope.investigate.build import Options
from corescope.render import term
from corescope.render.json_contract import investigation_json
from corescope.render.text import print_investigation
from corescope.store.db import Store
from corescope.store.meta import ORIGIN, capture_window, get_meta, set_meta
from corescope.store.series import time_span
from corescope.timeparse import format_duration, iso
from corescope.views.clitypes import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    CliContext,
    emit_json,
    fail,
    json_option,
)
from corescope.views.windows import UNTIL, window_options, window_or_fail


@contextmanager
def analysis_store(obj: CliContext) -> Iterator[Store]:
    """The store an analysis imports into: --store DIR (kept), or a private temporary one
    (deleted afterwards). A store that holds a live recording is never mixed with another
    node's artifacts. A store that cannot be opened is a StoreError, said by the CLI."""
    if obj.store_given:
        store = open_store(obj.store_dir, create=True)
        if get_meta(store, ORIGIN) != "analyze" and time_span(store) is not None:
            store.close()
            fail(f"{obj.store_dir} holds a live recording; analyze into another --store "
                 "(artifacts of another node must not mix with this one's record)")
        set_meta(store, ORIGIN, "analyze")
        try:
            yield store
        finally:
            store.close()
        return
    with scratch_store("corescope-analyze-") as store:
        set_meta(store, ORIGIN, "analyze")
        yield store


def import_and_investigate(obj: CliContext, paths: tuple[Path, ...], boot_time: float | None,
                           since: float | None, until: float | None, last: float | None,
                           store: Store, options: Options | None = None
                           ) -> tuple[Any, Investigation | None]:
    from corescope.ingest import import_paths

    report = import_paths(list(paths), store, boot_time=boot_time)
    ev = StoreEvidence(store, obj.runner)
    cov = ev.coverage()
    if cov.end is None:
        return report, None
    if since is None and until is None and last is None:
        # a capture bundle: its own window; else everything imported (a kernel log reaching
        # back before the per-core record must not fall out of the window: its resets are
        # the question)
        since, until = capture_window(store) or (cov.start, cov.end)
    return report, investigate(ev, window_or_fail(cov, since, until, last), options)


def print_files(report: Any) -> None:
    for f in report.files:
        if f.status == "skipped":
            term.echo(f"skipped      {f.path}: {f.reason}")
            continue
        span = (f"{iso(f.span[0])} – {iso(f.span[1])} ({format_duration(f.span[1] - f.span[0])})"
                if f.span else "no time span")
        cpus = f", {len(f.cpus)} CPUs" if f.cpus else ""
        # an imported file's reason says what was read differently (a CPU unknown, lines
        # skipped that are not records): shown too, without a status
        note = (f" [{f.status}: {f.reason}]" if f.status != "imported" else f" [{f.reason}]"
                ) if f.reason else ""
        term.echo(f"{f.kind:<16} {f.records:>7} records  {span}{cpus}  {f.path}{note}")
    if report.boot_time is not None:
        term.echo(f"boot time {iso(report.boot_time)} from {report.boot_time_how}")
    for n in report.notes:
        term.echo(f"note: {n}")


@click.command()
@click.argument("paths", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--boot-time", type=UNTIL, default=None,
              help="When the node booted (epoch or ISO 8601), to place boot-relative "
              "timestamps (dmesg, perf's default clock) when no artifact says.")
@window_options(None, "Only this much of the imported record, counted back from its end.")
@json_option()
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path),
              default=None, metavar="FILE",
              help="Also write the incident page (as `report --html`) to FILE.")
@click.pass_obj
def analyze(obj: CliContext, paths: tuple[Path, ...], boot_time: float | None,
            since: float | None, until: float | None, last: float | None,
            as_json: bool, html_out: Path | None) -> None:
    """Investigate artifacts saved from a node: mpstat / sadf JSON or text, /proc/stat and
    /proc/interrupts loops, dmesg and journal exports, perf script chunks, census loops,
    systemctl / crictl / docker dumps, or a `corescope capture` bundle. PATH is a file, a
    directory (read recursively) or a .tar/.tar.gz/.tar.zst bundle; each file's kind is
    read from its content.

    With --store DIR the imported store is kept and every command works on it. Exit 0 when
    healthy, 1 with findings, 2 when nothing could be imported."""
    with analysis_store(obj) as store:
        report, inv = import_and_investigate(obj, paths, boot_time, since, until, last, store)
        if inv is not None and html_out is not None:
            from corescope.views.report_pages import write_html_report

            size = write_html_report(StoreEvidence(store, obj.runner), inv, html_out)
            term.echo(f"corescope: wrote {html_out} ({size / 1e6:.2f} MB)", err=True)
    if inv is None:
        if as_json:
            emit_json({"schema": 1, "import": report.to_json(), "investigation": None})
        else:
            print_files(report)
            term.echo("nothing with a time could be imported: no investigation", err=True)
        raise SystemExit(EXIT_USAGE)
    if as_json:
        emit_json({"schema": 1, "import": report.to_json(),
                   "investigation": investigation_json(inv)})
    else:
        print_files(report)
        term.echo("")
        print_investigation(inv)
    raise SystemExit(EXIT_FINDINGS if inv.findings else EXIT_OK)


def register(cli: click.Group, lab: click.Group) -> None:
    cli.add_command(analyze)
