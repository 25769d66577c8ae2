"""sd_notify over a real AF_UNIX datagram socket, as systemd's Type=notify sees it."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from corescope import sdnotify
from support import cli_env


def _listen(path: str) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(30)
    return s


def test_notify_path_and_abstract(tmp_path: Path) -> None:
    sock = _listen(str(tmp_path / "notify"))
    assert sdnotify.notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "notify")})
    assert sock.recv(4096) == b"READY=1"
    abstract = f"@corescope-test-{tmp_path.name}"
    asock = _listen("\0" + abstract[1:])
    assert sdnotify.notify("STATUS=x", {"NOTIFY_SOCKET": abstract})
    assert asock.recv(4096) == b"STATUS=x"
    assert not sdnotify.notify("READY=1", {})
    assert not sdnotify.notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "gone")})


def test_watchdog_interval() -> None:
    assert sdnotify.watchdog_interval_s({"WATCHDOG_USEC": "20000000"}) == 10.0
    assert sdnotify.watchdog_interval_s({"WATCHDOG_USEC": "x"}) is None
    assert sdnotify.watchdog_interval_s({"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"}) \
        is None


def test_record_tells_systemd_ready_status_watchdog_stopping(tmp_path: Path) -> None:
    path = str(tmp_path / "notify")
    sock = _listen(path)
    env = cli_env(NOTIFY_SOCKET=path, WATCHDOG_USEC="1000000")
    proc = subprocess.Popen(
        [sys.executable, "-m", "corescope", "record", "--store", str(tmp_path / "s"),
         "--duration", "3s", "--no-profile", "--no-census", "--no-kmsg", "--no-netdev"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    got: list[str] = []
    try:
        while not got or "STOPPING=1" not in got[-1]:
            got.append(sock.recv(4096).decode())
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    ready = next(i for i, m in enumerate(got) if m.startswith("READY=1"))
    assert "STATUS=recording: cores" in got[ready]
    # the watchdog is fed on the recorder's schedule (every 0.5 s here) for 3 s
    assert sum(m == "WATCHDOG=1" for m in got) >= 3
    assert got[-1] == "STOPPING=1"
