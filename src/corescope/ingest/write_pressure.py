"""Imported pressure readings (PSI, schedstat, vmstat loops) → store/pressure.py, the same
tables `record` fills. A read without a date of its own is placed at `ctx.undated_t`."""

from __future__ import annotations

import dataclasses

from corescope.ingest.write import WriteContext, Written
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.pressure_loops import Pressure
from corescope.store import pressure as store_pressure
from corescope.store.db import Store


def write(parsed: Parsed, store: Store, ctx: WriteContext) -> Written:
    pl = parsed.extra
    if not isinstance(pl, Pressure):
        return Written(0, None, (), ["no pressure readings"])

    def placed(items: list) -> list:  # type: ignore[type-arg]
        return [s if s.t > 0 else dataclasses.replace(s, t=ctx.undated_t) for s in items]

    psi, sched, vm = placed(pl.psi), placed(pl.sched), placed(pl.vm)
    store_pressure.write(store, psi, sched, vm)
    times = [s.t for s in psi + sched + vm]
    cpus = tuple(sorted({q.cpu for s in sched for q in s.cpus}))
    return Written(len(times), (min(times), max(times)) if times else None, cpus)
