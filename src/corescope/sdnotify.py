"""systemd's notify protocol, without libsystemd: one AF_UNIX datagram to $NOTIFY_SOCKET
per state change (`READY=1`, `STATUS=...`, `WATCHDOG=1`, `STOPPING=1`). Outside systemd
(no NOTIFY_SOCKET) every call is a no-op.

The watchdog is fed by a do-nothing sensor on the recorder's own schedule, so a recorder
whose loop stalls stops feeding it and systemd restarts it (WatchdogSec= in the unit).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

from corescope.model.common import SensorStatus
from corescope.sensors.base import Sensor, SensorEnv
from corescope.store.db import Store


def _address(env: Mapping[str, str]) -> str | None:
    addr = env.get("NOTIFY_SOCKET")
    if not addr or addr[0] not in "/@":
        return None  # unset, or a vsock address (not for a node agent)
    return "\0" + addr[1:] if addr[0] == "@" else addr  # "@" is the abstract namespace


def notify(state: str, env: Mapping[str, str] | None = None) -> bool:
    """Send one notification; False when not under systemd or the socket is gone (never
    raises: a missing supervisor must not stop the recorder)."""
    addr = _address(os.environ if env is None else env)
    if addr is None:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
            s.connect(addr)
            s.sendall(state.encode("utf-8", "replace"))
    except OSError:
        return False
    return True


def watchdog_interval_s(env: Mapping[str, str] | None = None) -> float | None:
    """Half of WATCHDOG_USEC (systemd's advice), when the watchdog is meant for this PID."""
    e = os.environ if env is None else env
    try:
        usec = int(e.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    pid = e.get("WATCHDOG_PID")
    if usec <= 0 or (pid and pid.isdigit() and int(pid) != os.getpid()):
        return None
    return usec / 2e6


class WatchdogSensor(Sensor):
    name = "systemd-watchdog"

    def __init__(self, env: SensorEnv, interval_s: float) -> None:
        super().__init__(env)
        self.interval_s = interval_s

    def open(self, store: Store) -> SensorStatus:
        ok = notify("WATCHDOG=1")
        return SensorStatus(self.name, ok, f"WATCHDOG=1 every {self.interval_s:g}s"
                            if ok else "NOTIFY_SOCKET unusable: watchdog not fed")

    def tick(self, wall: float, mono: float) -> None:
        notify("WATCHDOG=1")


def watchdog_sensors(env: SensorEnv) -> list[Sensor]:
    every = watchdog_interval_s()
    return [WatchdogSensor(env, every)] if every is not None and _address(os.environ) else []
