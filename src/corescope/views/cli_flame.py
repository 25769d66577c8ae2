"""`corescope flame` and `corescope heatmap`: time travel over the profile ring, per CPU,
against a baseline. The options are turned into a window and filters, the investigation's
flame view (investigate/flame.py) reads them, and the format asked for renders it. The
stacks come from the profile source evidence.open chooses for the inputs: the store's ring,
or saved `perf script` files (--perf-script) imported into a temporary ring that the same
query reads, so windows, --event and --diff work on them too."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from corescope.analysis.flame import WEIGHTS
from corescope.evidence import open as open_evidence
from corescope.investigate.flame import (
    FlameFilters,
    flame_view,
    resolve_flame_window,
    window_heatmap,
)
from corescope.model.common import JSON_SCHEMA, Diagnostic
from corescope.views.clitypes import (
    DURATION,
    CliContext,
    emit_json,
    fail,
    json_option,
    load_modules,
)
from corescope.views.flame_options import inputs, perf_event_name, window_asked, window_options
from corescope.views.flame_output import (
    FORMATS,
    RENDERERS,
    Progress,
    emit_flame,
    sample_outputs,
)

if TYPE_CHECKING:
    from corescope.evidence.base import Evidence
    from corescope.evidence.profiles import RingProfiles


def _load(paths: tuple[str, ...], *more: str) -> None:
    """What this run needs besides the command itself: only now do the options say."""
    load_modules(*open_evidence.profile_modules(paths), *more)


def _events_of(obj: CliContext, src: RingProfiles) -> Callable[[], Evidence]:
    """The Evidence --event ID reads, opened only if it is asked for."""
    return lambda: open_evidence.ring_events(obj.store_dir, obj.runner, src)


def _say_events(drawn: str | None, present: dict[str, int]) -> None:
    if len(present) > 1:
        click.echo(f"corescope: the input holds {len(present)} perf events; drawing the "
                   f"first, {drawn} (--event NAME for another: "
                   f"{', '.join(sorted(set(present) - {drawn}))})", err=True)


def _fold_whole(paths: tuple[str, ...], filters: FlameFilters, output: Path | None,
                with_pid: bool) -> bool:
    """Folded stacks of whole saved input, folded as it is parsed (evidence.perf_fold): the
    general road's answer without its temporary ring. False where that road must answer."""
    from corescope.analysis.flame_report import FlameReport
    from corescope.evidence.perf_fold import fold_inputs

    got = fold_inputs(paths, [], include_idle=filters.include_idle, weight=filters.weight,
                      by_thread=filters.by_thread)
    if got is None:
        return False
    report = FlameReport(None, None, "perf", None, got.profile)
    report.event, report.events_present = got.event, got.events_present
    _say_events(got.event, got.events_present)
    emit_flame(report, "folded", output, with_pid, filters.by_thread)
    return True


def register(cli: click.Group, lab: click.Group) -> None:
    @cli.command("flame")
    @window_options
    @click.option("--diff", "diff_at", default=None, metavar="auto|AT",
                  help="Compare with a baseline: 'auto' (same length, --baseline-gap "
                       "earlier) or the time the baseline window ends.")
    @click.option("--baseline-gap", type=DURATION, default="10m", show_default=True,
                  help="For --diff auto: how long before the window the baseline ends.")
    @click.option("--format", "fmt", type=click.Choice(FORMATS), default="top",
                  show_default=True,
                  help="top: a table in the terminal; json; folded (flamegraph.pl); html: an "
                       "interactive flame graph; pprof (go tool pprof); speedscope.")
    @click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
                  default=None, help="Write here instead of stdout.")
    @click.option("--with-pid", is_flag=True,
                  help="Folded stacks as comm-pid (`comm-?` where perf printed no pid).")
    @click.option("--with-tid", is_flag=True, help="Folded stacks as comm-pid/tid.")
    @click.option("--weight", type=click.Choice(WEIGHTS), default="period",
                  show_default=True,
                  help="period: weigh each sample by the period its header prints "
                       "(stackcollapse-perf.pl's rule; once where none is printed); "
                       "samples: count each sample once.")
    @click.option("--include-idle", is_flag=True, help="Keep idle stacks in the graph.")
    @click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True,
                  help="Rows in the top table (hottest functions first).")
    @click.pass_obj
    def flame(obj: CliContext, event: str | None, at: float | None, before: float,
              after: float, since: float | None, until: float | None, last: float | None,
              cpu: int | None, pid: int | None, comm: str | None,
              perf_scripts: tuple[str, ...], boot_time: float | None,
              more_inputs: tuple[str, ...], diff_at: str | None, baseline_gap: float,
              fmt: str, output: Path | None, with_pid: bool, with_tid: bool, weight: str,
              include_idle: bool, limit: int) -> None:
        """A flame graph of one window, per CPU, optionally against a baseline.

        Reads only the ring chunks that overlap the window, so the cost follows the window,
        not the ring. With --perf-script, saved perf script text (or folded stacks) is read
        the same way: whole, or the window given by --at/--before/--after/--event."""
        if pid is not None and comm is not None:
            fail("give --pid or --comm, not both")
        if fmt == "pprof" and output is None and sys.stdout.isatty():
            fail("pprof output is binary: write it with -o FILE")
        if fmt == "speedscope" and diff_at is not None:
            fail("speedscope has no differential form: use --format html or json with --diff")
        if with_pid and with_tid:
            fail("give --with-pid or --with-tid, not both")
        perf_event = perf_event_name(event)
        if perf_event is not None:
            event = None  # a perf event's name, not a stored kernel event
        ask = window_asked(since, until, last, at, event, before, after, diff_at is not None)
        filters = FlameFilters(cpu, pid, comm, perf_event, include_idle, weight, with_tid)
        paths = inputs(perf_scripts, more_inputs)
        if paths and fmt == "folded" and diff_at is None and event is None \
                and ask.at is None and not ask.explicit and filters == FlameFilters(
                    include_idle=include_idle, weight=weight, by_thread=with_tid) \
                and _fold_whole(paths, filters, output, with_pid):
            return
        _load(paths, *RENDERERS.get(fmt, ()))
        sinks, kept = sample_outputs(fmt, include_idle)
        diags: list[Diagnostic] = []
        progress = Progress()
        src = open_evidence.profile_input(obj.store_dir, obj.runner, paths, boot_time, diags,
                                          progress)
        try:
            window = resolve_flame_window(src, ask, event, _events_of(obj, src), time.time())
            view = flame_view(src, window, filters, diff=diff_at, before=ask.before,
                              after=ask.after, gap=baseline_gap, sinks=sinks)
        finally:
            src.close()
        report = view.report(limit, [])
        progress.done()
        report.diagnostics = [str(d) for d in diags]
        if perf_event is None and fmt != "json":
            _say_events(view.event, view.events_present)
        emit_flame(report, fmt, output, with_pid, with_tid, kept, view.hz)

    @cli.command("heatmap")
    @window_options
    @click.option("--rows-ms", type=click.IntRange(1, 1000), default=20, show_default=True,
                  help="Height of one heatmap row, in ms of each second.")
    @json_option()
    @click.pass_obj
    def heatmap(obj: CliContext, event: str | None, at: float | None, before: float,
                after: float, since: float | None, until: float | None,
                last: float | None, cpu: int | None, pid: int | None, comm: str | None,
                perf_scripts: tuple[str, ...], boot_time: float | None,
                more_inputs: tuple[str, ...], rows_ms: int, as_json: bool) -> None:
        """FlameScope's subsecond heatmap: columns are seconds, rows 20 ms offsets, cells
        count non-idle samples; per CPU with --cpu."""
        perf_event = perf_event_name(event)
        if perf_event is not None:
            event = None  # a perf event's name: only its samples
        ask = window_asked(since, until, last, at, event, before, after)
        paths = inputs(perf_scripts, more_inputs)
        _load(paths, "corescope.render.heatmap_text")
        diags: list[Diagnostic] = []
        progress = Progress()
        src = open_evidence.profile_input(obj.store_dir, obj.runner, paths, boot_time, diags,
                                          progress)
        try:
            window = resolve_flame_window(src, ask, event, _events_of(obj, src), time.time())
            heat = window_heatmap(src, window, FlameFilters(cpu, pid, comm, perf_event),
                                  rows_ms)
        finally:
            src.close()
        progress.done()
        data = {"schema": JSON_SCHEMA, **heat.to_json()}
        data["clock"] = window.clock
        data["cpu"] = cpu
        data["diagnostics"] = [str(d) for d in diags][:50]
        if as_json:
            emit_json(data)
            return
        from corescope.render.heatmap_text import render_heatmap

        click.echo(render_heatmap(data))
