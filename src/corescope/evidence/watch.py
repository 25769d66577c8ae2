"""The evidence of `zombies --watch`: at each tick, this node's census read now, merged with the
stored history and with what the watch itself has seen (its earlier censuses, and the memcg
churn inotify counted since the last tick). The view only asks for a tick's Evidence,
investigates it and says what the census was."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from corescope.errors import InvalidInput
from corescope.evidence.live import LiveEvidence
from corescope.evidence.memory import MemoryEvidence
from corescope.evidence.merged import MergedEvidence
from corescope.evidence.open import existing_store
from corescope.model.cgroups import ChurnCount, MemcgCensus

if TYPE_CHECKING:
    from corescope.rootfs import Root
    from corescope.runner import Runner
    from corescope.sources.cgwatch import ChurnWatcher


class ZombieWatch:
    """One census per tick. `start()` says why churn is not counted live (or None);
    `tick(now)` is the Evidence of that moment; `saw(census)` keeps a tick's census for the
    next ones (growth is read from them)."""

    def __init__(self, root: Root, runner: Runner, store_dir: Path, history_s: float) -> None:
        self.root = root
        self.runner = runner
        self.store_dir = store_dir
        self.history_s = history_s
        self.seen = MemoryEvidence(name="watch")
        self._watcher: ChurnWatcher | None = None
        self._churn_error: str | None = None
        self._prev_mono = self._mono = time.monotonic()
        self._ticks = 0

    def start(self) -> str | None:
        from corescope.sources import cgroups as cg
        from corescope.sources.cgwatch import ChurnWatcher

        layout, _ = cg.read_layout(self.root)
        if layout.memory_mount is None:
            raise InvalidInput(f"no memory controller mounted (layout {layout.kind}): "
                               "nothing to watch")
        self._watcher = ChurnWatcher(self.root.path(layout.memory_mount))
        self._churn_error = self._watcher.start()
        start = time.time()
        store = existing_store(self.store_dir)
        if store is not None:
            from corescope.evidence.store import StoreEvidence

            with store:
                ev = StoreEvidence(store, self.runner)
                self.seen.census_rows = ev.censuses(start - self.history_s, start)
                self.seen.churn_rows = ev.churn(start - self.history_s, start)
                self.seen.restart_ev = ev.restarts(start - self.history_s, start)
        self._prev_mono = time.monotonic()
        return self._churn_error

    def tick(self, now: float) -> MergedEvidence:
        mono = time.monotonic()
        if self._watcher is not None and self._churn_error is None:
            self.seen.churn_rows += [
                ChurnCount(now, p, c.created, c.removed, 0, mono - self._prev_mono, "inotify")
                for p, c in self._watcher.drain().items() if c.created or c.removed]
        live = LiveEvidence(self.root, self.runner, history_s=self.history_s)
        live.read_cgroups(now)
        live.read_restarts(now)
        self._mono = mono
        return MergedEvidence(self.seen, live)

    def saw(self, census: MemcgCensus | None) -> None:
        """The tick's census joins the history; its churn interval is the time since the
        last tick (none for the first, or when inotify is not counting)."""
        if census is not None:
            counted = self._ticks and self._churn_error is None
            self.seen.census_rows.append(replace(
                census, churn_interval_s=self._mono - self._prev_mono if counted else 0.0))
        self._prev_mono = self._mono
        self._ticks += 1

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
