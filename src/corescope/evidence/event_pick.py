"""Which perf event a flame graph draws: one per graph, as stackcollapse-perf.pl draws. No
numpy here: the whole-input fold (perf_fold) uses it without the ring's query; the ring's
column rows are picked by the same object in ring_profile."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from corescope.model.profiles import Batch, StackSample
from corescope.sources.folded import EVENT as FOLDED_EVENT


class EventPick:
    """One perf event per graph, as stackcollapse-perf.pl draws: the one named, or the first
    one seen; samples of the others are counted (the JSON lists every event present) but not
    drawn. Folded stacks carry no event and are always drawn."""

    def __init__(self, name: str | None) -> None:
        self.asked = name
        self.chosen: str | None = name
        self.present: Counter[str] = Counter()

    def keep(self, s: StackSample) -> bool:
        ev = s.event
        self.present[ev] += s.count
        if ev == FOLDED_EVENT:
            return True
        if self.chosen is None:
            self.chosen = ev
        return ev == self.chosen

    def filter(self, stream: Iterator[tuple[StackSample, float | None]]
               ) -> Iterator[tuple[StackSample, float | None]]:
        keep = self.keep
        return ((s, t) for s, t in stream if keep(s))

    def keep_batch(self, b: Batch) -> Batch:
        """`keep` on a batch of perf script samples (count 1) at once: the samples drawn."""
        ev = b.event
        if not ev:
            return b
        if self.chosen is None:
            self.chosen = next((e for e in ev if e != FOLDED_EVENT), None)
        first = ev[0]
        if ev.count(first) == len(ev):  # the common case: one event throughout
            self.present[first] += len(ev)
            return b if first in (self.chosen, FOLDED_EVENT) else Batch(*([] for _ in range(9)))
        self.present.update(ev)
        keep = [i for i, e in enumerate(ev) if e in (self.chosen, FOLDED_EVENT)]
        cols = (b.comm, b.pid, b.tid, b.cpu, b.time, b.event, b.frames, b.period, b.pid_known)
        return Batch(*([col[i] for i in keep] for col in cols))  # type: ignore[arg-type]
