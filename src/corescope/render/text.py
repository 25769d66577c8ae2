"""Human-readable renderings of an Investigation: events, the incident timeline, the zombie
report and doctor's summary. Every line goes through render.term (untrusted text is escaped)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from corescope.render.term import echo
from corescope.timeparse import format_duration, iso

if TYPE_CHECKING:  # annotations only: printing events needs no zombie or diagnosis records
    from corescope.analysis.zombies import ZombieReport
    from corescope.investigate.diagnosis import Diagnosis
    from corescope.investigate.model import HotCoreProfile, Investigation
    from corescope.model.common import Finding, SensorStatus
    from corescope.model.events import KernelEvent


def where_of(e: KernelEvent) -> str:
    return " ".join(x for x in (e.driver, e.device, e.iface) if x)


# What to do when nothing stands; each hypothesis declares its own advice (DECLARED.advice).
# Advice only: corescope never acts on a node.
UNDETERMINED_ADVICE = "collect what was not measured (below) and run again"
# undetermined with every hypothesis measured and ruled out: nothing left to collect
UNDETERMINED_MEASURED = ("read the incidents themselves (`corescope events`): every hypothesis "
                         "was measured and none fits")


def advice_for(root_cause: str) -> str:
    """What to do next for a verdict ({culprit}, {cpu}: the verdict's; "?" when unknown)."""
    from corescope.investigate.diagnosis import UNDETERMINED
    from corescope.investigate.hypotheses import declared

    d = declared().get(root_cause)
    return d.advice if d is not None else UNDETERMINED_ADVICE if root_cause == UNDETERMINED \
        else ""


def print_diagnosis(d: Diagnosis | None, hypotheses: bool = False) -> None:
    """The verdict and the causal chain first; the hypothesis sweep when asked."""
    if d is None:
        return
    v = d.verdict
    bits = [f"root cause: {v.root_cause}"]
    if v.culprit:
        bits.append(f"culprit {v.culprit}")
    if v.hot_cpu is not None:
        bits.append(f"hot cpu{v.hot_cpu}")
    if v.walker:
        bits.append(f"walker {v.walker[0]} in {v.walker[1]}")
    echo("diagnosis: " + ", ".join(bits) + f" (confidence {v.confidence:.2f})")
    for i, link in enumerate(d.chain, 1):
        echo(f"  {i}. {link.step}: {link.summary}")
    for line in v.benign_events:
        echo(f"  benign (shown, not accused): {line}")
    if d.node is not None:
        n = d.node
        echo(f"  node: {n['name']} ({n['basis']}); {n['records_of_other_nodes']} records of "
             "other nodes set aside" if n["name"] else
             f"  node: could not tell which of the {n['nodes_listed']} listed nodes this is "
             "(name it with --node); no pod tagged with a node is blamed")
    advice = advice_for(v.root_cause)
    if v.root_cause == "undetermined" and not any(h.verdict == "not_measured"
                                                  for h in d.hypotheses):
        advice = UNDETERMINED_MEASURED
    if advice:
        echo("  next: " + advice.format(culprit=v.culprit or "?",
                                        cpu="?" if v.hot_cpu is None else v.hot_cpu))
    if v.root_cause == "undetermined":
        # say what would decide it: the hypotheses something pointed at but that lack evidence
        unmeasured = [h for h in d.hypotheses if h.verdict == "not_measured"]
        missing = [h for h in unmeasured if h.score > 0] or unmeasured
        for h in missing:
            echo(f"  to decide {h.name}: {h.would_change}")
        if not missing and not hypotheses:
            echo("  `corescope diagnose` shows each hypothesis and why it was ruled out")
    else:
        missing = [h for h in d.hypotheses if h.verdict == "not_measured"]
        if missing:
            echo("  not measured: " + "; ".join(f"{h.name} (needs {h.would_change})"
                                                 for h in missing))
    if hypotheses:
        echo("hypotheses:")
        for h in d.hypotheses:
            echo(f"  [{h.verdict:<12}] {h.name} ({h.score:.2f})"
                 + (f": {h.summary}" if h.summary else ""))
            if h.verdict != "supported" and h.would_change:
                echo(f"      would change with: {h.would_change}")


def print_events(evs: Sequence[KernelEvent], lost: int, filtered: bool) -> None:
    if not evs:
        echo("no kernel events" + ("" if filtered else " (use --all to list unclassified "
                                                      "lines)"))
    for e in evs:
        q = f" q{e.queue}" if e.queue is not None else ""
        lab = " [lab]" if e.lab else ""
        echo(f"#{e.id}  {iso(e.time)}  {e.kind:<22} {where_of(e)}{q}{lab}")
        echo(f"      {e.raw[:160]}")
    if lost:
        echo(f"warning: {lost} kernel log records were lost (overwritten before "
             "corescope read them)")


def _spark(vals: list[float]) -> str:
    bars = " ▁▂▃▄▅▆▇█"
    return "".join(bars[min(8, round(max(0.0, v) / 100 * 8))] for v in vals)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def print_timeline(inv: Investigation, with_diagnosis: bool = True) -> None:
    if with_diagnosis:
        print_diagnosis(inv.diagnosis)
    window = inv.correlation_window_s
    span = inv.record_span
    if not inv.incidents:
        echo("no incidents in range" + (f" (record {iso(span[0])} – {iso(span[1])})"
                                         if span else " (no per-core record)"))
    for v in inv.incidents:
        inc, e = v.incident, v.incident.event
        q = f" queue {e.queue}" if e.queue is not None else ""
        echo(f"== #{e.id} {iso(e.time)}  {e.kind}  {where_of(e)}{q}" + (" [lab]" if e.lab else ""))
        echo(f"   {e.raw[:160]}")
        for r in inc.related:
            echo(f"   +{r.time - e.time:5.1f}s {r.kind}: {r.raw[:120]}")
        if not inc.preceding:
            from corescope.investigate.hypotheses.common import (
                cores_seen_before,
                uncovered_before,
            )

            # no samples is not a calm core: say which seconds were not covered
            echo(f"   no hot-core episode in the {format_duration(window)} before"
                 if cores_seen_before(inv, v) else
                 f"   not covered (no per-core samples {uncovered_before(inv, [v])})")
        for p in inc.preceding:
            serves = {True: "serves this queue's IRQ", False: "does not serve this queue's IRQ",
                      None: "queue IRQ mapping unknown"}[p.serves_queue]
            echo(f"   cpu{p.cpu}: saturated {iso(p.start)} for {p.end - p.start:.1f}s, "
                 f"ended {p.lead_s:.1f}s before the event; {serves}")
        if v.interrupt_map:
            mine = [m for m in v.interrupt_map if m.iface in (e.iface, None)] or \
                list(v.interrupt_map)
            echo("   interrupt map: " + "; ".join(
                f"{m.name}→cpu{','.join(map(str, m.cpus)) or '?'}" for m in mine[:16]))
        res = v.resolution
        if res is not None and res.series_1s:
            vals = [p.kernel_pct for p in res.series_1s]
            echo(f"   cpu{res.cpu} kernel time, last {format_duration(window)} at 1 s: "
                 f"|{_spark(vals)}| peak {_pct(res.peak_1s_pct)}%")
            echo(f"   the same seconds at 30 s: {_pct(res.at_30s_pct)}%, at 60 s: "
                 f"{_pct(res.at_60s_pct)}%; whole machine at 1 s peak "
                 f"{_pct(res.machine_peak_1s_pct)}%, at 60 s {_pct(res.machine_at_60s_pct)}%")
        echo("")
    s = inv.correlation
    if s.events:
        frac = f"{s.preceded}/{s.events} ({(s.preceded_fraction or 0):.0%})"
        base = f"{s.base_rate:.0%}" if s.base_rate is not None else "unknown (no record)"
        echo(f"summary: {frac} incidents followed a hot-core episode within "
             f"{format_duration(window)}; by chance (random instants): {base}")
        if s.median_lead_s is not None:
            echo(f"         median lead {format_duration(s.median_lead_s)}; most "
                 f"frequent core cpu{s.top_cpu} ({s.top_cpu_count}x)"
                 + (f"; p={s.p_value:.3g}" if s.p_value is not None else ""))
    if inv.lost_records:
        echo(f"warning: {inv.lost_records} kernel log records were lost in this range")
    if with_diagnosis:  # `report` (analyze prints the stacks after its own timeline)
        print_hot_cores(inv, "hot-core stacks:")


def hot_core_lines(h: HotCoreProfile) -> list[str]:
    """What ran on one hot core: before an incident, or over a saturation no incident
    followed; its processes, hottest functions, top stack and the memcg walker if any."""
    from corescope.investigate.hypotheses.common import find_walker

    p = h.profile
    procs = ", ".join(f"{s.comm} {s.pct:.0f}%" for s in p.top_processes(4))
    span = format_duration(h.end - h.start)
    when = {"incident": f"in the {span} before event #{h.event_id}",
            "episode": f"saturated {span} from {iso(h.start)} (no incident after it)",
            "stacks": f"busiest in the kernel over the {span} of stacks (no per-core "
                      "record)"}.get(h.basis, f"{span} from {iso(h.start)}")
    out = [f"cpu{h.cpu} {when}: {p.busy_samples} busy samples; {procs or 'no stacks'}"]
    funcs = ", ".join(f.label for f in p.top_functions(5))
    if funcs:
        out.append(f"  hottest functions: {funcs}")
    focus = h.during if h.during is not None and h.during.busy_samples else p
    top = focus.top_stacks(1)
    if top:
        s = top[0]
        frames = " ← ".join(f.symbol for f in s.frames[:8]) + (" ← ..." if len(s.frames) > 8
                                                                 else "")
        out.append(f"  top stack ({s.comm}, {s.pct:.0f}%): {frames or '(no frames)'}")
    w = find_walker([h], h.cpu)
    if w is not None:
        out.append(f"  memcg walker: {w.comm} in {w.function} ({w.share:.0%} of its "
                   "kernel-mode samples)")
    return out


def print_hot_cores(inv: Investigation, heading: str = "") -> None:
    """Every hot core's stacks the investigation read (none: nothing printed)."""
    from corescope.render.json_contract import hot_core_profiles

    shown = hot_core_profiles(inv)
    if shown and heading:
        echo(heading)
    for h in shown:
        for line in hot_core_lines(h):
            echo(line)


def print_zombies(r: ZombieReport, statuses: Sequence[SensorStatus],
                  findings: Sequence[Finding]) -> None:
    lay = r.layout
    where = (f"memory on {lay.memory}" + (f" at {lay.memory_mount}" if lay.memory_mount else "")
             if lay.memory else "no memory")
    echo(f"layout: {lay.kind} ({where})")
    off = [s for s in statuses if not s.ok]
    c = r.census
    if c is None or c.dying is None:
        if c is not None and c.kernel_count is not None:  # the kernel's count alone
            echo(f"memory cgroups: {c.kernel_count} held by the kernel, live unknown")
            echo(f"  source: {c.source}")
        for s in off:
            echo(f"not measured: {s.name}: {s.detail}")
        return
    ratio = f", {c.dying / c.live:.1f}x live" if c.live else ""
    echo(f"memory cgroups: {c.kernel_count} held by the kernel, {c.live} live, "
         f"{c.dying} dying{ratio}")
    echo(f"  source: {c.source}")
    g = r.growth
    if g.per_hour is None:
        echo("growth: unknown")
    else:
        how = (f"Theil-Sen over {g.points} censuses in {format_duration(g.span_s)}"
               if g.method == "theil-sen" else "since boot: dying / uptime, no stored history")
        echo(f"growth: {g.per_hour:+.1f} dying/hour ({how})")
    if g.crossed:
        echo(f"threshold: CROSSED ({g.threshold_rule})")
    elif g.projected_threshold_at is not None:
        eta = format_duration(max(0.0, g.projected_threshold_at - c.t))
        echo(f"threshold: {g.threshold_rule} in about {eta} ({iso(g.projected_threshold_at)})")
    else:
        echo(f"threshold: {g.threshold_rule}; not growing")
    echo(f"where ({r.location_basis}):")
    for loc in r.locations[:10]:
        echo(f"  {loc.path}: {loc.dying}")
    if not r.locations:
        echo("  -")
    echo("suspects:")
    for i, sus in enumerate(r.suspects[:10], 1):
        ev = sus.evidence
        bits = [f"{k}={ev[k]}" for k in ("removed_per_hour", "restarts", "restarts_per_hour",
                                          "state", "explains_pct_of_growth") if k in ev]
        echo(f"  {i}. {sus.name} ({sus.kind}) score {sus.score:.2f}: {', '.join(bits)}")
    if not r.suspects:
        echo("  - (no cgroup churn and no restarting unit or container found)")
    if r.stat_read:
        parts = [f"{f} {v['median']:.3f} ms" + (f" [{v['flag']}]" if v["flag"] else "")
                 for f, v in r.stat_read.items()]
        echo("root stat read (median): " + ", ".join(parts))
    for s in off:
        echo(f"not measured: {s.name}: {s.detail}")
    for f in findings:
        echo(f"[{f.severity}] {f.kind}: {f.summary}")
        for line in f.evidence.get("advice", []):
            echo(f"  - {line}")


def print_findings(inv: Investigation) -> None:
    if inv.findings:
        echo(f"findings ({len(inv.findings)}):")
        for f in inv.findings:
            echo(f"  [{f.severity}] {f.kind}: {f.summary}")
        echo("verdict: FINDINGS (exit 1)")
    else:
        echo("findings: none")
        echo("verdict: healthy (exit 0)")


def print_sensors(inv: Investigation) -> None:
    echo("sensors:")
    for s in inv.statuses:
        echo(f"  [{'ok ' if s.ok else 'OFF'}] {s.name}: {s.detail}")


def print_doctor(inv: Investigation, host: str, ncpu: int | None, seconds: float) -> None:
    echo(f"corescope doctor on {host} ({ncpu} CPUs, {seconds:g}s live sample)"
         if seconds else f"corescope doctor on {host} (evidence: {inv.source})")
    print_diagnosis(inv.diagnosis)
    print_hot_cores(inv, "hot-core stacks:")
    print_sensors(inv)
    print_findings(inv)


def print_investigation(inv: Investigation) -> None:
    """Everything, as `analyze` prints it after the file list."""
    w = inv.window
    print_diagnosis(inv.diagnosis, hypotheses=True)
    echo(f"investigation of {iso(w.start)} – {iso(w.end)} ({format_duration(w.seconds)}), "
         f"{len(inv.cpus)} CPUs, evidence: {inv.source}")
    print_sensors(inv)
    echo(f"hot-core episodes ({inv.params.mode} >= {inv.params.threshold_pct:g}% for >= "
         f"{format_duration(inv.params.min_duration_s)}): {len(inv.episodes)}")
    for e in inv.episodes[:15]:
        echo(f"  cpu{e.cpu}  {iso(e.start)}  {e.duration_s:.1f}s  peak {e.peak_pct:.0f}%  "
             f"mean {e.mean_pct:.0f}%  machine {e.machine_avg_pct:.0f}%  a 30 s monitor saw "
             f"{e.seen_at_30s_pct:.0f}%")
    if len(inv.episodes) > 15:
        echo(f"  ... {len(inv.episodes) - 15} more (corescope cores --json)")
    echo("")
    print_timeline(inv, with_diagnosis=False)
    print_hot_cores(inv)
    if inv.zombies is not None and inv.zombies.census is not None:
        echo("")
        print_zombies(inv.zombies, [], [])
    echo("")
    print_findings(inv)
