"""Recorder sensors for zombie memcgs: a census every `census_interval_s` (10 s by default)
with per-parent churn and v2 locations, the root stat-read cost every minute, and restart
evidence from systemd and container runtimes, asked only when something may have restarted."""

from __future__ import annotations

import os
import time
from dataclasses import replace

from corescope.analysis.zombies import rank_locations
from corescope.model.cgroups import CgroupLayout, ChurnCount, RestartRecord
from corescope.model.common import SensorStatus
from corescope.model.text import valid_record
from corescope.sensors.base import Sensor, SensorEnv
from corescope.sources import cgroups as cg
from corescope.sources import units
from corescope.sources.cgwatch import Churn, ChurnWatcher, snapshot_churn
from corescope.store import census as census_store
from corescope.store.db import Store

STAT_PROBE_EVERY_S = 60.0
RESTARTS_EVERY_S = 60.0
# Asking systemctl/journalctl/crictl/docker spawns processes, so the restart sensor asks only
# when a unit or container may have (re)started: cgroups were created or removed (the census
# counts them), or one of these directories changed (systemd's per-unit invocation links,
# containerd's and docker's task directories). It also asks every REFRESH, so counters that
# move without either signal are at most that stale.
RESTARTS_REFRESH_S = 900.0
RUNTIME_DIRS = ("/run/systemd/units", "/run/containerd/io.containerd.runtime.v2.task/k8s.io",
                "/run/containerd/io.containerd.runtime.v2.task/moby",
                "/run/docker/runtime-runc/moby", "/run/docker/containerd")
STORED_LOCATIONS = 20


class CensusSensor(Sensor):
    name = "memcg_census"

    def __init__(self, env: SensorEnv) -> None:
        super().__init__(env)
        self.interval_s = max(0.1, env.options.census_interval_s)
        self.store: Store | None = None
        self.layout: CgroupLayout | None = None
        self.watcher: ChurnWatcher | None = None
        self.reader: cg.CensusReader | None = None
        self._prev_children: dict[str, tuple[str, ...]] | None = None
        self._prev_mono: float | None = None
        self._last_probe: float | None = None
        self.churn_seen = 0  # cgroups created + removed so far: the restart sensor's trigger

    def open(self, store: Store) -> SensorStatus:
        self.store = store
        root = self.env.root
        self.layout, _ = cg.read_layout(root)
        lay = self.layout
        if lay.memory is None or lay.memory_mount is None:
            return SensorStatus(self.name, False, f"cgroup layout {lay.kind} has no memory "
                                "controller mounted: zombie memcg census not measured")
        top = root.path(lay.memory_mount)
        if not os.access(top, os.R_OK | os.X_OK):
            return SensorStatus(self.name, False, f"cannot read {top} (not root?): zombie "
                                "memcg census not measured")
        self.reader = cg.CensusReader(root, lay)
        first = self.reader.take()
        if first.census is None:
            why = "; ".join(str(d) for d in first.diagnostics) or "unknown"
            return SensorStatus(self.name, False, f"census failed ({why}): zombie memcg "
                                "census not measured")
        self._prev_children = first.tree.children if first.tree else None
        self.watcher = ChurnWatcher(top)
        err = self.watcher.start()
        self._prev_mono = time.monotonic()  # churn counts from here
        churn_how = f"churn by inotify ({self.watcher.watches} watches)"
        if err is not None:
            self.watcher = None
            churn_how = f"churn by snapshot diff, a lower bound ({err})"
        return SensorStatus(self.name, True, f"{lay.kind} layout, memory on {lay.memory} at "
                            f"{lay.memory_mount}; census every {self.interval_s:g}s; "
                            f"{churn_how}")

    def tick(self, wall: float, mono: float) -> None:
        if self.layout is None or self.store is None or self.reader is None:
            return
        root = self.env.root
        res = self.reader.take(wall)
        c = res.census
        if c is None:
            return
        # v2: one walk gives both the per-cgroup dying counts and the live tree (the census
        # itself reads only the root's cgroup.stat)
        stats: dict[str, cg.CgroupStat] = {}
        tree = res.tree
        if self.layout.memory == "v2" and self.layout.memory_mount:
            stats, tree = cg.walk_v2(root.path(self.layout.memory_mount))
        interval = (mono - self._prev_mono) if self._prev_mono is not None else 0.0
        self._prev_mono = mono
        counts: dict[str, Churn]
        if self.watcher is not None:
            counts, method = self.watcher.drain(), "inotify"
            if self.watcher.overflowed:
                method = "inotify-overflowed"
        elif tree is not None and self._prev_children is not None:
            counts, method = snapshot_churn(self._prev_children, tree.children), "snapshot"
        else:
            counts, method = {}, "none"
        if tree is not None:
            self._prev_children = tree.children
        kids = tree.children if tree is not None else {}
        rows = [ChurnCount(wall, parent, n.created, n.removed, len(kids.get(parent, ())),
                           interval, method)
                for parent, n in sorted(counts.items()) if n.created or n.removed]
        if interval > 0 and method != "none":
            c = replace(c, churn_interval_s=interval)
        locations = rank_locations(stats, STORED_LOCATIONS) if stats else []
        # a cgroup named with bytes that are not UTF-8 (a container can make one) is stored
        # with them escaped: SQLite refuses surrogates, and the census must not fail for it
        rows = [valid_record(r)[0] for r in rows]
        locations = [valid_record(loc)[0] for loc in locations]
        census_store.write_census(self.store, c, rows, locations)
        self.churn_seen += sum(r.created + r.removed for r in rows)
        self.env.tap.census(c)
        if self._last_probe is None or mono - self._last_probe >= STAT_PROBE_EVERY_S:
            self._last_probe = mono
            costs, _ = cg.probe_stat_read(root, self.layout, 5, wall, c.dying)
            if costs:
                census_store.write_stat_costs(self.store, costs)
                self.env.tap.stat_costs(costs)

    def close(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        if self.reader is not None:
            self.reader.close()


class RestartSensor(Sensor):
    name = "restarts"

    def __init__(self, env: SensorEnv, census: CensusSensor | None = None) -> None:
        super().__init__(env)
        self.interval_s = max(RESTARTS_EVERY_S, env.options.census_interval_s)
        self.store: Store | None = None
        self.census = census
        self.runtime_dirs: tuple[str, ...] = RUNTIME_DIRS
        self.asked = 0  # how many times the tools were asked (each is one or more spawns)
        self._seen: tuple | None = None
        self._last_ask_wall: float | None = None
        self._last_ask_mono: float | None = None

    def open(self, store: Store) -> SensorStatus:
        self.store = store
        if not self.env.root.is_live:
            return SensorStatus(self.name, False, f"--root {self.env.root.base} is a captured "
                                "tree: live systemctl/crictl/docker not asked")
        ev = units.collect(self.env.root, self.env.runner)
        self._asked(time.time(), time.monotonic())
        ok = [s for s in ev.statuses if s.ok]
        detail = "; ".join(s.detail for s in ev.statuses)
        if not ok:
            return SensorStatus(self.name, False, detail)
        return SensorStatus(self.name, True, detail)

    def _signals(self) -> tuple:
        """What changes when a unit or container (re)starts, read without a process."""
        marks: list[object] = [self.census.churn_seen if self.census is not None else None]
        for d in self.runtime_dirs:
            try:
                st = os.stat(self.env.root.path(d))
                marks.append((st.st_ino, st.st_mtime_ns, st.st_nlink))
            except OSError:
                marks.append(None)
        return tuple(marks)

    def _asked(self, wall: float, mono: float) -> None:
        self.asked += 1
        self._seen = self._signals()
        self._last_ask_wall, self._last_ask_mono = wall, mono

    def due(self, mono: float) -> bool:
        """Ask the tools now? Only when something may have restarted, or the refresh is due."""
        if self._last_ask_mono is None or mono - self._last_ask_mono >= RESTARTS_REFRESH_S:
            return True
        return self._signals() != self._seen

    def tick(self, wall: float, mono: float) -> None:
        if self.store is None or not self.due(mono):
            return
        since = self._last_ask_wall if self._last_ask_wall is not None else wall - self.interval_s
        ev = units.collect(self.env.root, self.env.runner, wall, journal_since=since)
        self._asked(wall, mono)
        # only what ever restarted: a healthy node's hundred services need no history
        keep = [valid_restart(r) for r in ev.records if r.restarts]
        if keep:
            census_store.write_restarts(self.store, keep)
            self.env.tap.restarts(keep)


def valid_restart(r: RestartRecord) -> RestartRecord:
    """The record, storable: a name with lone surrogates (not valid UTF-8, or a JSON "\ud800")
    is kept with them escaped and a note saying so, so one such container cannot fail the
    write of every other's restarts (SQLite refuses surrogates)."""
    fixed, bad = valid_record(r)
    if not bad:
        return r
    return replace(fixed, detail={**fixed.detail, "note": "not valid UTF-8: the undecodable "
                                  "characters are written as \\udcXX escapes"})


def build(env: SensorEnv) -> list[Sensor]:
    if not env.options.census:
        return []
    census = CensusSensor(env)
    return [census, RestartSensor(env, census)]
