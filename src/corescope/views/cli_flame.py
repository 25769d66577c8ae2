"""`corescope flame` and `corescope heatmap`: time travel over the profile ring, per CPU,
against a baseline. Saved `perf script` files (--perf-script) are imported into a temporary
store and read by the same ring query, so windows, --event and --diff work on them too."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from corescope.analysis.flame import WEIGHTS, Profile, diff_folded
from corescope.analysis.flame_report import FlameReport, top_table
from corescope.analysis.subsecond import Heatmap
from corescope.errors import InvalidInput
from corescope.evidence import profile_query
from corescope.evidence.ring_profile import EventPick, ring_profile
from corescope.model.common import JSON_SCHEMA, Diagnostic
from corescope.model.profiles import StackSample
from corescope.render import pprof, term
from corescope.sources import perf_import
from corescope.store import events as store_events
from corescope.store import profiles as ring
from corescope.store.db import Store
from corescope.timeparse import TimeParseError, format_duration, iso, parse_instant
from corescope.views import flame_html
from corescope.views.clitypes import (
    DURATION,
    INSTANT,
    POSITIVE_DURATION,
    CliContext,
    emit_json,
    fail,
    json_option,
    open_store_or_fail,
    write_private,
)
from corescope.views.speedscope import Speedscope
from corescope.views.windows import SINCE, UNTIL

DEFAULT_HZ = 49  # `record --profile-hz` default, when nothing says otherwise
FORMATS = ("top", "json", "folded", "html", "pprof", "speedscope")


class EventError(InvalidInput, RuntimeError):
    pass


def resolve_event(store: Store, event_id: str) -> float:
    """Wall time of a stored kernel event (see `corescope events`)."""
    try:
        got = store_events.get_event(store, int(event_id))
    except ValueError as exc:
        raise EventError(f"not an event id: {event_id!r}") from exc
    if got is None:
        raise EventError(f"no event {event_id} in the store (see `corescope events`)")
    return got.time


class _Progress:
    """`chunk 3/40` on stderr, only when stderr is a terminal."""

    def __init__(self) -> None:
        self.on = sys.stderr.isatty()
        self.used = False

    def __call__(self, i: int, n: int, what: str) -> None:
        if self.on:
            self.used = True
            sys.stderr.write(f"\r\x1b[K{i}/{n} {term.clean(what[-60:])}")
            sys.stderr.flush()

    def done(self) -> None:
        if self.used:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _filtered(samples: Iterator[tuple[StackSample, float | None]], pid: int | None,
              comm: str | None) -> Iterator[tuple[StackSample, float | None]]:
    for s, t in samples:
        if pid is not None and s.pid != pid and s.tid != pid:
            continue
        if comm is not None and s.comm != comm:
            continue
        yield s, t


class _Source:
    """Where the samples come from: the store's ring, or (--perf-script) the user's files
    imported into a temporary store, which the same ring query then reads."""

    def __init__(self, store: Store, offline: bool, tmp: tempfile.TemporaryDirectory | None
                 = None) -> None:
        self.store, self.offline, self._tmp = store, offline, tmp

    def close(self) -> None:
        self.store.close()
        if self._tmp is not None:
            self._tmp.cleanup()


def _open_source(obj: CliContext, inputs: tuple[str, ...], boot_time: float | None,
                 diags: list[Diagnostic]) -> _Source:
    if not inputs:
        return _Source(open_store_or_fail(obj), False)
    tmp = tempfile.TemporaryDirectory(prefix="corescope-flame-")
    store = Store.open(Path(tmp.name) / "store")
    src = _Source(store, True, tmp)
    skipped = []
    from corescope.ingest.perf_write import import_input

    for path in perf_import.expand(inputs):
        got = import_input(store, path, boot_time=boot_time, diags=diags)
        if got.skipped:
            skipped.append(f"{got.name}: {got.skipped}")
            diags.append(Diagnostic(got.name, f"skipped: {got.skipped}"))
    chunks = ring.all_chunks(store)
    if not chunks:
        src.close()
        fail("no samples in the --perf-script input" +
             (f" ({'; '.join(skipped[:3])})" if skipped else ""))
    timed = {c.anchored for c in chunks if c.format in ("text", "columns") and not c.untimed}
    if len(timed) > 1:
        diags.append(Diagnostic("--perf-script", "inputs mix wall-clock and boot-relative "
                                "times: give --boot-time to put them on one clock"))
    return src


def _resolve_window(obj: CliContext, src: _Source, at: float | None, event: str | None,
                    before: float, after: float, explicit: bool,
                    from_end: bool = False) -> tuple[float, float, bool]:
    """(start, end, whole) of the window on the chunks' wall clock. Offline input with no
    window options is read whole; with --before/--after alone the window ends at its end.
    `from_end` (--last): on a ring that ended before the window would begin, count back from
    its end, as every other command's --last does."""
    store = src.store
    chunks = ring.all_chunks(store)
    if src.offline and all(c.untimed for c in chunks):
        if event is not None or at is not None or explicit:
            what = "folded stacks carry" if all(c.format == "folded" for c in chunks) else \
                "this input (perf script -F without `time`, or folded stacks) carries"
            fail(f"{what} no times: they are read whole (drop --at, --before, "
                 "--after, --event and --diff, or give perf script text with times)")
        return 0.0, 0.0, True
    if event is not None:
        if src.offline and not all(c.anchored for c in chunks if not c.untimed):
            fail("--event needs wall-clock times, but this perf script input is on perf's "
                 "boot-relative clock: give --boot-time (the boot's wall time)")
        events_store = open_store_or_fail(obj) if src.offline else store
        try:
            at = resolve_event(events_store, event)
        except EventError as exc:
            fail(str(exc))
    span = ring.record_span(store)
    if src.offline and at is None:
        assert span is not None  # not folded only
        if not explicit:
            return span[0], span[1], True
        at = span[1]  # --before alone counts back from the input's end
    if at is None:
        at = time.time()
        if from_end and span is not None and span[1] < at - before:
            at = span[1]
    return at - before, at + after, False


class _Query:
    """One window of the ring: its samples one by one (`stream`, for the formats that keep
    each sample), or aggregated on the chunks' columns (`profile`)."""

    def __init__(self, obj: CliContext, src: _Source, lo: float, hi: float, cpu: int | None,
                 diags: list[Diagnostic], progress: _Progress, whole: bool = False) -> None:
        store = src.store
        self.args = (store, obj.runner, lo, hi, cpu, diags, progress)
        self.whole = whole
        # the temporary store of --perf-script input is read once: not worth migrating
        self.migrate = not src.offline
        self.chunks = ring.all_chunks(store) if whole else ring.chunks_overlapping(store, lo,
                                                                                   hi)
        timed = [c for c in self.chunks if not c.untimed]  # folded stacks have no clock
        self.anchored = bool(timed) and all(c.anchored for c in timed)

    def stream(self) -> Iterator[tuple[StackSample, float | None]]:
        return profile_query.ring_samples(*self.args, self.chunks, whole=self.whole,
                                          migrate=self.migrate)

    def profile(self, pid: int | None, comm: str | None, include_idle: bool,
                heat: Heatmap | None = None, *, weight: str = "samples",
                by_thread: bool = False, pick: EventPick | None = None,
                stacks: bool = True) -> Profile:
        try:
            return ring_profile(*self.args, self.chunks, self.whole, pid=pid, comm=comm,
                                include_idle=include_idle, heat=heat, migrate=self.migrate,
                                weight=weight, by_thread=by_thread, pick=pick, stacks=stacks)
        except profile_query.NoSuchCpu as exc:
            fail(str(exc))


def _window_stream(obj: CliContext, src: _Source, at: float | None, event: str | None,
                   before: float, after: float, explicit: bool, cpu: int | None,
                   diags: list[Diagnostic], progress: _Progress,
                   from_end: bool = False) -> _Window:
    """The window asked for and the ring's samples in it (exit 2 when no chunk covers it)."""
    lo, hi, whole = _resolve_window(obj, src, at, event, before, after, explicit, from_end)
    query = _Query(obj, src, lo, hi, cpu, diags, progress, whole)
    if not query.chunks:
        _no_chunks(src, lo, hi)
    folded_only = whole and lo == hi == 0.0
    return _Window(None if folded_only else lo, None if folded_only else hi, whole,
                   "wall" if query.anchored else "perf", query)


class _Window:
    def __init__(self, start: float | None, end: float | None, whole: bool, clock: str,
                 query: _Query) -> None:
        self.start, self.end, self.whole, self.clock = start, end, whole, clock
        self.query, self.chunks = query, len(query.chunks)


def _show(t: float, clock: str) -> str:
    return iso(t) if clock == "wall" else f"{t:.6f} (perf clock)"


def _no_chunks(src: _Source, lo: float, hi: float) -> None:
    n, oldest, newest, _b, _s = ring.summary(src.store)
    if n == 0:
        fail("the profile ring is empty: run `corescope record` (profiling is on unless "
             "--no-profile) and try again")
    clock = "wall" if all(c.anchored for c in ring.all_chunks(src.store)) else "perf"
    what = "the --perf-script input holds" if src.offline else "the ring holds"
    hint = ("; times without a --boot-time are perf's boot-relative seconds"
            if clock == "perf" else "")
    fail(f"no profile chunks cover {_show(lo, clock)} .. {_show(hi, clock)}; {what} "
         f"{_show(oldest or 0, clock)} .. {_show(newest or 0, clock)} ({n} chunks){hint}")


def _auto_baseline(store: Store, lo: float, hi: float, gap: float) -> tuple[float, float, str]:
    """Same length as the window, ending `gap` before it starts; if the ring does not reach
    back that far, the earliest stretch of the ring before the window."""
    length = hi - lo
    b_hi = lo - gap
    b_lo = b_hi - length
    if ring.chunks_overlapping(store, b_lo, b_hi):
        return b_lo, b_hi, f"auto: same length, ending {format_duration(gap)} before"
    _n, oldest, _newest, _b, _s = ring.summary(store)
    if oldest is not None and oldest < lo:
        b_lo = oldest
        b_hi = min(oldest + length, lo)
        return b_lo, b_hi, "auto: the ring does not reach back that far; earliest stretch"
    return b_lo, b_hi, "auto: no data before the window"


def perf_event_name(event: str | None) -> str | None:
    """--event's value when it names a perf event rather than a stored kernel event (an
    id is a number; no perf event name is all digits)."""
    if event is None or event.strip().isdigit():
        return None
    return event.strip()


def _collect(stream: Iterator[tuple[StackSample, float | None]], include_idle: bool,
             pp: pprof.Samples | None = None, weight: str = "samples",
             by_thread: bool = False) -> Profile:
    """Sample by sample, for the outputs that keep each one (speedscope, pprof)."""
    prof = Profile(include_idle=include_idle, weight=weight, by_thread=by_thread)
    try:
        for s, _t in stream:
            idle = prof.add(s)
            if pp is not None:
                pp.add(s, idle if not include_idle else None)
    except profile_query.NoSuchCpu as exc:
        fail(str(exc))
    return prof


def _require_cpu_seen(prof: Profile, cpu: int | None, filtered: bool, offline: bool) -> None:
    """--cpu N and not one sample on it, idle included (cpu-clock ticks idle CPUs too): the
    input has no such CPU."""
    if cpu is not None and not filtered and prof.samples == 0:
        where = "the --perf-script input" if offline else "the ring's window"
        fail(f"--cpu {cpu}: no sample on that CPU in {where}")


def _window_options(f: Any) -> Any:
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


def _absolute(since: float | None, until: float | None, at: float | None, event: str | None,
              before: float, after: float, last: float | None = None,
              ) -> tuple[float | None, float, float, bool]:
    """--since/--until/--last as the (at, before, after) they mean, and whether a window was
    given explicitly."""
    if last is not None:
        if since is not None:
            fail("give --since or --last, not both")
        if at is not None or event is not None:
            fail("--last counts back from --until or now: with --at or --event use --before")
        return until, last, 0.0, True
    if since is None and until is None:
        if before + after <= 0:
            fail("--before 0 with --after 0 is a window of no time: give one of them a length")
        return at, before, after, False
    if at is not None or event is not None:
        fail("--since/--until give the window themselves: drop --at and --event")
    end = until if until is not None else time.time()
    start = since if since is not None else end - before
    if start > end:
        fail("the window ends before it starts (--since is after --until)")
    return end, end - start, 0.0, True


def _inputs(perf_scripts: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    """--perf-script paths plus any that follow it (`--perf-script chunks/*.txt`)."""
    if more and not perf_scripts:
        fail(f"unexpected argument {more[0]!r} (input files follow --perf-script)")
    return perf_scripts + more


def _explicit(*names: str) -> bool:
    """Whether the user gave any of these options (not just their defaults)."""
    ctx = click.get_current_context()
    return any(ctx.get_parameter_source(n) not in (None, ParameterSource.DEFAULT)
               for n in names)


def register(cli: click.Group, lab: click.Group) -> None:
    @cli.command("flame")
    @_window_options
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
        pick = EventPick(perf_event_name(event))
        if pick.asked is not None:
            event = None  # a perf event's name, not a stored kernel event
        at, before, after, absolute = _absolute(since, until, at, event, before, after, last)
        diags: list[Diagnostic] = []
        progress = _Progress()
        scope = Speedscope(include_idle, enabled=fmt == "speedscope")
        baseline: Profile | None = None
        b_lo = b_hi = None
        note = ""
        # pprof keeps cpu and thread labels, which the flame Profile does not
        pp = pprof.Samples(include_idle) if fmt == "pprof" else None
        hz: int | None = None
        src = _open_source(obj, _inputs(perf_scripts, more_inputs), boot_time, diags)
        # offline, the notes worth showing name the user's files: made while importing
        qdiags = [] if src.offline else diags
        try:
            win = _window_stream(obj, src, at, event, before, after,
                                 _explicit("before", "after") or diff_at is not None
                                 or absolute, cpu, qdiags, progress, last is not None)
            if scope.enabled or pp is not None:  # these keep every sample
                prof = _collect(scope.tap(pick.filter(_filtered(win.query.stream(), pid,
                                                                comm))),
                                include_idle, pp=pp, weight=weight, by_thread=with_tid)
            else:
                prof = win.query.profile(pid, comm, include_idle, weight=weight,
                                         by_thread=with_tid, pick=pick)
            if pick.asked is not None and not pick.present.get(pick.asked):
                fail(f"--event {pick.asked}: no sample of that perf event in the "
                     f"{'input' if src.offline else 'window'} (events present: "
                     f"{', '.join(sorted(pick.present)) or 'none'})")
            _require_cpu_seen(prof, cpu, pid is not None or comm is not None, src.offline)
            if win.start is not None and win.end is not None:
                hz = _ring_hz(src.store, win.start, win.end)
            if diff_at is not None:
                assert win.start is not None and win.end is not None
                lo, hi = win.start, win.end
                if diff_at.strip().lower() == "auto":
                    b_lo, b_hi, note = _auto_baseline(src.store, lo, hi, baseline_gap)
                else:
                    try:
                        b_at = parse_instant(diff_at)
                    except TimeParseError as exc:
                        fail(f"--diff: {exc}")
                    b_lo, b_hi, note = b_at - before, b_at + after, "explicit"
                baseline = _Query(obj, src, b_lo, b_hi, cpu, qdiags, progress).profile(
                    pid, comm, include_idle, weight=weight, pick=EventPick(pick.chosen))
        finally:
            src.close()
        report = FlameReport(win.start, win.end, win.clock, cpu, prof, baseline, b_lo, b_hi,
                             note, chunks=win.chunks, limit=limit)
        progress.done()
        report.diagnostics = [str(d) for d in diags]
        report.event = pick.chosen
        report.events_present = dict(pick.present)
        if len(pick.present) > 1 and pick.asked is None and fmt != "json":
            click.echo(f"corescope: the input holds {len(pick.present)} perf events; drawing "
                       f"the first, {pick.chosen} (--event NAME for another: "
                       f"{', '.join(sorted(set(pick.present) - {pick.chosen}))})", err=True)
        _emit_flame(report, fmt, output, with_pid, scope, pp, hz, with_tid)

    @cli.command("heatmap")
    @_window_options
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
        pick = EventPick(perf_event_name(event))
        if pick.asked is not None:
            event = None  # a perf event's name: only its samples
        at, before, after, absolute = _absolute(since, until, at, event, before, after, last)
        diags: list[Diagnostic] = []
        progress = _Progress()
        src = _open_source(obj, _inputs(perf_scripts, more_inputs), boot_time, diags)
        try:
            win = _window_stream(obj, src, at, event, before, after,
                                 _explicit("before", "after") or absolute, cpu,
                                 [] if src.offline else diags, progress, last is not None)
            heat = Heatmap(start=win.start, end=win.end, row_ms=rows_ms)
            win.query.profile(pid, comm, False, heat,
                              pick=pick if pick.asked is not None else None, stacks=False)
        finally:
            src.close()
        progress.done()
        clock = win.clock
        data = {"schema": JSON_SCHEMA, **heat.to_json()}
        data["clock"] = clock
        data["cpu"] = cpu
        data["diagnostics"] = [str(d) for d in diags][:50]
        if as_json:
            emit_json(data)
            return
        click.echo(render_heatmap(data))


_SHADES = " .:-=+*#%@"


def render_heatmap(data: dict[str, Any]) -> str:
    """Terminal heatmap: one character per cell, darker = more non-idle samples."""
    vals: list[list[int]] = data["values"]
    top = data["max"] or 1
    rows = data.get("rows") or (len(vals[0]) if vals else 0)
    where = f"cpu {data['cpu']}" if data.get("cpu") is not None else "all CPUs"
    start = data["start"]
    head = (f"subsecond heatmap, {where}, {data['columns']} s from "
            f"{iso(start) if data.get('clock') == 'wall' and start is not None else start}; "
            f"rows {data['rows_ms']} ms, max {data['max']} samples/cell")
    out = [head]
    for r in range(rows):
        line = "".join(
            _SHADES[min(len(_SHADES) - 1, (c[r] * (len(_SHADES) - 1) + top - 1) // top)]
            for c in vals)
        out.append(f"{r * data['rows_ms']:4d}ms |{line}|")
    return "\n".join(out)


def _window_label(report: FlameReport) -> str:
    where = f"cpu {report.cpu}" if report.cpu is not None else "all CPUs"
    if report.clock == "wall" and report.start is not None and report.end is not None:
        return f"{where}, {iso(report.start)} .. {iso(report.end)}"
    return f"{where}, perf script input"


def _ring_hz(store: Store, lo: float, hi: float) -> int | None:
    """The --profile-hz the window's chunks were recorded at (the most samples' rate)."""
    by: dict[int, int] = {}
    for c in ring.chunks_overlapping(store, lo, hi):
        if c.hz > 0:
            by[c.hz] = by.get(c.hz, 0) + max(1, c.samples)
    return max(by, key=lambda h: by[h]) if by else None


def _emit_flame(report: FlameReport, fmt: str, output: Path | None, with_pid: bool,
                scope: Speedscope, pp: pprof.Samples | None = None,
                hz: int | None = None, with_tid: bool = False) -> None:
    data: bytes
    if fmt == "speedscope":
        data = json.dumps(scope.to_json(_window_label(report)), separators=(",", ":")).encode()
    elif fmt == "json":
        data = (json.dumps({"schema": JSON_SCHEMA, **report.to_json()}, indent=2) + "\n").encode()
    elif fmt == "top":
        # human text: comms and symbols come from other users' processes
        data = (term.clean_lines(top_table(report)) + "\n").encode()
        if report.diagnostics:
            click.echo(f"corescope: {len(report.diagnostics)} parser notes, first: "
                       f"{term.clean(report.diagnostics[0])}", err=True)
    elif fmt == "folded":
        stacks = report.profile.folded(with_pid, with_tid)
        data = "".join(f"{k} {v}\n" for k, v in sorted(stacks.items())).encode()
    elif fmt == "pprof":
        dur = 0
        if report.start is not None and report.end is not None:
            dur = int((report.end - report.start) * 1e9)
        t0 = int(report.start * 1e9) if report.clock == "wall" and report.start else 0
        # the rate comes from the ring's index; perf script text does not say it, so
        # there it is read off the samples' spacing (cpu-clock ticks idle CPUs too)
        rate = hz or (pp.estimated_hz() if pp is not None else None) or DEFAULT_HZ
        data = pprof.to_pprof(pp if pp is not None else report.profile, rate,
                              time_nanos=t0, duration_nanos=dur)
    else:  # html
        sub = f"{_window_label(report)}, {report.profile.samples} samples " \
              f"({report.profile.idle_samples} idle)"
        folded: Any
        if report.baseline is not None:
            folded = diff_folded(report.profile, report.baseline, with_pid)
            title = "corescope differential flame graph"
            sub += f"; baseline {report.baseline_note}: red grew, blue shrank"
        else:
            folded = report.profile.folded(with_pid, with_tid)
            title = "corescope flame graph"
        data = flame_html.render_html(folded, title, sub, diff=report.baseline is not None
                                      ).encode()
    if output is not None:
        write_private(output, data)
        return
    if fmt in ("top", "folded") and sys.stdout.isatty():
        data = term.clean_lines(data.decode(errors="replace")).encode()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
