"""Retention across every table: by age, then by bytes (dropping the oldest data first)."""

from __future__ import annotations

import importlib

from corescope.store import series
from corescope.store.db import SCHEMA_MODULES, Store


def _retain_all(store: Store, cutoff: float) -> None:
    for name in SCHEMA_MODULES:
        mod = importlib.import_module(name)
        fn = getattr(mod, "retain", None)
        if fn is not None:
            fn(store, cutoff)


def enforce(store: Store, now: float, retain_s: float, max_bytes: int) -> None:
    _retain_all(store, now - retain_s)
    # Over budget: move the cutoff forward a tenth of the remaining span at a time.
    for _ in range(40):
        if store.size_bytes() <= max_bytes:
            break
        span = series.time_span(store)
        if span is None or span[1] - span[0] <= 0:
            break
        _retain_all(store, span[0] + (span[1] - span[0]) * 0.1)
    store.reclaim()
