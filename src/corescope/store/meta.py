"""Facts about the store itself, e.g. that `analyze` built it from saved artifacts (then the
live node is a different machine, and no view mixes it in)."""

from __future__ import annotations

import json

from corescope.store.db import Store

DDL = """
CREATE TABLE IF NOT EXISTS store_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

ORIGIN = "origin"  # "record" (default) | "analyze"
CAPTURE_WINDOW = "capture_window"  # JSON [start, end] of an imported `capture` bundle


def set_meta(store: Store, key: str, value: str) -> None:
    with store.write() as c:
        c.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)", (key, value))


def get_meta(store: Store, key: str) -> str | None:
    rows = store.query("SELECT value FROM store_meta WHERE key = ?", (key,))
    return rows[0][0] if rows else None


def is_analyzed(store: Store) -> bool:
    return get_meta(store, ORIGIN) == "analyze"


def capture_window(store: Store) -> tuple[float, float] | None:
    raw = get_meta(store, CAPTURE_WINDOW)
    try:
        lo, hi = json.loads(raw) if raw else (None, None)
        return (float(lo), float(hi)) if lo is not None and hi is not None else None
    except (ValueError, TypeError):
        return None
