"""Where a flame view reads its stacks: the profile ring of a store (recorded, analyzed, or
saved perf script input imported into a temporary store), counted on the chunks' columns, or
any other Evidence's `stacks`, counted sample by sample. Both answer the same questions, so
the flame view (investigate/flame.py) is written once for `flame`, `heatmap`, the HTML report
and serve."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from corescope.analysis.flame import Profile
from corescope.model.common import Diagnostic

if TYPE_CHECKING:
    from corescope.analysis.subsecond import Heatmap
    from corescope.evidence.base import Evidence
    from corescope.evidence.ring_profile import EventPick
    from corescope.model.profiles import ProfileChunk, StackSample
    from corescope.runner import Runner
    from corescope.store.db import Store

Samples = Iterator[tuple["StackSample", float | None]]  # (sample, wall time; None: folded)
Progress = Callable[[int, int, str], None]


class ProfileSource(Protocol):
    """The stacks of one evidence, by window."""

    offline: bool  # saved input the user gave (not a store): read whole, no migration

    def chunks(self, lo: float, hi: float) -> list[ProfileChunk]: ...

    def all_chunks(self) -> list[ProfileChunk]: ...

    def covers(self, lo: float, hi: float) -> bool:
        """Whether anything was recorded in [lo, hi] (a baseline can be read there)."""
        ...

    def oldest(self) -> float | None: ...

    def span(self) -> tuple[float, float] | None: ...

    def hz(self, lo: float, hi: float) -> int | None: ...

    def profile(self, lo: float, hi: float, cpu: int | None, *,
                chunks: list[ProfileChunk] | None = None, whole: bool = False,
                pid: int | None = None, comm: str | None = None, include_idle: bool = False,
                heat: Heatmap | None = None, weight: str = "samples",
                by_thread: bool = False, pick: EventPick | None = None,
                stacks: bool = True) -> Profile: ...

    def samples(self, lo: float, hi: float, cpu: int | None, *,
                chunks: list[ProfileChunk] | None = None, whole: bool = False) -> Samples: ...


class RingProfiles:
    """The profile ring of a store. `diags` collects the query's notes, `progress` is told
    of each chunk read; `offline` input (a temporary store of --perf-script files) is read
    once, so it is not worth migrating to columns."""

    def __init__(self, store: Store, runner: Runner, *, offline: bool = False,
                 diags: list[Diagnostic] | None = None, progress: Progress | None = None,
                 on_close: Callable[[], None] | None = None) -> None:
        self.store, self.runner, self.offline = store, runner, offline
        self.diags = diags if diags is not None else []
        self.progress = progress
        self._on_close = on_close

    def evidence(self) -> Evidence:
        """The store's whole Evidence (its kernel events, say), made when first asked for:
        a flame query needs only the ring."""
        from corescope.evidence.store import StoreEvidence

        return StoreEvidence(self.store, self.runner)

    def close(self) -> None:
        self.store.close()
        if self._on_close is not None:
            self._on_close()

    def chunks(self, lo: float, hi: float) -> list[ProfileChunk]:
        from corescope.store import profiles as ring

        return ring.chunks_overlapping(self.store, lo, hi)

    def all_chunks(self) -> list[ProfileChunk]:
        from corescope.store import profiles as ring

        return ring.all_chunks(self.store)

    def covers(self, lo: float, hi: float) -> bool:
        return bool(self.chunks(lo, hi))

    def oldest(self) -> float | None:
        from corescope.store import profiles as ring

        return ring.summary(self.store)[1]

    def summary(self) -> tuple[int, float | None, float | None]:
        from corescope.store import profiles as ring

        n, oldest, newest, _b, _s = ring.summary(self.store)
        return n, oldest, newest

    def span(self) -> tuple[float, float] | None:
        from corescope.store import profiles as ring

        return ring.record_span(self.store)

    def hz(self, lo: float, hi: float) -> int | None:
        """The --profile-hz the window's chunks were recorded at (the most samples' rate)."""
        by: dict[int, int] = {}
        for c in self.chunks(lo, hi):
            if c.hz > 0:
                by[c.hz] = by.get(c.hz, 0) + max(1, c.samples)
        return max(by, key=lambda h: by[h]) if by else None

    def profile(self, lo: float, hi: float, cpu: int | None, *,
                chunks: list[ProfileChunk] | None = None, whole: bool = False,
                pid: int | None = None, comm: str | None = None, include_idle: bool = False,
                heat: Heatmap | None = None, weight: str = "samples",
                by_thread: bool = False, pick: EventPick | None = None,
                stacks: bool = True) -> Profile:
        from corescope.evidence.ring_profile import ring_profile  # numpy: on demand

        return ring_profile(self.store, self.runner, lo, hi, cpu, self.diags, self.progress,
                            chunks, whole, pid=pid, comm=comm, include_idle=include_idle,
                            heat=heat, migrate=not self.offline, weight=weight,
                            by_thread=by_thread, pick=pick, stacks=stacks)

    def samples(self, lo: float, hi: float, cpu: int | None, *,
                chunks: list[ProfileChunk] | None = None, whole: bool = False) -> Samples:
        from corescope.evidence.profile_query import ring_samples

        return ring_samples(self.store, self.runner, lo, hi, cpu, self.diags, self.progress,
                            chunks, whole, migrate=not self.offline)


class StackProfiles:
    """Any other Evidence's stacks (saved artifacts held in memory, a merge): one pass over
    `Evidence.stacks` per window, each sample added to the Profile."""

    offline = False

    def __init__(self, ev: Evidence) -> None:
        self.ev = ev
        self.diags: list[Diagnostic] = []

    def chunks(self, lo: float, hi: float) -> list[ProfileChunk]:
        return []

    def all_chunks(self) -> list[ProfileChunk]:
        return []

    def span(self) -> tuple[float, float] | None:
        got = self.ev.coverage().profiles
        return (got.start, got.end) if got is not None else None

    def covers(self, lo: float, hi: float) -> bool:
        got = self.span()
        return got is not None and got[0] <= hi and got[1] >= lo

    def oldest(self) -> float | None:
        got = self.span()
        return got[0] if got is not None else None

    def hz(self, lo: float, hi: float) -> int | None:
        return None

    def profile(self, lo: float, hi: float, cpu: int | None, *,
                chunks: list[ProfileChunk] | None = None, whole: bool = False,
                pid: int | None = None, comm: str | None = None, include_idle: bool = False,
                heat: Heatmap | None = None, weight: str = "samples",
                by_thread: bool = False, pick: EventPick | None = None,
                stacks: bool = True) -> Profile:
        prof = Profile(include_idle=include_idle, weight=weight, by_thread=by_thread)
        for s, wall in self.samples(lo, hi, cpu):
            if not s.matches(pid, comm) or (pick is not None and not pick.keep(s)):
                continue
            idle = prof.add(s)
            if heat is not None and wall is not None:  # folded stacks have no time to place
                heat.add(wall, idle)
        return prof

    def samples(self, lo: float, hi: float, cpu: int | None, *,
                chunks: list[ProfileChunk] | None = None, whole: bool = False) -> Samples:
        return self.ev.stacks(lo, hi, cpu, self.diags)


def profile_source(ev: Evidence) -> ProfileSource:
    """The ring's columns when the evidence is a store's (or a merge over one), else the
    evidence's own stacks."""
    from corescope.evidence.merged import MergedEvidence
    from corescope.evidence.store import StoreEvidence

    stored = ev.stored if isinstance(ev, MergedEvidence) else ev
    if isinstance(stored, StoreEvidence):
        return RingProfiles(stored.store, stored.runner)
    return StackProfiles(ev)
