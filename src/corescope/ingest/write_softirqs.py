"""Imported /proc/softirqs loops → the softirq table `record`'s netdev sensor fills."""

from __future__ import annotations

import numpy as np

from corescope.ingest.write import WriteContext, Written, overlapping
from corescope.sources.artifacts.base import Parsed
from corescope.store import events as store_events
from corescope.store.db import Store


def write(parsed: Parsed, store: Store, ctx: WriteContext) -> Written:
    rows = parsed.extra if isinstance(parsed.extra, list) else []
    if not rows:
        return Written(0, None, (), ["no NET_RX rates"])
    # one softirq source per stretch of time, the exact counters first (the import writes a
    # /proc/softirqs loop before mpstat's rates, rounded to two decimals): the same seconds
    # counted twice would double every CPU's NET_RX
    hit = overlapping(np.array([r.t for r in rows], float),
                      np.array([r.interval_s for r in rows], float), ctx.softirqs_covered)
    notes = []
    if hit.any():
        notes.append(f"{int(hit.sum())} softirq readings overlap those of another source "
                     "(kept the more exact one)")
        rows = [r for r, h in zip(rows, hit.tolist(), strict=True) if not h]
        if not rows:
            return Written(0, None, (), notes)
    store_events.insert_softirqs_many(store, rows)
    span = (min(r.t - r.interval_s for r in rows), max(r.t for r in rows))
    ctx.softirqs_covered.append(span)
    cpus = tuple(sorted({c for r in rows for c in r.net_rx}))
    return Written(len(rows), span, cpus, notes)
