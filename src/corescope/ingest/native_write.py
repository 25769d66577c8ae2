"""Writing corescope's own exact records (a capture bundle) into the store, ids and all."""

from __future__ import annotations

import json

from corescope.ingest.write import WriteContext, Written
from corescope.sources.artifacts.base import Parsed
from corescope.sources.artifacts.native import Manifest
from corescope.sources.artifacts.native_codec import Native
from corescope.store import census as census_store
from corescope.store import events as events_store
from corescope.store.db import Store
from corescope.store.meta import CAPTURE_WINDOW, set_meta


def write_native(p: Parsed, store: Store, ctx: WriteContext) -> Written:
    if isinstance(p.extra, Manifest):
        if p.extra.window is not None:  # analyze investigates the captured window itself
            set_meta(store, CAPTURE_WINDOW, json.dumps(list(p.extra.window)))
        return Written(0, None, (), [f"bundle manifest: {len(p.extra.copies)} human-readable "
                                     "copies beside the exact files"])
    n: Native = p.extra
    times: list[float] = []
    if n.events:
        events_store.insert_events(store, n.events, keep_ids=True)
        # a dmesg copy of the same lines is then a duplicate
        ctx.seen_kernel.next_file()
        ctx.seen_kernel.remember([(e.raw, e.time) for e in n.events])
        times += [e.time for e in n.events]
    locs: dict[float, list] = {}
    for t, loc in n.locations:
        locs.setdefault(t, []).append(loc)
    for c in n.censuses:
        census_store.write_census(store, c, (), locs.pop(c.t, []))
        times.append(c.t)
    for t, rows in locs.items():  # locations of a census outside the bundle
        census_store.write_locations(store, t, rows)
    if n.churn:
        census_store.write_churn(store, n.churn)
    if n.stat_costs:
        census_store.write_stat_costs(store, n.stat_costs)
    if n.restarts:
        census_store.write_restarts(store, n.restarts)
    for t, qmap in n.irq_maps:
        events_store.insert_irq_map(store, t, qmap)
    for t, lost in n.losses:
        events_store.record_loss(store, t, lost, 0)
    return Written(n.records(), (min(times), max(times)) if times else None)
