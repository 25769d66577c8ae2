"""investigate(evidence, window) → Investigation: every part any view shows, built once."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from corescope.analysis import correlate
from corescope.analysis.event_focus import DEFAULT_BUDGET, EventBudget
from corescope.evidence.base import Evidence, RestartEvidence
from corescope.investigate import findings as fnd
from corescope.investigate.model import (
    EpisodeParams,
    HotCoreProfile,
    IncidentView,
    Investigation,
    Resolution,
    ResolutionPoint,
    Window,
)
from corescope.investigate.statuses import derived_statuses
from corescope.model.cores import DEFAULT_MIN_DURATION, DEFAULT_MODE, DEFAULT_THRESHOLD
from corescope.model.events import serving_cpus

# The zombie, profile and interrupt-map parts import their modules when they are built, so
# a log-only investigation (`events --file`) does not define their records at start-up.
if TYPE_CHECKING:
    from corescope.model.cgroups import Thresholds
    from corescope.model.common import Diagnostic
    from corescope.model.cores import CoreSample, Episode
    from corescope.model.events import KernelEvent, SoftirqSample

# seconds of per-core record read before the window, for the 60 s view and for episodes
# that were already running when the window opened
CONTEXT_S = 60.0
# NET_RX rates are read around irq/softirq-mode episodes only (a day of 5 s rows for 96 CPUs
# is not worth decoding for the few minutes a hypothesis asks about): the episode, and this
# much before it as the CPU's own baseline
SOFTIRQ_BASELINE_S = 600.0
SOFTIRQ_MAX_EPISODES = 20
# the window before an incident whose stacks are summarised (the incident team's rewind)
PROFILE_BEFORE_S = 120.0
MAX_PROFILES = 6

ALL_PARTS = frozenset({"incidents", "zombies", "profiles"})


DEFAULT_PARAMS = EpisodeParams(DEFAULT_MODE, DEFAULT_THRESHOLD, DEFAULT_MIN_DURATION)


@dataclass(frozen=True)
class Options:
    params: EpisodeParams = DEFAULT_PARAMS
    correlation_window_s: float = correlate.DEFAULT_WINDOW_S
    thresholds: Thresholds | None = None  # None: model.cgroups.DEFAULT_THRESHOLDS
    seed: int = 0
    profile_before_s: float = PROFILE_BEFORE_S
    # a focus event: the investigation of that one line (report --event, flame --event)
    focus_event: KernelEvent | None = None
    # the node under investigation, for listings that cover many (`kubectl get pods -A`);
    # `host`: this machine's name, used only when the listing has it
    node: str | None = None
    host: str | None = None
    # which kernel lines the investigation holds (the rest counted by kind); None: every
    # line, for `events`, which lists them
    event_budget: EventBudget | None = DEFAULT_BUDGET


def investigate(ev: Evidence, window: Window, options: Options | None = None,
                parts: Collection[str] = ALL_PARTS) -> Investigation:
    opt = options or Options()
    p = opt.params
    cw = opt.correlation_window_s
    coverage = ev.coverage()
    samples_ctx: Sequence[CoreSample] = ev.core_samples(window.start - cw - CONTEXT_S,
                                                        window.end)
    samples: Sequence[CoreSample] = []
    cpus: list[int] = []
    episodes, ctx_episodes, covered = [], [], []
    if samples_ctx:
        # the per-core analysis needs numpy: imported only when there are samples, so a
        # log-only investigation (`events --file`) starts fast
        from corescope.analysis.episodes import as_matrix, covered_spans, find_episodes

        # one CoreMatrix (arrays) for the whole window: a day is never a list of objects
        samples_ctx = as_matrix(samples_ctx)
        samples = samples_ctx.between(window.start, math.inf)
        cpus = samples.online_cpus()
        # context first: the window is a slice of it and reuses its per-cell work
        ctx_episodes = find_episodes(samples_ctx, p.threshold_pct, p.min_duration_s, p.mode)
        episodes = find_episodes(samples, p.threshold_pct, p.min_duration_s, p.mode)
        covered = covered_spans(samples_ctx)
    omitted: dict[str, int] = {}
    if opt.focus_event is not None:
        events = [opt.focus_event]
    else:
        focused = ev.focused_events(window.start, window.end, opt.event_budget)
        events, omitted = focused.events, focused.omitted
    lost = ev.lost_records(window.start, window.end)

    incident_views: list[IncidentView] = []
    span = (samples_ctx[0].t - samples_ctx[0].interval_s, samples_ctx[-1].t) \
        if samples_ctx else None

    def serving(e: KernelEvent) -> frozenset[int] | None:
        if e.queue is None:
            return None
        return serving_cpus(ev.irq_map_at(e.time), e.iface, e.queue, e.device)

    incs = []
    if "incidents" in parts:
        incs = correlate.incidents(events, ctx_episodes, cw, serving=serving,
                                   only_incidents=opt.focus_event is None)
        for inc in incs:
            near = inc.nearest
            res = resolution(samples_ctx, near.cpu, inc.event.time, cw) if near else None
            incident_views.append(IncidentView(inc, tuple(ev.irq_map_at(inc.event.time)), res))
    summary = correlate.summarize(incs, ctx_episodes, span, cw, seed=opt.seed,
                                  covered=covered)

    restarts, zombies, thresholds = RestartEvidence(), None, opt.thresholds
    node = None
    if "zombies" in parts:
        from corescope.investigate.zombies import zombie_report
        from corescope.model.cgroups import DEFAULT_THRESHOLDS

        thresholds = thresholds or DEFAULT_THRESHOLDS
        from corescope.investigate.node import narrow

        # the kernel's own lines name this node's pods and containers (OOM kills, cgroup
        # paths): what ties a cluster-wide listing to this node
        restarts, node = narrow(ev.restarts(window.start, window.end), opt.node,
                                (e.raw for e in events[:20000] if "pod" in e.raw
                                 or e.kind == "oom_kill"), opt.host)
        zombies = zombie_report(ev, window.start, window.end, restarts, thresholds)
    profiles = hot_core_profiles(ev, incident_views, opt.profile_before_s) \
        if "profiles" in parts and coverage.profiles is not None else []

    episode_profiles: list[HotCoreProfile] = []
    if "profiles" in parts and coverage.profiles is not None and not profiles:
        # no incident had a hot core before it: the longest saturations' stacks, or with no
        # per-core record at all (a perf script alone), the core the stacks say was busiest
        # in the kernel
        episode_profiles = episode_stacks(ev, episodes) if samples_ctx \
            else busiest_kernel_core(ev, window)
    # pressure and softirq rows serve only the diagnosis: a partial investigation (cores,
    # events, zombies) does not read them or load their modules
    diagnosed = set(parts) >= ALL_PARTS
    pressure = ev.pressure(window.start, window.end) if diagnosed else None
    softirqs = softirqs_near(ev, ctx_episodes) if diagnosed else []
    statuses = ev.statuses()
    statuses += derived_statuses(ev.name, statuses, window, samples, events, lost, zombies,
                                 sum(omitted.values()))
    inv = Investigation(
        source=ev.name, window=window, coverage=coverage, params=p, samples=samples,
        cpus=cpus, episodes=episodes, context_episodes=ctx_episodes,
        events=events, events_omitted=omitted, incidents=incident_views, correlation=summary,
        correlation_window_s=cw, lost_records=lost, record_span=span, zombies=zombies,
        restarts=restarts, profiles=profiles, findings=[], statuses=statuses,
        diagnostics=[*getattr(samples_ctx, "diagnostics", ()),  # stored rows it skipped
                     *(zombies.diagnostics if zombies else ())],
        pressure=pressure, episode_profiles=episode_profiles, softirqs=softirqs, node=node,
    )
    inv.findings = fnd.findings(inv, thresholds)
    if diagnosed:
        from corescope.investigate.diagnose import diagnose

        assert thresholds is not None  # set with the zombie part
        inv.diagnosis = diagnose(inv, thresholds)
    return inv


def softirqs_near(ev: Evidence, episodes: Sequence[Episode]) -> list[SoftirqSample]:
    """The softirq rows covering the longest irq/softirq-mode episodes and the baseline
    before each, each row once, in time order."""
    if not episodes:  # (a log alone: nothing of the diagnosis is loaded)
        return []
    from corescope.investigate.hypotheses.common import SOFT_SHARE, soft_share

    soft = sorted((e for e in episodes if soft_share(e) >= SOFT_SHARE),
                  key=lambda e: -e.duration_s)[:SOFTIRQ_MAX_EPISODES]
    spans = sorted((e.start - SOFTIRQ_BASELINE_S, e.end + 60.0) for e in soft)
    merged: list[list[float]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [row for a, b in merged for row in ev.softirqs(a, b)]


def resolution(samples: Sequence[CoreSample], cpu: int, t: float, window_s: float
               ) -> Resolution:
    """The same seconds before `t` on `cpu`, at 1 s and as a 30 s / 60 s sampler saw them
    (kernel time = sys + irq + soft, the episode mode), plus the machine-wide view."""
    from corescope.analysis.episodes import as_matrix, coarse_view
    from corescope.analysis.usage import usage_of

    m = as_matrix(samples)
    near = m.between(math.nextafter(t - window_s, math.inf), t + 0.5)  # t-w < s.t <= t+0.5
    cols = near.cpus.tolist()
    series: tuple[ResolutionPoint, ...] = ()
    if cpu in cols:
        i = cols.index(cpu)
        rows, machine = near.fields[:, i].T.tolist(), near.machine_ticks().tolist()
        series = tuple(
            ResolutionPoint(st, usage_of(-1, tuple(rows[k])).mode_pct("kernel"),
                            usage_of(-1, tuple(machine[k])).mode_pct("kernel"))
            for k, st in enumerate(near.t.tolist()) if near.present[k, i])
    # the same definition as `cores`: epoch-aligned monitor windows touching these seconds
    c30, m30 = coarse_view(samples, cpu, t - window_s, t, 30.0, "kernel")
    c60, m60 = coarse_view(samples, cpu, t - window_s, t, 60.0, "kernel")
    if not series:
        return Resolution(cpu, series, None, None, None, None)
    return Resolution(cpu, series, c30, c60, m30, m60)


def episode_stacks(ev: Evidence, episodes: Sequence[Episode], most: int = 3
                   ) -> list[HotCoreProfile]:
    """The stacks of the longest kernel-time episodes, each over its own seconds."""
    from corescope.analysis.flame import Profile

    out = []
    for e in sorted(episodes, key=lambda e: (-e.duration_s, e.start))[:most]:
        diags: list[Diagnostic] = []
        prof = Profile()
        for sample, _wall in ev.stacks(e.start, e.end, e.cpu, diags):
            prof.add(sample)
        out.append(HotCoreProfile(e.cpu, e.start, e.end, None, e.end, prof, tuple(diags[:20]),
                                  prof, "episode"))
    return out


def busiest_kernel_core(ev: Evidence, window: Window) -> list[HotCoreProfile]:
    """With stacks but no per-core record: the CPU with the most kernel-mode samples in the
    window (the stacks are then the only witness of a hot core), over the whole window."""
    from corescope.analysis.flame import Profile

    diags: list[Diagnostic] = []
    by_cpu: dict[int, Profile] = {}
    kernel: dict[int, int] = {}
    for sample, _wall in ev.stacks(window.start, window.end, None, diags):
        cpu = sample.cpu
        if cpu is None:
            continue
        prof = by_cpu.get(cpu)
        if prof is None:
            prof = by_cpu[cpu] = Profile()
        if not prof.add(sample) and sample.frames and sample.frames[0].kernel:
            kernel[cpu] = kernel.get(cpu, 0) + sample.count
    if not kernel:
        return []
    cpu = max(kernel, key=lambda c: (kernel[c], -c))
    return [HotCoreProfile(cpu, window.start, window.end, None, window.end, by_cpu[cpu],
                           tuple(diags[:20]), None, "stacks")]


def hot_core_profiles(ev: Evidence, views: list[IncidentView], before_s: float
                      ) -> list[HotCoreProfile]:
    """The stacks of each incident's hot cores in the `before_s` before it: the nearest
    first, then any other core saturated before it (a busy neighbour and the guilty core can
    both precede a stall; the stacks tell them apart). Incidents of one burst on one core
    share a window: each (cpu, window) is read once."""
    from corescope.analysis.flame import Profile

    out: list[HotCoreProfile] = []
    order = [(v, p) for v in views
             for p in sorted(v.incident.preceding,
                             key=lambda p: (p is not v.incident.nearest, p.lead_s, p.cpu))]
    for v, near in order:
        if near is None:
            continue
        e = v.incident.event
        lo, hi = e.time - before_s, e.time
        if any(o.cpu == near.cpu and o.start < hi and lo < o.end for o in out):
            continue
        if len(out) >= MAX_PROFILES:
            break
        diags: list[Diagnostic] = []
        prof, during = Profile(), Profile()
        for sample, wall in ev.stacks(lo, hi, near.cpu, diags):
            prof.add(sample)
            if wall is not None and near.start <= wall <= near.end:
                during.add(sample)
        out.append(HotCoreProfile(near.cpu, lo, hi, e.id, e.time, prof, tuple(diags[:20]),
                                  during))
    return out
