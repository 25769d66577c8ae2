"""Imported /proc/softirqs loops → the softirq table `record`'s netdev sensor fills."""

from __future__ import annotations

from corescope.ingest.write import WriteContext, Written
from corescope.sources.artifacts.base import Parsed
from corescope.store import events as store_events
from corescope.store.db import Store


def write(parsed: Parsed, store: Store, ctx: WriteContext) -> Written:
    rows = parsed.extra if isinstance(parsed.extra, list) else []
    if not rows:
        return Written(0, None, (), ["no NET_RX rates"])
    store_events.insert_softirqs_many(store, rows)
    cpus = tuple(sorted({c for r in rows for c in r.net_rx}))
    return Written(len(rows), (rows[0].t - rows[0].interval_s, rows[-1].t), cpus)
