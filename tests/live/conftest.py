"""Live tests need root and the real kernel. On a laptop they skip; in CI
(CORESCOPE_REQUIRE_LIVE=1) a skip here fails the run (see tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support import cli_env, popen_cli, run_cli, run_cli_json


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


class LabChain:
    """What `lab_chain` recorded: the store, when it started (tests look only from there: the
    ring holds older lines) and the lab stall line it wrote (tagged per run)."""

    def __init__(self, store: Path, started: float) -> None:
        self.store = store
        self.started = started
        self.stall = ""


@contextmanager
def lab_chain(tmp_path: Path, *, burn_s: int, crash_s: int, quiet_s: float,
              settle_s: float, backlog: int = 0, walker: str | None = None) -> Iterator[LabChain]:
    """The incident's chain on this kernel, under a running `record` with every sensor (10 s
    profile chunks, census every 2 s): an optional backlog of `backlog` dying memcgs from before
    the recorder started, a crash-looping agent leaking more, CPU 1 pinned at system time for
    `burn_s` (reading memory.stat with `walker="memcg"`), a NIC stall and reset on queue 5.
    `settle_s` after the crash loop ends lets a census and the profile chunk holding the burn
    be stored. The recorder is stopped and every lab cgroup removed on exit."""
    if shutil.which("perf") is None:
        pytest.skip("perf not installed")
    chain = LabChain(tmp_path / "store", time.time())
    if backlog:
        run_cli("lab", "zombies", "--count", str(backlog), "--yes", check=True, timeout=300)
    rec = popen_cli("record", "--store", str(chain.store), "--profile-chunk", "10s",
                    "--census-interval", "2")
    crash = None
    try:
        time.sleep(quiet_s)
        assert rec.poll() is None, rec.communicate()
        crash = popen_cli("lab", "crashloop", "--interval", "0.2", "--duration", str(crash_s),
                          "--yes")
        time.sleep(2)
        hotcore = ["lab", "hotcore", "--cpu", "1", "--seconds", str(burn_s), "--yes"]
        if walker:
            hotcore += ["--walker", walker]
        run_cli(*hotcore, check=True)
        chain.stall = run_cli_json("lab", "nicreset", "--yes", "--queue", "5",
                                   "--json")["lines"][0]["text"]
        crash.communicate(timeout=60)
        assert crash.returncode == 0
        time.sleep(settle_s)
        yield chain
    finally:
        if crash is not None and crash.poll() is None:
            crash.kill()
            crash.communicate()
        rec.send_signal(signal.SIGINT)
        try:
            rec.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            rec.kill()
            rec.communicate()
        run_cli("lab", "clean", "--yes", "--drop-caches", timeout=120)
