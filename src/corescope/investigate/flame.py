"""The flame view of an investigation: given where the stacks are (a ProfileSource), a window
and filters (CPU, pid, comm, perf event), the window's profile, its baseline chosen by the
one rule (analysis/flame_baseline.py) and the subsecond heatmap. `flame`, `heatmap`, the HTML
report and serve all render what this makes; none of them reads the ring on its own."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from corescope.analysis.flame import Profile
from corescope.analysis.flame_baseline import BaselineWindow, auto_baseline
from corescope.analysis.flame_report import FlameReport
from corescope.analysis.subsecond import Heatmap
from corescope.errors import InvalidInput
from corescope.investigate.window import Around
from corescope.timeparse import TimeParseError, iso, parse_instant

if TYPE_CHECKING:
    from corescope.evidence.base import Evidence
    from corescope.evidence.profiles import ProfileSource, Samples
    from corescope.evidence.ring_profile import EventPick
    from corescope.model.profiles import ProfileChunk, StackSample

# What a sample is handed to besides the Profile, for the outputs that keep every sample
# (speedscope's time order, pprof's cpu and thread labels): (sample, wall time, idle).
SampleSink = Callable[["StackSample", "float | None", bool], None]


class FlameError(InvalidInput, ValueError):
    """A flame window or filter that cannot be answered: the message says why."""


@dataclass(frozen=True)
class FlameFilters:
    cpu: int | None = None
    pid: int | None = None  # the process, or a thread of it
    comm: str | None = None
    event: str | None = None  # the perf event to draw (None: the first one present)
    include_idle: bool = False
    weight: str = "samples"  # or "period" (analysis.flame.WEIGHTS)
    by_thread: bool = False


@dataclass(frozen=True)
class FlameWindow:
    """[lo, hi] on the chunks' clock ("wall", or "perf" for offline input without a boot
    time), the chunks that meet it, and whether the input is read whole (offline input with
    no window asked for)."""

    lo: float
    hi: float
    whole: bool
    clock: str
    chunks: list[ProfileChunk] = field(default_factory=list)

    @property
    def untimed(self) -> bool:
        """Input with no times at all (folded stacks): no window to show."""
        return self.whole and self.lo == self.hi == 0.0

    @property
    def start(self) -> float | None:
        return None if self.untimed else self.lo

    @property
    def end(self) -> float | None:
        return None if self.untimed else self.hi


def resolve_flame_window(src: ProfileSource, ask: Around, event_id: str | None,
                         events: Callable[[], Evidence], now: float) -> FlameWindow:
    """The window asked for, on the chunks' wall clock. Offline input with no window options
    is read whole; with --before/--after alone the window ends at its end. `ask.from_end`
    (--last): on a ring that ended before the window would begin, count back from its end,
    as every other command's --last does. `events()`: the Evidence that holds the stored
    kernel events (--event ID). No chunk covering it is an error that says what the ring
    holds."""
    lo, hi, whole = _bounds(src, ask, event_id, events, now)
    chunks = src.all_chunks() if whole else src.chunks(lo, hi)
    if not chunks:
        _no_chunks(src, lo, hi)
    timed = [c for c in chunks if not c.untimed]  # folded stacks have no clock
    anchored = bool(timed) and all(c.anchored for c in timed)
    return FlameWindow(lo, hi, whole, "wall" if anchored else "perf", chunks)


def _bounds(src: ProfileSource, ask: Around, event_id: str | None,
            events: Callable[[], Evidence], now: float) -> tuple[float, float, bool]:
    at, before, after = ask.at, ask.before, ask.after
    chunks = src.all_chunks()
    if src.offline and all(c.untimed for c in chunks):
        if event_id is not None or at is not None or ask.explicit:
            what = "folded stacks carry" if all(c.format == "folded" for c in chunks) else \
                "this input (perf script -F without `time`, or folded stacks) carries"
            raise FlameError(f"{what} no times: they are read whole (drop --at, --before, "
                             "--after, --event and --diff, or give perf script text with "
                             "times)")
        return 0.0, 0.0, True
    if event_id is not None:
        if src.offline and not all(c.anchored for c in chunks if not c.untimed):
            raise FlameError("--event needs wall-clock times, but this perf script input is "
                             "on perf's boot-relative clock: give --boot-time (the boot's "
                             "wall time)")
        at = event_time(events(), event_id)
    span = src.span()
    if src.offline and at is None:
        assert span is not None  # not folded only
        if not ask.explicit:
            return span[0], span[1], True
        at = span[1]  # --before alone counts back from the input's end
    if at is None:
        at = now
        if ask.from_end and span is not None and span[1] < at - before:
            at = span[1]
    return at - before, at + after, False


def event_time(ev: Evidence, event_id: str) -> float:
    """Wall time of a stored kernel event (see `corescope events`)."""
    try:
        got = ev.event(int(event_id))
    except ValueError as exc:
        raise FlameError(f"not an event id: {event_id!r}") from exc
    if got is None:
        raise FlameError(f"no event {event_id} in the store (see `corescope events`)")
    return got.time


def _show(t: float, clock: str) -> str:
    return iso(t) if clock == "wall" else f"{t:.6f} (perf clock)"


def _no_chunks(src: ProfileSource, lo: float, hi: float) -> None:
    all_chunks = src.all_chunks()
    if not all_chunks:
        raise FlameError("the profile ring is empty: run `corescope record` (profiling is on "
                         "unless --no-profile) and try again")
    oldest = min(c.wall_start for c in all_chunks)
    newest = max(c.wall_end for c in all_chunks)
    clock = "wall" if all(c.anchored for c in all_chunks) else "perf"
    what = "the --perf-script input holds" if src.offline else "the ring holds"
    hint = ("; times without a --boot-time are perf's boot-relative seconds"
            if clock == "perf" else "")
    raise FlameError(f"no profile chunks cover {_show(lo, clock)} .. {_show(hi, clock)}; "
                     f"{what} {_show(oldest, clock)} .. {_show(newest, clock)} "
                     f"({len(all_chunks)} chunks){hint}")


@dataclass
class Baseline:
    """The baseline a window is compared with: its window (and which rule chose it) and
    its profile."""

    window: BaselineWindow
    profile: Profile


def auto_baseline_of(src: ProfileSource, lo: float, hi: float, gap: float, cpu: int | None,
                     filters: FlameFilters = FlameFilters(),
                     pick: EventPick | None = None) -> Baseline:
    """The baseline of [lo, hi] by the one rule (analysis.flame_baseline), read with the
    window's own filters."""
    bw = auto_baseline(lo, hi, gap, src.covers, src.oldest())
    return Baseline(bw, _profile(src, bw.start, bw.end, cpu, filters, pick))


def _profile(src: ProfileSource, lo: float, hi: float, cpu: int | None, f: FlameFilters,
             pick: EventPick | None) -> Profile:
    return src.profile(lo, hi, cpu, pid=f.pid, comm=f.comm, include_idle=f.include_idle,
                       weight=f.weight, pick=pick)


@dataclass
class FlameView:
    """What `flame` renders: the window's profile, the baseline when asked for, the rate
    the ring was recorded at, and the perf event drawn among those present."""

    window: FlameWindow
    filters: FlameFilters
    profile: Profile
    baseline: Baseline | None = None
    baseline_note: str = ""
    hz: int | None = None
    event: str | None = None
    events_present: dict[str, int] = field(default_factory=dict)

    def report(self, limit: int, diagnostics: list[str]) -> FlameReport:
        b = self.baseline
        rep = FlameReport(self.window.start, self.window.end, self.window.clock,
                          self.filters.cpu, self.profile,
                          b.profile if b is not None else None,
                          b.window.start if b is not None else None,
                          b.window.end if b is not None else None, self.baseline_note,
                          chunks=len(self.window.chunks), limit=limit)
        rep.diagnostics = diagnostics
        rep.event = self.event
        rep.events_present = dict(self.events_present)
        return rep


def flame_view(src: ProfileSource, window: FlameWindow, filters: FlameFilters, *,
               diff: str | None = None, before: float = 0.0, after: float = 0.0,
               gap: float = 600.0, sinks: Iterable[SampleSink] = ()) -> FlameView:
    """The window's profile; with `diff` ('auto', or the time the baseline window ends,
    `before`/`after` long) its baseline. `sinks` are handed every sample drawn (then the
    window is read sample by sample instead of counted on the chunks' columns)."""
    from corescope.evidence.ring_profile import EventPick  # numpy: on demand

    pick = EventPick(filters.event)
    sinks = list(sinks)
    f = filters
    if sinks:
        prof = _collect(src.samples(window.lo, window.hi, f.cpu, chunks=window.chunks,
                                    whole=window.whole), f, pick, sinks)
    else:
        prof = src.profile(window.lo, window.hi, f.cpu, chunks=window.chunks,
                           whole=window.whole, pid=f.pid, comm=f.comm,
                           include_idle=f.include_idle, weight=f.weight,
                           by_thread=f.by_thread, pick=pick)
    if pick.asked is not None and not pick.present.get(pick.asked):
        raise FlameError(f"--event {pick.asked}: no sample of that perf event in the "
                         f"{'input' if src.offline else 'window'} (events present: "
                         f"{', '.join(sorted(pick.present)) or 'none'})")
    if f.cpu is not None and f.pid is None and f.comm is None and prof.samples == 0:
        # not one sample on it, idle included (cpu-clock ticks idle CPUs too): no such CPU
        where = "the --perf-script input" if src.offline else "the ring's window"
        raise FlameError(f"--cpu {f.cpu}: no sample on that CPU in {where}")
    view = FlameView(window, filters, prof)
    if window.start is not None and window.end is not None:
        view.hz = src.hz(window.start, window.end)
    if diff is not None:
        lo, hi = window.lo, window.hi
        assert window.start is not None  # an untimed input refuses --diff (explicit)
        base_filters = FlameFilters(f.cpu, f.pid, f.comm, None, f.include_idle, f.weight)
        if diff.strip().lower() == "auto":
            view.baseline = auto_baseline_of(src, lo, hi, gap, f.cpu, base_filters,
                                             EventPick(pick.chosen))
            view.baseline_note = f"auto: {view.baseline.window.note}"
        else:
            try:
                b_at = parse_instant(diff)
            except TimeParseError as exc:
                raise FlameError(f"--diff: {exc}") from exc
            bw = BaselineWindow(b_at - before, b_at + after, "explicit")
            view.baseline = Baseline(bw, _profile(src, bw.start, bw.end, f.cpu, base_filters,
                                                  EventPick(pick.chosen)))
            view.baseline_note = "explicit"
    view.event = pick.chosen
    view.events_present = dict(pick.present)
    return view


def _collect(stream: Samples, f: FlameFilters, pick: EventPick,
             sinks: list[SampleSink]) -> Profile:
    """Sample by sample, for the outputs that keep each one (speedscope, pprof)."""
    prof = Profile(include_idle=f.include_idle, weight=f.weight, by_thread=f.by_thread)
    for s, t in pick.filter(_filtered(stream, f.pid, f.comm)):
        idle = prof.add(s)
        for sink in sinks:
            sink(s, t, idle)
    return prof


def _filtered(samples: Samples, pid: int | None, comm: str | None) -> Samples:
    return ((s, t) for s, t in samples if s.matches(pid, comm))


def heatmap_view(src: ProfileSource, start: float | None, end: float | None,
                 filters: FlameFilters, rows_ms: int, *, lo: float | None = None,
                 hi: float | None = None, chunks: list[ProfileChunk] | None = None,
                 whole: bool = False) -> Heatmap:
    """FlameScope's subsecond heatmap of the window: non-idle samples per second and row.
    `start`/`end` pin its columns (None: from the first sample); the query reads [lo, hi]
    (default: the same)."""
    from corescope.evidence.ring_profile import EventPick  # numpy: on demand

    heat = Heatmap(start=start, end=end, row_ms=rows_ms)
    q_lo = lo if lo is not None else start
    q_hi = hi if hi is not None else end
    assert q_lo is not None and q_hi is not None
    src.profile(q_lo, q_hi, filters.cpu, chunks=chunks, whole=whole, pid=filters.pid,
                comm=filters.comm, heat=heat,
                pick=EventPick(filters.event) if filters.event is not None else None,
                stacks=False)
    return heat


def window_heatmap(src: ProfileSource, window: FlameWindow, filters: FlameFilters,
                   rows_ms: int) -> Heatmap:
    """`heatmap_view` of a resolved flame window."""
    return heatmap_view(src, window.start, window.end, filters, rows_ms, lo=window.lo,
                        hi=window.hi, chunks=window.chunks, whole=window.whole)


def range_flame(src: ProfileSource, lo: float, hi: float, cpu: int | None, *,
                baseline_gap: float | None = None) -> tuple[Profile, Baseline | None]:
    """serve's range (and the report's): the profile of [lo, hi] on `cpu`, with its
    automatic baseline when `baseline_gap` is given (None when nothing was recorded
    before the window)."""
    prof = src.profile(lo, hi, cpu)
    return prof, (found_baseline(src, lo, hi, cpu, baseline_gap)
                  if baseline_gap is not None else None)


def found_baseline(src: ProfileSource, lo: float, hi: float, cpu: int | None,
                   gap: float) -> Baseline | None:
    """The automatic baseline of a window, or None when it holds no sample (a page shows
    no diff rather than one against nothing)."""
    base = auto_baseline_of(src, lo, hi, gap, cpu)
    return base if base.profile.samples else None
