"""Live tests need root and the real kernel. On a laptop they skip; in CI
(CORESCOPE_REQUIRE_LIVE=1) a skip here fails the run (see tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import cli_env, popen_cli


@pytest.fixture(autouse=True)
def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("live tests need root")


# A real ENA stall as the driver prints it, NOT marked corescope-lab: production nodes carry
# incidents like this in their kernel log, and live tests must pass next to them.
REAL_NODE_INCIDENT = ("ena 0000:00:05.0 eth0: TX q 5 is paused for too long (threshold "
                      "5000000). Time since last napi 6120000 usec. napi scheduled: 1")


@pytest.fixture(scope="session", autouse=True)
def _a_real_incident_in_the_kernel_log() -> None:
    """Before any live test: put a real (unmarked) NIC stall in the kernel ring, as a node that
    had one a little while ago looks. It lands before every test's window (the pause), so a
    test that scopes itself to what it created never sees it, and one that does not, fails.
    CORESCOPE_LIVE_NO_INCIDENT=1 leaves the kernel log alone."""
    if os.geteuid() != 0 or os.environ.get("CORESCOPE_LIVE_NO_INCIDENT") == "1":
        return
    fd = os.open("/dev/kmsg", os.O_WRONLY)
    try:
        os.write(fd, f"<3>{REAL_NODE_INCIDENT}\n".encode())
    finally:
        os.close(fd)
    time.sleep(1.5)


def need_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed (CI installs it in .ci/run)")
    return path


class Recording:
    def __init__(self, proc: subprocess.Popen[str], store: Path) -> None:
        self.proc = proc
        self.store = store


@contextmanager
def recording_process(store: Path, *options: str) -> Iterator[Recording]:
    """`corescope record --store STORE OPTIONS...` running, stopped (SIGTERM) on exit."""
    proc = popen_cli("record", "--store", str(store), *options)
    time.sleep(2.5)
    assert proc.poll() is None, proc.communicate()
    try:
        yield Recording(proc, store)
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[Recording]:
    """`corescope record` running on a fresh store (profiling and kmsg off: cores only)."""
    with recording_process(tmp_path / "store", "--no-profile", "--no-kmsg") as rec:
        yield rec


def burner(cpu: int, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "corescope", "lab", "hotcore", "--cpu", str(cpu), "--seconds",
         str(seconds), "--yes"], env=cli_env(), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )


def wait_for(pred, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    """Poll `pred` every 0.2 s until it holds or `timeout` seconds pass; its last answer."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.2)
    return pred()
