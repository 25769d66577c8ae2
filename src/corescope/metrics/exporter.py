"""`record --listen`: /metrics in the Prometheus exposition format, via prometheus-client.

The HTTP server runs on its own daemon thread; each scrape asks `LiveMetrics` for a snapshot
(a copy taken under a short lock) and turns it into metric families here. Sampling never
waits on a scrape beyond that copy.
"""

from __future__ import annotations

import math
import socket
import threading
from collections.abc import Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.exposition import make_wsgi_app
from prometheus_client.registry import Collector

from corescope.metrics.live import MODES, LiveMetrics, Snapshot


def _fmt_cpu(cpu: int) -> str:
    return str(cpu)


class CorescopeCollector(Collector):
    def __init__(self, live: LiveMetrics) -> None:
        self.live = live

    def collect(self) -> Iterator[Metric]:
        snap = self.live.snapshot()
        yield from _cpu_families(snap, self.live.window_s)
        yield from _memcg_families(snap)
        yield from _event_families(snap)
        yield from _info_families(snap)


def _cpu_families(snap: Snapshot, window_s: float) -> Iterator[Metric]:
    ratio = GaugeMetricFamily(
        "corescope_cpu_mode_ratio_max",
        f"Highest 1 s ratio (0-1) of the mode on the CPU over the trailing {window_s:g} s.",
        labels=["cpu", "mode"])
    sat = CounterMetricFamily(
        "corescope_cpu_saturated_seconds",
        "Seconds the CPU spent with the mode at or above the episode threshold (90 %).",
        labels=["cpu", "mode"])
    eps = CounterMetricFamily(
        "corescope_hot_core_episodes",
        "Hot-core episodes: kernel time >= 90 % for >= 2 s, counted when they qualify.",
        labels=["cpu"])
    for i, cpu in enumerate(snap.cpus):
        c = _fmt_cpu(cpu)
        for j, mode in enumerate(MODES):
            v = float(snap.ratio_max[i, j])
            if not math.isnan(v):
                ratio.add_metric([c, mode], v)
            sat.add_metric([c, mode], float(snap.saturated_s[i, j]))
        eps.add_metric([c], float(snap.episodes[i]))
    yield ratio
    yield sat
    yield eps
    yield GaugeMetricFamily("corescope_cpu_mode_ratio_max_window_seconds",
                            "The trailing window of corescope_cpu_mode_ratio_max.",
                            value=window_s)


def _memcg_families(snap: Snapshot) -> Iterator[Metric]:
    c = snap.census
    if c is not None and c.dying is not None:
        yield GaugeMetricFamily("corescope_memcg_dying",
                                "Dying (zombie) memory cgroups the kernel still holds.",
                                value=c.dying)
    if c is not None and c.live is not None:
        yield GaugeMetricFamily("corescope_memcg_live", "Live memory cgroups.", value=c.live)
    if snap.growth_per_hour is not None:
        yield GaugeMetricFamily("corescope_memcg_dying_growth_per_hour",
                                "Growth of dying memcgs per hour (Theil-Sen over this boot's "
                                "censuses, else dying / uptime).", value=snap.growth_per_hour)
    if snap.dying_limit is not None:
        yield GaugeMetricFamily("corescope_memcg_dying_threshold",
                                "Dying memcg count that corescope treats as harmful "
                                "(10,000, or 50x live once >= 1,000).", value=snap.dying_limit)
    if snap.projected_crossing is not None:
        yield GaugeMetricFamily("corescope_memcg_dying_threshold_projected_timestamp_seconds",
                                "When the dying count is projected to cross the threshold "
                                "(now if already crossed).", value=snap.projected_crossing)
    stat = GaugeMetricFamily("corescope_stat_read_seconds",
                             "Median time to read the root memcg stat file.", labels=["file"])
    for f, v in sorted(snap.stat_costs.items()):
        stat.add_metric([f], v)
    yield stat


def _event_families(snap: Snapshot) -> Iterator[Metric]:
    ev = CounterMetricFamily("corescope_kernel_events",
                             "Kernel log and NIC counter events since the recorder started.",
                             labels=["kind", "iface"])
    for (kind, iface), n in sorted(snap.events.items()):
        ev.add_metric([kind, iface], n)
    yield ev
    rs = CounterMetricFamily("corescope_unit_restarts",
                             "Restarts of a systemd unit (NRestarts) or container (attempts).",
                             labels=["unit", "kind"])
    for (unit, kind), n in sorted(snap.restarts.items()):
        rs.add_metric([unit, kind], n)
    yield rs
    up = GaugeMetricFamily("corescope_sensor_up",
                           "1 when the sensor runs and its last tick succeeded.",
                           labels=["sensor"])
    for name, ok in sorted(snap.sensors.items()):
        up.add_metric([name], 1.0 if ok else 0.0)
    yield up


def _info_families(snap: Snapshot) -> Iterator[Metric]:
    node: dict[str, str] = snap.info.get("node_info") or {}
    if node:
        info = InfoMetricFamily("corescope_node", "This node's kernel, image and layout.")
        info.add_metric([], node)
        yield info
    diag = snap.info.get("diagnosis")
    if diag is not None:
        g = GaugeMetricFamily("corescope_diagnosis",
                              "1 for the current verdict of `corescope diagnose`.",
                              labels=["root_cause"])
        for cause, v in sorted(diag.items()):
            g.add_metric([cause], v)
        yield g
    inv: dict[str, Any] = snap.info.get("inventory") or {}
    if inv:
        yield from _inventory_families(inv)


def _inventory_families(inv: dict[str, Any]) -> Iterator[Metric]:
    units = GaugeMetricFamily("corescope_unit_state",
                              "1 for each enabled, failed or restarting systemd unit.",
                              labels=["unit", "state"])
    for state in ("enabled", "failed", "restarting"):
        for u in inv.get("units", {}).get(state, []):
            units.add_metric([u, state], 1.0)
    yield units
    nic = InfoMetricFamily("corescope_nic", "NIC driver and version.")
    for n in inv.get("nics", []):
        nic.add_metric([], {"iface": n.get("iface") or "", "driver": n.get("driver") or "",
                            "version": n.get("version") or "",
                            "firmware": n.get("firmware") or ""})
    yield nic
    irq = inv.get("irq", {})
    if irq.get("policy"):
        pol = InfoMetricFamily("corescope_irq_affinity", "How NIC queue IRQs are placed.")
        pol.add_metric([], {"policy": irq["policy"]})
        yield pol


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # a scrape a second must not write a log line a second


def start(live: LiveMetrics, host: str, port: int) -> tuple[Any, Any]:
    """Serve /metrics on (host, port) from one daemon thread; returns (server, thread).

    prometheus-client's WSGI app, served one request at a time (Prometheus scrapes serially;
    no thread is spawned per scrape) and uncompressed (a few kB on loopback or the cluster
    network: gzip would cost more CPU than it saves)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CorescopeCollector(live))
    app = make_wsgi_app(registry, disable_compression=True)
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]

    class Server(WSGIServer):
        address_family = family

    server = make_server(host, port, app, Server, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, name="corescope-metrics",
                              daemon=True)
    thread.start()
    return server, thread
