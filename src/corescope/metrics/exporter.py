"""`record --listen`: /metrics in the Prometheus text formats (0.0.4, or OpenMetrics 1.0 when
the scraper asks for it, as Prometheus does).

The server (metrics/httpd.py) runs on its own daemon thread. A scrape asks `LiveMetrics` for
its state key; while the state is unchanged (the same sample tick, census, events, sensors and
info, within the same second) the bytes of the last render are served again, so several
scrapers, or scrapes faster than the tick, cost a send each. Otherwise it takes a snapshot
(a copy under a short lock) and renders the families below, rebuilding only the per-CPU lines
whose values moved. Sampling never waits on a scrape beyond that copy.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from corescope.analysis.episodes import DEFAULT_MIN_DURATION, DEFAULT_THRESHOLD
from corescope.metrics.exposition import (
    OPENMETRICS_CONTENT_TYPE,
    TEXT_CONTENT_TYPE,
    Block,
    Family,
    render,
    wants_openmetrics,
)
from corescope.metrics.httpd import MetricsServer
from corescope.metrics.live import MODES, LiveMetrics, Snapshot
from corescope.model.cgroups import DEFAULT_THRESHOLDS

# Each HELP says what its counter counts and since when, from the constants the code uses.
_TH = DEFAULT_THRESHOLDS
SATURATED = Family("corescope_cpu_saturated_seconds", "counter",
                   f"Seconds the CPU spent with the mode at or above the episode threshold "
                   f"({DEFAULT_THRESHOLD:g} % of the time not stolen by the hypervisor), "
                   "since this recorder started.", ("cpu", "mode"))
EPISODES = Family("corescope_hot_core_episodes", "counter",
                  f"Hot-core episodes (kernel time >= {DEFAULT_THRESHOLD:g} % of the unstolen "
                  f"time for >= {DEFAULT_MIN_DURATION:g} s) since this recorder started, "
                  "counted when they qualify.", ("cpu",))
WINDOW = Family("corescope_cpu_mode_ratio_max_window_seconds", "gauge",
                "The trailing window of corescope_cpu_mode_ratio_max.")
DYING = Family("corescope_memcg_dying", "gauge",
               "Dying (zombie) memory cgroups the kernel still holds, at the last census.")
LIVE = Family("corescope_memcg_live", "gauge", "Live memory cgroups, at the last census.")
GROWTH = Family("corescope_memcg_dying_growth_per_hour", "gauge",
                "Growth of dying memcgs per hour (Theil-Sen over this boot's censuses, else "
                "dying / uptime).")
THRESHOLD = Family("corescope_memcg_dying_threshold", "gauge",
                   f"Dying memcg count that corescope treats as harmful: {_TH.max_dying:,}, or "
                   f"{_TH.ratio:g}x live when that is lower (but at least "
                   f"{_TH.ratio_min_dying:,}).")
CROSSING = Family("corescope_memcg_dying_threshold_projected_timestamp_seconds", "gauge",
                  "When the dying count is projected to cross the threshold (now if already "
                  "crossed).")
STAT = Family("corescope_stat_read_seconds", "gauge",
              "Median time to read the root memcg stat file.", ("file",))
# the kmsg sensor's first start on a new store imports what the kernel ring still holds
# (events since boot), a restart on a kept store only records not stored before: both are
# counted, as read
EVENTS = Family("corescope_kernel_events", "counter",
                "Kernel log and NIC counter events this recorder read: on a new store's first "
                "start they include the backlog the kernel ring still held (events since "
                "boot), after a restart only records not read before.", ("kind", "iface"))
RESTARTS = Family("corescope_unit_restarts", "counter",
                  "Restarts of a systemd unit (systemd's NRestarts) or container (the "
                  "runtime's attempt count), the highest read; only units and containers that "
                  "restarted.", ("unit", "kind"))
SENSOR_UP = Family("corescope_sensor_up", "gauge",
                   "1 when the sensor started and its last tick succeeded.", ("sensor",))
NODE = Family("corescope_node", "info", "This node's kernel, image and layout.")
DIAGNOSIS = Family("corescope_diagnosis", "gauge",
                   "1 for the verdict of `corescope diagnose` over the store's last hour "
                   "(recomputed every minute), 0 for the other causes.", ("root_cause",))
UNIT_STATE = Family("corescope_unit_state", "gauge",
                    "1 for each enabled, failed or restarting systemd unit.", ("unit", "state"))
NIC = Family("corescope_nic", "info", "NIC driver and version.")
IRQ_POLICY = Family("corescope_irq_affinity", "info", "How NIC queue IRQs are placed.")


def ratio_family(window_s: float) -> Family:
    """Its HELP names the recorder's window, so it is made per recorder."""
    return Family("corescope_cpu_mode_ratio_max", "gauge",
                  f"Highest 1 s ratio (0-1) of the mode on the CPU over the trailing "
                  f"{window_s:g} s.", ("cpu", "mode"))


class _PerCpu:
    """One family's lines, kept per CPU and rebuilt only for the CPUs whose values changed
    (compared bit for bit, so a NaN equals itself): most seconds move a few maxima, and a
    96-CPU node has 672 lines per family."""

    def __init__(self, lines: Callable[[str, Any], str]) -> None:
        self.lines = lines  # (cpu label, that CPU's value or row as Python floats) -> text
        self.cpus: tuple[int, ...] | None = None
        self.bits: np.ndarray | None = None
        self.texts: list[str] = []
        self.body = ""

    def __call__(self, cpus: tuple[int, ...], values: np.ndarray) -> str:
        bits = values.view(np.int64)
        if not cpus:  # nothing sampled yet (a scrape before the first second): no lines
            self.cpus, self.bits, self.texts, self.body = cpus, bits.copy(), [], ""
            return ""
        if cpus != self.cpus or self.bits is None or bits.shape != self.bits.shape:
            self.texts = [self.lines(str(c), v) for c, v in zip(cpus, values.tolist(),
                                                               strict=True)]
        else:
            diff = (bits != self.bits).reshape(len(cpus), -1).any(axis=1)
            changed = np.flatnonzero(diff).tolist()
            if not changed:
                return self.body
            for i in changed:
                self.texts[i] = self.lines(str(cpus[i]), values[i].tolist())
        self.cpus, self.bits = cpus, bits.copy()
        self.body = "".join(self.texts)
        return self.body


def _memcg_families(snap: Snapshot) -> list[Block]:
    out: list[Block] = []
    c = snap.census
    for fam, v in ((DYING, c.dying if c is not None else None),
                   (LIVE, c.live if c is not None else None),
                   (GROWTH, snap.growth_per_hour), (THRESHOLD, snap.dying_limit),
                   (CROSSING, snap.projected_crossing)):
        if v is not None:
            out.append((fam, fam.line((), float(v))))
    out.append((STAT, "".join(STAT.line((f,), v) for f, v in sorted(snap.stat_costs.items()))))
    return out


def _event_families(snap: Snapshot) -> list[Block]:
    return [
        (EVENTS, "".join(EVENTS.line(k, float(n)) for k, n in sorted(snap.events.items()))),
        (RESTARTS, "".join(RESTARTS.line(k, float(n))
                           for k, n in sorted(snap.restarts.items()))),
        (SENSOR_UP, "".join(SENSOR_UP.line((name,), 1.0 if ok else 0.0)
                            for name, ok in sorted(snap.sensors.items()))),
    ]


def _info_families(snap: Snapshot) -> list[Block]:
    out: list[Block] = []
    node: dict[str, str] = snap.info.get("node_info") or {}
    if node:
        out.append((NODE, NODE.info_line(node)))
    diag = snap.info.get("diagnosis")
    if diag is not None:
        out.append((DIAGNOSIS, "".join(DIAGNOSIS.line((cause,), float(v))
                                       for cause, v in sorted(diag.items()))))
    inv: dict[str, Any] = snap.info.get("inventory") or {}
    # a real node has a hundred enabled units or more: these lines are kept between
    # renders (see Exposition) for as long as the info dict is the same object
    if inv:
        units = "".join([UNIT_STATE.line((u, state), 1.0)
                 for state in ("enabled", "failed", "restarting")
                 for u in inv.get("units", {}).get(state, [])])
        out.append((UNIT_STATE, units))
        nics = "".join([NIC.info_line({"iface": n.get("iface") or "",
                                       "driver": n.get("driver") or "",
                                       "version": n.get("version") or "",
                                       "firmware": n.get("firmware") or ""})
                        for n in inv.get("nics", [])])
        out.append((NIC, nics))
        policy = inv.get("irq", {}).get("policy")
        if policy:
            out.append((IRQ_POLICY, IRQ_POLICY.info_line({"policy": policy})))
    return out


class Exposition:
    """/metrics' body for a scrape: rendered at most once per state of `LiveMetrics` and
    format, and then only the parts whose inputs changed. Per-CPU lines (a 96-CPU node has
    over 1,300) are rebuilt only when their array changed: most ticks move a few maxima."""

    def __init__(self, live: LiveMetrics) -> None:
        self.live = live
        self.ratio = ratio_family(live.window_s)
        self._lock = threading.Lock()
        self._key: Any = None
        ratio = self.ratio
        self._ratio = _PerCpu(lambda c, row: "".join(
            ratio.line((c, m), v) for m, v in zip(MODES, row, strict=True) if v == v))
        self._saturated = _PerCpu(lambda c, row: "".join(
            SATURATED.line((c, m), v) for m, v in zip(MODES, row, strict=True)))
        self._episodes = _PerCpu(lambda c, n: EPISODES.line((c,), float(n)))
        self._blocks: list[Block] = []
        self._info: tuple[Any, list[Block]] = (None, [])
        self._bytes: dict[bool, bytes] = {}

    def __call__(self, accept: str) -> tuple[str, bytes]:
        om = wants_openmetrics(accept)
        key = self.live.state_key()
        with self._lock:
            if key != self._key:
                self._blocks = self.families(self.live.snapshot())
                self._key, self._bytes = key, {}
            body = self._bytes.get(om)
            if body is None:
                body = self._bytes[om] = render(self._blocks, om)
        return (OPENMETRICS_CONTENT_TYPE if om else TEXT_CONTENT_TYPE), body

    def families(self, snap: Snapshot) -> list[Block]:
        """The exposition's families, in order, from one snapshot."""
        cpus = snap.cpus
        out: list[Block] = [
            (self.ratio, self._ratio(cpus, snap.ratio_max)),  # v == v: not NaN
            (SATURATED, self._saturated(cpus, snap.saturated_s)),
            (EPISODES, self._episodes(cpus, snap.episodes)),
            (WINDOW, WINDOW.line((), self.live.window_s)),
            *_memcg_families(snap), *_event_families(snap)]
        if self._info[0] is not snap.info:  # set_info replaces the dict: identity is enough
            self._info = (snap.info, _info_families(snap))
        return out + self._info[1]


def start(live: LiveMetrics, host: str, port: int) -> tuple[MetricsServer, threading.Thread]:
    """Serve /metrics on (host, port) from one daemon thread; returns (server, thread).

    One thread for every connection (Prometheus scrapes a target serially over one kept-alive
    connection; no thread per scrape) and uncompressed (a few kB on loopback or the cluster
    network: gzip would cost more CPU than it saves)."""
    server = MetricsServer(host, port, Exposition(live))
    thread = threading.Thread(target=server.serve_forever, name="corescope-metrics",
                              daemon=True)
    thread.start()
    return server, thread
