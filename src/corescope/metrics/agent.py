"""The recorder's fleet outputs, started by `record --listen` / `--pyroscope-url`: the live
metrics tap and its HTTP exporter, a slow thread that refreshes what changes rarely (the
inventory behind node_info and the drift metrics), and the profile pusher."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from corescope import __version__
from corescope.errors import InvalidInput
from corescope.rootfs import Root
from corescope.runner import Runner
from corescope.sensors.base import Tap
from corescope.store.db import Store

INVENTORY_EVERY_S = 300.0
DIAGNOSIS_EVERY_S = 60.0
DIAGNOSIS_WINDOW_S = 3600.0
DEFAULT_LISTEN = "127.0.0.1:9723"


class ListenError(InvalidInput, ValueError):
    pass


def parse_listen(text: str) -> tuple[str, int, bool]:
    """`HOST:PORT`, `[V6]:PORT` or `:PORT` (loopback) → (host, port, is_loopback)."""
    host, sep, port_s = text.strip().rpartition(":")
    if not sep:
        raise ListenError(f"--listen wants HOST:PORT, got {text!r}")
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_s)
    except ValueError:
        raise ListenError(f"--listen port must be a number, got {port_s!r}") from None
    if not 0 <= port < 65536:  # 0: any free port (the start message names it)
        raise ListenError(f"--listen port must be 0-65535, got {port}")
    if host == "localhost":
        return "127.0.0.1", port, True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise ListenError(f"--listen host must be an IP address, got {host!r}") from None
    return host, port, ip.is_loopback


def node_name(root: Root) -> str:
    """$NODE_NAME (a DaemonSet sets it from spec.nodeName), else the host's hostname."""
    env = os.environ.get("NODE_NAME")
    if env:
        return env
    try:
        return root.read_text("/proc/sys/kernel/hostname").strip() or os.uname().nodename
    except OSError:
        return os.uname().nodename


class FleetOutputs:
    def __init__(self, root: Root, runner: Runner, store: Store, window_s: float,
                 interval_s: float, listen: tuple[str, int] | None,
                 pyroscope_url: str | None) -> None:
        self.root, self.runner, self.store = root, runner, store
        self.listen = listen
        self.taps: list[Tap] = []
        self.live: Any = None
        self.pusher: Any = None
        self._stop = threading.Event()
        self._slow: threading.Thread | None = None
        self.server: Any = None
        if listen is not None:
            from corescope.metrics.live import LiveMetrics

            self.live = LiveMetrics(window_s, interval_s)
            self.taps.append(self.live)
        if pyroscope_url:
            from corescope.metrics.pyroscope import PyroscopePusher

            self.pusher = PyroscopePusher(pyroscope_url, store, runner, node_name(root))
            self.taps.append(self.pusher)

    def start(self, sensor_health: Callable[[], Mapping[str, bool]]) -> list[str]:
        """Serve /metrics and start the slow refresh; returns lines for the start message."""
        said: list[str] = []
        if self.live is not None and self.listen is not None:
            from corescope.metrics import exporter

            self.live.sensor_health = sensor_health
            host, port = self.listen
            self.server, _thread = exporter.start(self.live, host, port)
            shown = f"[{host}]" if ":" in host else host
            said.append(f"metrics on http://{shown}:{self.server.server_port}/metrics")
            self._slow = threading.Thread(target=self._refresh, name="corescope-metrics-slow",
                                          daemon=True)
            self._slow.start()
        if self.pusher is not None:
            said.append(f"profiles pushed to {self.pusher.url}")
        return said

    def _refresh(self) -> None:
        """Inventory every 5 min, the diagnosis every minute: on this thread, from the store,
        never on the sampling thread. A failed refresh keeps the last values."""
        next_inv = next_diag = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_inv:
                next_inv = now + INVENTORY_EVERY_S
                with contextlib.suppress(Exception):
                    self._inventory()
            if now >= next_diag:
                next_diag = now + DIAGNOSIS_EVERY_S
                with contextlib.suppress(Exception):
                    self._diagnosis()
            self._stop.wait(max(0.0, min(next_inv, next_diag) - time.monotonic()))

    def _inventory(self) -> None:
        from corescope.sources.inventory import collect

        inv = collect(self.root, self.runner)
        self.live.set_info("inventory", inv.to_json())
        self.live.set_info("node_info", {
            "node": node_name(self.root), "kernel": inv.kernel_release or "",
            "cgroup_layout": inv.cgroup_layout or "", "image": inv.image_id or "",
            "boot_image": inv.boot_image or "", "version": __version__,
        })

    def _diagnosis(self) -> None:
        """What `corescope diagnose --last 1h` says about this store: 1 for the verdict's root
        cause, 0 for every other one (so a change of verdict is a change of series value)."""
        self.live.set_info("diagnosis", diagnosis_gauge(self.store.directory, self.runner))

    def close(self) -> None:
        self._stop.set()
        if self.pusher is not None:
            self.pusher.close()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


def diagnosis_gauge(store_dir: Any, runner: Runner, now: float | None = None
                    ) -> dict[str, float]:
    from corescope.evidence.open import store_evidence
    from corescope.investigate import investigate
    from corescope.investigate.diagnose import FALLBACK, PRIMARY
    from corescope.investigate.window import resolve_window

    ev = store_evidence(store_dir, runner)  # this thread's own connection
    try:
        window = resolve_window(time.time() if now is None else now,
                                last=DIAGNOSIS_WINDOW_S, coverage=ev.coverage())
        inv = investigate(ev, window)
    finally:
        ev.close()
    verdict = inv.diagnosis.verdict.root_cause if inv.diagnosis else "undetermined"
    causes = {*PRIMARY, *FALLBACK, "undetermined", verdict}
    return {c: 1.0 if c == verdict else 0.0 for c in sorted(causes)}
