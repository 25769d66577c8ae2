"""What every investigating command shares: the window options (--since/--until/--last),
choosing the evidence once, and building the Investigation."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Any

import click

from corescope.evidence.store import StoreEvidence
from corescope.investigate import Investigation, investigate
from corescope.investigate.build import ALL_PARTS, Options
from corescope.investigate.window import WindowError, resolve_window
from corescope.store.db import DB_NAME, Store, StoreError
from corescope.store.meta import is_analyzed
from corescope.timeparse import TimeParseError, parse_instant, parse_since
from corescope.views.clitypes import DURATION, CliContext, TimeValue, fail

SINCE = TimeValue("time", parse_since)
UNTIL = TimeValue("time", parse_instant)


def window_options(default_last: str, last_help: str = "How far back to look.",
                   ) -> Callable[[Any], Any]:
    """--since T, --until T (epoch, ISO 8601 in local time without an offset, `90s ago`;
    --since also takes a plain duration meaning that long ago) and --last D."""
    def deco(f: Any) -> Any:
        f = click.option("--last", type=DURATION, default=None,
                         help=f"{last_help} Counts back from --until or now; on a record that "
                         f"ended earlier, from its end. [default: {default_last}]")(f)
        f = click.option("--until", type=UNTIL, default=None,
                         help="Window end: epoch, ISO 8601 (local time without an offset), "
                         "or '90s ago'. [default: now]")(f)
        f = click.option("--since", type=SINCE, default=None,
                         help="Window start: epoch, ISO 8601, '90s ago', or a duration "
                         "meaning that long ago (1h).")(f)
        return f
    return deco


def open_store(obj: CliContext, hint: str = "", required: bool = True) -> Store | None:
    if not (obj.store_dir / DB_NAME).exists() and not required:
        return None
    try:
        return Store.open(obj.store_dir, create=False)
    except StoreError as exc:
        if not required:
            raise
        fail(f"{exc}{'; ' + hint if hint else ''}")
        raise


def store_investigation(obj: CliContext, since: float | None, until: float | None,
                        last: float | None, default_last: float, *,
                        options: Options | None = None, parts: Collection[str] = ALL_PARTS,
                        hint: str = "") -> Investigation:
    """The investigation of a window of the store (recorded or analyzed)."""
    store = open_store(obj, hint)
    assert store is not None
    ev = StoreEvidence(store, obj.runner)
    try:
        try:
            window = resolve_window(time.time(), since=since, until=until, last=last,
                                    default_last=default_last, coverage=ev.coverage())
        except WindowError as exc:
            fail(str(exc))
            raise
        return investigate(ev, window, options, parts)
    finally:
        ev.close()


def store_is_analyzed(store: Store) -> bool:
    return is_analyzed(store)


__all__ = ["SINCE", "UNTIL", "TimeParseError", "open_store", "store_investigation",
           "window_options"]
