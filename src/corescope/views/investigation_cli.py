"""What every investigating command shares: choosing the evidence once and building the
Investigation (the window options live in clitypes)."""

from __future__ import annotations

from collections.abc import Collection

from corescope.evidence.base import Evidence
from corescope.evidence.store import StoreEvidence
from corescope.investigate import Investigation, investigate
from corescope.investigate.build import ALL_PARTS, Options
from corescope.model.common import SensorStatus
from corescope.render.term import echo
from corescope.store.db import DB_NAME, Store, StoreError
from corescope.store.meta import is_analyzed
from corescope.views.clitypes import CliContext, fail, open_store_or_fail
from corescope.views.windows import window_or_fail


def existing_store(obj: CliContext) -> Store | None:
    """The store if there is one (None when nothing was recorded there); a store that is
    there but cannot be opened raises StoreError. Commands that need one use
    clitypes.open_store_or_fail."""
    if not (obj.store_dir / DB_NAME).exists():
        return None
    return Store.open(obj.store_dir, create=False)


def store_investigation(obj: CliContext, since: float | None, until: float | None,
                        last: float | None, default_last: float, *,
                        options: Options | None = None, parts: Collection[str] = ALL_PARTS,
                        hint: str = "") -> Investigation:
    """The investigation of a window of the store (recorded or analyzed)."""
    store = open_store_or_fail(obj, hint)
    ev = StoreEvidence(store, obj.runner)
    try:
        window = window_or_fail(ev.coverage(), since, until, last, default_last)
        inv = investigate(ev, window, options, parts)
        for d in inv.diagnostics:
            if d.source.startswith("store "):  # stored data it had to skip: never silent
                echo(f"corescope: warning: {d}", err=True)
        return inv
    finally:
        ev.close()




def node_evidence(obj: CliContext, *, sample_seconds: float = 0.0, kernel_ring: bool = False,
                  history_s: float = 24 * 3600.0, now: bool = True
                  ) -> tuple[Evidence, list[SensorStatus]]:
    """This node's evidence: the store merged with a live read of the node. An analyzed
    store describes another machine, and a window that ends in the past (`now` False) is
    not about the node as it is today: then the live node is left out. Returns the evidence
    and the store's own status line."""
    # the live node's readers load only for the commands that look at it
    from corescope.evidence.live import LiveEvidence
    from corescope.evidence.merged import MergedEvidence

    store_status: SensorStatus
    store: Store | None = None
    try:
        store = existing_store(obj)
    except StoreError as exc:
        store_status = SensorStatus("store", False, f"{exc}; live read only")
        # said on stderr too: a command that shows only some sensor lines must not hide it
        echo(f"corescope: warning: {exc}; reading the live node only", err=True)
    if store is not None and (is_analyzed(store) or not now):
        return StoreEvidence(store, obj.runner), []
    live = LiveEvidence(obj.root, obj.runner, history_s=history_s)
    if sample_seconds:
        try:
            live.sample_cores(sample_seconds)
        except (OSError, ValueError) as exc:
            fail(f"cannot sample per-core CPU time: {exc}")
    if kernel_ring:
        live.read_kernel_ring(_recorded_skew(store))
    live.read_cgroups()
    live.read_restarts()
    if store is None:
        if "store_status" not in locals():
            store_status = SensorStatus(
                "store", False, f"no store at {obj.store_dir} (start `corescope record` to "
                "keep history); only the live node was examined")
        return live, [store_status]
    return MergedEvidence(StoreEvidence(store, obj.runner), live), []


def _recorded_skew(store: Store | None) -> float | None:
    """The kernel log clock's skew a recorder learned this boot (so lines only the ring still
    holds sit where the recorder would have put them)."""
    if store is None:
        return None
    from corescope.sources.clock import boot_wall_time
    from corescope.store import events as store_events

    return store_events.latest_skew(store, boot_wall_time())
