"""Kernel events against hot-core episodes: which core saturated before each event, how long
before, whether it serves the event's NIC queue, and how often that happens by chance.

Pure functions. The base rate asks the same question ("was there an episode in the window
before this instant?") at random instants of the same record, with a seeded RNG so the answer
is reproducible; the binomial tail says how surprising the observed fraction is against it.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from corescope.model.events import (
    CorrelationSummary,
    Incident,
    KernelEvent,
    PrecedingEpisode,
)

if TYPE_CHECKING:
    from corescope.model.cores import Episode

DEFAULT_WINDOW_S = 30.0
DEFAULT_GROUP_S = 10.0
DEFAULT_BASE_SAMPLES = 2000

# serving(event) → CPUs that serve the event's queue, or None when unknown
ServingFn = Callable[[KernelEvent], frozenset[int] | None]


def preceding(t: float, episodes: Sequence[Episode], window_s: float = DEFAULT_WINDOW_S
              ) -> list[tuple[Episode, float]]:
    """Episodes overlapping [t − window, t], with lead = t − end (0 if still running at t).
    An episode that starts after t is not 'before' it."""
    out = []
    lo = t - window_s
    for ep in episodes:
        if ep.start <= t and ep.end >= lo:
            out.append((ep, max(0.0, t - ep.end)))
    out.sort(key=lambda p: (p[1], p[0].cpu))
    return out


def correlate_event(event: KernelEvent, episodes: Sequence[Episode],
                    window_s: float = DEFAULT_WINDOW_S,
                    serving: frozenset[int] | None = None,
                    related: tuple[KernelEvent, ...] = ()) -> Incident:
    pre = tuple(
        PrecedingEpisode(
            cpu=ep.cpu, start=ep.start, end=ep.end, lead_s=lead,
            serves_queue=None if serving is None else ep.cpu in serving,
            peak_pct=getattr(ep, "peak_pct", None),
        )
        for ep, lead in preceding(event.time, episodes, window_s)
    )
    return Incident(event=event, preceding=pre, related=related)


def _group_key(e: KernelEvent) -> str:
    return e.iface or e.device or e.kind


def group_bursts(events: Sequence[KernelEvent], group_s: float = DEFAULT_GROUP_S
                 ) -> list[tuple[KernelEvent, tuple[KernelEvent, ...]]]:
    """One incident per burst: a driver's stall → reset → reset-completed lines (and the
    counter increases that echo them) within `group_s` of the burst's first event on the same
    interface/device count once, headed by the first."""
    ordered = sorted(events, key=lambda e: (e.time, e.seq if e.seq is not None else -1))
    heads: list[tuple[KernelEvent, list[KernelEvent]]] = []
    open_by_key: dict[str, tuple[KernelEvent, list[KernelEvent]]] = {}
    for e in ordered:
        key = _group_key(e)
        cur = open_by_key.get(key)
        if cur is not None and e.time - cur[0].time <= group_s:
            cur[1].append(e)
            continue
        cur = (e, [])
        open_by_key[key] = cur
        heads.append(cur)
    return [(h, tuple(r)) for h, r in heads]


def incidents(events: Sequence[KernelEvent], episodes: Sequence[Episode],
              window_s: float = DEFAULT_WINDOW_S, group_s: float = DEFAULT_GROUP_S,
              serving: ServingFn | None = None, only_incidents: bool = True) -> list[Incident]:
    """One Incident per burst of incident-kind events (or of every event given, when
    only_incidents is False: `report --event ID` on any line)."""
    out = []
    chosen = [e for e in events if e.is_incident or not only_incidents]
    for head, related in group_bursts(chosen, group_s):
        srv = serving(head) if serving else None
        out.append(correlate_event(head, episodes, window_s, srv, related))
    return out


def base_rate(episodes: Sequence[Episode], span: tuple[float, float],
              window_s: float = DEFAULT_WINDOW_S, samples: int = DEFAULT_BASE_SAMPLES,
              seed: int = 0, covered: Sequence[tuple[float, float]] | None = None
              ) -> float | None:
    """The fraction of random instants in the record with an episode in the window before
    them. Instants are drawn only where the record was being taken (`covered`, the runs of
    consecutive samples; the whole span when not given): a stretch with the recorder off has
    no episodes only because nobody looked, and would deflate the rate. Within each stretch,
    where a full window fits when it can."""
    t0, t1 = span
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0 or samples <= 0:
        return None
    parts = [(a + window_s if b - a > window_s else a, b)
             for a, b in (covered if covered else [span]) if b > a]
    total = sum(b - a for a, b in parts)
    if total <= 0:
        return None
    rng = random.Random(seed)
    eps = sorted(episodes, key=lambda e: e.start)
    # an episode has start <= t and end >= t - window exactly when the latest end among the
    # episodes starting at or before t reaches t - window: a binary search per instant, not
    # a scan of every episode
    starts = [e.start for e in eps]
    latest_end = list(itertools.accumulate((e.end for e in eps), max))
    hits = 0
    for _ in range(samples):
        x = rng.uniform(0, total)
        for a, b in parts:  # map x onto the covered stretches, in order
            if x <= b - a:
                t = a + x
                break
            x -= b - a
        else:
            t = parts[-1][1]
        k = bisect.bisect_right(starts, t)  # eps[:k] start at or before t
        if k and latest_end[k - 1] >= t - window_s:
            hits += 1
    return hits / samples


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X ≥ k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    # terms in log space: comb(n, i) * p**i overflows a float past ~1,000 incidents
    lp, lq = math.log(p), math.log1p(-p)
    lgn = math.lgamma(n + 1)
    total = 0.0
    for i in range(k, n + 1):
        total += math.exp(lgn - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp
                          + (n - i) * lq)
    return min(1.0, total)


def summarize(incs: Sequence[Incident], episodes: Sequence[Episode],
              span: tuple[float, float] | None, window_s: float = DEFAULT_WINDOW_S,
              samples: int = DEFAULT_BASE_SAMPLES, seed: int = 0,
              covered: Sequence[tuple[float, float]] | None = None) -> CorrelationSummary:
    n = len(incs)
    preceded = [i for i in incs if i.preceding]
    nearest = [i.nearest for i in preceded if i.nearest is not None]
    leads = [p.lead_s for p in nearest]
    cpus = Counter(p.cpu for p in nearest)
    top = min(cpus.items(), key=lambda kv: (-kv[1], kv[0])) if cpus else None
    known = [i for i in preceded if any(p.serves_queue is not None for p in i.preceding)]
    serves = sum(1 for i in known if any(p.serves_queue for p in i.preceding))
    br = base_rate(episodes, span, window_s, samples, seed, covered) if span else None
    frac = len(preceded) / n if n else None
    pval = binomial_tail(len(preceded), n, br) if (br is not None and n) else None
    return CorrelationSummary(
        events=n, preceded=len(preceded), preceded_fraction=frac, base_rate=br,
        base_samples=samples if br is not None else 0,
        median_lead_s=_median(leads) if leads else None,
        top_cpu=top[0] if top else None, top_cpu_count=top[1] if top else 0,
        serves_queue_fraction=serves / len(known) if known else None, p_value=pval,
        window_s=window_s,
    )


def _median(values: list[float]) -> float:
    import statistics  # fractions and decimal: not for a log with no incident

    return statistics.median(values)
