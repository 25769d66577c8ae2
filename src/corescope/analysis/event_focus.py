"""Which kernel events of a window an investigation holds: every incident line, the lines
around each incident, and the window's first quiet lines; the rest are counted by kind.

A node's log is mostly chatter (veth ports, audit, IPVS): a 216 MB dmesg is 2.9 million
lines, about 1.2 GB as events. The hypotheses read incidents and the lines printed with them
(an OOM report's memcg and `oom-kill:` lines share its timestamp to the millisecond); the
views list a bounded number of lines. One pass, in time order, in bounded memory."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corescope.model.events import KernelEvent


@dataclass(frozen=True)
class EventBudget:
    # quiet (non-incident) lines kept from the start of the window, whatever their times
    quiet: int = 50_000
    # lines this close to an incident (before or after) are kept beside it...
    near_s: float = 1.0
    # ...up to this many on each side of one incident (a report's task list can be long)
    near_max: int = 5_000


DEFAULT_BUDGET = EventBudget()


@dataclass
class FocusedEvents:
    events: list[KernelEvent]
    omitted: dict[str, int] = field(default_factory=dict)  # kind -> lines counted, not held


def focus(events: Iterable[KernelEvent], budget: EventBudget | None) -> FocusedEvents:
    """The events to hold, in their order, and what was left out by kind. `events` must be
    in time order; a None budget keeps everything."""
    if budget is None:
        return FocusedEvents(list(events))
    kept: list[KernelEvent] = []
    omitted: Counter[str] = Counter()
    # quiet lines past the quota, held until they are too old to precede an incident
    pending: deque[KernelEvent] = deque()
    keep_until, after_left, quiet_left = float("-inf"), 0, budget.quiet
    for e in events:
        if e.is_incident:
            while pending:  # the lines just before it
                p = pending.popleft()
                if p.time >= e.time - budget.near_s:
                    kept.append(p)
                else:
                    omitted[p.kind] += 1
            kept.append(e)
            keep_until, after_left = e.time + budget.near_s, budget.near_max
        elif e.time <= keep_until and after_left > 0:
            kept.append(e)
            after_left -= 1
        elif quiet_left > 0:
            kept.append(e)
            quiet_left -= 1
        else:
            pending.append(e)
            while pending and (len(pending) > budget.near_max
                               or pending[0].time < e.time - budget.near_s):
                omitted[pending.popleft().kind] += 1
    for p in pending:
        omitted[p.kind] += 1
    return FocusedEvents(kept, dict(omitted))
