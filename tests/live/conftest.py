"""Live tests need root and the real kernel. On a laptop they skip; in CI
(CORESCOPE_REQUIRE_LIVE=1) a skip here fails the run (see tests/conftest.py)."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support import cli_env, popen_cli, run_cli, run_cli_json

# `make test` runs the live tests on two pytest-xdist workers (--dist loadgroup), beside the
# in-process suite (niced). The tests that load a CPU (lab hotcore, spinners, the loopback
# sender), make or clean lab cgroups, write lab NIC lines, or judge what the whole node did in
# their window (doctor, diagnose, mpstat, Prometheus, a perf ring read by CPU) carry MACHINE:
# they run one after another on one worker. Every other live test looks only at what it made
# (its own store, its kernel-log lines by a unique tag, its own perf child, its own mounts) and
# runs on the other worker (tests/conftest.py puts it in the `beside` group).
MACHINE = pytest.mark.xdist_group("machine")
# The few that bound the kernel log's clock to a few milliseconds: how late a waiting reader
# thread wakes is part of what they measure, so scripts/run_tests.sh runs them first, alone.
QUIET = pytest.mark.quiet


@pytest.fixture(autouse=True)
def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("live tests need root")


# A real ENA stall as the driver prints it, NOT marked corescope-lab: production nodes carry
# incidents like this in their kernel log, and live tests must pass next to them.
REAL_NODE_INCIDENT = ("ena 0000:00:05.0 eth0: TX q 5 is paused for too long (threshold "
                      "5000000). Time since last napi 6120000 usec. napi scheduled: 1")


@pytest.fixture(scope="session", autouse=True)
def _a_real_incident_in_the_kernel_log(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Before any live test: put a real (unmarked) NIC stall in the kernel ring, as a node that
    had one a little while ago looks. It lands before every test's window (the pause), so a
    test that scopes itself to what it created never sees it, and one that does not, fails.
    CORESCOPE_LIVE_NO_INCIDENT=1 leaves the kernel log alone.

    Under pytest-xdist each worker runs this: the first to take the lock writes the line and
    waits; the other waits on the lock and writes nothing. The line lands once, before the
    first test on either worker (a second copy would fall inside the other's window)."""
    if os.geteuid() != 0 or os.environ.get("CORESCOPE_LIVE_NO_INCIDENT") == "1":
        return
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        _write_the_incident()
        return
    shared = tmp_path_factory.getbasetemp().parent  # the run's, above each worker's own
    done = shared / "corescope-live-incident.done"
    with (shared / "corescope-live-incident.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            _write_the_incident()
            done.touch()


def _write_the_incident() -> None:
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
        self.stderr: list[str] = []  # every line the recorder printed, read as it comes
        self.started = threading.Event()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            if line.startswith("corescope record: ") and " into " in line:
                self.started.set()  # the banner: sensors open, protection applied
        self.started.set()  # it exited: the caller sees it from poll()


@contextmanager
def recording_process(store: Path, *options: str) -> Iterator[Recording]:
    """`corescope record --store STORE OPTIONS...` running, stopped (SIGTERM) on exit. It is
    yielded once it printed its banner (sensors started): under load (CI runs the live tests
    beside the rest) the interpreter alone can take seconds to import, so no fixed sleep."""
    proc = popen_cli("record", "--store", str(store), *options, stdout=subprocess.DEVNULL)
    rec = Recording(proc, store)
    drain = threading.Thread(target=rec._drain, daemon=True)
    drain.start()
    try:
        assert rec.started.wait(90), ("no banner in 90 s", "".join(rec.stderr))
        assert proc.poll() is None, (proc.returncode, "".join(rec.stderr))
        time.sleep(1.5)  # the first samples (as many as the old fixed wait gave)
        yield rec
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        drain.join(5)


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


def profile_chunks(store: Path) -> list[tuple[float, float]]:
    """(wall_start, wall_end) of every profile chunk the recorder has stored so far (read-only,
    beside the running recorder)."""
    db = store / "corescope.db"
    if not db.exists():
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute("SELECT wall_start, wall_end FROM profile_chunks").fetchall()


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
    ring holds older lines), when the burn ended and the lab stall line it wrote (tagged per
    run)."""

    def __init__(self, store: Path, started: float) -> None:
        self.store = store
        self.started = started
        self.burn_end = 0.0
        self.stall = ""


@contextmanager
def lab_chain(tmp_path: Path, *, burn_s: int, crash_s: int, quiet_s: float,
              settle_s: float, backlog: int = 0, walker: str | None = None) -> Iterator[LabChain]:
    """The incident's chain on this kernel, under a running `record` with every sensor (10 s
    profile chunks, census every 2 s): an optional backlog of `backlog` dying memcgs from before
    the recorder started, a crash-looping agent leaking more, CPU 1 pinned at system time for
    `burn_s` (reading memory.stat with `walker="memcg"`), a NIC stall and reset on queue 5.
    Once the crash loop has ended and the profile chunk holding the burn's end is stored,
    `settle_s` more let a census and the last samples be stored. The recorder is stopped and
    every lab cgroup removed on exit."""
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
        chain.burn_end = time.time()
        chain.stall = run_cli_json("lab", "nicreset", "--yes", "--queue", "5",
                                   "--json")["lines"][0]["text"]
        crash.communicate(timeout=60)
        assert crash.returncode == 0
        assert wait_for(lambda: any(end >= chain.burn_end
                                    for _s, end in profile_chunks(chain.store)), 60), \
            "the profile chunk holding the burn was not stored"
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
